"""`python -m harness.commands.versus RUN_DIR... [--engine ENGINE]`: at each point of the runs, ENGINE's time
per iteration against the fastest engine of another framework (its peer), and the ratio (peer /
ENGINE: above 1, ENGINE is faster). Only trials that finished and passed their check count.
Beside ENGINE's time at the training points: its GFLOP/s (workloads/flops.py's count of a step)
and their share of this core's peak FP32 rate, as `burtorch-bench --peak` measures it (or
--peak-gflops), and of the practical ceiling: the best library SGEMM at the step's own products,
as the run measured it on its core (manifest.json's "ceiling", machine/ceiling.py), "n/a" with the
reason where no library ran, and of our block products alone at the same shapes (%prod). For
another row of ours (the Python module), its time over the native driver's too (/native). `make
perf-grid` prints both tables.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from engines.base import BASELINE
from engines.none import FLOOR
from harness.analysis.points import group
from harness.machine.peak import fp32_peak
from harness.measure import affinity
from harness.store.results import params_key, read_manifest, read_trials
from harness.units import MIB
from workloads import load


def rows(trials: list[dict], engine: str) -> list[tuple]:
    """(workload, params, ENGINE's time, best peer, its time, ratio, ENGINE's peak RSS, the peer's, our
    native driver's time at the point)."""
    by_point: dict[tuple, dict] = {}
    for point in group([t for t in trials if t.get("status") == "ok"]).values():
        if point.failed() or point.time_mean() is None:
            continue
        by_point.setdefault((point.workload, point.key.params), {})[point.engine] = point
    out = []
    for (workload, params), engines in by_point.items():
        ours = engines.get(engine)
        peers = [p for name, p in engines.items()
                 if name.split("/")[0] != engine.split("/")[0] and name != FLOOR]  # the floor is no framework
        if ours is None or not peers:
            continue
        best = min(peers, key=lambda p: p.time_mean())
        out.append((workload, params, ours.time_mean(), best.engine, best.time_mean(), best.time_mean() / ours.time_mean(),
                    ours.mean("peak_resident_bytes"), best.mean("peak_resident_bytes"),
                    engines[BASELINE].time_mean() if BASELINE in engines else None))
    return out


def step_gflops(workload: str, params: str, seconds: float) -> float | None:
    """GFLOP/s of a step of `seconds` at a point (params: its params_key); None where no count."""
    rate = load(workload).step_rate(json.loads(params), seconds)
    return None if rate is None else rate / 1e9


def _rate(gflops: float | None, peak: float | None) -> str:
    if gflops is None:
        return ""
    share = f" {100 * gflops / peak:3.0f}%" if peak else ""
    return f"{gflops:6.1f}{share}"


def ceilings(runs: list[Path]) -> dict[tuple, dict]:
    """(workload, params_key) -> the runs' library ceiling at that point (machine/ceiling.py)."""
    out = {}
    for run in runs:
        for c in read_manifest(run).get("ceiling") or []:
            out[(c["workload"], params_key(c["params"]))] = c
    return out


def _library(gflops: float | None, ceiling: dict | None) -> str:
    if gflops is None or ceiling is None:
        return ""
    return f"{100 * gflops / ceiling['gflops']:3.0f}%" if ceiling.get("gflops") else "n/a"


def _products(ceiling: dict | None) -> str:
    """Our products alone at the point's shapes, as a share of the library's (machine/ceiling.py)."""
    if not ceiling or not ceiling.get("gflops"):
        return ""
    return f"{100 * ceiling['ours_gflops'] / ceiling['gflops']:3.0f}%" if ceiling.get("ours_gflops") else "n/a"


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} µs"


def _mib(size: float | None) -> str:
    return "—" if size is None else f"{size / MIB:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.commands.versus", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--engine", default="burtorch/eager/cpp/cpu")
    parser.add_argument("--peak-gflops", type=float, help="this core's peak FP32 GFLOP/s (default: burtorch-bench --peak)")
    args = parser.parse_args(argv)
    table = rows([t for run in args.runs for t in read_trials(run)], args.engine)
    library = ceilings(args.runs)
    peak = args.peak_gflops or fp32_peak(affinity.allowed_cpus()[-1])[0]
    print(f"{args.engine} against the fastest engine of another framework (ratio = peer / ours: above 1, ours is faster)")
    print(f"GFLOP/s: a training step's products as the model counts them, for every engine (workloads/flops.py: "
          f"an effective rate where an engine multiplies less); % of this core's peak, "
          f"{f'{peak:.1f} GFLOP/s' if peak else 'not measured (no burtorch-bench)'}")
    print("%lib: of the best library SGEMM at the step's products on the run's core ("
          + (", ".join(sorted({c["library"] for c in library.values() if c.get("gflops")})) or "none measured") + ")")
    print("%prod: our block products alone (burtorch-bench --products) at the same shapes, of that library SGEMM")
    beside = args.engine != BASELINE  # another row of ours (the Python module) against the native driver too
    if beside:
        print(f"/native: {args.engine}'s time over {BASELINE}'s at the point (the same engine from C++)")
    print(f"{'workload':8} {'point':32} {'ours':>10} {'GFLOP/s %peak':>13} {'%lib':>5} {'best peer':30} {'peer':>10} "
          f"{'ratio':>6} {'RSS MiB ours/peer':>18} {'%prod':>5}" + (f" {'/native':>7}" if beside else ""))
    for workload, params, ours, peer, peer_time, ratio, rss, peer_rss, native in table:
        gflops = step_gflops(workload, params, ours)
        print(f"{workload:8} {params:32} {_time(ours):>10} {_rate(gflops, peak):>13} "
              f"{_library(gflops, library.get((workload, params))):>5} {peer:30} {_time(peer_time):>10} {ratio:6.2f} "
              f"{_mib(rss):>8} / {_mib(peer_rss):<8} {_products(library.get((workload, params))):>5}"
              + (f" {ours / native:7.2f}" if beside and native else ""))
    for reason in sorted({c["reason"] for c in library.values() if not c.get("gflops")}):
        print(f"n/a: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
