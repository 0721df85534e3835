"""What a resumed run (--resume) takes from its folder: the manifest, its plan checked field by field, and
the trials added to it after the plan (added.jsonl)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.analysis.points import PointKey
from harness.envs import specs as envs
from harness.envs.cache import env_dir
from harness.errors import UsageError
from harness.machine.valgrind import missing_valgrind
from harness.planning.plan import PlannedTrial
from harness.store import added, results
from harness.store.run_plan import PlanDamaged, RunPlan


def resumable_manifest(run_dir: Path) -> tuple[dict, RunPlan]:
    """The manifest of a run to resume and its plan, checked: a damaged one is one UsageError line."""
    try:
        manifest = results.read_manifest(run_dir)
    except results.ManifestDamaged as exc:
        raise UsageError(f"--resume: {exc}") from None
    try:  # the same checks as the report's, compare's and merge's (store/run_plan.py)
        plan = RunPlan.from_record(manifest.get("plan"))
    except PlanDamaged as exc:
        raise UsageError(f"--resume: the plan in {run_dir}/manifest.json is damaged ({exc}); start a new run") from None
    check_environments(plan)
    if plan.instructions and missing_valgrind():  # as a new run with --instructions refuses
        raise UsageError(f"--resume: the run counts instructions (--instructions): {missing_valgrind()}")
    return manifest, plan


def check_environments(plan: RunPlan) -> None:
    """The plan's --env SPECs and environments folder, as a new run would take them."""
    for text in plan.envs:
        envs.parse_spec(text)
    if plan.envs:
        if plan.env_dir is None:
            raise UsageError("--resume: the plan names environments but no environments folder: damaged; start a new run")
        env_dir(plan.env_dir)


def record_added(run_dir: Path, trials: list[PlannedTrial], deciding_spent_s: float | None = None) -> None:
    """Trials added after the plan, kept before the first of them starts (store/added.py)."""
    added.append(run_dir, [{"engine": pt.engine.id, "workload": pt.workload.name, "params": dict(pt.params),
                            "trial": pt.trial, "why": pt.why, "with_init": pt.with_init} for pt in trials],
                 deciding_spent_s)


def with_added(plan: list[PlannedTrial], run_dir: Path) -> list[PlannedTrial]:
    """The plan and the trials its folder says were added to it, each re-made from a planned trial at its
    point; one at a point no longer planned (its engine unavailable now) goes as that point's trials go."""
    at = {pt.point_key(): pt for pt in plan}
    keys = {pt.key() for pt in plan}
    more = []
    for batch in added.read(run_dir):
        for trial in batch.trials:
            template = at.get(PointKey.of(trial))
            if template is None:
                continue
            pt = replace(template, trial=trial["trial"], why=trial["why"], with_init=trial["with_init"], added=True)
            if pt.key() not in keys:
                keys.add(pt.key())
                more.append(pt)
    return [*plan, *more]


def deciding_spent(run_dir: Path) -> float | None:
    """Seconds of the claims budget the run's deciding rounds have spent (0 before their first round);
    None once they ended."""
    rounds = [b for b in added.read(run_dir) if b.deciding_spent_s is not None]
    if rounds and not rounds[-1].trials:
        return None
    return rounds[-1].deciding_spent_s if rounds else 0.0
