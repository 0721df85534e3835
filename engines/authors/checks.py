"""The numerical checks of the authors' programs, on what they print.

Each returns the trial's check as a dict: ok (True, False, or None where the printed output cannot
decide), status ("ok", "mismatch", "missing", "agrees_to_printed_digits", "not comparable"),
max_rel_err, expected, got, reason. Their graph programs print std::cout's default 6 significant
digits, so a 1e-12 agreement can only be shown where the print is that fine; a disagreement larger
than the print's rounding is a mismatch whatever the digits.
"""
from __future__ import annotations

import math
from typing import Mapping

from engines.authors.output import SAVED_FILE, half_unit, significant_digits

NOT_COMPARABLE = "not comparable"

TINY_REFERENCE = {"g": 612.5, "dg_da": -35.0, "dg_db": 1050.0}
SMALL_REFERENCE = {"g": 2421 / 98, "dg_da": 47620 / 343, "dg_db": 221433 / 343}
SAVE_LOAD_REFERENCE = {"a": -4.0, "b": 2.0, "c": -1.0, "d": 6.0, "e": -7.0, "f": 49.0, "g": 49.0 / 2 + 10.0 / 49.0}
FP64_TOLERANCE = 1e-12


def check_printed(measures: Mapping, reference: Mapping[str, float], tolerance: float = FP64_TOLERANCE) -> dict:
    """Compare printed outputs with the reference, as far as the printed digits allow.

    status: "ok" (agrees within tolerance, and the print is fine enough to say so), "mismatch" (the
    printed number cannot be the reference's, even allowing for its rounding), "agrees_to_printed_digits"
    (agrees as far as the print goes, which is coarser than the tolerance: ok is then None), or
    "missing". The authors' programs print with the stream's default 6 significant digits.
    """
    got = dict(measures.get("outputs") or {})
    printed = dict(measures.get("printed") or {})
    expected = dict(reference)
    missing = [k for k in expected if not isinstance(got.get(k), (int, float))]
    if missing:
        return {"ok": False, "status": "missing", "max_rel_err": None, "expected": expected, "got": got,
                "reason": f"the program's output has no {', '.join(missing)}"}
    errors, statuses, digits = {}, {}, {}
    for key, ref in expected.items():
        value = got[key]
        err = abs(value - ref) / abs(ref) if ref else abs(value)
        errors[key] = err
        text = printed.get(key, repr(value))
        digits[key] = significant_digits(text)
        slack = half_unit(text) * (1 + 1e-9) + abs(ref) * 1e-15
        if not math.isfinite(value) or (abs(value - ref) > slack and err > tolerance):
            statuses[key] = "mismatch"
        elif half_unit(text) <= tolerance * abs(ref):
            statuses[key] = "ok" if err <= tolerance else "mismatch"
        else:
            statuses[key] = "agrees_to_printed_digits"
    if "mismatch" in statuses.values():
        status, ok = "mismatch", False
    elif "agrees_to_printed_digits" in statuses.values():
        status, ok = "agrees_to_printed_digits", None
    else:
        status, ok = "ok", True
    bad = [k for k, s in statuses.items() if s == "mismatch"]
    coarse = [k for k, s in statuses.items() if s == "agrees_to_printed_digits"]
    reason = None
    if bad:
        reason = "; ".join(f"{k}: printed {printed.get(k, got[k])}, expected {expected[k]!r}" for k in bad)
    elif coarse:
        reason = (f"{', '.join(coarse)} agree with the reference as far as printed"
                  f" ({', '.join(f'{k}: {digits[k]} significant digits' for k in coarse)});"
                  f" {tolerance:g} relative cannot be decided from the print")
    return {"ok": ok, "status": status, "max_rel_err": max(errors.values()), "expected": expected, "got": got,
            "printed": printed, "per_output": statuses, "printed_digits": digits, "tolerance": tolerance,
            "reason": reason}


def check_tiny(measures: Mapping, reference: Mapping[str, float] | None = None) -> dict:
    return check_printed(measures, reference or TINY_REFERENCE)


def check_small(measures: Mapping, reference: Mapping[str, float] | None = None) -> dict:
    return check_printed(measures, reference or SMALL_REFERENCE)


def check_save_load(measures: Mapping, reference: Mapping[str, float] | None = None) -> dict:
    """The saved file's seven FP64 values must equal the graph's exactly (tolerance 0).

    Their loading program prints nothing of what it loaded, so the load half can only be checked
    as: the file it read was the saved one, unchanged, and of the size it expects (56 bytes).
    """
    expected = dict(reference or SAVE_LOAD_REFERENCE)
    saved = measures.get("saved_file_values") or {}
    after = measures.get("file_values_after_load") or {}
    if not saved:
        return {"ok": False, "status": "missing", "max_rel_err": None, "expected": expected, "got": {},
                "reason": f"no 56-byte {SAVED_FILE} after their saving program"}
    diff = [k for k in expected if saved.get(k) != expected[k]]
    changed = bool(after) and after != saved
    ok = not diff and not changed and bool(after)
    reason = None
    if diff:
        reason = "saved values differ: " + ", ".join(f"{k}={saved.get(k)!r} (expected {expected[k]!r})" for k in diff)
    elif not after:
        reason = f"{SAVED_FILE} missing after their loading program"
    elif changed:
        reason = f"{SAVED_FILE} changed while being loaded"
    errors = [abs(saved[k] - v) / abs(v) for k, v in expected.items() if k in saved and v]
    return {"ok": ok, "status": "ok" if ok else "mismatch", "max_rel_err": max(errors) if errors else None,
            "expected": expected, "got": dict(saved), "tolerance": 0.0, "reason": reason,
            "load_note": "their loading program prints nothing it loaded: the load half is checked as"
                         " reading the saved, unchanged 56-byte file (under the harness, the file is read"
                         " once, after both programs ran)"}


def check_training(measures: Mapping, reference: Mapping | None = None) -> dict:
    losses = (measures.get("outputs") or {}).get("losses") or []
    return {"ok": None, "status": NOT_COMPARABLE, "max_rel_err": None, "expected": {},
            "got": {"losses": losses, "loss_steps": (measures.get("outputs") or {}).get("loss_steps")},
            "reason": "the authors' program starts from its own initial weights (its own RNG and"
                      " distributions) and samples its own batches, with a tanh on the logits: its losses"
                      " cannot be compared with the shared reference"}
