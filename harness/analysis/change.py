"""The one answer to "did B change against A?" (versions tables, compare, the run's closing lines):
faster, slower, same, undecided or not measured, from the factor's interval (harness/analysis/effect.py),
the noise floor an A/A pair measured, and instruction counts where time cannot decide.

An answer without a floor cannot know the noise it was measured in (a run's own rounds are all it has):
whatever its kind, it says so and why. An interval that reaches 0 or ∞ bounds no change: undecided."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from harness.analysis.effect import MIN_TRIALS, MOST_MORE, Effect, decide, unbounded
from harness.analysis.stats import CONFIDENCE

# The change an answer is asked to decide by default ("same" is within it; a floor wider than it decides
# nothing): `compare --change PCT` asks about another size.
ASKED_CHANGE = 0.05


def asked(pct: float | None) -> float:
    """The change asked about, as a share: `--change PCT`, else ASKED_CHANGE."""
    return ASKED_CHANGE if pct is None else pct / 100
# Instruction counts repeat to within this share (measured: 0.03%): a smaller difference is none.
INSTRUCTIONS_TOLERANCE = 0.005


@dataclass(frozen=True)
class Floor:
    """The noise floor an A/A pair (a variant against an exact copy of itself) measured: its ratio's
    interval reaches at most ×/÷factor from 1, the smallest change this machine tells apart now."""
    factor: float
    pair: str  # the variant whose A/A pair measured it
    spread: float | None = None  # sd of one round's log ratio: what rounds narrow
    n: int = 0  # the rounds it was measured over

    def text(self) -> str:
        return f"×/÷{self.factor:.3g} (A/A of {self.pair})"

    def rounds_for(self, change: float) -> int | None:
        """The rounds at which, with the spread seen, the floor would be narrower than a change of `change`
        (a share): an exact copy's ratio is ×1, so rounds narrow the floor as they narrow its interval;
        None where more than MOST_MORE more would be needed."""
        if not self.spread or math.isinf(self.factor):
            return None
        room = math.log1p(change)
        n = np.arange(max(self.n, MIN_TRIALS), self.n + MOST_MORE + 1)
        narrow = np.nonzero(stats.t.ppf((1 + CONFIDENCE) / 2, n - 1) * self.spread / np.sqrt(n) < room)[0]
        return int(n[narrow[0]]) if len(narrow) else None


# Why an answer has no floor, in its words "(no A/A floor: …)".
NO_AA = "--no-aa"
TWO_RUNS = "two separate runs"  # an A/A pair measures the noise within one run, never between two


def no_floor(copies: bool) -> str:
    """Why an answer of one run has no floor: its A/A pairs gave none, or it ran none."""
    return "its A/A pair gave no interval" if copies else NO_AA


def floor_of(aa: Effect, pair: str) -> Floor | None:
    if aa.low is None:
        return None
    if unbounded(aa):  # a pair that bounds nothing leaves every change inside the noise
        return Floor(math.inf, pair)
    return Floor(max(aa.high, 1 / aa.low), pair, aa.spread, aa.n)


def wider(*floors: Floor | None) -> Floor | None:
    found = [f for f in floors if f is not None]
    return max(found, key=lambda f: f.factor) if found else None


@dataclass(frozen=True)
class Answer:
    """The one answer to "did B change against A?": faster, slower, same, undecided or not measured."""
    kind: str
    text: str
    decided_by: str = ""  # "time", "instructions", "time and instructions"; "" when undecided
    more: int | None = None  # rounds that would decide it, where undecided and more can
    trials: int | None = None  # the --trials N (per point) that would decide it, where more rounds can


def _percent(x: float) -> str:
    return f"{abs(x) * 100:.1f}%"


def _span(e: Effect) -> str:
    return f"[{e.low:.3f}, {e.high:.3f}]"


def _ratio(e: Effect) -> str:
    """B/A with its 95% interval, as every answer states it."""
    return f"B/A {e.estimate:.3f} {_span(e)}" if e.low is not None else f"B/A {e.estimate:.3g}"


def _trials(n: int) -> str:
    return f"{n} trial{'s' if n != 1 else ''} a side"


def time_answer(e: Effect, floor: Floor | None, threshold: float, without: str = "") -> Answer:
    """Wall time alone: faster or slower where the whole interval lies beyond the floor (beyond ×1
    without one); the same where it lies within the floor and that floor is narrower than the change
    the user asks about (1 + threshold; without a floor, within the threshold itself); else undecided,
    with what would decide it. Every answer states B/A with its interval and the floor it was held to.
    `without`: why there is no floor, said after every answer that has none ('' where no floor
    applies: memory, init time)."""
    answer = _by_time(e, floor, threshold)
    if floor or not without or answer.kind == "not measured":
        return answer
    return Answer(answer.kind, f"{answer.text} (no A/A floor: {without})", answer.decided_by, answer.more, answer.trials)


def _by_time(e: Effect, floor: Floor | None, threshold: float) -> Answer:
    if e.estimate is None:
        return Answer("not measured", f"not measured ({e.why})")
    if unbounded(e):
        return Answer("undecided", f"undecided: {_span(e) if e.low is not None else f'×{e.estimate:.3g}'} "
                                   f"{unbounded(e)}: it bounds no change")
    if e.low is None:
        return Answer("undecided", f"undecided: {_ratio(e)}, {_trials(e.n)} ({MIN_TRIALS} give an interval)",
                      more=MIN_TRIALS - e.n, trials=MIN_TRIALS)
    change = 1 + threshold
    edge = floor.factor if floor else 1.0
    beyond = f", beyond the floor {floor.text()}" if floor else ""
    if e.high < 1 / edge:
        return Answer("faster", f"faster by {_percent(1 - e.estimate)}: {_ratio(e)}{beyond}", "time")
    if e.low > edge:
        return Answer("slower", f"slower by {_percent(e.estimate - 1)}: {_ratio(e)}{beyond}", "time")
    if floor and floor.factor > change:
        rounds = floor.rounds_for(threshold)
        how = (f"--trials {rounds} would narrow it" if rounds else
               f"more than {MOST_MORE} more rounds would be needed to narrow it")
        return Answer("undecided", f"undecided: {_ratio(e)}; the floor {floor.text()} is wider than the "
                                   f"{_percent(threshold)} change asked about: {how}", trials=rounds)
    if 1 / change <= e.low and e.high <= change:
        within = f"the floor {floor.text()}" if floor else f"±{_percent(threshold)}"
        return Answer("same", f"same within {within}: {_ratio(e)}", "time")
    decision = decide(e, tuple(sorted({1 / edge, edge, 1 / change, change})))
    more = f"; ≈ {decision.more} more trials a side would decide it" if decision.more else ""
    held = f" (the floor {floor.text()})" if floor else ""
    return Answer("undecided", f"undecided: {_ratio(e)} spans {' and '.join(f'×{b:.3g}' for b in decision.straddles)}"
                               f"{held}{more}", more=decision.more,
                  trials=e.n + decision.more if decision.more else None)


def change_answer(time: Effect, floor: Floor | None, threshold: float, instructions: Effect | None = None,
                  without: str = "") -> Answer:
    """The answer every surface prints (versions table, compare, the run's closing lines): wall time
    first; where it cannot call a change, instruction counts (a proxy, deterministic) decide if they
    were counted and bound their ratio. `without`: as time_answer's."""
    by_time = time_answer(time, floor, threshold, without)
    if (by_time.kind in ("faster", "slower") or instructions is None or instructions.estimate is None
            or unbounded(instructions)):
        return by_time
    differ = instructions.estimate - 1
    spread = max(INSTRUCTIONS_TOLERANCE, (instructions.high / instructions.estimate - 1) if instructions.low else 0)
    if abs(differ) > spread:
        word = "more" if differ > 0 else "fewer"
        return Answer("slower" if differ > 0 else "faster",
                      f"{_percent(differ)} {word} instructions (±{_percent(spread)}); time {by_time.text}",
                      "instructions")
    if by_time.kind == "same":
        return Answer("same", f"{by_time.text}; instructions within ±{_percent(spread)}", "time and instructions")
    return Answer("same", f"same instructions (within ±{_percent(spread)}); time {by_time.text}", "instructions")
