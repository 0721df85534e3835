"""Claims of another source than the paper, judged on a run as the paper's are: Burn 0.20's release notes on
max_pool2d (workloads/claims_burn.csv, workloads/catalog/max_pool2d.py).

Each claim is a factor of two engines: its `engines` over its `subject` at the same point (above 1: the subject
faster), with its interval over trials and its verdict by the paper's claims' rule (claim_rules.ratio_verdict,
one subject instead of BurTorch's two). An engine the run lacks makes the claim not measurable here, with the
reason the run recorded (an engine that cannot be built here says why). The release gives absolute times too;
they come from another machine on all its cores, so they are shown beside this run's (harness/report/release_claims.py)
and not judged.
"""
from __future__ import annotations

from harness.judging import rules as claim_rules
from harness.judging.claims import NOT_MEASURABLE, Verdict, absent_engine
from harness.analysis.tables import Table
from harness.store.runs import Run
from workloads.claims import Claim, load_release_claims, load_release_times

def judge(run: Run, tables: list[Table], claims: tuple[Claim, ...] | None = None) -> list[Verdict]:
    """One verdict per claim, over the claim's own subject; none where the run has no trial of its tables."""
    claims = load_release_claims() if claims is None else claims
    measured = {t.declaration.csv_name for t in tables if any(r["in_run"] for r in t.rows)}
    verdicts = []
    for claim in (c for c in claims if measured & set(c.tables)):
        absent = [why for why in (absent_engine(run, e, load_release_times().get(e, (e,))[0])
                                  for e in (claim.subject, *claim.engines)) if why]
        verdicts.append(Verdict(claim, NOT_MEASURABLE, why="; ".join(absent)) if absent
                        else claim_rules.ratio_verdict(claim, claim.subject, run, tables))
    return verdicts
