"""The looks a run takes at its rounds (harness/analysis/effect.py computes each look's interval).

Looking again after every added round would spend the 5% error once per look (a boundary case
decided 17.7% of the time after 8 looks at a nominal 95%). `Looks` is the declared sequential
design every interval of a claim is computed at: the first look (the plan's trials) spends
FIRST_SHARE of the error. Rounds for undecided claims come as one batch, sized to decide, at one
second look that spends the rest (Bonferroni: it holds whatever the noise, and the batch's rounds
narrow it where one round a look could not); --adaptive's trials, one a look, share the rest at one
nominal level (Pocock-type), found from the joint law of the looks' t statistics under normal noise.
`sequential` is that rule run over a sample's rounds in order.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

from harness.analysis.effect import CONFIDENCE, Decision, Effect, decide, effect, in_order, one_run, positive
from harness.analysis.noise import PLAIN, Noise
from harness.store.run_plan import MAX_DECIDING_ROUNDS

FIRST_SHARE = 0.8  # of the error, spent at the first look: most claims are decided there, far from a boundary
SIMULATED_PATHS = 200_000  # of the looks' t statistics: the level found is within ~0.001 of its error


@dataclass(frozen=True)
class Looks:
    """The sequential design: the first look at `first` rounds, then at most `most` - 1 later looks, with the
    error over all of them within 1 - CONFIDENCE. Two looks: the later one is one batch of rounds (the
    deciding rounds), at the rest of the error; more: one round a look (--adaptive), Pocock-type."""
    first: int
    most: int = 1

    def confidence(self, look: int) -> float:
        """The level of the interval at look `look` (1: the first; past `most`: the last look's)."""
        if self.most <= 1:
            return CONFIDENCE
        error = 1 - CONFIDENCE
        if look <= 1:
            return 1 - FIRST_SHARE * error
        if self.most == 2:
            return 1 - (1 - FIRST_SHARE) * error
        return 1 - _added_level(max(self.first, 2), self.most)

    def look_of(self, n: int) -> int:
        """The look a sample of n rounds is at (the first at `first` or fewer)."""
        return min(max(n - self.first + 1, 1), self.most)

    def text(self) -> str:
        error = 1 - CONFIDENCE
        if self.most <= 1:
            return f"one look: {CONFIDENCE:.0%} intervals"
        first = f"{CONFIDENCE:.0%} over up to {self.most} looks: the first ({self.first} trials) at {1 - FIRST_SHARE * error:.0%}"
        if self.most == 2:
            return (f"{first}, then one batch of added rounds at {self.confidence(2):.0%} (the error split between "
                    "the two looks, which holds whatever the noise)")
        return (f"{first}, each of up to {self.most - 1} added rounds at "
                f"{self.confidence(2):.2%} (error spent by look, Pocock-type after the first)")


@lru_cache(maxsize=None)
def _added_level(first: int, most: int) -> float:
    """The one nominal error of every added look such that, with FIRST_SHARE of the error at the first,
    some look's interval misses the truth in 1 - CONFIDENCE of normal samples. The t statistics' joint
    law does not depend on the noise's scale, so one seeded simulation of it serves every sample."""
    rng = np.random.default_rng(first * 1000 + most)
    steps = rng.standard_normal((SIMULATED_PATHS, first + most - 1))
    p_values = []
    for n in range(first, first + most):
        head = steps[:, :n]
        t = head.mean(axis=1) / (head.std(axis=1, ddof=1) / math.sqrt(n))
        p_values.append(2 * stats.t.sf(np.abs(t), n - 1))
    error = 1 - CONFIDENCE
    missed_first = p_values[0] < FIRST_SHARE * error
    later = np.min(p_values[1:], axis=0)[~missed_first]
    allowed = int(error * SIMULATED_PATHS) - int(missed_first.sum())  # paths the added looks may still miss on
    return float(np.sort(later)[allowed - 1]) if allowed > 0 else 0.0


def looked(a: dict, b: dict, looks: Looks, paired: bool = True, rows: int = 1, run_of=None,
           noise: Noise = PLAIN) -> Effect:
    """B / A at the level of the look its rounds are at; `rows`: the intervals that must hold together
    (a maximum over rows), each at its share of the error (Bonferroni). Runs pooled as a level were each
    looked at by their own run: their interval is at the stated level."""
    a, b, run_of = one_run(a, b, run_of)
    n = min(len(positive(a)), len(positive(b)))
    pooled = run_of is not None and len({run_of(k) for k in (*a, *b)}) > 1
    level = CONFIDENCE if pooled else looks.confidence(looks.look_of(n))
    return effect(a, b, paired, 1 - (1 - level) / max(rows, 1), run_of, noise)


def sequential(a: dict, b: dict, boundaries: tuple[float, ...], looks: Looks, paired: bool = True,
               noise: Noise = PLAIN) -> tuple[Decision, int]:
    """The deciding rule over a sample's rounds in order: the first look at looks.first rounds; where it
    is undecided, the rounds its interval asks for (at the level they will be judged at) as one batch, the
    second look (more looks: one round each); (decision, looks used)."""
    rounds = in_order(set(a) & set(b) if paired else set(a) | set(b))
    used, look, decision = looks.first, 1, Decision(None, why="no look")
    while True:
        kept = set(rounds[:used])
        found = effect({k: v for k, v in a.items() if k in kept}, {k: v for k, v in b.items() if k in kept},
                       paired, looks.confidence(look), noise=noise)
        decision = decide(found, boundaries, looks.confidence(look + 1) if look < looks.most else None)
        if decision.decided or look >= looks.most or used >= len(rounds) or (looks.most == 2 and not decision.more):
            return decision, look
        used += min(decision.more, MAX_DECIDING_ROUNDS) if looks.most == 2 else 1
        look += 1
