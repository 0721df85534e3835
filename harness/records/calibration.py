"""A machine's calibration (RESULTS/calibration/<host key>/calibration.json, `burtbench calibrate`) and the
noise it measured, which a run also keeps in its manifest ("noise"): what the machine adds beyond one run's
rounds. A damaged noise must never narrow an interval: out of its bounds, the record reads as damaged and
the run uses the assumed noise instead (harness/analysis/noise.py).
"""
from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from harness.records.base import Name, Record

LAGS_KEPT = 32  # more lags than any calibration measures: a longer list is another kind of record
Correlation = Annotated[float, Field(ge=-1, le=1)]
Share = Annotated[float, Field(ge=0, le=1)]


class Noise(Record):
    acf: Annotated[list[Correlation], Field(max_length=LAGS_KEPT)]
    between_sd: Annotated[float, Field(ge=0, lt=2)]  # log scale: ×/÷7 a run is no machine's noise, but damage
    between_df: Annotated[float, Field(ge=1)] | None = None  # None: known exactly (an assumed noise)
    source: Name = "this run's trials only"


class Machine(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    cpu: Annotated[int, Field(ge=0, lt=65536)]


class Spread(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    median: Annotated[float, Field(ge=1, le=1e6)]
    largest: Annotated[float, Field(ge=1, le=1e6)]


class Calibration(Record):
    SCHEMA: ClassVar[int] = 1
    created_at: Name  # ISO 8601 with its time zone
    machine: Machine
    noise: Noise
    shares: dict
    rerun_spread: Spread | None = None
