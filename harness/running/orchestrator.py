"""Executes a plan into a run folder: skip what is done, one trial per worker core at a time
(one core unless --cpus), progress with an estimated time left, signals.

With --adaptive, once the plan is done, points whose trials disagree too much get more trials,
one round at a time across all of them (interleaved, like the plan), until the confidence
interval of their mean is tight enough or --max-trials is reached. Then the job's follow-up (the
rounds that decide the paper's undecided claims) adds rounds until it has none to add.
"""
from __future__ import annotations

import signal
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Column
from rich.text import Text

from engines.children import STOPPING
from harness.analysis.effect import MIN_TRIALS
from harness.analysis.points import STATISTIC, group, trial_time
from harness.analysis.summary import format_seconds
from harness.measure import affinity
from harness.planning.plan import PlannedTrial
from harness.planning.resume import record_added
from harness.planning.preview import duration
from harness.running.runner import measure, prepare_inputs
from harness.running.spawn import ChildSpawner, Interrupted, RunOptions
from harness.store import manifest as manifest_mod
from harness.store import results
from harness.text import clean
from harness.units import count

EXIT_INTERRUPTED = 130
# A run that ended with planned trials never run (an engine became unavailable in its middle).
EXIT_INCOMPLETE = 1


@dataclass(frozen=True)
class Job:
    """What executing a plan needs besides the plan: where it writes, how each child runs, what
    it is measured with, and who hears of it."""
    run_dir: Path
    manifest: dict  # saved as the run goes (status, engines found unavailable)
    options: RunOptions  # the children's: interpreter, timing, memory cap; `cpu` is set per worker core
    tsc: tuple[float | None, str]  # the time-stamp counter's rate and its source, for CPU clocks
    console: Console
    cpus: list[int]  # the worker cores: one trial on each at once
    adaptive: "Adaptive | None" = None
    meter: object = None  # the energy meter, for trials that measure energy
    estimator: object = None  # planning/estimate.py's Estimator, for the progress ETA
    data_dir: str | None = None  # the plan's --data-dir: the real data sets the inputs are prepared from
    # Once the plan (and --adaptive's trials) are done: () -> more trials, each with its `why`, until it gives none
    # (the rounds that decide undecided claims, within --claims-budget); its `spent_s`, the budget spent once
    # they have run (None: nothing to keep, its end already kept), goes with them into the run folder.
    follow_up: object = None


@dataclass(frozen=True)
class Adaptive:
    max_trials: int
    # Stop adding trials once the 95% interval's half-width is within this share of the mean.
    threshold: float


def pending(plan: list[PlannedTrial], run_dir: Path) -> list[PlannedTrial]:
    """The planned trials not yet in trials.jsonl, in plan order (what --resume runs). A trial
    recorded `unavailable` did not run: it is pending too, and its next record replaces it."""
    done = {results.trial_key(t.get("engine"), t.get("workload"), t.get("params") or {}, t.get("trial"))
            for t in results.read_trials(run_dir) if t.get("status") != "unavailable"}
    return [pt for pt in plan if pt.key() not in done]


def more_trials(plan: list[PlannedTrial], run_dir: Path, adaptive: Adaptive, unavailable: dict) -> list[PlannedTrial]:
    """One more trial for every point whose interval is still too wide."""
    points = group(results.read_trials(run_dir))
    extra, seen = [], set()
    for pt in plan:
        key = pt.point_key()
        if key in seen or pt.engine.id in unavailable or key not in points:
            continue
        seen.add(key)
        point = points[key]
        width = point.time_half_width()
        # Fewer trials than give an interval (effect.MIN_TRIALS) cannot show a point is quiet.
        few = len(point.time_values()) < MIN_TRIALS
        if len(point.trials) < adaptive.max_trials and point.time_values() and (few or width is None
                                                                                or width > adaptive.threshold):
            extra.append(replace(pt, trial=max(t["trial"] for t in point.trials) + 1, added=True))
    return extra


def execute(plan: list[PlannedTrial], job: Job) -> int:
    """Run the plan's missing trials, up to one per core of `job.cpus` at once; a results folder
    that stops taking writes stops the run, with the manifest saying so where it still can be
    written (the trials already written stay)."""
    try:
        return _execute(plan, job)
    except results.ResultsError as exc:
        job.manifest.update(status=f"failed: {exc}", finished_at=manifest_mod.now())
        try:
            manifest_mod.save(job.run_dir, job.manifest)
        except results.ResultsError:
            pass  # the disk refuses the manifest too: the error line is all that can be said
        raise


def _execute(plan: list[PlannedTrial], job: Job) -> int:
    run_dir, manifest, console, cpus = job.run_dir, job.manifest, job.console, job.cpus
    mended = results.mend_tail(run_dir)  # before pending(): a cut trial must count as missing
    if mended:
        console.print(f"[yellow]warning[/]: {run_dir / results.TRIALS_FILE}: {mended}", highlight=False)
    todo = pending(plan, run_dir)
    spawners = {cpu: ChildSpawner(replace(job.options, cpu=cpu)) for cpu in cpus}

    def stop(*_):
        for spawner in spawners.values():
            spawner.interrupt()

    previous = {sig: signal.signal(sig, stop) for sig in STOPPING}
    try:
        with _progress(console) as progress, runner_off(cpus):
            eta = Eta(job.estimator, len(cpus))
            task = progress.add_task("starting", total=len(todo), **eta.add(todo))
            with ThreadPoolExecutor(len(cpus)) as pool:
                run = Dispatch(pool, spawners, job, progress, task, eta)
                # Even with nothing pending: a resumed run goes on adding trials where the killed one would have.
                while True:
                    try:
                        run.all(todo)
                    except BaseException:
                        stop()
                        run.drain(record=False)
                        raise
                    if run.interrupted:
                        return _finish(run_dir, manifest, "interrupted", console)
                    todo, rounds = added_after(plan, job)
                    if not todo:
                        break
                    plan = [*plan, *todo]
                    for why in rounds:
                        progress.console.print(f"one more round: {why}", highlight=False)
                    progress.update(task, total=progress.tasks[0].total + len(todo), **eta.add(todo))
            return _finish(run_dir, manifest, "complete", console, plan)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def added_after(plan: list[PlannedTrial], job: Job) -> tuple[list[PlannedTrial], list[str]]:
    """The next batch of trials beyond the plan (--adaptive's, else the follow-up's) and the follow-up's
    reasons for its rounds. The batch is kept in the run folder before its first trial starts; a follow-up
    that ends says so there too, so that a resume adds no more."""
    unavailable = job.manifest["unavailable"]
    todo = more_trials(plan, job.run_dir, job.adaptive, unavailable) if job.adaptive else []
    if todo or job.follow_up is None:
        if todo:
            record_added(job.run_dir, todo)
        return todo, []
    todo = [pt for pt in job.follow_up() if pt.engine.id not in unavailable]
    if job.follow_up.spent_s is not None:
        record_added(job.run_dir, todo, job.follow_up.spent_s)
    return todo, list(dict.fromkeys(pt.why for pt in todo))


class Dispatch:
    """Hands trials in plan order to the first free core; the runner's main thread alone writes
    trials.jsonl, one finished trial at a time. A trial that measures energy runs alone (the meter
    reads the whole machine)."""

    def __init__(self, pool, spawners, job: Job, progress, task, eta):
        self.pool, self.spawners, self.job = pool, spawners, job
        self.progress, self.task, self.eta = progress, task, eta
        self.free = list(spawners)
        self.running: dict = {}
        self.interrupted = False
        # The engines found unavailable, by the session (before the first trial) or by a trial.
        self.unavailable: dict[str, str] = job.manifest.setdefault("unavailable", {})

    def all(self, todo: list[PlannedTrial]) -> None:
        for pt in todo:
            alone = pt.workload.measures_energy
            while self.running and (not self.free or alone):
                self.collect()
            if self.interrupted:
                break
            if pt.engine.id in self.unavailable:
                self.done(pt)
                continue
            cpu = self.free.pop(0)
            counting = " (then its instructions, under valgrind)" if self.job.options.instructions else ""
            self.progress.update(self.task, description=clean(pt.label()) + counting)
            future = self.pool.submit(measure, pt, self.spawners[cpu], self.job.tsc, prepare_inputs(pt, self.job.run_dir, self.job.data_dir),
                                      self.job.meter if alone else None)
            self.running[future] = (pt, cpu)
            if alone:
                self.drain()
        self.drain()

    def drain(self, record: bool = True) -> None:
        while self.running:
            self.collect(record)

    def collect(self, record: bool = True) -> None:
        # A timeout, so that the main thread runs a signal handler soon after the signal.
        finished, _ = wait(self.running, timeout=0.2, return_when=FIRST_COMPLETED)
        for future in finished:
            pt, cpu = self.running.pop(future)
            self.free.append(cpu)
            try:
                trial = future.result()
            except Interrupted:
                self.interrupted = True
                continue
            if not record:
                continue
            results.append_trial(self.job.run_dir, trial)
            if trial.status == "unavailable" and pt.engine.id not in self.unavailable:
                self.unavailable[pt.engine.id] = trial.reason or "unavailable"
                manifest_mod.save(self.job.run_dir, self.job.manifest)
            self.done(pt)
            _announce(self.job.console, self.progress, pt, trial)

    def done(self, pt: PlannedTrial) -> None:
        self.progress.update(self.task, advance=1, **self.eta.finished(pt))


class Eta:
    """The time left, from the estimates of the trials left, corrected by how the finished ones
    compared with theirs; shown from the first trial on."""

    def __init__(self, estimator, workers: int):
        self.estimator, self.workers = estimator, workers
        self.left = self.done = 0.0
        self.start = time.monotonic()

    def add(self, trials: list[PlannedTrial]) -> dict:
        if self.estimator is not None:
            self.left += sum(self.estimator.trial_s(pt) for pt in trials)
        return self.fields()

    def finished(self, pt: PlannedTrial) -> dict:
        if self.estimator is not None:
            cost = self.estimator.trial_s(pt)
            self.left, self.done = max(self.left - cost, 0.0), self.done + cost
        return self.fields()

    def fields(self) -> dict:
        if self.estimator is None:
            return {"eta_s": None, "eta_at": time.monotonic()}
        pace = (time.monotonic() - self.start) / (self.done / self.workers) if self.done else 1.0
        return {"eta_s": self.left / self.workers * pace, "eta_at": time.monotonic()}


class EtaColumn(ProgressColumn):
    def render(self, task) -> Text:
        if task.fields.get("eta_s") is None:
            return Text("ETA -:--:--")
        left = max(task.fields["eta_s"] - (time.monotonic() - task.fields["eta_at"]), 0.0)
        return Text(f"ETA {duration(left)}")


def runner_cores(cpus: list[int]) -> list[int]:
    """The cores the runner keeps to while trials run on several `cpus`: the allowed ones they leave
    ([]: none left, or one worker core, which the runner shares)."""
    return sorted(set(affinity.allowed_cpus()) - set(cpus)) if len(cpus) > 1 else []


def runner_off(cpus: list[int]):
    """With several worker cores, keep the runner (and the threads it starts from here on) off
    them where the machine has a core to spare."""
    spare = runner_cores(cpus)
    return affinity.confined(set(spare)) if spare else nullcontext()


def _finish(run_dir: Path, manifest: dict, status: str, console: Console, plan: list | None = None) -> int:
    """Save the run's status: `complete` only where every planned trial has a record (one that
    ran: an `unavailable` record is a trial that did not)."""
    missing = pending(plan, run_dir) if plan is not None else []
    if missing:
        status = incomplete_status(missing, len(plan), manifest.get("unavailable") or {})
    manifest["status"] = status
    manifest["finished_at"] = manifest_mod.now()
    manifest_mod.save(run_dir, manifest)
    if status == "interrupted":
        console.print(f"[yellow]interrupted[/]: finished trials are in {run_dir}; "
                      f"continue with: burtbench run --resume {run_dir}")
        return EXIT_INTERRUPTED
    if missing:
        print(f"burtbench: error: run {clean(status)}; once the cause is gone, run them with: "
              f"burtbench run --resume {run_dir}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


def incomplete_status(missing: list[PlannedTrial], planned: int, unavailable: dict) -> str:
    """'incomplete: 24 of 30 planned trials not run (autograd@autograd==1.7.0 unavailable: ...)'."""
    engines = list(dict.fromkeys(pt.engine.id for pt in missing))
    why = "; ".join(f"{eid} unavailable: {one_line(unavailable[eid])}" if eid in unavailable else f"{eid}: not run"
                    for eid in engines)
    return f"incomplete: {len(missing)} of {count(planned, 'planned trial')} not run ({why})"


def one_line(reason: str | None) -> str:
    """A child's reason on one line: a multi-line one (an import error's advice) by its last line,
    the rest kept in trials.jsonl, the run's log of every trial."""
    lines = [line.strip() for line in str(reason or "").splitlines() if line.strip()]
    if len(lines) <= 1:
        return clean(lines[0] if lines else "unavailable")
    return clean(f"{lines[-1]} (the whole message: the trial's reason in trials.jsonl)")


def _progress(console: Console) -> Progress:
    # Error lines go to stderr: drawn above the bar where stderr is the same terminal, else left
    # on stderr (a `2> file` keeps them, never the bar's stdout).
    # The numbers (trials done, elapsed, ETA) keep their width; the trial's name and the bar share what is left,
    # a long name (--instructions adds to it) ending in "…": rich would otherwise push the numbers off the line.
    return Progress(TextColumn("{task.description}", table_column=Column(ratio=3, no_wrap=True, overflow="ellipsis")),
                    BarColumn(bar_width=None, table_column=Column(ratio=1)), MofNCompleteColumn(),
                    TimeElapsedColumn(), EtaColumn(), console=console, transient=True, expand=True,
                    redirect_stderr=sys.stderr.isatty())


def _announce(console: Console, progress: Progress, pt: PlannedTrial, trial: results.Trial) -> None:
    """One line per trial that did not go as planned (and every trial when not on a terminal)."""
    bad_check = trial.check is not None and trial.check.get("ok") is False  # None: could not decide
    if trial.status == "ok" and not bad_check and console.is_terminal:
        return
    if trial.status != "ok" or bad_check:  # a reason is an error line: stderr, one line
        what = trial.status if trial.status != "ok" else "wrong result"
        reason = trial.reason if trial.status != "ok" else trial.check.get("reason")
        print(f"burtbench: {what} {clean(pt.label())}: {one_line(reason)}", file=sys.stderr)
        return
    # The trial's time as every table counts it (points.trial_time): one trial's point shows this number.
    seconds = format_seconds(trial_time(asdict(trial)))
    progress.console.print(f"ok {pt.label()}: {seconds}/iteration ({STATISTIC}){counted(progress)}", highlight=False)


def counted(progress: Progress) -> str:
    """'trial 12 of 367, ETA 0:21:40': where the output is no terminal (`| tee log`), each trial's line carries
    what the bar would show."""
    if not progress.tasks:
        return ""
    task = progress.tasks[0]
    return f"; trial {int(task.completed)} of {int(task.total)}, {EtaColumn().render(task)}"
