"""The numbers of a trial read back, each plausible or dropped: finite, of a number's type, not
negative where no measure can be, within physical bounds. A field that fails drops alone (None, or
out of `extra`), with a warning naming its file and line: the trial's other measures stay.

The bounds are generous on purpose: they catch damage (a torn edit, a bad converter, a child that
printed garbage), never a slow or a fast machine.
"""
from __future__ import annotations

import math

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

# Each numeric field and its (lowest, highest); None is always allowed (a measure not taken). Every
# measure a ratio or a logarithm is taken of is positive here, and the widest ratio two of them can
# make (MAX_SECONDS / MIN_SECONDS = 1e17) stays far inside a float's range, its logarithm's exp included.
RANGES = {
    **{name: (MIN_SECONDS, MAX_SECONDS) for name in ("loop_time_s", "init_time_s", "wall_time_s",
                                                     "instructions_cost_s")},
    "cpu_time_s": (0.0, MAX_SECONDS),  # counted in ticks: a short child may be charged none
    **{name: (MIN_BYTES, MAX_BYTES) for name in ("peak_virtual_bytes", "peak_private_bytes", "peak_resident_bytes")},
    **{name: (1.0, MAX_COUNT) for name in ("instructions", "instructions_per_iter", "iterations")},
    **{name: (0.0, MAX_COUNT) for name in ("cpu_clocks", "warmup")},
    "energy_total_j": (0.0, MAX_JOULES), "energy_os_j": (0.0, MAX_JOULES),
    "energy_task_j": (-MAX_JOULES, MAX_JOULES),  # the total less the idle share: below zero on a noisy meter
}
TIME = (MIN_SECONDS, MAX_SECONDS)
# per_iter_s's summary of its blocks: times, but its spread may be 0 and its count is a count.
PER_ITER = {"std": (0.0, MAX_SECONDS), "n": (0.0, MAX_COUNT)}


def _number_in(value, low: float, high: float) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{type(value).__name__} {str(value)[:40]!r} is not a number"
    if not math.isfinite(value):
        return f"{value} is not a measure"
    if not low <= value <= high:
        return f"{value:g} is outside [{low:g}, {high:g}]"
    return None


def problems(record: dict, bad) -> list[tuple[str, str]]:
    """(field, why) for every field of a trial line that is no plausible measure; `bad` is what the
    parser put where the file held NaN, an infinity or a number beyond any measure."""
    found = []
    for name, (low, high) in RANGES.items():
        value = record.get(name)
        if value is bad:
            found.append((name, "not a finite number"))
        elif value is not None and (why := _number_in(value, low, high)):
            found.append((name, why))
    for name in ("per_iter_s", "check", "extra"):
        if record.get(name) is not None and not isinstance(record[name], dict):
            found.append((name, "not an object"))
    per_iter = record.get("per_iter_s")
    if isinstance(per_iter, dict):
        why = next((w for k, v in per_iter.items() if v is not None
                    for w in ["not a finite number" if v is bad else _number_in(v, *PER_ITER.get(k, TIME))] if w),
                   None)
        if why:
            found.append(("per_iter_s", why))
    samples = record.get("samples_s")
    if samples is not None:
        why = "not a list" if not isinstance(samples, list) else next(
            (w for v in samples for w in ["not a finite number" if v is bad else _number_in(v, *TIME)] if w), None)
        if why:
            found.append(("samples_s", why))
    for key, value in (record.get("extra") or {}).items() if isinstance(record.get("extra"), dict) else ():
        if value is bad or (isinstance(value, (int, float)) and not isinstance(value, bool)
                            and not abs(value) <= MAX_COUNT):
            found.append((f"extra.{key}", "not a finite number"))
    dropped = {name for name, _ in found}
    found += _instructions_against_time(record, dropped) + _loop_against_iterations(record, dropped)
    return found


def _loop_against_iterations(record: dict, dropped: set) -> list[tuple[str, str]]:
    """More iterations than the loop's time holds at MIN_SECONDS each (both in range, so the count is the
    one out of all measure): loop / iterations is a trial's time where no block was timed."""
    loop, iterations = record.get("loop_time_s"), record.get("iterations")
    if "loop_time_s" in dropped or "iterations" in dropped or loop is None or iterations is None \
            or loop >= iterations * MIN_SECONDS:
        return []
    return [("iterations", f"{iterations:.3g} in {loop:.3g} s is under {MIN_SECONDS:g} s each")]


def _instructions_against_time(record: dict, dropped: set) -> list[tuple[str, str]]:
    """More instructions per iteration than its time could retire at MAX_CLOCK_HZ × MAX_WIDTH."""
    count, per_iter = record.get("instructions_per_iter"), record.get("per_iter_s")
    if "instructions_per_iter" in dropped or "per_iter_s" in dropped or count is None or not isinstance(per_iter, dict):
        return []
    seconds = per_iter.get("median") if per_iter.get("median") is not None else per_iter.get("mean")
    if seconds is None or count <= seconds * MAX_CLOCK_HZ * MAX_WIDTH:
        return []
    return [("instructions_per_iter", f"{count:.3g} per iteration cannot run in {seconds:.3g} s "
                                      f"(at most {MAX_CLOCK_HZ:g} Hz × {MAX_WIDTH} per cycle)")]


def drop(record: dict, found: list[tuple[str, str]]) -> dict:
    """The record without the fields `problems` found."""
    for name, _ in found:
        if name.startswith("extra."):
            record["extra"].pop(name[len("extra."):], None)
        else:
            record[name] = {} if name == "extra" else None
    return record
