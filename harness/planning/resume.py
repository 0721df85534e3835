"""What a resumed run (--resume) takes from its folder: the manifest, its plan checked field by field."""
from __future__ import annotations

from pathlib import Path

from harness.envs import specs as envs
from harness.envs.cache import env_dir
from harness.errors import UsageError
from harness.machine.valgrind import missing_valgrind
from harness.store import results
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
