"""How often each interval method of effect.py holds the machine's factor, and how often the deciding rule
decides a case whose truth sits on its boundary: simulated on synthetic machines whose truth is known.

A synthetic machine gives each engine's log time per round with one kind of noise a shared machine has:
independent rounds, heavy tails (t with 3 degrees of freedom), unequal variances of two engines, rounds
serially correlated (AR(1) 0.3 and 0.6), a sticky slow state that slows one engine for a while, a slow
drift of one engine, and a shift of the factor shared by all rounds of a run (sd 0.05 and 0.1). The
machine's factor is what runs give on average; one run's trials are one draw of it. Each rule is given
the Noise a calibration of that machine measures (noise.measure over MIN_RUNS synthetic runs, as
`burtbench calibrate` does on a real one), and is held to its stated level through every path a claim
takes: paired, Welch, the largest of rows held together, runs pooled as a level, and the deciding rule.
The same rules without the machine's noise ("plain", before) show what one run's trials alone promise.
The tests (tests/test_coverage.py) and `burtbench calibrate`'s page read the same table.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from harness.analysis.effect import MIN_TRIALS, effect, holds
from harness.analysis.looks import Looks, looked, sequential
from harness.analysis.noise import MIN_RUNS, PLAIN, Noise, measure
from harness.analysis.stats import CONFIDENCE
from harness.store.run_plan import MAX_DECIDING_ROUNDS

SPREAD = 0.08  # a trial's log noise (8%: a busy shared core)
NOISES = ("independent", "t3 tails", "unequal variances", "AR(1) 0.3", "AR(1) 0.6", "sticky state", "slow drift",
          "run shift 0.05", "run shift 0.1")
SIZES = (3, 5, 8)  # planned trials a side
ROWS = 5  # rows a maximum is taken over
CALIBRATION_ROUNDS = 40  # a synthetic calibration run's rounds
CALIBRATION_PAIRS = 6
SLOW = 0.14  # the sticky state's slowdown (log): ×1.15
BEYOND = 1.3  # a factor this far past its boundary: what the deciding batch is for
ENTER, LEAVE = 0.05, 0.2  # the sticky state's chances a round
# The deciding rounds' design: a claim's planned trials, then one batch of rounds that may decide it.
DESIGN = Looks(first=MIN_TRIALS, most=1 + (MAX_DECIDING_ROUNDS > 0))


@dataclass(frozen=True)
class Result:
    method: str
    measure: str  # "holds the machine's factor" | "decides a boundary case"
    noise: str
    cases: int
    share: float
    promise: str  # what the method states

    def as_dict(self) -> dict:
        return asdict(self)


def _ar(rng, n: int, rho: float) -> np.ndarray:
    """A stationary AR(1) series of unit variance."""
    out = np.empty(n)
    out[0] = rng.standard_normal()
    for i in range(1, n):
        out[i] = rho * out[i - 1] + math.sqrt(1 - rho * rho) * rng.standard_normal()
    return out


def _sticky(rng, n: int) -> np.ndarray:
    state = rng.random() < ENTER / (ENTER + LEAVE)
    out = np.empty(n)
    for i in range(n):
        out[i] = SLOW * state
        state = rng.random() >= LEAVE if state else rng.random() < ENTER
    return out


def machine_offset(kind: str) -> float:
    """What the noise adds to the log factor on average over runs (the sticky state's share of its slowdown)."""
    return SLOW * ENTER / (ENTER + LEAVE) if kind == "sticky state" else 0.0


def run(rng, kind: str, n: int, log_factor: float) -> tuple[dict, dict]:
    """One run's n rounds of engines A and B at one point: {round: time}."""
    a, b = SPREAD * rng.standard_normal(n), SPREAD * rng.standard_normal(n)
    if kind == "t3 tails":
        a, b = (SPREAD / math.sqrt(3) * rng.standard_t(3, n) for _ in range(2))
    elif kind == "unequal variances":
        a, b = SPREAD / 3 * rng.standard_normal(n), SPREAD * 1.5 * rng.standard_normal(n)
    elif kind.startswith("AR(1)"):
        rho = float(kind.split()[-1])
        a, b = SPREAD * _ar(rng, n, rho), SPREAD * _ar(rng, n, rho)
    elif kind == "sticky state":
        b = b + _sticky(rng, n)
    elif kind == "slow drift":
        b = b + 0.06 * _ar(rng, n, 0.97)
    elif kind.startswith("run shift"):
        b = b + float(kind.split()[-1]) * rng.standard_normal()
    return dict(enumerate(np.exp(a))), dict(enumerate(np.exp(b + log_factor)))


def calibrated(kind: str, seed: int = 1) -> Noise:
    """The Noise `burtbench calibrate` would measure on this synthetic machine."""
    rng = np.random.default_rng(seed)
    runs = [{(("p", k), "q"): run(rng, kind, CALIBRATION_ROUNDS, 0.3 * k) for k in range(CALIBRATION_PAIRS)}
            for _ in range(MIN_RUNS)]
    return measure(runs, MIN_TRIALS, source="calibrated on the synthetic machine")


def _holds(e, truth: float) -> bool:
    """A case with no interval counts as one that missed."""
    return holds(e, truth) is True


def _size(case: int) -> int:
    return SIZES[case % len(SIZES)]


def paths(kind: str, noise: Noise, cases: int, rng) -> list[Result]:
    """Every path's share of intervals that hold the machine's factor, with the machine's noise and plain."""
    truth = 1.7 * math.exp(machine_offset(kind))
    held = {name: 0 for name in ("paired", "Welch", f"largest of {ROWS} rows held together", "runs pooled as a level",
                                 "paired, plain (before)")}
    top = np.log([2.0, 2.0, 2.0, 1.9, 1.5])
    for case in range(cases):
        n = _size(case)
        a, b = run(rng, kind, n, math.log(1.7))
        held["paired"] += _holds(effect(a, b, noise=noise), truth)
        held["paired, plain (before)"] += _holds(effect(a, b), truth)
        held["Welch"] += _holds(effect(a, b, paired=False, noise=noise), truth)
        rows = [looked(*run(rng, kind, n, t), Looks(n), rows=ROWS, noise=noise) for t in top]
        largest = 2.0 * math.exp(machine_offset(kind))
        held[f"largest of {ROWS} rows held together"] += all(e.low is not None for e in rows) and \
            max(e.low for e in rows) <= largest <= max(e.high for e in rows)
        pa, pb = {}, {}
        for k in range(2 + case % 2):
            ra, rb = run(rng, kind, n, math.log(1.7))
            pa.update({k * 1000 + r: v for r, v in ra.items()})
            pb.update({k * 1000 + r: v for r, v in rb.items()})
        held["runs pooled as a level"] += _holds(effect(pa, pb, run_of=lambda r: r // 1000, noise=noise), truth)
    return [Result(name, "holds the machine's factor", kind, cases, count / cases,
                   f"≥ {CONFIDENCE:.0%}" if "before" not in name else f"{CONFIDENCE:.0%} of this run's trials only")
            for name, count in held.items()]


def boundary(kind: str, noise: Noise, cases: int, rng, design: Looks = DESIGN) -> list[Result]:
    """The machine's factor exactly on the claim's boundary: any decision is a wrong one, so the share
    decided is the rule's error over all its looks."""
    edge = 2.0 * math.exp(machine_offset(kind))
    decided = {"deciding rule": 0, "deciding rule, plain (before)": 0}
    for case in range(cases):
        a, b = run(rng, kind, design.first + MAX_DECIDING_ROUNDS, math.log(2.0))
        decided["deciding rule"] += sequential(a, b, (edge,), design, noise=noise)[0].decided
        decided["deciding rule, plain (before)"] += sequential(a, b, (edge,), design, noise=PLAIN)[0].decided
    return [Result(f"{name}: {design.text()}", "decides a boundary case", kind, cases, count / cases,
                   f"≤ {1 - CONFIDENCE:.0%}") for name, count in decided.items()]


def buys(kind: str, noise: Noise, cases: int, rng, design: Looks = DESIGN) -> Result:
    """What the deciding batch buys: the machine's factor BEYOND past the boundary, the share of the cases the
    plan's trials left undecided that the batch decides (none can where a run's shift alone spans)."""
    edge = 2.0 * math.exp(machine_offset(kind))
    undecided = decided = 0
    for _ in range(cases):
        a, b = run(rng, kind, design.first + MAX_DECIDING_ROUNDS, math.log(2.0 * BEYOND))
        decision, looks = sequential(a, b, (edge,), design, noise=noise)
        if looks > 1 or not decision.decided:
            undecided += 1
            decided += decision.decided
    return Result(f"deciding batch: the factor ×{BEYOND:g} past the boundary", "decides what the plan left undecided",
                  kind, undecided, decided / undecided if undecided else 0.0, "what at most "
                  f"{MAX_DECIDING_ROUNDS} more rounds buy")


def one_noise(kind: str, cases: int, seed: int) -> list[Result]:
    rng = np.random.default_rng([seed, NOISES.index(kind)])
    noise = calibrated(kind)
    return paths(kind, noise, cases, rng) + boundary(kind, noise, cases, rng) + [buys(kind, noise, cases // 4, rng)]


def simulate(cases: int = 2000, seed: int = 0, kinds: tuple[str, ...] = NOISES, workers: int = 1) -> list[Result]:
    """Every noise's table; each noise seeded of its own, so the table is the same however many workers."""
    if workers <= 1:
        return [r for kind in kinds for r in one_noise(kind, cases, seed)]
    from concurrent.futures import ProcessPoolExecutor  # only where a caller has cores to spare
    with ProcessPoolExecutor(workers) as pool:
        return [r for found in pool.map(one_noise, kinds, [cases] * len(kinds), [seed] * len(kinds)) for r in found]


def markdown(results: list[Result]) -> str:
    rows = ["| noise | method | measure | cases | share | stated |", "|---|---|---|---|---|---|"]
    rows += [f"| {r.noise} | {r.method} | {r.measure} | {r.cases:,} | {r.share:.1%} | {r.promise} |" for r in results]
    return "\n".join(rows) + "\n"
