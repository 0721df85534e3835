"""`burtbench calibrate`: MIN_RUNS runs of one plan on this machine for about --minutes, then what the machine
adds beyond one run's rounds and how often the claims' rule holds here (harness/analysis/calibration.py),
written under RESULTS/calibration/<host key>/ (harness/machine/calibrations.py) beside the runs it read.

Each run is a normal `burtbench run --aa`, asked as a RunAsk and checked by `run`'s one check (then
session.py: its plan, the engines made ready, the manifest, every trial checked and recorded, progress
with an ETA): `burtbench report` and `compare` read it as any other. Runs are several because what moves between runs (the machine's state, a build's layout in
memory) is what one run's intervals cannot see; engines of steps from nanoseconds to milliseconds run at
the same points, so that every two make a factor as a claim's does. Each run takes the rounds that fit its
share of the time left, from the estimates `run --dry-run` shows; later runs' come from the runs made.
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from rich.console import Console

from harness.analysis import calibration, coverage
from harness.analysis.noise import MIN_RUNS
from harness.envs.specs import original_env
from harness.machine import calibrations, host
from harness.planning.estimate import wall_s
from harness.planning.preview import duration
from harness.running import session
from harness.running.ask import RunAsk, RunRequest
from harness.running.orchestrator import EXIT_INTERRUPTED
from harness.store.manifest import now
from harness.store.runs import load_run

RUNS = MIN_RUNS
# Steps from tens of nanoseconds (our native driver on tiny) through microseconds (micrograd, our Python
# module) to milliseconds (the MLP at its widest quick point, a batch of 64): the noise differs by step.
ENGINES = "burtorch/eager/cpp/cpu,micrograd/eager/python/cpu,burtorch/eager/python/cpu"
WORKLOADS = "tiny,small,mlp"
POINT = ("hidden_dim=1024", "batch=64")
RUNS_FOLDER = "runs"
SIMULATED_CASES = 500  # per noise and path on the page: a minute, where the tests run 2,000


def run_ask(engines: str, out: Path, rounds: int, cpu: int | None) -> RunAsk:
    """What one calibration run asks of `burtbench run` (no deciding rounds: every round is planned)."""
    return RunAsk(engine=engines, workload=WORKLOADS, param=POINT, aa=True, trials=rounds, claims_budget=0.0,
                  no_upstream=True, out=str(out), cpu=cpu)


def priced_as_originals(plan: list) -> list:
    """An A/A copy costs what its original costs: the estimates know originals (the reference run's rows)."""
    return [dataclasses.replace(pt, engine=pt.engine.replace(env=original_env(pt.engine.env))) for pt in plan]


def rounds_within(req: RunRequest, seconds: float) -> int:
    """The most rounds whose estimated time fits `seconds`, at least calibration.MIN_ROUNDS. The times of
    MIN_ROUNDS and of twice as many rounds tell a round's cost from the run's fixed costs (init runs)."""
    estimator = session.estimator(req)
    fewest = calibration.MIN_ROUNDS
    short, long = (wall_s(priced_as_originals(session.make_plan(dataclasses.replace(req.plan, trials=n))),
                          estimator, len(req.cpus) or 1) for n in (fewest, 2 * fewest))
    per_round = max((long - short) / fewest, 1e-3)
    return max(fewest, fewest + int((seconds - short) / per_round))


def calibrate(minutes: float, engines: str | None, results: Path, check, console: Console,
              cpu: int | None = None) -> int:
    """`check(ask)`: `burtbench run`'s one check of a RunAsk, the checked request (the command layer's)."""
    facts = host.describe()
    where = calibrations.folder(results, facts)
    runs_dir = where / RUNS_FOLDER
    ask = run_ask(engines or ENGINES, runs_dir, calibration.MIN_ROUNDS, cpu)
    req = check(ask)  # every option checked before the first trial
    deadline = time.monotonic() + minutes * 60
    console.print(f"calibrate: {RUNS} runs (each engine beside an A/A copy) for about {minutes:g} min on "
                  f"{calibrations.machine_key(facts, calibrations.host_name())}, core {req.cpu} → {where}",
                  highlight=False)
    done, code = [], 0
    for index in range(RUNS):
        if index:  # estimated again: from the run just made, on this machine
            req = check(ask)
        rounds = rounds_within(req, (deadline - time.monotonic()) / (RUNS - index))
        console.print(f"calibrate: run {index + 1} of {RUNS}, {rounds} rounds (at least {calibration.MIN_ROUNDS}: "
                      f"every kind of case needs them)", highlight=False)
        outcome = session.run(dataclasses.replace(req, plan=dataclasses.replace(req.plan, trials=rounds)), console)
        done.append(outcome.run_dir)
        if outcome.code == EXIT_INTERRUPTED:
            console.print(f"calibrate: interrupted: no calibration written (the runs so far are kept: "
                          f"{', '.join(map(str, done))})", highlight=False)
            return outcome.code
        code = max(code, outcome.code)
    record = made(done, facts, minutes, req.cpu)
    write(where, record)
    console.print(f"calibrate: {calibrations.summary(record)}", highlight=False)
    console.print(f"calibrate: {where / calibrations.PAGE} and {calibrations.RECORD} "
                  f"(about {duration(minutes * 60 - (deadline - time.monotonic()))} spent)", highlight=False)
    return code


def made(run_dirs: list[Path], facts: dict, minutes: float, cpu: int) -> dict:
    """The calibration record of the runs (the first run's threshold: the change a "same" answer is asked about)."""
    runs = [load_run(run_dir) for run_dir in run_dirs]
    found = calibration.calibrate([run.trials for run in runs], runs[0].plan.noise_threshold)
    host_name = calibrations.host_name()
    return {"machine": {"key": calibrations.machine_key(facts, host_name), "host": host_name,
                        "cpu_model": facts.get("cpu_model"), "os": facts.get("os"), "cpu": cpu},
            "build": {"native": runs[0].manifest.get("native"), "git_commit": runs[0].manifest.get("git_commit")},
            "created_at": now(), "minutes": minutes, "runs": [str(run_dir) for run_dir in run_dirs],
            "engines": sorted({run_id for run in runs for run_id in run.plan.engines}), **found,
            "simulation": [r.as_dict() for r in coverage.simulate(SIMULATED_CASES)]}


def write(where: Path, record: dict) -> None:
    where.mkdir(parents=True, exist_ok=True)
    (where / calibrations.RECORD).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n",
                                             encoding="utf-8")
    (where / calibrations.PAGE).write_text(calibration.page(record), encoding="utf-8")
