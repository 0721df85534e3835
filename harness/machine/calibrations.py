"""Where a machine's calibration (`burtbench calibrate`) is kept, and which one applies to a run.

A calibration says what this machine adds beyond one run's rounds (the correlation of rounds, a run's own
shift of a factor) and how often the claims' rule held here. It is kept by host (its name, CPU model and
OS) under the results folder, RESULTS/calibration/<host key>/, and records the core it measured, our
engine's build and when it was made. A run applies it only where it fits: the same host and core, made
before the run and at most MAX_AGE_DAYS before it; otherwise the run says which of these failed. This layer
reads the JSON alone: harness/analysis/calibration.py makes it.
"""
from __future__ import annotations

import re
import socket
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from harness.records.base import Damaged, read
from harness.records.calibration import Calibration
from harness.text import clean

FOLDER = "calibration"
RECORD = "calibration.json"
PAGE = "calibration.md"
MAX_AGE_DAYS = 30  # a machine's state drifts with its kernel, load and neighbours: an older calibration is stale
# The shares one line names, in its order: (field of the record's "shares", its words).
HEADLINE = (("holds_noise", "with the machine's noise"), ("holds_plain", "from one run's rounds alone"))


def host_name() -> str:
    return socket.gethostname() or "unknown host"


def machine_key(facts: dict, host: str | None = None) -> str:
    """Host, CPU model and OS as one folder name: letters, digits, '.', '_' and '-' only."""
    text = f"{host or facts.get('host') or 'unknown host'} {facts.get('cpu_model') or 'unknown CPU'} " \
           f"{facts.get('os') or 'unknown OS'}"
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-.") or "unknown"


def folder(results: Path, facts: dict, host: str | None = None) -> Path:
    return Path(results) / FOLDER / machine_key(facts, host or facts.get("host") or host_name())


@dataclass(frozen=True)
class Calibrated:
    """The latest calibration of a machine: its page, when it was made, and its shares in one line."""
    page: Path
    made: str
    line: str


def latest(results: Path, facts: dict) -> Calibrated | None:
    """The calibration of this host under the results folder; None where none was made or it cannot be read."""
    where = folder(results, facts)
    record = _record(where)
    if not isinstance(record.get("shares"), dict):
        return None
    return Calibrated(where / PAGE, clean(str(record.get("created_at") or "at an unknown time")), summary(record))


def applying(results: Path, facts: dict, cpu: int, moment: str | None = None) -> tuple[dict | None, str]:
    """(the record of the calibration that applies to a run on `cpu` starting at `moment` (now where None),
    with its page's path under "page"; why none applies where it is None)."""
    where = folder(results, facts)
    record, why = _read(where)
    if not record:
        return None, why
    machine = record.get("machine") if isinstance(record.get("machine"), dict) else {}
    try:
        made = datetime.fromisoformat(str(record.get("created_at")))
        until = datetime.fromisoformat(moment) if moment else datetime.now(timezone.utc)
    except ValueError:
        return None, f"its calibration ({where / RECORD}) has no readable date"
    if made.tzinfo is None or until.tzinfo is None:
        return None, f"its calibration ({where / RECORD}) has no time zone in its date"
    if machine.get("cpu") != cpu:
        return None, f"its calibration measured core {clean(str(machine.get('cpu')))}, this run core {cpu}"
    if made > until:
        return None, f"its calibration ({made:%Y-%m-%d}) was made after this run"
    age = (until - made).days
    if age > MAX_AGE_DAYS:
        return None, f"its calibration is {age} days old (at most {MAX_AGE_DAYS} apply)"
    return {**record, "page": str(where / PAGE)}, ""


def _record(where: Path) -> dict:
    """The calibration record in the folder, as its declaration reads it; {} where there is none or it is
    damaged (harness/records/calibration.py)."""
    return _read(where)[0]


def _read(where: Path) -> tuple[dict, str]:
    """(the record, or {}; why there is none: missing, or damaged naming its field)."""
    try:
        found = read(where / RECORD, Calibration)
    except FileNotFoundError:
        return {}, f"no calibration of this host under {where.parent}"
    except OSError as exc:  # a disk fault: said, and the work goes on as with none
        print(f"burtbench: warning: cannot read {where / RECORD} ({exc.strerror or exc}): going on without it",
              file=sys.stderr)
        return {}, f"its calibration could not be read ({exc.strerror or exc})"
    if isinstance(found, Damaged):
        return {}, f"its calibration is damaged ({found})"
    return found.model_dump(mode="json"), ""


def summary(record: dict) -> str:
    """The shares a reader checks first, in one line (doctor's, the calibration page's head)."""
    shares = record.get("shares") or {}
    held = ", ".join(f"{_percent(shares.get(name))} {words}" for name, words in HEADLINE)
    planted = _percent(shares.get("planted_noise"))
    short = [name for name, share in shares.items() if isinstance(share, dict) and share.get("short") is True]
    reading = f"short of 95% in: {', '.join(short)}" if short else "no share short of what 95% promises"
    spread = record.get("rerun_spread") or {}
    moved = (f"; reruns moved factors by {factor(spread['median'])} (median), {factor(spread['largest'])} at most"
             if _number(spread.get("median")) and _number(spread.get("largest")) else "")
    return (f"intervals held the machine's factor in {held} (95% promises ≥ 95%); planted boundary cases decided "
            f"{planted} (≤ 5% promised); {reading}{moved}")


def factor(x: float) -> str:
    """A move either way as a factor: three decimals, since reruns of a quiet machine move by under 1%."""
    return f"×/÷{x:.3f}"


def _percent(share) -> str:
    value = share.get("share") if isinstance(share, dict) else None
    return f"{value:.1%}" if _number(value) else "n/a"


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and abs(value) != float("inf")
