"""The one reader of the JSON files a build leaves to remember itself (Burn's and LibTorch's drivers,
the authors' programs, the environments' records).

Such a file is a cache: whatever is in it that is not what its writer writes (a damaged, hand-edited or
older file) reads as no state at all, so the build runs again instead of a reader failing on it.
A shape is the file's content as its writer makes it:

- a type, or a tuple of alternatives (`(str, None)`); `None` is JSON's null, True/False that value;
- a dict: an object holding those keys, each of its shape; ABSENT among a key's alternatives: it may
  be missing. `{str: shape}`: an object with any keys, each value of that shape;
- `[shape]`: a list of such items.
"""
from __future__ import annotations

import json
from pathlib import Path

ABSENT = object()


def read_json(path: Path, shape) -> dict:
    """The JSON object at `path` if it has `shape`, else {} (no state: what it remembered is made again)."""
    try:
        found = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) and fits(found, shape) else {}


def fits(value, shape) -> bool:
    if isinstance(shape, tuple):
        return any(fits(value, alternative) for alternative in shape)
    if shape is ABSENT or shape is None or isinstance(shape, bool):
        return value is shape
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return False
        if list(shape) == [str]:
            return all(fits(item, shape[str]) for item in value.values())
        return all(fits(value.get(key, ABSENT), item) for key, item in shape.items())
    if isinstance(shape, list):
        return isinstance(value, list) and all(fits(item, shape[0]) for item in value)
    # JSON's true is no number: a count or a time that reads `true` is not one.
    return isinstance(value, shape) and not (isinstance(value, bool) and shape is not bool)
