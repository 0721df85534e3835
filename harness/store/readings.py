"""The numbers of a trial read back, each plausible or dropped: their bounds are declared once, in
harness/records/trials.py (finite, of a number's type, not negative where no measure can be, within
physical bounds); store/results.read_trials drops a field that fails, alone, with a warning naming its
file and line: the trial's other measures stay. This module shows those bounds to the rest of the store.
"""
from __future__ import annotations

import copy

from harness.records.base import salvage
from harness.records.trials import TrialLine, ranges

# Each plain numeric measure of a trial and its (lowest, highest); None is always allowed (a measure not taken).
RANGES = ranges()


def problems(record: dict) -> list[tuple[str, str]]:
    """(field, why) for every field of a trial record that is no plausible measure (NaN and infinities
    included: every bound refuses them)."""
    found = []
    salvage(copy.deepcopy(record), TrialLine, "", lambda name, why: found.append((name, why)))
    return found
