"""This core's memory roofs: read and read-modify-write bandwidth at each cache level and at DRAM.

`burtorch-bench --bandwidth` (src/driver/bandwidth.hpp) sweeps one buffer per working set on the
pinned core: a read sweep (bytes read per second) and an in-place update (bytes read plus bytes
written per second, as an SGD update moves them). The working sets come from the core's own cache
sizes (Linux: /sys/devices/system/cpu/cpuN/cache/index*/): half of the first level, so that the
buffer stays there beside the stack; at each other level half of it or PAST_BELOW times the level below,
whichever is less: past the level below and at the scale a step's data has (a virtual machine may list
a last level far larger than one core reaches at its speed); and PAST_BELOW times the last level (at least
MIN_DRAM) for DRAM. The roofline charges each byte to the fastest level that can hold it
(machine/roofs.py), so a sweep over a set PAST_BELOW times the level below has at most 1/PAST_BELOW of its
bytes charged below: the probe's own stream, timed again, lands within roofs.LEAST_STREAM_SHARE-100% of its
bound at each level (`doctor --remeasure` shows it: streams). Where the machine does not say its cache
sizes, ASSUMED stands in and the record says so. Timings are kept per CPU model, core and working sets
(CACHE_FILE beside the ceiling's, declared in harness/records/machine.py with when it was measured and how
busy the core was), so the probe runs once per core; one made on a busy core serves its run but is not kept;
`doctor --remeasure` measures it again. A run's manifest keeps the record (its "native" "bandwidth").
"""
from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from engines import children
from engines.base import find_executable
from harness.machine import host, roofs
from harness.machine.doctor_measures import Finding
from harness.records.base import Damaged, parse, read_cache, validate
from harness.records.machine import BandwidthCache, BandwidthEntry, BandwidthProbe, cache_dir
from harness.measure import affinity
from harness.units import MIB

CACHE_FILE = "bandwidth.json"
DRIVER = "burtorch-bench"
KIB = 1024
# Cache sizes of a common core of today, where the machine does not say its own.
ASSUMED = {"L1": 32 * KIB, "L2": 1 * MIB, "L3": 32 * MIB}
MIN_DRAM = 64 * MIB
# How far past the level below each working set reaches: at most 1/PAST_BELOW of a stream's bytes charged to
# the caches below, so a stream at a level's rate lands at no less than roofs.LEAST_STREAM_SHARE of its bound.
PAST_BELOW = round(1 / (1 - roofs.LEAST_STREAM_SHARE))
DRAM = "DRAM"


def cache_sizes(cpu: int, sys_root: str | Path = "/sys") -> tuple[dict[str, int], str]:
    """{"L1": bytes, "L2": ..., "L3": ...} of the data (or unified) caches core `cpu` uses, and where they
    were read; ASSUMED and why where they cannot be read."""
    folder = Path(sys_root) / host.CPU_DIR / f"cpu{cpu}" / "cache"
    sizes = {}
    try:
        for index in sorted(folder.glob("index*")):
            kind = (index / "type").read_text().strip()
            if kind in ("Data", "Unified"):
                sizes[f"L{int((index / 'level').read_text())}"] = parse_size((index / "size").read_text())
    except (OSError, ValueError) as exc:
        return dict(ASSUMED), f"assumed sizes: {folder} unreadable ({exc})"
    if not sizes:
        return dict(ASSUMED), f"assumed sizes: no data cache listed under {folder}"
    return dict(sorted(sizes.items())), f"{folder}/index*/size"


def parse_size(text: str) -> int:
    """sysfs' "48K", "2048K", "32M" or a plain byte count -> bytes; ValueError on anything else."""
    text = text.strip()
    unit = {"K": KIB, "M": MIB, "G": 1024 * MIB}.get(text[-1:].upper(), 1)
    value = int(text[:-1] if unit > 1 else text)
    if value <= 0:
        raise ValueError(f"cache size {text!r}")
    return value * unit


def working_sets(sizes: dict[str, int]) -> dict[str, int]:
    """The probe's working set at each level (sizes in the order of the levels), as the module's docstring says."""
    sets, below = {}, None
    for level, size in sizes.items():
        sets[level] = size // 2 if below is None else min(size // 2, PAST_BELOW * below)
        below = size
    return {**sets, DRAM: max(PAST_BELOW * max(sizes.values()), MIN_DRAM)}


def probe(sizes: list[int], cpu: int, driver: str | None = None) -> tuple[dict | None, str]:
    """The driver's line for these working sets, pinned to `cpu`: (its rates, how), or (None, why not)."""
    driver = driver or find_executable(DRIVER)
    if driver is None:
        return None, f"no {DRIVER}: build the project (make setup) to measure the memory bandwidth"
    try:
        with affinity.pinned_spawning(cpu):
            out = children.run([driver, "--bandwidth", ",".join(map(str, sizes))], "measuring the memory bandwidth "
                               f"({DRIVER} --bandwidth)", timeout=300, capture_output=True, text=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{DRIVER} --bandwidth failed: {exc}"
    if out.returncode != 0:
        return None, f"{DRIVER} --bandwidth failed: {(out.stderr.strip().splitlines() or [f'exit {out.returncode}'])[-1]}"
    try:
        line = validate(parse(out.stdout), BandwidthProbe, f"{DRIVER} --bandwidth")
    except ValueError:
        return None, f"{DRIVER} --bandwidth failed: its output is not a JSON line"
    if isinstance(line, Damaged) or any(len(r) != len(sizes) for r in (line.read_bytes_per_s, line.rmw_bytes_per_s)):
        return None, (f"{DRIVER} --bandwidth failed: not one positive rate of each kind per working set"
                      + (f" ({line.field}: {line.why})" if isinstance(line, Damaged) else ""))
    return {"read": line.read_bytes_per_s, "rmw": line.rmw_bytes_per_s}, f"{DRIVER} --bandwidth on core {cpu}"


def measure(cpu: int, sys_root: str | Path = "/sys", cache: Path | None = None, driver: str | None = None,
            again: bool = False) -> dict:
    """The record a manifest keeps: {"levels": [{"level", "size_bytes" (None for DRAM), "working_set_bytes",
    "read_bytes_per_s", "rmw_bytes_per_s"}, ...], "sizes_source", "source"}; "levels": None and the
    "reason" where the probe cannot run. Taken from the cache where this CPU model's core measured these
    working sets (records/machine.py: a damaged cache is said once and measured again), unless `again`."""
    sizes, sizes_source = cache_sizes(cpu, sys_root)
    sets = working_sets(sizes)
    cache = cache or cache_dir() / CACHE_FILE
    kept = read_cache(cache, BandwidthCache) or BandwidthCache(schema=BandwidthCache.SCHEMA)
    model = host.describe().get("cpu_model") or "unknown CPU"
    key = f"cpu{cpu}:" + ",".join(f"{level}={size}" for level, size in sets.items())
    found = None if again else kept.models.get(model, {}).get(key)
    if found is not None and len(found.read) != len(sets):
        found = None  # kept for other working sets under this key: measured again
    if found is None:
        busy = host.core_busy(cpu)
        rates, how = probe(list(sets.values()), cpu, driver)
        if rates is None:
            return {"levels": None, "reason": how, "sizes_source": sizes_source}
        found = BandwidthEntry(read=rates["read"], rmw=rates["rmw"], source=how, cpu=cpu, busy=busy,
                               measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        if busy is None or busy <= host.BUSY:
            kept.models.setdefault(model, {})[key] = found
            try:
                _write(cache, kept.model_dump(by_alias=True))
            except OSError:
                pass  # the cache saves the next run's time; this run has its figures
    levels = [{"level": level, "size_bytes": sizes.get(level), "working_set_bytes": size,
               "read_bytes_per_s": read, "rmw_bytes_per_s": rmw}
              for (level, size), read, rmw in zip(sets.items(), found.read, found.rmw)]
    return {"levels": levels, "sizes_source": sizes_source, "source": f"{found.source}, {provenance(found)}"}


def provenance(found) -> str:
    """When it was measured and how busy its core was (records/machine.py's Provenance), in words."""
    load = "" if found.busy is None else f", core {found.busy:.0%} busy before"
    kept = "" if found.busy is None or found.busy <= host.BUSY else " (too busy to keep: not cached)"
    return f"measured {found.measured_at}{load}{kept}"


def _write(path: Path, data: dict) -> None:
    """Whole or not at all: a probe cut short leaves the previous cache."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(partial, path)


def size_text(size: int | None) -> str:
    if size is None:
        return "—"
    return f"{size / MIB:g} MiB" if size >= MIB else f"{size / KIB:g} KiB"


def table(record: dict) -> list[str]:
    """The record as lines: a level per line, its size, the working set and both rates in GB/s."""
    lines = [f"{'level':6} {'size':>11} {'working set':>12} {'read GB/s':>10} {'rmw GB/s':>10}"]
    for level in record.get("levels") or []:
        lines.append(f"{level['level']:6} {size_text(level['size_bytes']):>11} {size_text(level['working_set_bytes']):>12} "
                     f"{level['read_bytes_per_s'] / 1e9:10.1f} {level['rmw_bytes_per_s'] / 1e9:10.1f}")
    return lines


def findings(cpu: int, sys_root: str | Path = "/sys", again: bool = False) -> list[Finding]:
    """doctor's lines: the roofs of core `cpu` (measured once per CPU model and core, or `again`), or why there
    are none; `again` (doctor --remeasure), a stream timed against those roofs at each level too (streams)."""
    record = measure(cpu, sys_root, again=again)
    if record["levels"] is None:
        return [Finding("info", "bandwidth", f"memory bandwidth not measured: {record['reason']}",
                        "make setup builds burtorch-bench")]
    rates = "; ".join(f"{lv['level']} (set {size_text(lv['working_set_bytes'])}) {lv['read_bytes_per_s'] / 1e9:.0f}/"
                      f"{lv['rmw_bytes_per_s'] / 1e9:.0f}" for lv in record["levels"])
    found = Finding("ok", "bandwidth", f"read/read-modify-write GB/s on cpu{cpu}: {rates} ({record['source']}; "
                                       f"cache sizes: {record['sizes_source']})")
    return [found, stream_finding(streams(record, cpu))] if again else [found]


def streams(record: dict, cpu: int, driver: str | None = None) -> dict:
    """The probe's sweeps as streams of known bytes, one per level's working set of `record` (measure's), timed
    again on core `cpu`: each one's share of its bound under the record's roofs (machine/roofs.py), in whole
    percent as shown. {"levels": [{"level", "working_set_bytes", "read_pct", "rmw_pct"}, ...], "source"};
    "levels": None and the "reason" where the stream cannot be timed."""
    sets = [level["working_set_bytes"] for level in record["levels"]]
    rates, how = probe(sets, cpu, driver)
    if rates is None:
        return {"levels": None, "reason": how}
    memory = roofs.Memory(record["levels"])
    levels = []
    for level, size, read, rmw in zip(record["levels"], sets, rates["read"], rates["rmw"]):
        read_share, rmw_share = memory.stream_shares(size, read, rmw)
        levels.append({"level": level["level"], "working_set_bytes": size, "read_pct": round(100 * read_share),
                       "rmw_pct": round(100 * rmw_share)})
    return {"levels": levels, "source": how}


def stream_finding(found: dict) -> Finding:
    """streams' line: a stream's share of its bound at each level, read/read-modify-write; a warning where one
    lies outside roofs.LEAST_STREAM_SHARE-100% as shown: on this core now the roofs are no floor, or a loose one."""
    if found["levels"] is None:
        return Finding("info", "stream", f"no stream timed against the roofs: {found['reason']}")
    shares = "; ".join(f"{lv['level']} {lv['read_pct']}%/{lv['rmw_pct']}%" for lv in found["levels"])
    message = (f"a stream of known bytes at each level's set, as a share of its roofline bound, "
               f"read/read-modify-write: {shares}")
    least = round(100 * roofs.LEAST_STREAM_SHARE)
    outside = [lv["level"] for lv in found["levels"] if not all(least <= lv[k] <= 100 for k in ("read_pct", "rmw_pct"))]
    if not outside:
        return Finding("ok", "stream", f"{message} ({found['source']})")
    return Finding("warn", "stream", f"{message}: outside {least}-100% at {', '.join(outside)} ({found['source']})",
                   "the machine's load (a shared host's memory bandwidth too) changed between the roofs and the "
                   "stream: doctor --remeasure when it is quiet")
