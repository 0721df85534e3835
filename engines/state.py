"""The JSON files a build leaves to remember itself (Burn's and LibTorch's drivers, the authors' programs),
each declared once here with pydantic, the library of harness/records/ (which engines/ cannot import).

Such a file is a cache: whatever in it is not what its writer writes (a damaged, hand-edited or older
file) reads as no state at all, so the build runs again instead of a reader failing on it. A field may
be missing (never written yet); where present it must have its declared type, JSON's true being no
string or count. Keys a newer writer adds are kept.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError


class State(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


class Failure(State):
    """The last failed build: what it was built from (a later build of the same sources fails alike)."""
    digest: str
    reason: str


class BurnFailure(Failure):
    vendor: str | None  # the crates' folder it was built from, None: crates.io


class BurnState(State):
    """build/burn/burtbench-state.json."""
    built: str = None  # the digest of the sources the driver was built from
    failure: BurnFailure = None


class LibTorchState(State):
    """build/libtorch/burtbench-state.json."""
    configured: dict[str, Any] | None = None  # what CMake was configured with
    failure: Failure = None


class Built(State):
    ok: Literal[True]
    executable: str


class NotBuilt(State):
    ok: Literal[False]
    reason: str | None


class AuthorsState(State):
    """A variant's burtbench-build.json: what it is, what it was built from and with, each target's outcome."""
    identity: dict[str, Any] = None
    source: dict[str, Any] = None
    compiler: dict[str, dict[str, Any]] = None
    targets: dict[str, Built | NotBuilt] = None


class AuthorsWork(State):
    """The shared configured tree's burtbench-work.json: which files a variant changed in it."""
    identity: dict[str, Any] = None
    changed: list[str] = None


def read_json(path: Path, model: type[State]) -> dict:
    """The JSON object at `path` as written, if it is the record `model` declares; else {} (no state: what it
    remembered is made again)."""
    try:
        found = model.model_validate_json(Path(path).read_bytes())
    except (OSError, ValidationError):
        return {}
    return found.model_dump(exclude_unset=True)  # as plain data: callers read and update the state as a dict
