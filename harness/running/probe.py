"""The machine's speed now, for the plan's ETA: the harness's floor trial of a previous run, run again
here as the runner spawns it (harness/planning/estimate.py scales that run's figures by now / then)."""
from __future__ import annotations

import statistics

from engines import all_engines
from engines.none import FLOOR
from harness.measure import affinity
from harness.planning.plan import PlannedTrial
from harness.running.runner import run_child
from harness.running.spawn import ChildSpawner, RunOptions
from workloads import load

# Runs of the floor trial whose median wall time gauges the machine's speed now.
SPEED_PROBES = 3
PROBE_TIMEOUT_S = 60  # a floor trial takes well under a second: past this it is stuck


def probe_floor(trial: dict, cpu: int | None = None, mem_limit_bytes: int | None = None) -> float | None:
    """The median wall time of `trial` (the floor row's) run again here, as the runner spawns it,
    pinned to `cpu` (the run's own core: never the earlier run's, where another run may be measuring)
    and under the run's memory cap."""
    pt = PlannedTrial(all_engines()[FLOOR], load(trial["workload"]), trial["params"], trial=0,
                      iterations=trial["iterations"], warmup=trial.get("warmup") or 0, timeout_s=PROBE_TIMEOUT_S)
    spawner = ChildSpawner(RunOptions(cpu=affinity.default_cpu() if cpu is None else cpu, mem_limit_bytes=mem_limit_bytes))
    children = [run_child(pt, spawner, pt.iterations, pt.warmup, None) for _ in range(SPEED_PROBES)]
    walls = [child.wall_s for child in children if child.returncode == 0]
    return statistics.median(walls) if walls else None
