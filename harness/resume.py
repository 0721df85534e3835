"""What a resumed run (--resume) takes from its folder: the manifest, its plan checked field by field."""
from __future__ import annotations

from pathlib import Path

from harness.errors import UsageError
from workloads.base import PROFILES

# A resumed run's plan, field by field: what type each must have.
PLAN_TYPES = {"profile": str, "engines": list, "workloads": list, "narrow": dict, "trials": (int, type(None)),
              "timeout_s": (int, float, type(None)), "noise_threshold": (int, float),
              "adaptive": (dict, type(None)), "data_dir": (str, type(None)), "upstream": (str, type(None)),
              "shard": (dict, type(None))}


def resumable_manifest(run_dir: Path) -> dict:
    """The manifest of a run to resume, its plan checked: a damaged one is one UsageError line."""
    from harness import results

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
    if (plan["profile"] not in PROFILES or not scalars
            or not all(isinstance(n, str) for n in names) or (plan["trials"] or 1) < 1 or (plan["timeout_s"] or 1) <= 0):
        raise UsageError(f"--resume: the plan in {run_dir}/manifest.json is damaged (profile, engines, workloads, "
                         f"narrow, trials or timeout); start a new run")
    return manifest
