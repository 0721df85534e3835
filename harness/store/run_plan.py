"""The plan of a run, typed: what `burtbench run` was asked to do. The session builds it, manifest.json
keeps it under "plan", and resume, merge, compare and the report read it back from there (nowhere else).

One place for the plan's defaults, the timing's among them: a record that lacks a field (a run from
before the field existed) reads as the default written here.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from pydantic import ValidationError

from harness.errors import UsageError
from harness.records.run import MAX_NOISE_PCT, MAX_PLANNED_TRIALS, MAX_TIMEOUT_S, MAX_TRIALS_PER_POINT, Plan
from harness.records.trials import TIMINGS

__all__ = ["MAX_NOISE_PCT", "MAX_PLANNED_TRIALS", "MAX_TIMEOUT_S", "MAX_TRIALS_PER_POINT", "TIMINGS"]

# The run's --timing where it says none: each row timed as the authors' script for its paper row
# times it (workloads/timed_regions.csv); "lean" times the same region for every framework.
DEFAULT_TIMING = "paper"
DEFAULT_PROFILE = "quick"
# A point whose 95% interval is wider than this fraction of its mean is flagged noisy (--noise-threshold).
DEFAULT_NOISE_THRESHOLD = 0.05
# Minutes of rounds added after the plan at the points of claims still undecided (--claims-budget): with it
# `make bench-linux` stays within about 30 minutes on a 2-core VM.
DEFAULT_CLAIMS_BUDGET_MIN = 3.0
# Rounds the deciding rounds may add at a point at most, as one batch: the sequential design's looks are
# declared before the first trial (harness/analysis/effect.py, Looks), so that their error is spent by plan.
MAX_DECIDING_ROUNDS = 5
# --adaptive's most trials per point where --max-trials says none.
DEFAULT_MAX_TRIALS = 10
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
    change: float | None = None  # the change a versions answer decides (--change), a share; None: change.ASKED_CHANGE
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
        """The looks any point's intervals may take: the plan's trials, then the deciding rounds' one batch
        (at most MAX_DECIDING_ROUNDS rounds), then each of --adaptive's trials within --max-trials."""
        deciding = 1 if self.claims_budget_min > 0 else 0  # one batch of rounds, one look
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
        """The plan of a manifest, checked against its declaration (records/run.py's Plan); a field it
        lacks, or holds as null, takes its default."""
        if not isinstance(record, dict):
            raise PlanDamaged("the plan is not a mapping")
        try:
            Plan.model_validate(record)
        except ValidationError as exc:
            wrong = sorted({str(e["loc"][0]) if e["loc"] else "plan" for e in exc.errors()})
            raise PlanDamaged(f"damaged fields: {', '.join(wrong)}") from None
        values = dict(record)
        adaptive = values.pop("adaptive", None)
        values["adaptive_max_trials"] = adaptive.get("max_trials") if isinstance(adaptive, dict) else adaptive
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in values.items() if k in known and v is not None}
        for name in ("engines", "workloads", "envs", "pip_args"):
            if name in values:
                values[name] = tuple(values[name])
        if "narrow" in values:
            values["narrow"] = {k: tuple(v) for k, v in values["narrow"].items()}
        return cls(**values)


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
