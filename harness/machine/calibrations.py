"""Where a machine's calibration (`burtbench calibrate`) is kept, and the latest one read back.

A calibration says what this machine makes of the stated 95%: how often its A/A intervals hold ×1,
how often an A/A pair is answered faster or slower, how often the deciding rule decides a planted
boundary case, how far reruns moved a factor. It is kept by machine (CPU model and OS) under the
results folder, RESULTS/calibration/<machine key>/, so that `doctor` and a run's report find the one
of the machine they describe. This layer reads the JSON alone: harness/analysis/calibration.py makes it.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from harness.text import clean

FOLDER = "calibration"
RECORD = "calibration.json"
PAGE = "calibration.md"
# The shares one line names, in its order: (field of the record's "shares", its words).
HEADLINE = (("holds_paired", "paired"), ("holds_welch", "Welch"), ("holds_rerun", "run to run"))


def machine_key(facts: dict) -> str:
    """CPU model and OS as one folder name: letters, digits, '.', '_' and '-' only."""
    text = f"{facts.get('cpu_model') or 'unknown CPU'} {facts.get('os') or 'unknown OS'}"
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-.") or "unknown"


def folder(results: Path, facts: dict) -> Path:
    return Path(results) / FOLDER / machine_key(facts)


@dataclass(frozen=True)
class Calibrated:
    """The latest calibration of a machine: its page, when it was made, and its shares in one line."""
    page: Path
    made: str
    line: str


def latest(results: Path, facts: dict) -> Calibrated | None:
    """The calibration of the machine `facts` describes (host.describe(), or a run manifest's "machine")
    under the results folder; None where none was made or its record cannot be read."""
    where = folder(results, facts)
    record = _record(where)
    if not isinstance(record.get("shares"), dict):
        return None
    return Calibrated(where / PAGE, clean(str(record.get("created_at") or "at an unknown time")), summary(record))


def made_before(results: Path, facts: dict, moment: str | None) -> dict | None:
    """The machine's calibration record (its page's path under "page") where it was made before `moment` (a
    run's end): a run's report names the calibration that stood when it ran, the same on every re-render."""
    where = folder(results, facts)
    record = _record(where)
    try:
        made, until = datetime.fromisoformat(record["created_at"]), datetime.fromisoformat(str(moment))
    except (ValueError, TypeError, KeyError):
        return None
    if made.tzinfo is None or until.tzinfo is None or made > until:
        return None
    return {**record, "page": str(where / PAGE)}


def _record(where: Path) -> dict:
    """The calibration record in the folder; {} where there is none or it is no JSON object."""
    try:
        record = json.loads((where / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def summary(record: dict) -> str:
    """The shares a reader checks first, in one line (doctor's, the calibration page's head)."""
    shares = record.get("shares") or {}
    held = ", ".join(f"{_percent(shares.get(name))} {words}" for name, words in HEADLINE)
    planted = _percent(shares.get("planted_decided"))
    spread = record.get("rerun_spread") or {}
    moved = (f"; reruns moved factors by {factor(spread['median'])} (median), {factor(spread['largest'])} at most"
             if _number(spread.get("median")) and _number(spread.get("largest")) else "")
    return (f"A/A intervals held ×1 in {held} (95% promises ≥ 95%); planted boundary cases decided "
            f"{planted} (≤ 5% promised){moved}")


def factor(x: float) -> str:
    """A move either way as a factor: three decimals, since reruns of a quiet machine move by under 1%."""
    return f"×/÷{x:.3f}"


def _percent(share) -> str:
    value = share.get("share") if isinstance(share, dict) else None
    return f"{value:.1%}" if _number(value) else "n/a"


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
