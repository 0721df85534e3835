"""--shard K/N: one of N parts of a plan, for N machines that each run one and merge the results.

A point (engine × workload point) is never split: all its trials run on one machine, so its
statistics never mix machines. Points go to shards by their estimated cost, largest first, each
to the shard with the least so far (ties: the lower shard), so the split depends only on the plan
and the estimates: every machine given the same plan and the same estimates computes the same split.
"""
from __future__ import annotations

import re

from harness.errors import UsageError
from harness.planning.estimate import Estimator
from harness.planning.plan import PlannedTrial
from harness.store.results import params_key


def parse(text: str) -> tuple[int, int]:
    """'2/4' -> (2, 4), shards counted from 1."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise UsageError(f"--shard {text}: expected K/N with 1 ≤ K ≤ N, e.g. 1/4")
    return int(match.group(1)), int(match.group(2))


def point_id(pt: PlannedTrial) -> list:
    """A point as plain JSON data (what the manifest records of a shard)."""
    return [pt.engine.id, pt.workload.name, params_key(pt.params)]


def split(plan: list[PlannedTrial], count: int, trial_s) -> list[list[list]]:
    """The points of each of `count` shards (in plan order), balanced by `trial_s(pt)`."""
    cost: dict[tuple, float] = {}
    for pt in plan:
        key = tuple(point_id(pt))
        cost[key] = cost.get(key, 0.0) + trial_s(pt)
    load, owner = [0.0] * count, {}
    for key in sorted(cost, key=lambda k: -cost[k]):  # stable: equal costs keep plan order
        shard = min(range(count), key=lambda s: (load[s], s))
        load[shard] += cost[key]
        owner[key] = shard
    return [[list(k) for k in cost if owner[k] == s] for s in range(count)]


def only(plan: list[PlannedTrial], points: list[list]) -> list[PlannedTrial]:
    """The plan's trials at these points, in plan order (interleaving kept)."""
    wanted = {tuple(p) for p in points}
    return [pt for pt in plan if tuple(point_id(pt)) in wanted]


def spec(plan: list[PlannedTrial], text: str, estimate_from) -> dict:
    """The manifest's record of shard `text` (K/N) of the plan: its points and what balanced them."""

    index, count = parse(text)
    # Unscaled: a speed gauged on each machine would differ between machines and so would their splits
    # (the gauge scales the previous run's figures, not the built-in ones), losing or doubling points.
    points = split(plan, count, Estimator(estimate_from, probe=None).trial_s)[index - 1]
    if not points:
        raise UsageError(f"--shard {text}: the plan has fewer points than shards; use fewer shards")
    return {"index": index, "count": count, "points": points,
            "estimated_from": str(estimate_from) if estimate_from else "built-in figures"}
