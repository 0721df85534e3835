"""What a machine makes of the stated 95%, read from A/A runs (`burtbench calibrate`): every engine ran
beside an exact copy of itself in the same rounds (run --aa), so the truth of every copy/original ratio
is ×1, and ×PLANTED where the copy's trials are scaled by it.

A run's rounds are cut into windows of WINDOW consecutive rounds, each read as a run of that many rounds
would be read (a claim's few trials): one window is one case, so that a few minutes give many.
- holds: the window's interval of copy / original holds ×1, paired by round, and by Welch's t;
- run to run: the same engine (the original, and the copy apart) in a window of one run against the
  same window of another run, Welch: what a rerun's interval holds of this one's;
- answered: change.time_answer calls the pair faster or slower, without a floor, and with the floor
  of the pair's neighbouring windows (the wider of the one before and the one after: a floor measured
  around the answer's rounds by the same engine, as a versions run's own A/A pair measures it);
- planted: over windows of the deciding rule's whole design (DESIGN's looks), the copy scaled by
  PLANTED puts the truth on the boundary ×PLANTED, so a decision either way is an error;
- rerun spread: how far each engine's factor over a whole run moved from one run to another.
An honest 95% holds ×1 in at least 95% of cases and answers or decides in at most 5%.
"""
from __future__ import annotations

import itertools
import math
import statistics

from scipy import stats

from engines.base import AA_COPY, split_id
from harness.analysis import change, coverage, effect
from harness.analysis.compare import by_round
from harness.analysis.points import PointKey, group, trial_time
from harness.analysis.stats import CONFIDENCE
from harness.analysis.summary import format_seconds
from harness.machine.calibrations import factor, summary
from harness.text import clean, markdown_cell

WINDOW = 4  # rounds an interval is read over: a claim's planned trials and a deciding round
PLANTED = 1.5  # the factor the copy's trials are scaled by, on the boundary at the same factor
DESIGN = coverage.DESIGN  # the deciding rounds' looks
DESIGN_ROUNDS = DESIGN.first + DESIGN.most - 1  # one planted case's rounds: the first look's, then one a look
# The rounds a run needs for every kind of case: two windows (a floor beside an answer), one design.
MIN_ROUNDS = max(2 * WINDOW, DESIGN_ROUNDS)
# name: (what is counted, whether 95% promises at least CONFIDENCE of cases (else at most 1 - CONFIDENCE)).
SHARES = {
    "holds_paired": ("A/A intervals that hold ×1, paired by round, within a run", True),
    "holds_welch": ("A/A intervals that hold ×1, Welch, within a run", True),
    "holds_rerun": ("the same engine's intervals that hold ×1 from one run to the next, Welch", True),
    "answered_with_floor": ("A/A pairs answered faster or slower, with a floor (the pair's neighbouring rounds)",
                            False),
    "answered_without_floor": ("A/A pairs answered faster or slower, without a floor", False),
    "planted_decided": (f"planted boundary cases decided (the copy ×{PLANTED:g}, the deciding rule's looks)", False),
}
SHORT_P = 0.05  # a share whose binomial p against its promise is below this falls short of it


def pairs(trials: list[dict]) -> dict[PointKey, tuple[dict, dict]]:
    """{the original's point: (its time per trial by round, its copy's)} of one run's A/A pairs."""
    points = group(trials)
    found = {}
    for key, point in points.items():
        base, env = split_id(key.engine)
        if env.endswith(AA_COPY):
            left = env.removesuffix(AA_COPY)
            original = key._replace(engine=f"{base}@{left}" if left else base)
            if original in points:
                found[original] = (by_round(points[original], trial_time), by_round(point, trial_time))
    return found


def _spans(rounds, size: int) -> list[list]:
    ordered = sorted(rounds)
    return [ordered[i:i + size] for i in range(0, len(ordered) - size + 1, size)]


def _keep(sample: dict, rounds: list) -> dict:
    return {r: sample[r] for r in rounds if r in sample}


def _holds(e: effect.Effect) -> bool | None:
    """Whether the interval holds ×1; None (no case) where it gives none."""
    return None if e.low is None or effect.unbounded(e) else e.low <= 1 <= e.high


def _answered(e: effect.Effect, floor: change.Floor | None, threshold: float) -> bool | None:
    kind = change.time_answer(e, floor, threshold).kind
    return None if kind == "not measured" else kind in ("faster", "slower")


class Cases:
    """Each share's outcomes, by the original's point."""

    def __init__(self):
        self.seen: dict[str, dict[PointKey, list[bool]]] = {name: {} for name in SHARES}

    def add(self, name: str, key: PointKey, outcome: bool | None) -> None:
        if outcome is not None:
            self.seen[name].setdefault(key, []).append(outcome)

    def share(self, name: str, key: PointKey | None = None) -> dict:
        outcomes = [o for k, found in self.seen[name].items() if key in (None, k) for o in found]
        at_least = SHARES[name][1]
        promise = CONFIDENCE if at_least else 1 - CONFIDENCE
        count, cases = int(sum(outcomes)), len(outcomes)
        p = float(stats.binomtest(count, cases, promise, "less" if at_least else "greater").pvalue) if cases else None
        return {"share": count / cases if cases else None, "count": count, "cases": cases,
                "promise": f"{'≥' if at_least else '≤'} {promise:.0%}", "p": p,
                "short": p is not None and p < SHORT_P}


def within(cases: Cases, key: PointKey, a: dict, b: dict, threshold: float) -> None:
    """One run's A/A pair, window by window: its intervals and its answers."""
    spans = _spans(set(a) & set(b), WINDOW)
    aa = [effect.effect(_keep(a, span), _keep(b, span)) for span in spans]
    for k, span in enumerate(spans):
        cases.add("holds_paired", key, _holds(aa[k]))
        cases.add("holds_welch", key, _holds(effect.effect(_keep(a, span), _keep(b, span), paired=False)))
        cases.add("answered_without_floor", key, _answered(aa[k], None, threshold))
        floor = change.wider(*(change.floor_of(aa[n], "the neighbouring rounds") for n in (k - 1, k + 1)
                               if 0 <= n < len(aa)))
        if floor is not None:
            cases.add("answered_with_floor", key, _answered(aa[k], floor, threshold))


def planted(cases: Cases, key: PointKey, a: dict, b: dict) -> None:
    """One run's A/A pair, the copy scaled by PLANTED, decided by the deciding rule over each of its windows
    of the design's rounds."""
    for span in _spans(set(a) & set(b), DESIGN_ROUNDS):
        scaled = {r: v * PLANTED for r, v in _keep(b, span).items()}
        decision, _ = effect.sequential(_keep(a, span), scaled, (PLANTED,), DESIGN)
        cases.add("planted_decided", key, decision.decided)


def calibrate(runs: list[list[dict]], threshold: float) -> dict:
    """The calibration of the runs' trials (threshold: the change a "same" answer is asked about)."""
    cases, found = Cases(), [pairs(trials) for trials in runs]
    for run in found:
        for key, (a, b) in run.items():
            within(cases, key, a, b, threshold)
            planted(cases, key, a, b)
    moved = []
    for first, second in itertools.combinations(found, 2):
        for key in first.keys() & second.keys():
            for x, y in zip(first[key], second[key]):  # the original, then the copy
                for span_x, span_y in zip(_spans(x, WINDOW), _spans(y, WINDOW)):
                    cases.add("holds_rerun", key, _holds(effect.effect(_keep(x, span_x), _keep(y, span_y),
                                                                       paired=False)))
                factor = effect.effect(x, y, paired=False).estimate
                if factor:
                    moved.append(abs(math.log(factor)))
    keys = list(dict.fromkeys(key for run in found for key in run))
    return {"confidence": CONFIDENCE, "window": WINDOW, "planted_factor": PLANTED, "design": DESIGN.text(),
            "shares": {name: cases.share(name) for name in SHARES},
            "rerun_spread": {"median": math.exp(statistics.median(moved)), "largest": math.exp(max(moved)),
                             "cases": len(moved)} if moved else None,
            "points": [point_row(cases, key, [run[key][0] for run in found if key in run]) for key in keys]}


BY_POINT = ("holds_paired", "holds_welch", "holds_rerun", "planted_decided")  # the page's columns by point


def point_row(cases: Cases, key: PointKey, times: list[dict]) -> dict:
    """One original's point: its step (the geometric mean of its trials' times) and its cases, [count, cases]."""
    values = [v for sample in times for v in sample.values() if v > 0]
    shares = {name: cases.share(name, key) for name in BY_POINT}
    return {"engine": key.engine, "workload": key.workload, "params": key.params,
            "step_s": float(stats.gmean(values)) if values else None,
            **{name: [share["count"], share["cases"]] for name, share in shares.items()}}


def page(record: dict) -> str:
    """calibration.md: each share, its cases and what 95% promises; then by point; then the runs."""
    shares = record["shares"]
    lines = [f"# Calibration: {clean(str(record.get('machine', {}).get('cpu_model')))}, "
             f"{clean(str(record.get('machine', {}).get('os')))}", "",
             f"Made {clean(str(record.get('created_at')))} by "
             f"`burtbench calibrate --minutes {record.get('minutes'):g}`. "
             f"{summary(record)}.", "",
             f"Every engine ran beside an exact copy of itself in the same rounds, so every true factor is ×1. "
             f"An interval is read over {record['window']} rounds, as a claim's few trials are; the deciding "
             f"rule: {record['design']}.", "",
             "| what is counted | share | cases | 95% promises | reading |", "|---|---:|---:|---:|---|"]
    for name, (words, _) in SHARES.items():
        s = shares[name]
        reading = "no case" if not s["cases"] else (f"short of it (binomial p = {s['p']:.2g})" if s["short"]
                                                     else "consistent with it")
        value = f"{s['share']:.1%}" if s["share"] is not None else "n/a"
        lines.append(f"| {words} | {value} | {s['cases']} | {s['promise']} | {reading} |")
    spread = record.get("rerun_spread")
    lines += ["", f"Reruns here moved an engine's factor by {factor(spread['median'])} (median) and "
                  f"{factor(spread['largest'])} at most, over {spread['cases']} engines' points and pairs of runs."
              if spread else "Reruns: fewer than two runs measured the same point.", "",
              "| engine | workload | point | step | paired | Welch | run to run | planted decided |",
              "|---|---|---|---:|---:|---:|---:|---:|"]
    for row in record["points"]:
        counts = " | ".join(f"{row[name][0]}/{row[name][1]}" for name in BY_POINT)
        step = format_seconds(row["step_s"]) if row["step_s"] else "n/a"
        where = " | ".join(markdown_cell(row[name]) for name in ("engine", "workload", "params"))
        lines.append(f"| {where} | {step} "
                     f"| {counts} |")
    lines += ["", "Runs (each a normal `burtbench run --aa` folder):", ""]
    lines += [f"- {clean(str(run))}" for run in record.get("runs", [])]
    if record.get("simulation"):
        lines += ["", "## What the rules promise, simulated", "",
                  "The same rules on synthetic trials whose truth is known (harness/analysis/coverage.py: log-normal, "
                  "t3 tails and drift between rounds, 3 to 12 trials a side; runs shifted by a run-level factor), "
                  "seeded:", "", coverage.markdown([coverage.Result(**r) for r in record["simulation"]]).rstrip()]
    return "\n".join(lines) + "\n"
