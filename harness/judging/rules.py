"""The rules that turn the report's tables into one subject's verdict on a claim (claims.py says
what each rule means): ratio_verdict (max, min), flat_verdict, outputs_verdict. `subject` is the
engine every factor is taken against: the authors' BurTorch or ours."""
from __future__ import annotations

import math

from engines import all_engines
from engines.base import AUTHORS, BASELINE
from harness.analysis import effect as effects
from harness.analysis import paper
from harness.analysis.looks import Looks
from harness.judging.rows import (Factor, Row, added_rounds, claim_tables, matches, metric_keys, point_text,
                                       ratio_rows, trial_samples)
from harness.analysis.metrics import resolve
from harness.analysis.tables import Table
from harness.judging.verdicts import (NOT_MEASURABLE, NOT_REPRODUCED, OS_SPECIFIC, PARTLY, REPRODUCED, SUBJECTS,
                                     UNDECIDED, Verdict, fx, interval, regions)
from harness.store.results import params_key
from harness.store.runs import Run
from workloads import all_workloads
from workloads.claims import Claim

# ----------------------------------------------------------------------------- verdicts

def _aggregate(rule: str, rows: list[Row], attr: str) -> tuple[float | None, Row | None]:
    have = [r for r in rows if getattr(r, attr) is not None]
    if not have:
        return None, None
    pick = max if rule == "max" else min
    best = pick(have, key=lambda r: getattr(r, attr))
    return getattr(best, attr), best


def _missing_text(rows: list[Row]) -> list[str]:
    """'torch/eager/python/cpu at mlp hidden_dim=16 batch=1, mlp hidden_dim=32 batch=1', one entry per engine."""
    by_engine: dict[str, list[str]] = {}
    for r in rows:
        measured = r.in_run if r.lacks == r.engine else False
        points = by_engine.setdefault(r.lacks or r.engine, [])
        if r.point + (" (no measurement)" if measured else "") not in points:
            points.append(r.point + (" (no measurement)" if measured else ""))
    return [f"{engine} at {', '.join(points)}" for engine, points in by_engine.items()]


def _paper_source(tables: list[Table]) -> tuple[set[str], str]:
    """The OSes of the paper's tables beside these report tables, and their names ('Table 12 (Linux)')."""
    used = [t for t in tables if t.paper_os]
    return {t.paper_os for t in used}, ", ".join(dict.fromkeys(t.paper_source for t in used)) or "no paper table"


def ratio_verdict(claim: Claim, subject: str, run: Run, tables: list[Table]) -> Verdict:
    found, absent_tables = claim_tables(claim, tables)
    rows = ratio_rows(claim, subject, run, found)
    verdict = Verdict(claim, NOT_MEASURABLE)
    missing = [f"{_table_title(name)} (no trial in this run)" for name in absent_tables]
    paper_oses, source = _paper_source([r.table for r in rows if r.paper is not None] or found)
    verdict.paper_rows, paper_best = _aggregate(claim.rule, rows, "paper")
    verdict.paper_rows_source = source + (f", at {paper_best.point}: {paper_best.engine}" if paper_best else "")
    metric = metric_keys(claim.metric, run.os)[0]
    # The number the run's is held to.
    if claim.metric in OS_SPECIFIC and run.os != claim.stated_os:
        if not found:  # the run has none of the claim's tables: say what is missing, not what the paper lacks
            verdict.missing, verdict.why = missing, f"missing: {'; '.join(missing)}"
            return verdict
        if paper_oses != {run.os} or verdict.paper_rows is None:
            verdict.why = (f"the paper's {claim.stated_text} is {_measure(claim, claim.stated_os)} memory on "
                           f"{paper.OS_NAMES[claim.stated_os]} ({source}); it has no {paper.OS_NAMES[run.os]} table "
                           f"of these rows to hold this run's {metric.title.lower()} to")
            return verdict
        verdict.paper, verdict.paper_basis = verdict.paper_rows, f"{source}, {metric.title}"
    else:
        verdict.paper, verdict.paper_basis = claim.stated, "as stated"
    missing += _missing_text([r for r in rows if r.required and r.ours is None])
    present = [r for r in rows if r.ours is not None]
    verdict.used = [f"{r.point}: {r.engine} {fx(r.ours)}" for r in present]
    verdict.missing = missing
    if claim.requires == "paper_iterations":
        short = [r for r in present if r.paper_iterations and r.iterations != r.paper_iterations]
        if short:
            counts = ", ".join(sorted({f"{r.iterations:,}" for r in short if r.iterations}))
            verdict.why = (f"whole-process totals over {counts} iterations do not compare with the paper's over "
                           f"{short[0].paper_iterations:,} (run with --profile paper)")
            return verdict
    if not present:
        reasons = sorted({n for r in rows if r.in_run for n in r.notes
                          if n.startswith(metric.title.lower()) or "trials" in n})
        verdict.why = "; ".join(reasons) if reasons else f"missing: {'; '.join(missing) or 'every row'}"
        return verdict
    low, high, together = _held_together(claim.rule, present)
    verdict.ours, best = _aggregate(claim.rule, present, "ours")
    verdict.at = f"{best.point}: {best.engine}"
    if best.effect is not None:
        verdict.trials, verdict.method = (best.effect.n_a, best.effect.n_b), best.factor.how(together)
        verdict.measurement = best.effect.measurement
    bounds, names = regions(verdict.paper, claim.tolerance)
    if 0 < low and high < math.inf:
        verdict.low, verdict.high = low, high
    region = effects.region_of(low, bounds)
    # An interval that reaches 0 or ∞ (a row with no interval, a trial at 0 s) decides nothing.
    bounded = 0 < low and high < math.inf
    outcome = names[region] if bounded and region == effects.region_of(high, bounds) else UNDECIDED
    holds_anyway = (claim.rule == "max" and outcome == REPRODUCED) or \
        (claim.rule == "min" and outcome not in (REPRODUCED, UNDECIDED))
    if missing and not holds_anyway:
        verdict.why = (f"missing: {'; '.join(missing)}; on the rows this run has, {_short(subject)} is "
                       f"{fx(verdict.ours)} ({verdict.at})")
        return verdict
    verdict.verdict = outcome
    if outcome == UNDECIDED:
        verdict.needs = _needs(present, bounds, low, high)
        verdict.why = _undecided_why(verdict, subject, bounds, low, high)
        return verdict
    verdict.why = _ratio_why(claim, verdict, outcome, bool(missing), subject)
    if best.own and None not in best.own[0]:
        (theirs, base), paper_own = best.own
        verdict.why += (f" ({claim.metric} in its own terms: {best.engine} {theirs:,.0f}, {subject} {base:,.0f}" + (
            f"; {best.table.paper_source}: {paper_own[0]:,.0f} and {paper_own[1]:,.0f}"
            if None not in paper_own else "") + ")")
    return verdict


def _short(engine: str) -> str:
    """The subject's name in its own column's words ('authors', 'ours')."""
    return next((s.short for s in SUBJECTS if s.engine == engine), engine)


def _spans(rows: list[Row]) -> list[tuple[float, float]]:
    """Each row's interval; a row with none could be anywhere, [0, ∞]."""
    return [(r.effect.low, r.effect.high) if r.effect is not None and r.effect.low is not None else (0.0, math.inf)
            for r in rows]


def _held_together(rule: str, rows: list[Row]) -> tuple[float, float, int]:
    """The interval of the claim's factor, the largest (smallest) over the rows: [max of lows, max of highs]
    (min for min) of intervals that hold together. The rows that could be the maximum (their interval
    reaches the largest low) share the error (Bonferroni); each row's effect becomes its interval held so.
    Returns (low, high, rows held together)."""
    pick = max if rule == "max" else min
    spans = _spans(rows)
    if rule == "max":
        edge = max(low for low, _ in spans)
        together = sum(high >= edge for _, high in spans)
    else:
        edge = min(high for _, high in spans)
        together = sum(low <= edge for low, _ in spans)
    if together > 1:
        for r in rows:
            if r.factor is not None:
                r.effect = r.factor.effect(together)
        spans = _spans(rows)
    return pick(low for low, _ in spans), pick(high for _, high in spans), max(together, 1)


def _needs(rows: list[Row], bounds: tuple, low: float, high: float) -> list[tuple]:
    """(workload, params, engine, point, more trials or None) of the rows whose interval spans a boundary
    the claim's interval spans: their trials decide it."""
    spanned = [b for b in bounds if low < b <= high]
    needs = []
    for r in rows:
        e = r.effect
        if e is None or e.estimate is None:
            continue
        # The rounds it asks for are judged at the design's next look: planned at that level.
        later = r.factor.looks.confidence(r.factor.looks.look_of(e.n) + 1) if r.factor else effects.CONFIDENCE
        decision = effects.decide(e, bounds, later)
        if decision.decided or (e.low is not None and not any(e.low < b <= e.high for b in spanned)):
            continue
        needs.append((r.table.workload, r.params, r.engine, r.point, decision.more))
    return needs


def _undecided_why(v: Verdict, subject: str, bounds: tuple, low: float, high: float) -> str:
    spanned = [b for b in bounds if low < b <= high]
    where = (f"spans {' and '.join(fx(b) for b in spanned)}" if spanned else
             "has no interval that bounds it: a row it is held with gives none")
    head = f"{_short(subject)} {fx(v.ours)}{interval(v)} at {v.at} {where}"
    ways = [f"≈ {more} more trial{'s' if more != 1 else ''} at {point} ({engine} and {_short(subject)})"
            if more else f"{point} ({engine}): more rounds of this run cannot decide it (the factor sits on the "
            "boundary, or the machine's run-to-run component alone spans it: another run can)"
            for _, _, engine, point, more in v.needs]
    return head + (f"; {'; '.join(ways)} would decide it" if ways else "")


def _measure(claim: Claim, os_name: str) -> str:
    metric = resolve((claim.metric.split("/")[0],), os_name)[0]
    return metric.title.lower().removesuffix(" memory")


def _table_title(csv_name: str) -> str:
    for w in all_workloads().values():
        if w.paper is not None and w.paper.csv_name == csv_name:
            return w.name
    return csv_name


def _ratio_why(claim: Claim, v: Verdict, outcome: str, rows_missing: bool, subject: str) -> str:
    where = f" at {v.at}" if v.at else ""
    word = {"max": "largest", "min": "smallest"}.get(claim.rule, "")
    ours = f"{_short(subject)}{' (' + word + ')' if word and len(v.used) > 1 else ''} {fx(v.ours)}{interval(v)}{where}"
    basis = "" if v.paper_basis == "as stated" else f" ({v.paper_basis})"
    paper_number = f"the {claim.source}'s {fx(v.paper)}{basis}"
    if outcome == REPRODUCED:
        slack = f" within {claim.tolerance:.0%}" if claim.tolerance and not _beyond(v.ours, v.paper) else ""
        text = f"{ours} reaches {paper_number}{slack} over its whole interval"
        return text + ("; rows missing from this run could only raise it" if rows_missing else "")
    if outcome == PARTLY:
        share = math.log(v.ours) / math.log(v.paper) if v.paper not in (None, 1) else None
        how = f"{v.ours / v.paper:.0%} of it" if v.paper >= 1 else f"{share:.0%} of it on a log scale"
        return f"same direction, smaller factor: {ours} against {paper_number}, {how}"
    better = ("BurTorch" if subject in (AUTHORS, BASELINE) else subject) if v.ours > 1 else "the other engine"
    return f"opposite direction: {ours} ({better} better), against {paper_number}"


def _beyond(ours: float, paper_value: float) -> bool:
    return ours >= paper_value if paper_value >= 1 else ours <= paper_value


def flat_verdict(claim: Claim, subject: str, run: Run, tables: list[Table]) -> Verdict:
    """The subject's value over the run's points of the claim's tables: largest over smallest."""
    found, absent_tables = claim_tables(claim, tables)
    metric = metric_keys(claim.metric, run.os)[0]
    verdict = Verdict(claim, NOT_MEASURABLE, paper=claim.stated, paper_basis="as stated")
    ours, theirs, have = [], {}, set()
    for table in found:
        for row in table.rows:
            label = point_text(table, row["params"])
            # The paper's BurTorch row stands beside both subjects: its value once per point.
            if row["engine"] in (subject, BASELINE) and row["paper_row"] is not None \
                    and row.get(f"paper_{metric.key}") is not None:
                theirs[label] = row[f"paper_{metric.key}"]
            if row["engine"] != subject:
                continue
            if row["in_run"] and row.get(metric.key) is not None:
                ours.append((row[metric.key], label, row["params"], table.workload))
                have.update((name, row["params"].get(name)) for name in claim.points)
    if theirs:
        verdict.paper_rows = max(theirs.values()) / min(theirs.values())
        verdict.paper_rows_source = f"{_paper_source(found)[1]}, BurTorch over its batch sizes"
    verdict.used = [f"{label}: {subject} {value * metric.scale:,.3g} {metric.unit}" for value, label, _, _ in ours]
    verdict.missing = [f"{_table_title(name)} (no trial in this run)" for name in absent_tables]
    verdict.missing += [f"{name}={value}: {subject}" for name, values in claim.points.items()
                        for value in values if (name, value) not in have]
    if verdict.missing or not ours:
        verdict.why = f"missing: {'; '.join(verdict.missing) or 'every row'}"
        return verdict
    smallest, largest = min(ours, key=lambda o: o[0]), max(ours, key=lambda o: o[0])
    low, high = smallest[0], largest[0]
    # Two points of one engine ran in different rounds: their trials are not paired.
    ends = [(trial_samples(run, subject, workload, params, [metric]), added_rounds(run, subject, workload, params))
            for _, _, params, workload in (smallest, largest)]
    first = min(len(set(sample) - added) for sample, added in ends)
    spread = Factor(ends[0][0], ends[1][0], Looks(max(first, 1), run.plan.most_looks), paired=False,
                    resolution=metric.resolution)
    found = spread.effect()
    verdict.ours = found.estimate or high / low
    verdict.low, verdict.high = found.low, found.high
    verdict.trials, verdict.method = (found.n_a, found.n_b), spread.how()
    verdict.measurement = found.measurement
    verdict.at = ", ".join(dict.fromkeys(label for _, label, _, _ in ours))
    span = (f"{metric.title} {low * metric.scale:,.3g} → {high * metric.scale:,.3g} {metric.unit} "
            f"over {len(ours)} points")
    bound = claim.stated * (1 + claim.tolerance)
    decision = effects.decide(found, (bound,))
    if not decision.decided:
        verdict.verdict = UNDECIDED
        verdict.needs = [(w, p, subject, label, decision.more) for _, label, p, w in (smallest, largest)]
        more = f"≈ {decision.more} more trials at {smallest[1]} and {largest[1]} would decide it" \
            if decision.more else "more trials cannot decide it"
        verdict.why = f"×{verdict.ours:.3f}{interval(verdict)} spans the {claim.tolerance:.0%} allowed ({span}); {more}"
    elif decision.region == 0:
        verdict.verdict = REPRODUCED
        verdict.why = f"flat within {claim.tolerance:.0%}: {span} (×{verdict.ours:.3f}{interval(verdict)})"
    else:
        verdict.verdict = NOT_REPRODUCED
        verdict.why = (f"grows ×{verdict.ours:.3g}{interval(verdict)} ({span}), beyond the {claim.tolerance:.0%} "
                       "allowed")
    return verdict


def _relative_difference(got: dict, base: dict) -> float:
    worst = 0.0
    for key, want in base.items():
        value = got.get(key)
        if not isinstance(value, (int, float)) or not isinstance(want, (int, float)):
            return math.inf
        if value != want:
            worst = max(worst, abs(value - want) / max(abs(want), 1e-300))
    return worst


def outputs_verdict(claim: Claim, subject: str, run: Run, tables: list[Table], points: dict) -> Verdict:
    """Every engine's outputs against the subject's, bit for bit, at every point of the claim's tables
    (the other subject, another BurTorch, is no other framework: it is left out)."""

    other = ({AUTHORS, BASELINE} - {subject})

    found, absent_tables = claim_tables(claim, tables)
    verdict = Verdict(claim, NOT_MEASURABLE, paper=0.0, paper_basis="as stated: exactly the same")
    verdict.missing = [f"{_table_title(name)} (no trial in this run)" for name in absent_tables]
    wrong, differ, same = [], [], []
    for workload in dict.fromkeys(t.workload for t in found):
        at = [p for p in points.values() if p.workload == workload and matches(p.params, claim.points)]
        for params in dict.fromkeys(params_key(p.params) for p in at):
            here = [p for p in at if params_key(p.params) == params and p.engine not in other]
            base = next((p for p in here if p.engine == subject), None)
            base_out = base.outputs() if base else None
            if base_out is None:
                verdict.missing.append(f"{workload}: {subject} (no outputs)")
                continue
            for p in here:
                ok, worst = p.check()
                if ok is False:
                    err = f" (rel. error {worst:.2g} from the reference)" if worst is not None else ""
                    wrong.append(f"{workload}: {p.engine}{err}")
                    continue
                if p.engine == subject or p.outputs() is None:
                    continue
                diff = _relative_difference(p.outputs(), base_out)
                spec = all_engines().get(p.engine)
                why = f", computes in {spec.precision.upper()}" if spec and spec.precision else ""
                (same if diff == 0 else differ).append((diff, f"{workload}: {p.engine}", why))
    verdict.used = [label for _, label, _ in same] + [f"{label} differs by {d:.2g}{why}" for d, label, why in differ]
    compared = len(same) + len(differ)
    if wrong:
        verdict.verdict = NOT_REPRODUCED
        verdict.ours = math.inf
        verdict.why = f"results disagree beyond the check's tolerance: {'; '.join(wrong)}"
        return verdict
    if differ:
        verdict.verdict = PARTLY
        verdict.ours, verdict.at = max(d for d, _, _ in differ), max(differ)[1]
        listed = "; ".join(f"{label} by {d:.2g}{why}" for d, label, why in sorted(differ, reverse=True))
        verdict.why = (f"{len(same)} of {compared} engine results equal BurTorch's bit for bit, every one within the "
                       f"check's tolerance; differ: {listed}")
        return verdict
    if verdict.missing or not compared:
        verdict.why = f"missing: {'; '.join(verdict.missing) or 'engines to compare'}" + (
            f"; the {compared} results this run has equal BurTorch's bit for bit" if compared else "")
        return verdict
    verdict.verdict, verdict.ours = REPRODUCED, 0.0
    verdict.why = f"all {compared} engine results equal BurTorch's bit for bit"
    return verdict
