"""RUN/slurm.json (harness/cluster/record.py): a SLURM run's shards, its jobs and their outcome. A damaged
record is refused whole (the run cannot be followed from a part of it), in one line naming the field."""
from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from harness.records.base import Name, Record, When

Index = Annotated[int, Field(ge=1, le=1 << 20)]
Count = Annotated[int, Field(ge=0, le=10**9)]
Seconds = Annotated[float, Field(ge=0, le=1e9)]  # an estimate: past 30 years, damage


class SlurmShard(Record):
    index: Index
    points: Count
    trials: Count
    estimate_s: Seconds


class ShardsJob(Record):
    id: Name
    kind: Literal["shards"]
    shards: list[Index]


class FinishJob(Record):
    id: Name
    kind: Literal["finish"]
    after: str


class Merged(Record):
    status: str
    failed: dict[str, str] | None = None
    trials: Count
    merged: str
    report: str | None = None


class Failed(Record):
    status: str
    failed: dict[str, str] | None = None
    reason: str


class SlurmRecord(Record):
    SCHEMA_KEYED: ClassVar[bool] = True
    run: str
    submitted_at: When
    chdir: str
    sbatch: list[str]
    report_dir: str | None = None
    shards: Annotated[list[SlurmShard], Field(min_length=1)]
    jobs: list[Annotated[ShardsJob | FinishJob, Field(discriminator="kind")]]
    outcome: Merged | Failed | None = None

    def cross_check(self) -> list[tuple[str, str]]:
        known = {s.index for s in self.shards}
        if any(not set(getattr(job, "shards", ())) <= known for job in self.jobs):
            return [("jobs", "a shard the record does not have")]
        return []
