"""The practical ceiling of a training step's matrix products: the best single-thread FP32 matrix
product (SGEMM) a library at hand runs on the run's core at the step's own shapes.

The FMA peak (machine/peak.py) is a loop no product reaches; a library's SGEMM at the same shapes is
what "as fast as it gets here" means. Each library in LIBRARIES is timed in a child process pinned to
the core, its threads held to one: numpy's BLAS (OpenBLAS in its wheels) and torch's (MKL or
oneDNN). A point's ceiling is its step's products (Workload.step_products) over the time of the
fastest library for all of them: GFLOP/s comparable to the step's own. Timings are kept per CPU model,
core and installed library version (CACHE_FILE under the cache folder), so a run measures only the shapes
it has not seen there.
A library that is not installed or fails is left out with the reason; no library at all: None with them.

Our own block products are timed the same way at the same shapes (`burtorch-bench --products`,
the installed driver's kernels; never cached, as the engine changes more often than a library):
"ours_gflops" beside the ceiling says whether our products run at library speed, apart from the
rest of a step.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from engines import children
from engines.base import find_executable
from harness.machine import host
from harness.measure import affinity
from harness.records.base import parse, read_cache, validate
from harness.records.machine import CeilingCache, LibraryProbe, LibraryTimes, cache_dir

CACHE_FILE = "ceiling.json"
DRIVER = "burtorch-bench"
# Every library's threads held to one, before it loads.
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}

# What every child runs after its library's lines: reads [[m, k, n], ...] on stdin and prints
# {"version": ..., "seconds": [the best time of each product]}. A timing repeats the product for
# at least 2 ms; the best of 5 timings counts.
_TIMING = """
import json, sys, time
seconds = []
for m, k, n in json.load(sys.stdin):
    a, b, c = matrices(m, k, n)
    product(a, b, c)
    repeats = 1
    while True:
        start = time.perf_counter()
        for _ in range(repeats):
            product(a, b, c)
        took = time.perf_counter() - start
        if took >= 2e-3:
            break
        repeats *= 2
    best = took / repeats
    for _ in range(4):
        start = time.perf_counter()
        for _ in range(repeats):
            product(a, b, c)
        best = min(best, (time.perf_counter() - start) / repeats)
    seconds.append(best)
print(json.dumps({"version": version, "seconds": seconds}))
"""

LIBRARIES = {
    "numpy": """
import numpy as np
try:
    blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
    version = f"numpy {np.__version__} ({blas['name']} {blas.get('version', '')})".replace(" )", ")")
except (AttributeError, KeyError, TypeError):
    version = f"numpy {np.__version__}"
rng = np.random.default_rng(0)
def matrices(m, k, n):
    return (rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32),
            np.empty((m, n), dtype=np.float32))
def product(a, b, c):
    np.matmul(a, b, out=c)
""",
    "torch": """
import torch
torch.set_num_threads(1)
version = f"torch {torch.__version__} ({'mkl' if torch.backends.mkl.is_available() else 'no mkl'})"
def matrices(m, k, n):
    return torch.randn(m, k), torch.randn(k, n), torch.empty(m, n)
def product(a, b, c):
    torch.mm(a, b, out=c)
""",
}


def time_library(name: str, code: str, shapes: list[tuple[int, int, int]], cpu: int,
                 python: str = sys.executable) -> tuple[str | None, list[float] | str]:
    """(library version, seconds per product) from a child pinned to `cpu`; (None, why not) if it fails."""
    return _timed([python, "-c", code + _TIMING], shapes, cpu, name, input=json.dumps(shapes),
                  env={**os.environ, **ONE_THREAD})


def time_ours(shapes: list[tuple[int, int, int]], cpu: int) -> tuple[str | None, list[float] | str]:
    """(our build, seconds per product) of our block products, from the driver pinned to `cpu`, as
    time_library's; (None, why not) where there is no driver or it fails."""
    driver = find_executable(DRIVER)
    if driver is None:
        return None, f"our products: no {DRIVER} (make setup builds it)"
    return _timed([driver, "--products", ",".join(_shape_key(s) for s in shapes)], shapes, cpu,
                  f"our products ({DRIVER} --products)")


def _timed(cmd: list[str], shapes: list, cpu: int, who: str, **run) -> tuple[str | None, list[float] | str]:
    """A timing child's {"version", "seconds"} line read; (None, why not) where it fails."""
    try:
        with affinity.pinned_spawning(cpu):
            out = children.run(cmd, f"timing {who} at the step's products", timeout=600, capture_output=True,
                               text=True, **run)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{who}: {exc}"
    try:
        result = validate(parse(out.stdout), LibraryProbe, who)
    except ValueError:
        result = None
    if isinstance(result, LibraryProbe) and len(result.seconds) == len(shapes):
        return result.version, result.seconds
    return None, f"{who}: {(out.stderr.strip().splitlines() or ['no output'])[-1]}"


def measure(points: list[tuple], cpu: int, libraries: dict[str, str] = LIBRARIES,
            cache: Path | None = None, ours: bool = True, again: bool = False) -> list[dict]:
    """Each training point's ceiling: {"workload", "params", "gflops", "library"} of the fastest library
    over the step's products, or "gflops": None and the "reason" where no library ran.
    points: (Workload, params) pairs whose workload declares step_products. The libraries' times are kept
    per CPU model and core (records/machine.py's CeilingCache, with when and how busy the core was), unless
    `again`; a damaged cache is said once and measured again; times measured on a busy core are not kept."""
    cache = cache or cache_dir() / CACHE_FILE
    kept = read_cache(cache, CeilingCache) or CeilingCache(schema=CeilingCache.SCHEMA)
    timings = kept.models.setdefault(host.describe().get("cpu_model") or "unknown CPU", {}).setdefault(f"cpu{cpu}", {})
    shapes = sorted({tuple(s) for workload, params in points for s in workload.step_products(params)})
    failures, busy = [], None
    for name, code in libraries.items():
        installed = _installed(name)
        if installed is None:
            failures.append(f"{name}: not installed")
            timings.pop(name, None)
            continue
        known = None if again else timings.get(name)
        if known is None or known.installed != installed:  # another version: none of its times hold
            known = None
        unseen = [s for s in shapes if known is None or _shape_key(s) not in known.seconds]
        if not unseen:
            continue
        busy = host.core_busy(cpu) if busy is None else busy
        version, seconds = time_library(name, code, unseen, cpu)
        if version is None:
            failures.append(seconds)
            timings.pop(name, None)
            continue
        timings[name] = LibraryTimes(
            installed=installed, version=version, cpu=cpu, busy=busy,
            measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            seconds={**(known.seconds if known else {}), **{_shape_key(s): t for s, t in zip(unseen, seconds)}})
    if timings and (busy is None or busy <= host.BUSY):  # measured under load: this run's, never kept
        try:
            _write(cache, kept.model_dump(by_alias=True))
        except OSError:
            pass  # the cache saves the next run's time; this run has its figures
    timings = {name: {"version": t.version, "seconds": t.seconds} for name, t in timings.items()}
    measured = {name: timings[name] for name in libraries if name in timings}
    our_build, our_seconds = time_ours(shapes, cpu) if ours else (None, "our products: not timed")
    our_times = dict(zip(map(_shape_key, shapes), our_seconds)) if our_build else None
    return [{"workload": workload.name, "params": dict(params), **_ceiling(workload, params, measured, failures),
             **_ours(workload, params, our_build, our_times or our_seconds)}
            for workload, params in points]


def forget(cpu: int, cache: Path | None = None) -> str:
    """Drop this CPU model's and core's library times from the cache (doctor --remeasure): the next run
    measures them again. Says what was done."""
    cache = cache or cache_dir() / CACHE_FILE
    kept = read_cache(cache, CeilingCache)
    model = host.describe().get("cpu_model") or "unknown CPU"
    if kept is None or kept.models.get(model, {}).pop(f"cpu{cpu}", None) is None:
        return "none cached; the next run measures them"
    try:
        _write(cache, kept.model_dump(by_alias=True))
    except OSError as exc:
        return f"could not forget them ({exc.strerror or exc}) in {cache}"
    return "forgotten; the next run measures them again"


def _installed(name: str) -> str | None:
    """The library's installed distribution version, read without importing it; None if absent."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _shape_key(shape) -> str:
    return "x".join(str(d) for d in shape)


def _write(path: Path, data: dict) -> None:
    """Whole or not at all: a run cut short leaves the previous cache."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(partial, path)


def _ceiling(workload, params, timings: dict, failures: list) -> dict:
    products = workload.step_products(params)
    flops = sum(2 * m * k * n for m, k, n in products)
    best = None
    for known in timings.values():
        seconds = sum(known["seconds"][_shape_key(s)] for s in products)
        if best is None or seconds < best[1]:
            best = (known["version"], seconds)
    if best is None:
        return {"gflops": None, "reason": "no library SGEMM: " + ("; ".join(failures) or "none listed")}
    return {"gflops": flops / best[1] / 1e9, "library": best[0]}


def _ours(workload, params, build: str | None, seconds: dict | str) -> dict:
    """Our products' GFLOP/s at the step's products, or None and the reason."""
    if build is None:
        return {"ours_gflops": None, "ours_reason": seconds}
    products = workload.step_products(params)
    flops = sum(2 * m * k * n for m, k, n in products)
    return {"ours_gflops": flops / sum(seconds[_shape_key(s)] for s in products) / 1e9, "ours_build": build}
