"""Other sources' claims on the claims page (their verdicts: harness/judging/release.py): a section of claims.md,
the release's own times beside this run's (shown, not judged), and their entries of claims.json."""
from __future__ import annotations

from harness.analysis.tables import Table
from harness.judging.claims import NOT_MEASURABLE, SYMBOLS, Verdict, fx, interval
from harness.text import markdown_cell
from harness.units import count
from workloads.claims import RELEASE_SOURCE, load_release_times


def times(tables: list[Table], verdicts: list[Verdict]) -> list[str]:
    """The release's times beside this run's, a Markdown table (shown, not judged)."""
    names = {name for v in verdicts for name in v.claim.tables}
    rows = [r for t in tables if t.declaration.csv_name in names for r in t.rows if r["in_run"]]
    lines = ["| Engine | Backend | The release (ms, all cores) | This run (ms, one thread) |",
             "|---|---|---|---|"]
    for engine, (name, ms) in load_release_times().items():
        ours = next((r.get("time_per_iter_s") for r in rows if r["engine"] == engine), None)
        lines.append(f"| {engine} | {name} | {'not in the release' if ms is None else f'{ms:g}'} | "
                     f"{'not measured' if ours is None else f'{ours * 1e3:,.1f}'} |")
    return lines


def markdown(tables: list[Table], verdicts: list[Verdict]) -> list[str]:
    """The claims page's section: a table of verdicts, the times, then how each verdict was computed."""
    if not verdicts:
        return []
    lines = ["## Burn 0.20's release claims", "",
             f"Source: {RELEASE_SOURCE}, CubeCL CPU section: max_pool2d of a (2, 32, 512, 512) FP32 input. Each factor is "
             "the claim's other engine over its subject at the same point, with its interval, held to the release's "
             "number as the paper's claims are held to the paper's. The release ran every backend on all the cores "
             "of its machine; this run, one thread on one core (workloads/differences.py: `threads`).", "",
             "| Claim | Release | Verdict |", "|---|---|---|"]
    for v in verdicts:
        cells = [f"{v.claim.claim} (`{v.claim.id}`)", v.claim.stated_text, _cell(v)]
        lines.append("| " + " | ".join(markdown_cell(c) for c in cells) + " |")
    lines += ["", "Times (shown, not judged: the release's come from another machine on all its cores):", "",
              *times(tables, verdicts), ""]
    for v in verdicts:
        c = v.claim
        lines += [f"### `{c.id}`: {SYMBOLS[v.verdict]} {v.verdict}", "", f"- Claim: {c.claim} ({c.where}). {c.note}",
                  f"- Rule: {c.rule} of `{c.metric}` over {', '.join(c.tables)}: {', '.join(c.engines)} over "
                  f"{c.subject}; tolerance {c.tolerance:.0%}.",
                  f"- Verdict: {v.verdict}" + (f", {fx(v.ours)}{interval(v)}" if v.ours is not None else "")
                  + (f": {v.why}" if v.why else "") + "."]
        if v.trials:
            lines.append(f"  - From {count(v.trials[0], 'trial')} of {c.subject} and {v.trials[1]} of the other "
                         f"engine ({v.method}).")
        lines.append("")
    return lines


def _cell(v: Verdict) -> str:
    if v.verdict == NOT_MEASURABLE:
        return f"{SYMBOLS[v.verdict]} **{v.verdict}**: {v.why}"
    trials = f" ({v.trials[0]} / {v.trials[1]} trials)" if v.trials else ""
    return f"{SYMBOLS[v.verdict]} **{v.verdict}**: {fx(v.ours)}{interval(v)}{trials}"


def record(verdicts: list[Verdict]) -> list[dict]:
    """claims.json's `release_claims`: each verdict, its subject the claim's own engine."""
    return [{**v.as_dict(), "subject": None, "subject_engine": v.claim.subject, "source": RELEASE_SOURCE}
            for v in verdicts]
