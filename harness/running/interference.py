"""`burtbench doctor --interference`: what running trials in parallel (--cpus) costs on this machine.

For each engine × workload, a reference trial on the first listed core, alone and then with every
other listed core busy running the same trial over and over (what --cpus does to a trial), in
alternating rounds so that slow drift hits both alike. The slow-down is the ratio of the medians
of the trials' per-iteration medians: busy / alone.
"""
from __future__ import annotations

import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from harness.measure import affinity, tsc
from harness.planning.plan import make_plan
from harness.running.orchestrator import runner_cores, runner_off
from harness.running.runner import measure, prepare_inputs
from harness.running.spawn import ChildSpawner, Interrupted, RunOptions

ROUNDS = 3
# Long enough for the background children to have started and be in their timed loops.
SETTLE_S = 1.0


@dataclass(frozen=True)
class Interference:
    engine: str
    workload: str
    params: dict
    alone_s: float | None  # median per-iteration time, alone
    busy_s: float | None  # the same, with the other cores busy
    reason: str | None = None  # why there is no figure

    @property
    def slowdown(self) -> float | None:
        return self.busy_s / self.alone_s if self.alone_s and self.busy_s else None


class Busy:
    """Every other core runs the trial again and again until stopped."""

    def __init__(self, pt, cores: list[int], options: RunOptions, rate, inputs):
        self.spawners = [ChildSpawner(replace(options, cpu=c)) for c in cores]
        self.threads = [threading.Thread(target=self._loop, args=(s, pt, rate, inputs), daemon=True)
                        for s in self.spawners]

    @staticmethod
    def _loop(spawner, pt, rate, inputs):
        try:
            while True:
                measure(pt, spawner, rate, inputs)
        except Interrupted:
            pass

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        time.sleep(SETTLE_S)
        return self

    def __exit__(self, *exc):
        for spawner in self.spawners:
            spawner.interrupt()
        for thread in self.threads:
            thread.join()


def per_iter(trial) -> float | None:
    return (trial.per_iter_s or {}).get("median") if trial.status == "ok" else None


def reference(engine, workload, profile: str):
    """The point's first trial without its init run: the measured run alone is what is compared."""
    return replace(make_plan([engine], [workload], profile, trials=1)[0], with_init=False)


def interference(engines: list, workloads: list, cpus: list[int], profile: str = "quick",
                 rounds: int = ROUNDS, options: RunOptions | None = None) -> list[Interference]:
    options = options or RunOptions(cpu=cpus[0])
    rate = tsc.tsc_rate_hz()
    found = []
    with runner_off(cpus), tempfile.TemporaryDirectory(prefix="burtbench-interference-") as scratch:
        for workload in workloads:
            for engine in engines:
                if not engine.runs(workload):
                    continue
                reason = engine.unavailable_reason()
                pt = reference(engine, workload, profile)
                if reason:
                    found.append(Interference(engine.id, workload.name, pt.params, None, None, reason))
                    continue
                found.append(_measure(pt, cpus, replace(options, cpu=cpus[0]), rate, rounds,
                                      prepare_inputs(pt, Path(scratch), None)))  # the synthetic corpora
    return found


def _measure(pt, cpus, options, rate, rounds, inputs) -> Interference:
    spawner = ChildSpawner(options)
    alone, busy = [], []
    for _ in range(rounds):
        alone.append(measure(pt, spawner, rate, inputs))
        with Busy(pt, cpus[1:], options, rate, inputs):
            busy.append(measure(pt, spawner, rate, inputs))
    failed = next((t for t in alone + busy if t.status != "ok"), None)
    if failed:
        return Interference(pt.engine.id, pt.workload.name, pt.params, None, None,
                            f"a reference trial {failed.status}: {failed.reason}")
    return Interference(pt.engine.id, pt.workload.name, pt.params, statistics.median(map(per_iter, alone)),
                        statistics.median(map(per_iter, busy)))


def format_table(rows: list[Interference], cpus: list[int]):
    from rich.table import Table

    spare = runner_cores(cpus)
    table = Table(title=f"interference: a trial on core {cpus[0]} alone vs with cores "
                        f"{affinity.format_cpus(cpus[1:])} busy with the same trial (medians of {ROUNDS} trials; "
                        f"runner on {affinity.format_cpus(spare) if spare else 'a listed core too'})",
                  title_justify="left")
    for name in ("workload", "engine", "point", "alone / iteration", "busy / iteration", "slow-down"):
        table.add_column(name, justify="right" if "/" in name or name == "slow-down" else "left")
    for r in rows:
        point = ",".join(f"{k}={v}" for k, v in r.params.items())
        if r.slowdown is None:
            table.add_row(r.workload, r.engine, point, "—", "—", f"n/a: {r.reason}")
        else:
            table.add_row(r.workload, r.engine, point, f"{r.alone_s * 1e6:.3f} µs", f"{r.busy_s * 1e6:.3f} µs",
                          f"{(r.slowdown - 1) * 100:+.1f}%")
    return table
