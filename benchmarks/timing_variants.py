"""Per-iteration time of every tiny/small engine under `--timing paper` and `--timing lean`, side by side.

Each engine runs both variants alternately (paper, lean, paper, lean ...) in fresh pinned children,
as `burtbench run` spawns them, so that the machine's drift hits both alike. It prints the median
per-iteration time of each and their ratio; workloads/timed_regions.csv says what each one times.

    python benchmarks/timing_variants.py [--workload tiny,small] [--engine PREFIX,...] [--profile smoke] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engines import all_engines  # noqa: E402
from harness.planning.plan import make_plan  # noqa: E402
from harness.running.runner import child_command, parse_payload  # noqa: E402
from harness.running.spawn import ChildSpawner, RunOptions  # noqa: E402
from workloads import load  # noqa: E402
from workloads.timed_regions import regions  # noqa: E402

TIMINGS = ("paper", "lean")


def per_iteration(pt, timing: str, cpu: int) -> float | None:
    spawner = ChildSpawner(RunOptions(cpu=cpu, timing=timing))
    child = spawner.run(child_command(pt, pt.iterations, pt.warmup, spawner.options, None), pt.timeout_s)
    payload = parse_payload(child.stdout)
    if not payload or payload.get("status") != "ok":
        return None
    return statistics.median(payload["samples_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="tiny,small")
    parser.add_argument("--engine", default="", help="comma-separated id prefixes (default: every available one)")
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=os.cpu_count() - 1)
    args = parser.parse_args()
    prefixes = [p for p in args.engine.split(",") if p]
    engines = [e for e in all_engines().values() if e.kind != "program" and not e.unavailable_reason()
               and (not prefixes or any(e.id.startswith(p) for p in prefixes))]
    table = regions()
    print(f"{'workload':9} {'engine':30} {'paper µs':>11} {'lean µs':>11} {'paper/lean':>10}  matches")
    for name in args.workload.split(","):
        workload = load(name)
        for pt in make_plan(engines, [workload], args.profile, trials=1):
            times = {t: [] for t in TIMINGS}
            for _ in range(args.rounds):
                for timing in TIMINGS:
                    value = per_iteration(pt, timing, args.cpu)
                    if value is not None:
                        times[timing].append(value)
            paper, lean = (statistics.median(times[t]) * 1e6 if times[t] else float("nan") for t in TIMINGS)
            row = table.get((pt.engine.id, name))
            print(f"{name:9} {pt.engine.id:30} {paper:11.2f} {lean:11.2f} {paper / lean:10.2f}  "
                  f"{row.matches if row else 'no paper row'}", flush=True)


if __name__ == "__main__":
    main()
