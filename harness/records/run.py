"""A run folder's records: manifest.json (with its plan, its machine's roofs and ceilings), added.jsonl's
batches and the .lock. trials.jsonl's lines: records/trials.py.

The manifest's "schema" is the schema of every file in the run's folder (a line of trials.jsonl or of
added.jsonl does not repeat it). A manifest from before it had one reads as schema 1, which is this one.
"""
from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from harness.records.base import Name, NonNegative, Record
from harness.records.trials import MAX_BYTES, TIMINGS
from workloads.base import PROFILES

# Far beyond any paper profile (the paper profile plans about 2,000 trials): a typo, not a plan.
MAX_PLANNED_TRIALS = 100_000
# Bounds of the run's options (a typo beyond them, not a plan): for the parser, and for every reader
# of a plan (resume, report, compare, merge), which refuse a plan outside them alike.
MAX_TRIALS_PER_POINT = 1000
# --adaptive's --max-trials: each added trial is a look its intervals take, and judging a point costs about the
# square of its looks (at 100, 18 s and 728 MB for one page of claims): a run asks for at most this many.
MAX_ADAPTIVE_TRIALS = 50
MAX_TIMEOUT_S = 7 * 86400
MAX_NOISE_PCT = 1000
# A core's FP32 multiply-add peak, GFLOP/s: above any single core's (a few hundred today), below a typo.
PEAK_GFLOPS = (0.01, 1e5)
# A core's bandwidth at one level, bytes per second: above a failing disk's, below any memory's.
BYTES_PER_S = (1e6, 1e14)

Strings = list[str]


class Adaptive(Record):
    max_trials: Annotated[int, Field(ge=1, le=MAX_TRIALS_PER_POINT)]


class Shard(Record):
    points: list[Annotated[list[str], Field(min_length=3, max_length=3)]]
    index: Annotated[int, Field(ge=1)] | None = None
    count: Annotated[int, Field(ge=1)] | None = None


class Plan(Record):
    """manifest.json's "plan" (store/run_plan.py's RunPlan: its defaults stand where a field is null or absent)."""
    profile: Literal[tuple(PROFILES)]
    engines: Strings
    workloads: Strings
    narrow: dict[str, list[int | float | str]] | None = None
    trials: Annotated[int, Field(ge=1, le=MAX_PLANNED_TRIALS)] | None = None
    timeout_s: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_S)] | None = None
    explicit_engines: bool | None = None
    noise_threshold: Annotated[float, Field(gt=0, le=MAX_NOISE_PCT / 100)] | None = None
    change: Annotated[float, Field(gt=0, le=MAX_NOISE_PCT / 100)] | None = None
    adaptive: Adaptive | Annotated[int, Field(ge=1, le=MAX_TRIALS_PER_POINT)] | None = None
    data_dir: str | None = None
    upstream: str | None = None
    shard: Shard | None = None
    timing: Literal[TIMINGS] | None = None
    envs: Strings | None = None
    env_dir: str | None = None
    pip_args: Strings | None = None
    round_seed: int | None = None
    aa: bool | None = None
    instructions: bool | None = None
    claims_budget_min: NonNegative | None = None


Rate = Annotated[float, Field(ge=BYTES_PER_S[0], le=BYTES_PER_S[1])]
Size = Annotated[int, Field(ge=1, le=MAX_BYTES)]


class Level(Record):
    """One level of the memory roofs (machine/bandwidth.py): its size (None for DRAM), the probe's working set."""
    level: Name
    size_bytes: Size | None
    working_set_bytes: Size
    read_bytes_per_s: Rate
    rmw_bytes_per_s: Rate


class Bandwidth(Record):
    levels: Annotated[list[Level], Field(min_length=1)] | None = None
    reason: str | None = None
    sizes_source: str | None = None
    source: str | None = None


class Provenance(Record):
    """When and where a machine fact was measured: its core, and the share of that core in use just before."""
    measured_at: Name
    cpu: Annotated[int, Field(ge=0, le=1 << 20)]
    busy: Annotated[float, Field(ge=0, le=1)] | None  # None where the OS does not say


class Native(Record):
    """manifest.json's "native": the driver's build and the core's roofs."""
    executable: str | None = None
    version: str | None = None
    module: dict[str, Any] | None = None
    module_source: str | None = None
    module_same_build: bool | None = None
    peak_gflops_fp32: Annotated[float, Field(ge=PEAK_GFLOPS[0], le=PEAK_GFLOPS[1])] | None = None
    peak_source: str | None = None
    peak_provenance: Provenance | None = None
    bandwidth: Bandwidth | None = None


class Ceiling(Record):
    """One training point's library ceiling (machine/ceiling.py)."""
    workload: Name
    params: dict[str, Any]
    gflops: Annotated[float, Field(ge=PEAK_GFLOPS[0], le=PEAK_GFLOPS[1])] | None = None
    library: str | None = None
    reason: str | None = None
    ours_gflops: Annotated[float, Field(ge=PEAK_GFLOPS[0], le=PEAK_GFLOPS[1])] | None = None
    ours_build: str | None = None
    ours_reason: str | None = None


class Manifest(Record):
    """manifest.json. Every field may be absent (a manifest of an older burtbench); a damaged one is dropped
    with a line naming it (store/results.read_manifest). Fields no reader computes with are kept as written."""
    SCHEMA_KEYED: ClassVar[bool] = True
    schema_: int | None = Field(None, alias="schema")
    run_id: str | None = None
    created_at: str | None = None
    finished_at: str | None = None
    status: str | None = None
    burtbench_version: str | None = None
    profile: str | None = None
    git_commit: str | None = None
    cpu: Annotated[int, Field(ge=0, le=1 << 20)] | None = None
    argv: Strings | None = None
    engines: list | None = None
    workloads: list | None = None
    doctor: list[dict[str, Any]] | None = None
    resumed_at: list | None = None
    plan: dict[str, Any] | None = None  # its own record (Plan), read by store/run_plan.read_plan: a damaged plan refuses
    machine: dict[str, Any] | None = None
    python: dict[str, Any] | None = None
    frameworks: dict[str, str | None] | None = None
    native: Native | None = None
    ceiling: list[Ceiling] | None = None
    tsc: dict[str, Any] | None = None
    energy: dict[str, Any] | None = None
    unavailable: dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    cpus: list[Annotated[int, Field(ge=0, le=1 << 20)]] | None = None
    merged_from: list[dict[str, Any]] | None = None
    mixed: Strings | None = None


class AddedTrial(Record):
    engine: Name
    workload: Name
    params: dict[str, Any]
    trial: Annotated[int, Field(ge=0, le=2**31)]
    why: str
    with_init: bool


class AddedBatch(Record):
    """One line of added.jsonl (store/added.py): a batch of rounds added after the plan."""
    trials: list[AddedTrial]
    deciding_spent_s: NonNegative | None = None


class Lock(Record):
    """.lock: "PID HOST" (store/lock.py); a lock of an older burtbench names no host."""
    pid: Annotated[int, Field(ge=1, le=2**31)]
    host: Annotated[str, Field(min_length=1, max_length=255)] | None = None

    @classmethod
    def of_text(cls, text: str) -> "Lock | None":
        words = text.split()
        try:
            return cls.model_validate({"pid": int(words[0]), "host": words[1] if len(words) > 1 else None})
        except (ValueError, IndexError):  # pydantic's ValidationError is a ValueError
            return None


