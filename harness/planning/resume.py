"""What a resumed run (--resume) takes from its folder: the manifest, its plan checked field by field."""
from __future__ import annotations

from pathlib import Path

from harness.planning import selection
from harness.errors import UsageError
from workloads.base import PROFILES

# A resumed run's plan, field by field: what type each must have.
PLAN_TYPES = {"profile": str, "engines": list, "workloads": list, "narrow": dict, "trials": (int, type(None)),
              "timeout_s": (int, float, type(None)), "noise_threshold": (int, float),
              "adaptive": (dict, type(None)), "data_dir": (str, type(None)), "upstream": (str, type(None)),
              "shard": (dict, type(None))}


def resumable_manifest(run_dir: Path) -> dict:
    """The manifest of a run to resume, its plan checked: a damaged one is one UsageError line."""
    from harness.store import results

    try:
        manifest = results.read_manifest(run_dir)
    except results.ManifestDamaged as exc:
        raise UsageError(f"--resume: {exc}") from None
    plan = manifest.get("plan")
    wrong = [name for name, kind in PLAN_TYPES.items()
             if not isinstance(plan, dict) or not isinstance(plan.get(name), kind) or isinstance(plan.get(name), bool)]
    if wrong:
        raise UsageError(f"--resume: the plan in {run_dir}/manifest.json is damaged ({', '.join(wrong)}); "
                         f"start a new run")
    names = plan["engines"] + plan["workloads"]
    shard = plan.get("shard")
    if shard is not None and not (isinstance(shard.get("points"), list) and all(
            isinstance(p, list) and len(p) == 3 and all(isinstance(x, str) for x in p) for p in shard["points"])):
        raise UsageError(f"--resume: the shard in {run_dir}/manifest.json is damaged; start a new run")
    scalars = all(isinstance(v, list) and all(isinstance(x, (int, float, str)) and not isinstance(x, bool) for x in v)
                  for v in plan["narrow"].values())
    adaptive = plan["adaptive"]
    in_bounds = (1 <= (plan["trials"] or 1) <= selection.MAX_PLANNED_TRIALS
                 and 0 < (plan["timeout_s"] or 1) <= selection.MAX_TIMEOUT_S
                 and 0 < plan["noise_threshold"] <= selection.MAX_NOISE_PCT / 100
                 and (adaptive is None or (type(adaptive.get("max_trials")) is int
                                           and 1 <= adaptive["max_trials"] <= selection.MAX_TRIALS_PER_POINT)))
    if (plan["profile"] not in PROFILES or not scalars or not in_bounds
            or not all(isinstance(n, str) for n in names)):
        raise UsageError(f"--resume: the plan in {run_dir}/manifest.json is damaged (profile, engines, workloads, "
                         f"narrow, trials, timeout, noise threshold or adaptive); start a new run")
    check_environments(plan, run_dir)
    return manifest


def check_environments(plan: dict, run_dir: Path) -> None:
    """The plan's --env SPECs, installer arguments and environments folder, as a new run would take them."""
    from harness.envs import specs as envs
    from harness.envs.cache import env_dir

    texts, pip_args = plan.get("envs") or [], plan.get("pip_args") or []
    if not (isinstance(texts, list) and isinstance(pip_args, list) and all(isinstance(t, str) for t in texts + pip_args)
            and isinstance(plan.get("env_dir") if texts else "", str)):
        raise UsageError(f"--resume: the plan in {run_dir}/manifest.json is damaged (envs); start a new run")
    for text in texts:
        envs.parse_spec(text)
    if texts:
        env_dir(plan["env_dir"])
