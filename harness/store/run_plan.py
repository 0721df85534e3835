"""The plan of a run, typed: what `burtbench run` was asked to do. The session builds it, manifest.json
keeps it under "plan", and resume, merge, compare and the report read it back from there (nowhere else).

One place for the plan's defaults, the timing's among them: a record that lacks a field (a run from
before the field existed) reads as the default written here.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

from harness.errors import UsageError
from workloads.base import PROFILES

TIMINGS = ("paper", "lean")
# The run's --timing where it says none: each row timed as the authors' script for its paper row
# times it (workloads/timed_regions.csv); "lean" times the same region for every framework.
DEFAULT_TIMING = "paper"
DEFAULT_PROFILE = "quick"
# A point whose 95% interval is wider than this fraction of its mean is flagged noisy (--noise-threshold).
DEFAULT_NOISE_THRESHOLD = 0.05
# Minutes of rounds added after the plan at the points of claims still undecided (--claims-budget): with it
# `make bench-linux` stays within about 30 minutes on a 2-core VM.
DEFAULT_CLAIMS_BUDGET_MIN = 3.0
# Rounds the deciding rounds may add at a point at most: the sequential design's looks are declared
# before the first trial (harness/analysis/effect.py, Looks), so that their error is spent by plan.
MAX_DECIDING_ROUNDS = 5
# --adaptive's most trials per point where --max-trials says none.
DEFAULT_MAX_TRIALS = 10
# Far beyond any paper profile (the paper profile plans about 2,000 trials): a typo, not a plan.
MAX_PLANNED_TRIALS = 100_000
# Bounds of the run's options (a typo beyond them, not a plan): for the parser, and for every reader
# of a plan (resume, report, compare, merge), which refuse a plan outside them alike.
MAX_TRIALS_PER_POINT = 1000
MAX_TIMEOUT_S = 7 * 86400
MAX_NOISE_PCT = 1000


class PlanDamaged(ValueError):
    """A plan record with a field of the wrong type: names the fields."""


@dataclass(frozen=True)
class RunPlan:
    profile: str
    engines: tuple[str, ...]  # engine ids, `<id>@<SPEC>` for an engine in an environment
    workloads: tuple[str, ...]
    narrow: dict = field(default_factory=dict)  # parameter name -> the values kept of its grid
    trials: int | None = None  # per point; None: the workload's count for the profile
    timeout_s: float | None = None  # per trial; None: the workload's
    explicit_engines: bool = False  # --engine named engines (not `all`)
    noise_threshold: float = DEFAULT_NOISE_THRESHOLD
    adaptive_max_trials: int | None = None  # --adaptive's --max-trials; None: not adaptive
    data_dir: str | None = None
    upstream: str | None = None  # the authors' source (--upstream), resolved
    shard: dict | None = None  # index, count, points, estimated_from (planning/shard.py)
    timing: str = DEFAULT_TIMING
    envs: tuple[str, ...] = ()  # --env SPECs, normalized
    env_dir: str | None = None
    pip_args: tuple[str, ...] = ()
    round_seed: int | None = None  # the seed of the rounds' random order (planning/plan.py); None: plan order
    aa: bool = False  # --aa: each variant beside an A/A copy of itself, for the noise floor
    instructions: bool = False  # --instructions: each trial's instructions per iteration counted too
    claims_budget_min: float = DEFAULT_CLAIMS_BUDGET_MIN  # --claims-budget; 0: no rounds for undecided claims

    @property
    def most_looks(self) -> int:
        """The looks any point's intervals may take: the plan's trials, then each round added after it
        (deciding rounds within MAX_DECIDING_ROUNDS, --adaptive's trials within --max-trials)."""
        deciding = MAX_DECIDING_ROUNDS if self.claims_budget_min > 0 else 0
        return 1 + deciding + (self.adaptive_max_trials or 0)

    def to_record(self) -> dict:
        """The plan as manifest.json keeps it (the record's field names are older than this class)."""
        record = asdict(self)
        record["adaptive"] = None if self.adaptive_max_trials is None else {"max_trials": record.pop("adaptive_max_trials")}
        record.pop("adaptive_max_trials", None)
        for name in ("engines", "workloads", "envs", "pip_args"):
            record[name] = list(record[name])
        record["narrow"] = {k: list(v) for k, v in self.narrow.items()}
        return record

    @classmethod
    def from_record(cls, record) -> "RunPlan":
        """The plan of a manifest, every field type-checked; a field it lacks takes its default."""
        if not isinstance(record, dict):
            raise PlanDamaged("the plan is not a mapping")
        values = dict(record)
        adaptive = values.pop("adaptive", None)
        values["adaptive_max_trials"] = adaptive.get("max_trials") if isinstance(adaptive, dict) else adaptive
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in values.items() if k in known and (v is not None or k in REQUIRED)}
        wrong = sorted({*(name for name, value in values.items() if not CHECKS[name](value)), *REQUIRED - values.keys()})
        if wrong:
            raise PlanDamaged(f"damaged fields: {', '.join(wrong)}")
        for name in ("engines", "workloads", "envs", "pip_args"):
            if name in values:
                values[name] = tuple(values[name])
        if "narrow" in values:
            values["narrow"] = {k: tuple(v) for k, v in values["narrow"].items()}
        return cls(**values)


def _is(value, *kinds) -> bool:
    return isinstance(value, kinds) and not isinstance(value, bool)


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


REQUIRED = {"profile", "engines", "workloads"}
# What each recorded field must be (None is allowed wherever the field's default is None).
CHECKS = {
    "profile": lambda v: v in PROFILES,
    "engines": _strings, "workloads": _strings, "envs": _strings, "pip_args": _strings,
    "narrow": lambda v: isinstance(v, dict) and all(
        isinstance(values, list) and all(_is(x, int, float, str) for x in values) for values in v.values()),
    "trials": lambda v: _is(v, int) and 1 <= v <= MAX_PLANNED_TRIALS,
    "adaptive_max_trials": lambda v: _is(v, int) and 1 <= v <= MAX_TRIALS_PER_POINT,
    "timeout_s": lambda v: _is(v, int, float) and 0 < v <= MAX_TIMEOUT_S,
    "noise_threshold": lambda v: _is(v, int, float) and 0 < v <= MAX_NOISE_PCT / 100,
    "explicit_engines": lambda v: isinstance(v, bool), "aa": lambda v: isinstance(v, bool),
    "instructions": lambda v: isinstance(v, bool), "round_seed": lambda v: _is(v, int),
    "data_dir": lambda v: isinstance(v, str), "upstream": lambda v: isinstance(v, str), "env_dir": lambda v: isinstance(v, str),
    "shard": lambda v: isinstance(v, dict) and isinstance(v.get("points"), list) and all(
        isinstance(p, list) and len(p) == 3 and all(isinstance(x, str) for x in p) for p in v["points"]),
    "timing": lambda v: v in TIMINGS,
    "claims_budget_min": lambda v: _is(v, int, float) and math.isfinite(v) and v >= 0,
}


def read_plan(manifest: dict, where: str = "the run") -> RunPlan:
    """A run's plan for the report, compare and merge. A damaged plan is refused as --resume refuses
    it (UsageError: never read as defaults, which would lose its engines); a manifest without one
    (unreadable, which its reader has warned of) reads as the defaults."""
    if manifest.get("plan") is None:
        return RunPlan(profile=str(manifest.get("profile") or DEFAULT_PROFILE), engines=(), workloads=())
    try:
        return RunPlan.from_record(manifest["plan"])
    except PlanDamaged as exc:
        raise UsageError(f"{where}: the plan in its manifest.json is damaged ({exc}); "
                         f"its trials cannot be read against it") from None
