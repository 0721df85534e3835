"""What a resumed run (--resume) takes from its folder: the manifest, its plan checked field by field."""
from __future__ import annotations

from pathlib import Path

from harness.envs import specs as envs
from harness.envs.cache import env_dir
from harness.errors import UsageError
from harness.machine.valgrind import missing_valgrind
from harness.planning import selection
from harness.store import results
from harness.store.run_plan import PlanDamaged, RunPlan
from workloads.base import PROFILES


def resumable_manifest(run_dir: Path) -> tuple[dict, RunPlan]:
    """The manifest of a run to resume and its plan, checked: a damaged one is one UsageError line."""
    try:
        manifest = results.read_manifest(run_dir)
    except results.ManifestDamaged as exc:
        raise UsageError(f"--resume: {exc}") from None
    try:
        plan = RunPlan.from_record(manifest.get("plan"))
    except PlanDamaged as exc:
        raise UsageError(f"--resume: the plan in {run_dir}/manifest.json is damaged ({exc}); start a new run") from None
    in_bounds = (1 <= (plan.trials or 1) <= selection.MAX_PLANNED_TRIALS
                 and 0 < (plan.timeout_s or 1) <= selection.MAX_TIMEOUT_S
                 and 0 < plan.noise_threshold <= selection.MAX_NOISE_PCT / 100
                 and (plan.adaptive_max_trials is None
                      or 1 <= plan.adaptive_max_trials <= selection.MAX_TRIALS_PER_POINT))
    if plan.profile not in PROFILES or not in_bounds:
        raise UsageError(f"--resume: the plan in {run_dir}/manifest.json is damaged (profile, trials, timeout, "
                         f"noise threshold or adaptive out of bounds); start a new run")
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
