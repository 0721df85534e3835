"""What every record declaration shares, and the one way a record file is read back.

A record is a pydantic model (harness/records/<family>.py): each field's type, unit and bounds stated
once, strictly (a number given as text, a flag given as "yes", a count given as true are each wrong, not
converted). A file burtbench wrote is read only here:

- `read(path, Model)`: the validated record, or `Damaged(file, field, why)` (never an exception for what
  the file holds; an OSError other than a missing file is the caller's, as a disk fault is);
- `salvage(data, Model, ...)`: a run's record with each damaged field dropped (a measure goes to None, a
  key of a free-form map goes away), each drop said once with the file and field; a damaged field the
  record cannot stand without (its identity) damages the whole record;
- `read_cache(path, Model, warn)`: a machine cache; a damaged one is one warning naming file and field,
  and reads as no cache (its facts are measured again).

Why pydantic v2: its errors carry the field's path and the value; it states bounds as types (finite,
gt/ge/le, lengths) and migrations of an older schema as model validators, with no checking code of ours.
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

# Numbers beyond this are no measure of anything here: a damaged field, not a reading.
LARGEST = 1e300


class Record(BaseModel):
    """A declared record. SCHEMA is the version its writer writes (an object file keeps it as "schema");
    a file of a newer schema is refused (this burtbench cannot know its fields), an older one migrated
    by the model's `migrate` where it differs."""
    # A field this burtbench does not know (a newer writer's, or a record's free-form part) is kept as written.
    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="allow", validate_default=False)
    SCHEMA: ClassVar[int] = 1

    @model_validator(mode="before")
    @classmethod
    def _schema(cls, data: Any) -> Any:
        if isinstance(data, dict) and "schema" in data and cls.SCHEMA_KEYED:
            found = data["schema"]
            if not isinstance(found, int) or isinstance(found, bool) or found < 1:
                raise ValueError(f"schema {str(found)[:20]!r} is not a schema version")
            if found > cls.SCHEMA:
                raise ValueError(f"written by a newer burtbench (schema {found}, this one reads up to "
                                 f"{cls.SCHEMA}): upgrade burtbench to read it")
            data = cls.migrate(found, data)
        return data

    # Whether the file holds "schema" (objects burtbench writes whole); a line of a JSON lines file does not:
    # its run's manifest holds the schema of every file in the run's folder.
    SCHEMA_KEYED: ClassVar[bool] = False

    @classmethod
    def migrate(cls, schema: int, data: dict) -> dict:
        """A record of an older schema as this one reads it; the declarations that changed override this."""
        return data

    def cross_check(self) -> list[tuple[str, str]]:
        """(field, why) for fields that are each in bounds but impossible together; a declaration's own."""
        return []


@dataclass(frozen=True)
class Damaged:
    """A record file that cannot be used, or a field of it: which file, which field ('' for the whole
    file), and why, in words."""
    file: str
    field: str
    why: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field + ': ' if self.field else ''}{self.why}"


NonNegative = Annotated[float, Field(ge=0, le=LARGEST)]
Name = Annotated[str, Field(min_length=1, max_length=4096)]
When = Annotated[float, Field(ge=0, le=1e11)]  # a Unix time, seconds: past the year 5000, damage


def _huge_int(text: str):
    value = int(text)
    return value if abs(value) <= LARGEST else math.inf  # past any measure: a damaged field, dropped alone


def parse(text: str | bytes) -> Any:
    """JSON as a record file holds it; NaN, infinities and numbers past LARGEST read as non-finite numbers,
    which every numeric field refuses. ValueError (with RecursionError as one) when it is no JSON."""
    try:
        return json.loads(text, parse_int=_huge_int, parse_constant=lambda name: float(name.replace("Infinity", "inf")))
    except RecursionError:
        raise ValueError("nested past any record") from None


def holds_non_finite(value: Any) -> bool:
    """Whether a free-form value (one no field bounds) holds NaN, an infinity or a number past LARGEST."""
    if isinstance(value, float):
        return not abs(value) <= LARGEST
    if isinstance(value, dict):
        return any(holds_non_finite(v) for v in value.values())
    return isinstance(value, list) and any(holds_non_finite(v) for v in value)


def _where(loc: tuple) -> str:
    return ".".join(str(part) for part in loc)


def _why(error: dict) -> str:
    message = error["msg"].removeprefix("Value error, ")
    if not error["loc"]:  # the record as a whole: its own words
        return message
    value = error.get("input")
    shown = repr(value)[:40] if not isinstance(value, (dict, list)) else type(value).__name__
    return f"{message[0].lower()}{message[1:]} (got {shown})"


def first_problem(error: ValidationError) -> tuple[str, str]:
    found = error.errors(include_url=False)[0]
    return _where(found["loc"]), _why(found)


def validate(data: Any, model: type[Record], file: str | Path):
    """The record, or Damaged naming its first damaged field."""
    try:
        record = model.model_validate(data)
    except ValidationError as exc:
        return Damaged(str(file), *first_problem(exc))
    crossed = record.cross_check()
    return Damaged(str(file), *crossed[0]) if crossed else record


def read(path: Path, model: type[Record]):
    """The record in the file; Damaged if it is no JSON or not the record. FileNotFoundError is the caller's
    (a file not yet written), as is any other OSError (a disk fault is no damage of the record)."""
    return load(path, model)[0]


def load(path: Path, model: type[Record]):
    """(the record or Damaged, the data as the file holds it): for readers that keep the record as plain data."""
    data = Path(path).read_bytes()
    try:
        parsed = parse(data.decode("utf-8"))
    except UnicodeDecodeError:
        return Damaged(str(path), "", "not UTF-8 text"), None
    except ValueError:
        return Damaged(str(path), "", "not valid JSON (cut short, or another kind of file)"), None
    return validate(parsed, model, path), parsed


def read_cache(path: Path, model: type[Record], warn=None):
    """A machine cache: the record, or None where there is none or it is damaged (said once: measured again)."""
    try:
        found = read(path, model)
    except FileNotFoundError:
        return None
    except OSError as exc:
        found = Damaged(str(path), "", f"unreadable ({exc.strerror or exc})")
    if isinstance(found, Damaged):
        (warn or _stderr)(f"{found}; ignoring this cache, its facts are measured again")
        return None
    return found


def _stderr(message: str) -> None:
    from harness.text import clean

    try:
        print(f"burtbench: warning: {clean(message)}", file=sys.stderr)
    except (OSError, ValueError):
        pass  # a closed stderr: the warning has nowhere to go, and the work goes on


def _field_default(model: type[BaseModel], name: str):
    info = model.model_fields.get(name)
    if info is None or info.is_required():
        return None, False
    return info.get_default(call_default_factory=True), True


def _inner(annotation) -> type[BaseModel] | None:
    """The record type a field holds (through Optional, list and dict), if any."""
    from typing import get_args

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _inner(arg)
        if found is not None:
            return found
    return None


def _drop_point(model: type[BaseModel], loc: tuple) -> tuple[tuple, bool] | None:
    """The deepest part of `loc` that can go alone, and whether it is an entry of a free-form map (which
    goes out) rather than a field (which goes to None): a field whose default is None (a measure not
    taken) or an entry of one of a record's DROPPABLE_MAPS. None where the damage is to what the record is."""
    best, current = None, model
    for depth, part in enumerate(loc):
        if isinstance(part, int):
            continue  # an item of a list: its record's fields say what can go
        if current is None or part not in current.model_fields:
            break
        default, has = _field_default(current, part)
        if has and default is None:
            best = (loc[: depth + 1], False)
        elif part in getattr(current, "DROPPABLE_MAPS", ()) and depth + 1 < len(loc):
            best = (loc[: depth + 2], True)
        current = _inner(current.model_fields[part].annotation)
    return best


def _remove(data: Any, point: tuple, entry: bool) -> bool:
    """Drop `point` from the data in place: a field to None, a map's entry out."""
    *path, last = point
    holder = data
    for part in path:
        try:
            holder = holder[part]
        except (KeyError, IndexError, TypeError):
            return False
    if not isinstance(holder, dict) or last not in holder:
        return False
    if entry:
        del holder[last]
    else:
        holder[last] = None
    return True


def salvage(data: Any, model: type[Record], file: str, warn=None, most: int = 64):
    """(the record, the data less what was dropped): each damaged field dropped, said through
    `warn(field, why)`; (Damaged, data) where the damage is to a field the record cannot stand without."""
    if not isinstance(data, dict):
        return Damaged(file, "", "not a JSON object"), data
    for _ in range(most):
        try:
            record = model.model_validate(data)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            points = [_drop_point(model, tuple(e["loc"])) for e in errors]
            if any(p is None for p in points):
                bad = next(e for e, p in zip(errors, points) if p is None)
                return Damaged(file, _where(bad["loc"]), _why(bad)), data
            dropped = [(_where(point), _why(error)) for error, (point, entry) in zip(errors, points)
                       if _remove(data, point, entry)]
            if not dropped:
                return Damaged(file, *first_problem(exc)), data
            for name, why in dict(dropped).items():
                if warn:
                    warn(name, why)
            continue
        crossed = record.cross_check()
        if not crossed:
            return record, data
        for name, why in crossed:
            data[name] = None
            if warn:
                warn(name, why)
    return Damaged(file, "", "damaged past repair"), data
