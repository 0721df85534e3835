"""A trial as trials.jsonl keeps it (one JSON line each, harness/store/results.py writes them), and the
line a trial's child prints (its payload), held to the same declaration before the trial is written
(harness/running/runner.bounded): every number bounded.

The bounds are generous on purpose: they catch damage (a torn edit, a bad converter, a child that
printed garbage), never a slow or a fast machine. A field out of them drops alone (None, or out of
`extra`), with a warning naming its file and line: the trial's other measures stay. A trial's identity
(engine, workload, point, index, status, whether it was added, its timing, the run that measured it)
has no default to fall back on: damaged, the line is skipped.
"""
from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import Field, field_validator, model_validator

from harness.records.base import Name, Record, holds_non_finite

STATUSES = ("ok", "failed", "timeout", "oom", "unavailable")
TIMINGS = ("paper", "lean")

# Longer than any trial may run (--timeout is at most 7 days), with room to spare.
MAX_SECONDS = 1e7
MAX_BYTES = 2**60  # an exbibyte: past any machine's memory or file
MAX_JOULES = 1e12
# Instructions one iteration can retire: its time × a clock no core reaches × a width no core has.
MAX_CLOCK_HZ = 1e10
MAX_WIDTH = 64
MAX_COUNT = 1e30
# One cycle of that clock: no step of any workload (the floor's empty Python step takes ~100 ns) runs
# faster. A time at zero or below it is damage, and would make every ratio to it absurd or infinite.
MIN_SECONDS = 1 / MAX_CLOCK_HZ
# A page: a process that ran holds at least one (a reading of 0 is no reading).
MIN_BYTES = 4096

# Every measure a ratio or a logarithm is taken of is positive here, and the widest ratio two of them
# can make (MAX_SECONDS / MIN_SECONDS = 1e17) stays far inside a float's range, its logarithm's exp included.
Time = Annotated[float, Field(ge=MIN_SECONDS, le=MAX_SECONDS)]
Ticks = Annotated[float, Field(ge=0, le=MAX_SECONDS)]  # counted in ticks: a short child may be charged none
Bytes = Annotated[float, Field(ge=MIN_BYTES, le=MAX_BYTES)]  # counted in bytes; a float of one is the same count
Counted = Annotated[float, Field(ge=1, le=MAX_COUNT)]
Iterations = Annotated[int, Field(ge=1, le=10**30)]
Warmup = Annotated[int, Field(ge=0, le=10**30)]
Clocks = Annotated[float, Field(ge=0, le=MAX_COUNT)]
Joules = Annotated[float, Field(ge=0, le=MAX_JOULES)]
Text = str | None


class PerIter(Record):
    """A trial's blocks summarized: times, but its spread may be 0 and its count is a count."""
    median: Time | None = None
    mean: Time | None = None
    min: Time | None = None
    max: Time | None = None
    std: Ticks | None = None
    n: Annotated[float, Field(ge=0, le=MAX_COUNT)] | None = None

    @model_validator(mode="after")
    def _others(self) -> "PerIter":
        for name, value in (self.model_extra or {}).items():  # another summary a child added: a time too
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not MIN_SECONDS <= value <= MAX_SECONDS):
                raise ValueError(f"{name} {str(value)[:40]!r} is not a time")
        return self


class TrialLine(Record):
    """One line of trials.jsonl (harness/store/results.py's Trial: its fields, as read back)."""
    # A map whose entries go alone when damaged (a workload's own fields).
    DROPPABLE_MAPS: ClassVar[tuple[str, ...]] = ("extra",)

    engine: Name
    framework: str | None = None
    mode: str | None = None
    language: str | None = None
    device: str | None = None
    workload: Name
    params: dict[str, Any]
    trial: Annotated[int, Field(ge=0, le=2**31)]
    timing: Literal[TIMINGS] = "paper"
    timed_as: Literal[TIMINGS] | None = None
    status: Literal[STATUSES] = "ok"
    reason: Text = None
    exit_code: int | None = None
    signal: int | None = None
    stderr_tail: Text = None
    check: dict[str, Any] | None = None
    precision: Text = None
    iterations: Iterations | None = None
    warmup: Warmup | None = None
    loop_time_s: Time | None = None
    per_iter_s: PerIter | None = None
    samples_s: list[Time] | None = None
    init_time_s: Time | None = None
    wall_time_s: Time | None = None
    cpu_time_s: Ticks | None = None
    cpu_clocks: Clocks | None = None
    cpu_clocks_source: Text = None
    instructions: Counted | None = None
    instructions_per_iter: Counted | None = None
    instructions_reason: Text = None
    instructions_cost_s: Time | None = None
    instructions_build: Text = None
    peak_virtual_bytes: Bytes | None = None
    peak_private_bytes: Bytes | None = None
    peak_private_source: Text = None
    peak_resident_bytes: Bytes | None = None
    peak_resident_source: Text = None
    peak_virtual_source: Text = None
    energy_total_j: Joules | None = None
    energy_task_j: Annotated[float, Field(ge=-MAX_JOULES, le=MAX_JOULES)] | None = None  # total less idle: may dip below 0
    energy_os_j: Joules | None = None
    energy_source: Text = None
    framework_version: Text = None
    cpu: Annotated[int, Field(ge=0, le=1 << 20)] | None = None
    started_at: Text = None
    added: bool = False
    measured_in: Annotated[str, Field(max_length=4096)] | None = None
    extra: dict[str, Any] = {}

    @field_validator("params", "check")
    @classmethod
    def _finite(cls, value):
        if value is not None and holds_non_finite(value):
            raise ValueError("holds a number no measure can be")
        return value

    @field_validator("extra")
    @classmethod
    def _extra(cls, value: dict):
        bad = next((k for k, v in value.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
                    and not abs(v) <= MAX_COUNT or holds_non_finite(v)), None)
        if bad is not None:
            raise ValueError(f"{bad} is not a finite number")
        return value

    def cross_check(self) -> list[tuple[str, str]]:
        found = []
        seconds = self.per_iter_s and (self.per_iter_s.median if self.per_iter_s.median is not None
                                       else self.per_iter_s.mean)
        count = self.instructions_per_iter
        if count is not None and seconds is not None and count > seconds * MAX_CLOCK_HZ * MAX_WIDTH:
            found.append(("instructions_per_iter", f"{count:.3g} per iteration cannot run in {seconds:.3g} s "
                                                   f"(at most {MAX_CLOCK_HZ:g} Hz × {MAX_WIDTH} per cycle)"))
        loop, iterations = self.loop_time_s, self.iterations
        if loop is not None and iterations is not None and loop < iterations * MIN_SECONDS:
            found.append(("iterations", f"{iterations:.3g} in {loop:.3g} s is under {MIN_SECONDS:g} s each"))
        return found


def _bounds(annotation) -> tuple[float, float] | None:
    for arg in (annotation, *get_args(annotation)):
        for meta in get_args(arg)[1:]:
            for inner in getattr(meta, "metadata", ()):
                if getattr(inner, "ge", None) is not None:
                    low = inner.ge
                if getattr(inner, "le", None) is not None:
                    return low, inner.le
    return None


def ranges() -> dict[str, tuple[float, float]]:
    """Each measure of a trial that is a plain number, and its (lowest, highest): read off the declaration."""
    found = {}
    for name, info in TrialLine.model_fields.items():
        bounds = _bounds(info.annotation)
        if bounds and name not in ("trial", "cpu"):
            found[name] = bounds
    return found
