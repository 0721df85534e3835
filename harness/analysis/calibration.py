"""What a machine makes of the stated 95%, read from several runs of one plan (`burtbench calibrate`), and
what it adds beyond one run's rounds (harness/analysis/noise.py): the correlation of rounds within a run and
a run's own shift of a factor.

Every two engines measured at one point make a pair, its factor the ratio of their times: pairs of different
engines (what a claim's factor is) and each engine beside its exact A/A copy (run --aa; true factor ×1). The
machine's factor of a pair is what the runs agree on: the mean of the other runs' factors, so that no run
judges its own case.
- noise: the lag correlations of a pair's per-round log ratio within a run, and the run-to-run standard
  deviation of its run factor beyond its rounds' share (method of moments, pooled over pairs); its degrees
  of freedom are the runs less one, since a machine's state moves every pair of a run at once;
- holds: an interval over WINDOW rounds of one run (a claim's planned trials) holds the machine's factor,
  read with this run's rounds only (plain) and with the noise the other runs measured (the claims' rule);
- planted: the other engine's trials scaled so that the machine's factor sits on a boundary, then judged
  through every path a claim takes (PLANTED_PATHS: the deciding rule paired and unpaired, as a flat claim's
  sweep ends are, a plan of --trials N, --adaptive's looks, rows held together, two runs pooled): any
  decision is an error;
- answered: change.time_answer calls an A/A pair faster or slower, without a floor and with the floor of the
  pair's neighbouring windows.
A run's cases share its state, so every share is a mean of the runs' own shares, with a t interval over
the runs: "short" where the whole interval lies on the wrong side of what 95% promises.
"""
from __future__ import annotations

import itertools
import json
import math
import statistics

import numpy as np
from scipy import stats

from engines.base import AA_COPY, split_id
from harness.analysis import change, coverage, effect
from harness.analysis.compare import by_round
from harness.analysis.looks import Looks, looked, sequential
from harness.analysis.noise import PLAIN, Noise, from_record, log_ratios as _logs, measure
from harness.analysis.points import group, trial_time
from harness.analysis.stats import CONFIDENCE
from harness.analysis.summary import format_seconds, shown_params
from harness.machine.calibrations import factor, summary
from harness.store.run_plan import DEFAULT_MAX_TRIALS, MAX_DECIDING_ROUNDS
from harness.text import clean, markdown_cell

WINDOW = effect.MIN_TRIALS  # rounds an interval is read over: a claim's planned trials
PLANTED = 1.5  # the factor the other engine's trials are scaled by, on the boundary at that factor
DESIGN = coverage.DESIGN  # the deciding rounds' looks
TRIALS_ASKED = 8  # a plan of `run --trials 8`, as the README's versions example asks
ROWS = 3  # rows a claim holds together (a largest factor over a sweep): windows of one pair side by side
# Planted cases by the path they take: (its words, the looks a point of that plan takes, paired).
PLANTED_PATHS = {
    "planted_noise": ("the deciding rule's looks", DESIGN, True),
    "planted_welch": ("the same looks unpaired (Welch: a flat claim's sweep ends)", DESIGN, False),
    "planted_trials": (f"a plan of --trials {TRIALS_ASKED}", Looks(TRIALS_ASKED, DESIGN.most), True),
    "planted_adaptive": (f"--adaptive's looks (--max-trials {DEFAULT_MAX_TRIALS})",
                         Looks(WINDOW, DESIGN.most + DEFAULT_MAX_TRIALS), True),
}


def design_rounds(looks: Looks) -> int:
    """The most rounds a point of that design takes: its first look, then one batch or one round a look."""
    return looks.first + (MAX_DECIDING_ROUNDS if looks.most == 2 else looks.most - 1)


# A run's rounds: windows side by side for rows held together, and every planted design once.
MIN_ROUNDS = max(ROWS * WINDOW, *(design_rounds(looks) for _, looks, _ in PLANTED_PATHS.values()))
# name: (what is counted, whether 95% promises at least CONFIDENCE of cases (else at most 1 - CONFIDENCE)).
SHARES = {
    "holds_noise": ("intervals that hold the machine's factor, with the noise the other runs measured "
                    "(the claims' rule)", True),
    "holds_plain": ("intervals that hold the machine's factor, from one run's rounds alone (no run level)", True),
    **{name: (f"planted boundary cases decided (×{PLANTED:g}): {words}, with the noise", False)
       for name, (words, _, _) in PLANTED_PATHS.items()},
    "planted_rows": (f"planted boundary cases decided (×{PLANTED:g}): the largest of {ROWS} rows held together, "
                     "with the noise", False),
    "planted_pooled": (f"planted boundary cases decided (×{PLANTED:g}): two runs pooled as a level, with the "
                       "machine's run component", False),
    "planted_plain": (f"planted boundary cases decided (×{PLANTED:g}): the deciding rule's looks, no run level "
                      "(before)", False),
    "answered_with_floor": ("A/A pairs answered faster or slower, with a floor (the pair's neighbouring rounds)",
                            False),
    "answered_without_floor": ("A/A pairs answered faster or slower, without a floor", False),
}
Pair = tuple  # (point key of the first engine, the second engine's id)


def pairs(trials: list[dict]) -> dict[Pair, tuple[dict, dict]]:
    """{(first engine's point, second engine): (first's time by round, second's)} of every two engines measured
    at one point of one run: A/A copies beside their originals, and different engines."""
    by_point: dict[tuple, list] = {}
    for key, point in group(trials).items():
        by_point.setdefault((key.workload, key.params), []).append((key, by_round(point, trial_time)))
    found = {}
    for members in by_point.values():
        for (key_a, a), (key_b, b) in itertools.combinations(sorted(members, key=lambda m: m[0].engine), 2):
            if len(set(a) & set(b)) >= WINDOW:
                found[(key_a, key_b.engine)] = (a, b)
    return found


def is_copy(pair: Pair) -> bool:
    """An engine beside its own A/A copy: the true factor is ×1."""
    (key, other) = pair
    base, env = split_id(other)
    return env.endswith(AA_COPY) and key.engine == (f"{base}@{env.removesuffix(AA_COPY)}"
                                                    if env.removesuffix(AA_COPY) else base)


def _machine_factor(runs: list[dict], index: int, pair: Pair, also: int | None = None) -> float | None:
    """The pair's factor over every run but `index` (and `also`): what the machine gives, judged apart from
    the runs judged."""
    logs = [_logs(*run[pair])[1].mean() for k, run in enumerate(runs) if k not in (index, also) and pair in run]
    return math.exp(float(np.mean(logs))) if logs else None


class Cases:
    """Each share's outcomes, by run and by pair."""

    def __init__(self):
        self.seen: dict[str, dict[tuple[int, Pair], list[bool]]] = {name: {} for name in SHARES}

    def add(self, name: str, run: int, pair: Pair, outcome: bool | None) -> None:
        if outcome is not None:
            self.seen[name].setdefault((run, pair), []).append(outcome)

    def share(self, name: str, pair: Pair | None = None) -> dict:
        """The share over the runs: each run's share, their mean and a t interval over runs (a run's cases
        move together); short where the interval lies wholly on the wrong side of the promise."""
        per_run: dict[int, list[bool]] = {}
        for (run, p), found in self.seen[name].items():
            if pair in (None, p):
                per_run.setdefault(run, []).extend(found)
        at_least = SHARES[name][1]
        promise = CONFIDENCE if at_least else 1 - CONFIDENCE
        shares = [sum(o) / len(o) for o in per_run.values() if o]
        cases = sum(len(o) for o in per_run.values())
        count = sum(sum(o) for o in per_run.values())
        mean = float(np.mean(shares)) if shares else None
        low = high = None
        if len(shares) >= 2:
            half = float(stats.t.ppf((1 + CONFIDENCE) / 2, len(shares) - 1)) * float(np.std(shares, ddof=1)) / \
                math.sqrt(len(shares))
            low, high = max(mean - half, 0.0), min(mean + half, 1.0)
        short = high is not None and (high < promise if at_least else low > promise)
        return {"share": mean, "count": int(count), "cases": cases, "runs": [round(s, 4) for s in shares],
                "low": low, "high": high, "promise": f"{'≥' if at_least else '≤'} {promise:.0%}", "short": short}


def _windows(rounds, size: int) -> list[list]:
    ordered = sorted(rounds)
    return [ordered[i:i + size] for i in range(0, len(ordered) - size + 1, size)]


def _keep(sample: dict, rounds: list) -> dict:
    return {r: sample[r] for r in rounds if r in sample}


def judged(cases: Cases, runs: list[dict], index: int, noise: Noise, threshold: float) -> None:
    """Run `index`'s pairs, window by window, against the machine's factor the other runs give."""
    for pair, (a, b) in runs[index].items():
        truth = 1.0 if is_copy(pair) else _machine_factor(runs, index, pair)
        if truth is None:
            continue
        for window in _windows(set(a) & set(b), WINDOW):
            wa, wb = _keep(a, window), _keep(b, window)
            cases.add("holds_plain", index, pair, effect.holds(effect.effect(wa, wb), truth))
            cases.add("holds_noise", index, pair, effect.holds(effect.effect(wa, wb, noise=noise), truth))
        planted(cases, runs, index, pair, truth, noise)
        if is_copy(pair):
            answered(cases, index, pair, a, b, threshold)


def planted(cases: Cases, runs: list[dict], index: int, pair: Pair, truth: float, noise: Noise) -> None:
    """Run `index`'s pair with the second engine's trials scaled by PLANTED, judged against the boundary at
    the machine's factor times PLANTED through each path a claim takes: every decision is a wrong one."""
    a, b = runs[index][pair]
    scaled = {r: v * PLANTED for r, v in b.items()}
    edge = (truth * PLANTED,)
    judged = [(name, looks, paired, noise) for name, (_, looks, paired) in PLANTED_PATHS.items()]
    for name, looks, paired, used in [*judged, ("planted_plain", DESIGN, True, PLAIN)]:
        for span in _windows(set(a) & set(b), design_rounds(looks)):
            decision, _ = sequential(_keep(a, span), _keep(scaled, span), edge, looks, paired, noise=used)
            cases.add(name, index, pair, decision.decided)
    windows = _windows(set(a) & set(b), WINDOW)
    for k in range(0, len(windows) - ROWS + 1, ROWS):
        rows = [looked(_keep(a, w), _keep(scaled, w), DESIGN, rows=ROWS, noise=noise) for w in windows[k:k + ROWS]]
        if all(e.low is not None for e in rows):
            low, high = max(e.low for e in rows), max(e.high for e in rows)
            cases.add("planted_rows", index, pair, not low <= edge[0] <= high)
    pooled_with(cases, runs, index, pair, noise)


def pooled_with(cases: Cases, runs: list[dict], index: int, pair: Pair, noise: Noise) -> None:
    """Run `index`'s windows of the pair pooled with the next run's, as `burtbench claims` pools two runs, the
    boundary at the factor of the runs left out times PLANTED."""
    other = (index + 1) % len(runs)
    truth = 1.0 if is_copy(pair) else _machine_factor(runs, index, pair, also=other)
    if other == index or pair not in runs[other] or truth is None:
        return
    (a, b), (c, d) = runs[index][pair], runs[other][pair]
    for mine, theirs in zip(_windows(set(a) & set(b), WINDOW), _windows(set(c) & set(d), WINDOW)):
        pa = {(0, r): a[r] for r in mine} | {(1, r): c[r] for r in theirs}
        pb = {(0, r): b[r] * PLANTED for r in mine} | {(1, r): d[r] * PLANTED for r in theirs}
        found = effect.effect(pa, pb, run_of=lambda key: key[0], noise=noise)
        if found.low is not None:
            cases.add("planted_pooled", index, pair, not found.low <= truth * PLANTED <= found.high)


def answered(cases: Cases, index: int, pair: Pair, a: dict, b: dict, threshold: float) -> None:
    spans = _windows(set(a) & set(b), WINDOW)
    aa = [effect.effect(_keep(a, span), _keep(b, span)) for span in spans]
    for k in range(len(spans)):
        kind = change.time_answer(aa[k], None, threshold).kind
        cases.add("answered_without_floor", index, pair, None if kind == "not measured" else kind in ("faster", "slower"))
        floor = change.wider(*(change.floor_of(aa[n], "the neighbouring rounds") for n in (k - 1, k + 1)
                               if 0 <= n < len(aa)))
        if floor is not None:
            kind = change.time_answer(aa[k], floor, threshold).kind
            cases.add("answered_with_floor", index, pair, None if kind == "not measured" else kind in ("faster", "slower"))


def calibrate(runs_trials: list[list[dict]], threshold: float) -> dict:
    """The calibration of the runs' trials (threshold: the change a "same" answer is asked about)."""
    runs = [pairs(trials) for trials in runs_trials]
    cases = Cases()
    for index in range(len(runs)):
        others = [run for k, run in enumerate(runs) if k != index]
        judged(cases, runs, index, measure(others, WINDOW) if len(others) >= 2 else PLAIN, threshold)
    moved = [abs(float(_logs(*x[pair])[1].mean() - _logs(*y[pair])[1].mean()))
             for x, y in itertools.combinations(runs, 2) for pair in x.keys() & y.keys() if not is_copy(pair)]
    noise = measure(runs, WINDOW, source="measured by `burtbench calibrate`")
    keys = list(dict.fromkeys(pair for run in runs for pair in run))
    return {"confidence": CONFIDENCE, "window": WINDOW, "planted_factor": PLANTED, "design": DESIGN.text(),
            "noise": noise.record(), "runs_count": len(runs),
            "shares": {name: cases.share(name) for name in SHARES},
            "rerun_spread": {"median": math.exp(statistics.median(moved)), "largest": math.exp(max(moved)),
                             "cases": len(moved)} if moved else None,
            "points": [point_row(cases, pair, runs) for pair in keys]}


BY_POINT = ("holds_noise", "holds_plain", "planted_noise")  # the page's columns by pair


def point_row(cases: Cases, pair: Pair, runs: list[dict]) -> dict:
    """One pair: its step (the first engine's geometric mean time), its factor over the runs, its cases."""
    key, other = pair
    values = [v for run in runs if pair in run for v in run[pair][0].values() if v > 0]
    logs = [float(_logs(*run[pair])[1].mean()) for run in runs if pair in run]
    return {"engine": key.engine, "other": other, "workload": key.workload, "params": key.params,
            "step_s": float(stats.gmean(values)) if values else None,
            "factor": math.exp(float(np.mean(logs))) if logs else None,
            **{name: [cases.share(name, pair)["count"], cases.share(name, pair)["cases"]] for name in BY_POINT}}


def _share_cell(s: dict) -> str:
    if not s["cases"]:
        return "n/a | 0 | | no case"
    interval = f"[{s['low']:.1%}, {s['high']:.1%}]" if s["low"] is not None else "(one run)"
    reading = "short of it" if s["short"] else "consistent with it"
    return f"{s['share']:.1%} {interval} | {s['cases']} in {len(s['runs'])} runs | {s['promise']} | {reading}"


def page(record: dict) -> str:
    """calibration.md: the noise measured, each share over the runs, then by pair, then the runs."""
    machine = record.get("machine", {})
    measured = from_record(record.get("noise"), "")
    lines = [f"# Calibration: {clean(str(machine.get('host')))}, {clean(str(machine.get('cpu_model')))}, "
             f"{clean(str(machine.get('os')))}, core {clean(str(machine.get('cpu')))}", "",
             f"Made {clean(str(record.get('created_at')))} by `burtbench calibrate --minutes {record.get('minutes'):g}` "
             f"over {record.get('runs_count')} runs. {summary(record)[:1].upper()}{summary(record)[1:]}.", "",
             "## What this machine adds beyond one run's rounds", "",
             *(["- The record's noise is damaged or of an older kind: runs here use the assumed one until "
                "`burtbench calibrate` is run again."] if measured is None else [
                 f"- A run's factor moves by ×/÷{math.exp(measured.between_sd):.3f} (one standard deviation) from run "
                 f"to run beyond what its rounds show, measured over {record.get('runs_count')} runs "
                 f"({measured.between_df:g} degrees of freedom).",
                 "- Rounds of one pair correlate by " + ", ".join(f"{measured.rho(k):.2f}" for k in range(1, 5)) +
                 " at lags 1 to 4 (a state that lasts several rounds).",
                 "- Every claim's interval of a run on this machine and core adds both "
                 "(harness/analysis/noise.py), so that its 95% answers what another run here would give."]), "",
             "## How often the rules hold here", "",
             f"Every two engines at a point make a pair: different engines (a claim's factor) and each engine beside "
             f"its A/A copy (true factor ×1). The machine's factor of a pair is the mean of the other runs' factors. "
             f"An interval is read over {record['window']} rounds, as a claim's planned trials are; the deciding rule: "
             f"{record['design']}. Each share is the mean of the runs' own shares, with a 95% interval over the runs "
             "(a run's cases move together).", "",
             "| what is counted | share [over runs] | cases | 95% promises | reading |", "|---|---:|---:|---:|---|"]
    for name, (words, _) in SHARES.items():
        lines.append(f"| {words} | {_share_cell(record['shares'][name])} |")
    spread = record.get("rerun_spread")
    lines += ["", f"Reruns here moved a factor of two engines by {factor(spread['median'])} (median) and "
                  f"{factor(spread['largest'])} at most, over {spread['cases']} pairs and pairs of runs."
              if spread else "Reruns: fewer than two runs measured the same pair.", "",
              "| engine | over | workload | point | step | factor | holds (noise) | holds (plain) | planted decided |",
              "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for row in record["points"]:
        counts = " | ".join(f"{row[name][0]}/{row[name][1]}" for name in BY_POINT)
        step = format_seconds(row["step_s"]) if row["step_s"] else "n/a"
        fx = f"×{row['factor']:.3g}" if row.get("factor") else "n/a"
        where = " | ".join(markdown_cell(text) for text in (row["engine"], row["other"], row["workload"],
                                                            shown_params(row["workload"], json.loads(row["params"])).strip() or "—"))
        lines.append(f"| {where} | {step} | {fx} | {counts} |")
    lines += ["", "Runs (each a normal `burtbench run --aa` folder):", ""]
    lines += [f"- {clean(str(run))}" for run in record.get("runs", [])]
    if record.get("simulation"):
        lines += ["", "## What the rules promise, simulated", "",
                  "The same rules on synthetic trials whose truth is known (harness/analysis/coverage.py), seeded:",
                  "", coverage.markdown([coverage.Result(**r) for r in record["simulation"]]).rstrip()]
    return "\n".join(lines) + "\n"
