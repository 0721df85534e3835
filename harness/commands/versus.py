"""`python -m harness.commands.versus RUN_DIR... [--engine ENGINE]`: at each point of the runs, ENGINE's time
per iteration against the fastest engine of another framework (its peer), and the ratio (peer /
ENGINE: above 1, ENGINE is faster). Only trials that finished and passed their check count.
Beside ENGINE's time at the training points: its GFLOP/s (workloads/flops.py's count of a step)
and their share of this core's peak FP32 rate, the one the run recorded and its roofline uses (or
--peak-gflops), and of the practical ceiling: the best library SGEMM at the step's own products,
as the run measured it on its core (manifest.json's "ceiling", machine/ceiling.py), "n/a" with the
reason where no library ran, and of our block products alone at the same shapes (%prod). At each
point its roofline bound (machine/roofs.py: FLOPs over the peak or bytes over the bandwidth of the level
the working set fits in, from the run's manifest), its kind, and ENGINE's and the peer's time as a share of
it (%roof: 100% is at the roof), "n/a" with the reason where the run measured no bandwidth. For
another row of ours (the Python module), its time over the native driver's too (/native). `make
perf-grid` prints both tables.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from engines.base import BASELINE
from harness.analysis.points import best_peer, group
from harness.machine import roofs
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
        ours, best = engines.get(engine), best_peer(list(engines.values()), engine)
        if ours is None or best is None:
            continue
        out.append((workload, params, ours.time_mean(), best.engine, best.time_mean(), best.time_mean() / ours.time_mean(),
                    ours.mean("peak_resident_bytes"), best.mean("peak_resident_bytes"),
                    engines[BASELINE].time_mean() if BASELINE in engines else None))
    return out


def step_gflops(workload: str, params: str, seconds: float) -> float | None:
    """GFLOP/s of a step of `seconds` at a point (params: its params_key); None where no count."""
    rate = load(workload).step_rate(json.loads(params), seconds)
    return None if rate is None else rate / 1e9


def _rate(gflops: float | None, peak: float | None) -> str:
    return "" if gflops is None else f"{gflops:6.1f} {_peak(gflops, peak)}".rstrip()


def _peak(gflops: float | None, peak: float | None) -> str:
    """A rate's share of the peak alone, for the peer beside ours (its GFLOP/s follow from the ratio)."""
    return f"{100 * gflops / peak:3.0f}%" if gflops is not None and peak else ""


def recorded_peak(runs: list[Path]) -> float | None:
    """The FP32 peak the runs recorded in their manifests, the one their rooflines use (the highest where
    they differ: a core's peak is the best it reaches); None where none recorded one."""
    peaks = [(read_manifest(run).get("native") or {}).get("peak_gflops_fp32") for run in runs]
    return max((float(p) for p in peaks if p), default=None)


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


def roof_points(trials_of: dict[Path, list[dict]]) -> dict[tuple, tuple]:
    """(workload, params_key, engine) -> (its run's roofs or None, why none, the precision its trials ran in)."""
    out = {}
    for run, trials in trials_of.items():
        machine, why = roofs.roofs(read_manifest(run).get("native"))
        for t in trials:
            out[(t["workload"], params_key(t["params"]), t["engine"])] = (machine, why, t.get("precision"))
    return out


def roof_bound(at: tuple | None, workload: str, params: str) -> roofs.Bound | None:
    if not at or at[0] is None:
        return None
    known = load(workload)
    return roofs.bound(known, json.loads(params), at[2] or known.precision, at[0])


def _roof(bound: roofs.Bound | None, seconds: float, at: tuple | None, workload: str) -> str:
    """A time's share of its roofline bound, or "n/a" where the point would have one but its run has no roofs."""
    if bound is None:
        return "n/a" if at and at[0] is None and load(workload).step_bytes else ""
    return f"{100 * roofs.share(bound.seconds, seconds):3.0f}%"


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} µs"


def _mib(size: float | None) -> str:
    return "—" if size is None else f"{size / MIB:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.commands.versus", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--engine", default="burtorch/eager/cpp/cpu")
    parser.add_argument("--peak-gflops", type=float, help="this core's peak FP32 GFLOP/s (default: the one the runs recorded, "
                        "which their rooflines use; else burtorch-bench --peak now)")
    args = parser.parse_args(argv)
    trials_of = {run: read_trials(run) for run in args.runs}
    table = rows([t for trials in trials_of.values() for t in trials], args.engine)
    library = ceilings(args.runs)
    roof_at = roof_points(trials_of)
    peak = args.peak_gflops or recorded_peak(args.runs) or fp32_peak(affinity.allowed_cpus()[-1])[0]
    print(f"{args.engine} against the fastest engine of another framework (ratio = peer / ours: above 1, ours is faster)")
    print(f"GFLOP/s: a training step's products as the model counts them, for every engine (workloads/flops.py: "
          f"an effective rate where an engine multiplies less); % of this core's peak, "
          f"{f'{peak:.1f} GFLOP/s' if peak else 'not measured (no burtorch-bench)'}")
    print("%lib: of the best library SGEMM at the step's products on the run's core ("
          + (", ".join(sorted({c["library"] for c in library.values() if c.get("gflops")})) or "none measured") + ")")
    print("%prod: our block products alone (burtorch-bench --products) at the same shapes, of that library SGEMM")
    print("peer %peak: the best peer's step rate as a share of the same peak, beside its %roof, so that both gaps show")
    print("%roof: the point's roofline bound / the time (100% = at the roof); bound: max(FLOPs / the peak, the least "
          "bytes a step moves, each at the rate of the fastest level that can hold it at its reuse), its time and kind "
          "(the level its whole working set fits in; machine/roofs.py)")
    beside = args.engine != BASELINE  # another row of ours (the Python module) against the native driver too
    if beside:
        print(f"/native: {args.engine}'s time over {BASELINE}'s at the point (the same engine from C++)")
    print(f"{'workload':8} {'point':32} {'ours':>10} {'GFLOP/s %peak':>13} {'%lib':>5} {'%roof':>5} {'best peer':30} "
          f"{'peer':>10} {'%peak':>5} {'%roof':>5} {'ratio':>6} {'bound':>22} {'RSS MiB ours/peer':>18} {'%prod':>5}"
          + (f" {'/native':>7}" if beside else ""))
    for workload, params, ours, peer, peer_time, ratio, rss, peer_rss, native in table:
        gflops, peer_gflops = step_gflops(workload, params, ours), step_gflops(workload, params, peer_time)
        at, peer_at = roof_at.get((workload, params, args.engine)), roof_at.get((workload, params, peer))
        bound, peer_bound = roof_bound(at, workload, params), roof_bound(peer_at, workload, params)
        shown = f"{_time(bound.seconds)} {bound.label}" if bound else ""
        print(f"{workload:8} {params:32} {_time(ours):>10} {_rate(gflops, peak):>13} "
              f"{_library(gflops, library.get((workload, params))):>5} {_roof(bound, ours, at, workload):>5} {peer:30} "
              f"{_time(peer_time):>10} {_peak(peer_gflops, peak):>5} {_roof(peer_bound, peer_time, peer_at, workload):>5} "
              f"{ratio:6.2f} {shown:>22} "
              f"{_mib(rss):>8} / {_mib(peer_rss):<8} {_products(library.get((workload, params))):>5}"
              + (f" {ours / native:7.2f}" if beside and native else ""))
    for reason in sorted({c["reason"] for c in library.values() if not c.get("gflops")}):
        print(f"n/a: {reason}")
    for reason in sorted({at[1] for (workload, _, _), at in roof_at.items() if at[0] is None and load(workload).step_bytes}):
        print(f"%roof n/a: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
