"""The machine caches under the cache folder (harness/records/base.cache_dir): the core's memory bandwidth
per level (bandwidth.json, machine/bandwidth.py) and the libraries' SGEMM times (ceiling.json,
machine/ceiling.py). Each measure keeps its provenance: when, on which core, and how busy that core was.

A cache is a convenience: a damaged one, or one of an older schema (which kept no provenance), is said
once and measured again (records/base.read_cache). The core's peak (machine/peak.py) is measured by
each run and kept in its manifest with the same provenance (records/run.py's Native).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field, model_validator

from harness.records.base import Name, Record
from harness.records.run import BYTES_PER_S, PEAK_GFLOPS, Provenance
from harness.records.trials import MAX_SECONDS, MIN_SECONDS

Rate = Annotated[float, Field(ge=BYTES_PER_S[0], le=BYTES_PER_S[1])]


class BandwidthEntry(Provenance):
    read: Annotated[list[Rate], Field(min_length=1)]
    rmw: Annotated[list[Rate], Field(min_length=1)]
    source: Name

    @model_validator(mode="after")
    def _one_rate_per_level(self) -> "BandwidthEntry":
        if len(self.read) != len(self.rmw):
            raise ValueError("not one read-modify-write rate per level read")
        return self


class MachineCache(Record):
    """A cache of schema 2: its measures keep their provenance. One of schema 1 (no "schema": it kept none)
    cannot be migrated (when, where and under what load its facts were measured is not known): measured again."""
    SCHEMA: ClassVar[int] = 2
    SCHEMA_KEYED: ClassVar[bool] = True
    schema_: Annotated[int, Field(ge=2)] = Field(alias="schema")

    @model_validator(mode="before")
    @classmethod
    def _older(cls, data: Any) -> Any:
        if isinstance(data, dict) and "schema" not in data:
            raise ValueError("a cache of an older burtbench, which kept no provenance")
        return data


class BandwidthCache(MachineCache):
    """bandwidth.json: CPU model -> "cpuN:L1=bytes,...,DRAM=bytes" (a core and its working sets) -> entry."""
    models: dict[str, dict[str, BandwidthEntry]] = {}


class LibraryTimes(Provenance):
    installed: Name
    version: str | None
    seconds: dict[str, Annotated[float, Field(ge=MIN_SECONDS, le=MAX_SECONDS)]]


class CeilingCache(MachineCache):
    """ceiling.json: CPU model -> "cpuN" -> library -> its version and best time per product shape."""
    models: dict[str, dict[str, dict[str, LibraryTimes]]] = {}


def cache_dir() -> Path:
    """Where burtbench keeps what outlives a run (the machine caches, the environments of --env):
    $BURTBENCH_CACHE, else the platform's user cache folder's burtbench/."""
    if os.environ.get("BURTBENCH_CACHE"):
        return Path(os.environ["BURTBENCH_CACHE"])
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "burtbench"


class BandwidthProbe(Record):
    """The line `burtorch-bench --bandwidth` prints: one rate of each kind per working set, bytes per second."""
    read_bytes_per_s: Annotated[list[Rate], Field(min_length=1)]
    rmw_bytes_per_s: Annotated[list[Rate], Field(min_length=1)]


class PeakProbe(Record):
    """The line `burtorch-bench --peak` prints."""
    peak_gflops_fp32: Annotated[float, Field(ge=PEAK_GFLOPS[0], le=PEAK_GFLOPS[1])]


class LibraryProbe(Record):
    """The line a library timing child prints (machine/ceiling.py): its version, the best time per product."""
    version: Name
    seconds: list[Annotated[float, Field(ge=MIN_SECONDS, le=MAX_SECONDS)]]
