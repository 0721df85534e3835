"""Executes a plan into a run folder: skip what is done, one trial at a time, progress, signals.

With --adaptive, once the plan is done, points whose trials disagree too much get more trials,
one round at a time across all of them (interleaved, like the plan), until the confidence
interval of their mean is tight enough or --max-trials is reached.
"""
from __future__ import annotations

import signal
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from harness import manifest as manifest_mod
from harness import results
from harness.plan import PlannedTrial
from harness.runner import measure, prepare_inputs
from harness.spawn import ChildSpawner, Interrupted, RunOptions
from harness.points import group

EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class Adaptive:
    max_trials: int
    # Stop adding trials once the 95% interval's half-width is within this share of the mean.
    threshold: float


def pending(plan: list[PlannedTrial], run_dir: Path) -> list[PlannedTrial]:
    """The planned trials not yet in trials.jsonl, in plan order (what --resume runs)."""
    done = {results.trial_key(t.get("engine"), t.get("workload"), t.get("params") or {}, t.get("trial"))
            for t in results.read_trials(run_dir)}
    return [pt for pt in plan if pt.key() not in done]


def more_trials(plan: list[PlannedTrial], run_dir: Path, adaptive: Adaptive, skipped: dict) -> list[PlannedTrial]:
    """One more trial for every point whose interval is still too wide."""
    points = group(results.read_trials(run_dir))
    extra, seen = [], set()
    for pt in plan:
        key = pt.point_key()
        if key in seen or pt.engine.id in skipped or key not in points:
            continue
        seen.add(key)
        point = points[key]
        width = point.time_half_width()
        if len(point.trials) < adaptive.max_trials and point.time_values() and (width is None or width > adaptive.threshold):
            extra.append(replace(pt, trial=max(t["trial"] for t in point.trials) + 1))
    return extra


def execute(plan: list[PlannedTrial], run_dir: Path, manifest: dict, options: RunOptions,
            tsc: tuple[float | None, str], console: Console, adaptive: Adaptive | None = None,
            meter=None) -> int:
    """Run the plan's missing trials; a results folder that stops taking writes stops the run, with
    the manifest saying so where it still can be written (the trials already written stay)."""
    try:
        return _execute(plan, run_dir, manifest, options, tsc, console, adaptive, meter)
    except results.ResultsError as exc:
        manifest.update(status=f"failed: {exc}", finished_at=manifest_mod.now())
        try:
            manifest_mod.save(run_dir, manifest)
        except results.ResultsError:
            pass  # the disk refuses the manifest too: the error line is all that can be said
        raise


def _execute(plan: list[PlannedTrial], run_dir: Path, manifest: dict, options: RunOptions,
             tsc: tuple[float | None, str], console: Console, adaptive: Adaptive | None, meter) -> int:
    mended = results.mend_tail(run_dir)  # before pending(): a cut trial must count as missing
    if mended:
        console.print(f"[yellow]warning[/]: {run_dir / results.TRIALS_FILE}: {mended}", highlight=False)
    todo = pending(plan, run_dir)
    spawner = ChildSpawner(options)
    skipped: dict[str, str] = manifest.setdefault("unavailable", {})
    previous = {sig: signal.signal(sig, lambda *_: spawner.interrupt()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with _progress(console) as progress:
            task = progress.add_task("starting", total=len(todo))
            while todo:
                for pt in todo:
                    progress.update(task, description=pt.label())
                    if pt.engine.id not in skipped:
                        try:
                            trial = measure(pt, spawner, tsc, prepare_inputs(pt, run_dir),
                                            meter if pt.workload.measures_energy else None)
                        except Interrupted:
                            return _finish(run_dir, manifest, "interrupted", console)
                        results.append_trial(run_dir, trial)
                        _announce(console, progress, pt, trial)
                        if trial.status == "unavailable":
                            skipped[pt.engine.id] = trial.reason or "unavailable"
                            manifest_mod.save(run_dir, manifest)
                    progress.advance(task)
                todo = more_trials(plan, run_dir, adaptive, skipped) if adaptive else []
                if todo:
                    progress.update(task, total=progress.tasks[0].total + len(todo))
            return _finish(run_dir, manifest, "complete", console)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _finish(run_dir: Path, manifest: dict, status: str, console: Console) -> int:
    manifest["status"] = status
    manifest["finished_at"] = manifest_mod.now()
    manifest_mod.save(run_dir, manifest)
    if status == "interrupted":
        console.print(f"[yellow]interrupted[/]: finished trials are in {run_dir}; "
                      f"continue with: burtbench run --resume {run_dir}")
        return EXIT_INTERRUPTED
    return 0


def _progress(console: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                    console=console, transient=True)


def _announce(console: Console, progress: Progress, pt: PlannedTrial, trial: results.Trial) -> None:
    """One line per trial that did not go as planned (and every trial when not on a terminal)."""
    bad_check = trial.check is not None and trial.check.get("ok") is False  # None: could not decide
    if trial.status == "ok" and not bad_check and console.is_terminal:
        return
    if trial.status != "ok":
        line = f"[red]{trial.status}[/] {pt.label()}: {trial.reason}"
    elif bad_check:
        line = f"[red]wrong result[/] {pt.label()}: {trial.check.get('reason')}"
    else:
        line = f"ok {pt.label()}: {trial.per_iter_s['mean'] * 1e6:.3f} µs/iteration"
    progress.console.print(line, highlight=False)
