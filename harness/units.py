"""The units a reader sees: memory in MiB (2^20 bytes) everywhere, in every table, page and line;
counts with their noun in correct English."""
from __future__ import annotations

MIB = 2**20
MIB_LABEL = "MiB"


def mib(size_bytes: float | None, missing: str = "n/a") -> str:
    """`size_bytes` as '12.3 MiB'; `missing` where there is no value."""
    return missing if size_bytes is None else f"{size_bytes / MIB:.1f} {MIB_LABEL}"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """'1 trial', '2 trials': a count in correct English."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
