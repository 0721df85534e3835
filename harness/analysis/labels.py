"""Engine ids as a reader tells them apart in a narrow table: the parts every row shares are dropped
(and said once, in a legend), the parts that differ are kept whole, never cut."""
from __future__ import annotations

from engines.base import split_id

PARTS = ("framework", "mode", "language", "device")


def short_ids(ids: list[str]) -> tuple[dict[str, str], str]:
    """({id: its short label}, legend). An id's environment (`@SPEC`) is kept whenever the ids differ
    in it, since that is what a versions run compares; labels stay unique, else the ids are kept."""
    unique = list(dict.fromkeys(ids))
    if len(unique) < 2:
        return {i: i for i in unique}, ""
    split = {i: (split_id(i)[0].split("/"), split_id(i)[1]) for i in unique}
    widths = {len(parts) for parts, _ in split.values()}
    if widths != {len(PARTS)}:
        return {i: i for i in unique}, ""
    shared = [k for k in range(len(PARTS)) if len({parts[k] for parts, _ in split.values()}) == 1]
    envs_differ = len({env for _, env in split.values()}) > 1
    labels = {}
    for engine_id, (parts, env) in split.items():
        kept = "/".join(p for k, p in enumerate(parts) if k not in shared)
        labels[engine_id] = "@".join(x for x in (kept, env if envs_differ else "") if x) or engine_id
    if len(set(labels.values())) < len(labels) or not shared:
        return {i: i for i in unique}, ""
    sample = next(iter(split.values()))[0]
    legend = "engines: " + ", ".join(f"{PARTS[k]} {sample[k]}" for k in shared) + " (every row)"
    common_env = next(iter(split.values()))[1]
    if common_env and not envs_differ:
        legend += f", environment {common_env}"
    return labels, legend
