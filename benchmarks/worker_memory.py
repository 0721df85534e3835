"""Peak memory of a bare script against a trial of the same engine, both run here, side by side.

The bare script imports only the framework and differentiates the tiny graph as many times as
the trial does; the trial is `burtbench run` (smoke profile, one trial). The difference is what
the harness's worker adds to a row's peak resident (VmHWM) and peak virtual (VmPeak) memory.

    python benchmarks/worker_memory.py [--engine micrograd,autograd,burtorch/eager/python] [--repeats 3]

Linux only (it reads /proc/self/status). It prints a table in MiB, medians of the repeats.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The tiny graph of workloads/graphs.py written out, so that the bare script imports nothing of ours.
TINY = """
def tiny(a, b, relu):
    c = a + b
    d = a * b + b**3
    e = c - d
    f = e**2
    return f / 2
"""

BARE = {
    "micrograd/eager/python/cpu": TINY + """
from micrograd.engine import Value
for _ in range(ITERATIONS):
    a, b = Value(-41.0), Value(2.0)
    g = tiny(a, b, Value.relu)
    g.backward()
""",
    "autograd/eager/python/cpu": TINY + """
import autograd
import autograd.numpy as anp
value_and_grad = autograd.value_and_grad(lambda ab: tiny(ab[0], ab[1], lambda x: anp.maximum(x, 0.0)))
for _ in range(ITERATIONS):
    g, grads = value_and_grad((-41.0, 2.0))
""",
    "burtorch/eager/python/cpu": TINY + """
import burtorch
mark = burtorch.mark()
for _ in range(ITERATIONS):
    burtorch.rewind(mark)
    a, b = burtorch.Value(-41.0), burtorch.Value(2.0)
    g = tiny(a, b, burtorch.relu)
    g.backward()
""",
}

READ_PEAKS = """
with open("/proc/self/status") as status:
    peaks = {k: int(v.split()[0]) * 1024 for k, _, v in (line.partition(":") for line in status)
             if k in ("VmHWM", "VmPeak")}
print(peaks["VmHWM"], peaks["VmPeak"])
"""


def bare_peaks(engine: str, iterations: int, cpu: int, folder: Path) -> tuple[int, int]:
    script = folder / "bare.py"
    script.write_text(BARE[engine].replace("ITERATIONS", str(iterations)) + READ_PEAKS)
    out = subprocess.run(["taskset", "-c", str(cpu), sys.executable, str(script)], check=True,
                         capture_output=True, text=True, cwd=folder).stdout.split()
    return int(out[0]), int(out[1])


def trial_peaks(engine: str, cpu: int, folder: Path) -> tuple[int, int, int]:
    """(peak resident, peak virtual, iterations) of one smoke trial of the engine on tiny."""
    out = folder / "results"
    subprocess.run([sys.executable, "-m", "harness.commands.cli", "run", "--workload", "tiny", "--engine", engine,
                    "--profile", "smoke", "--trials", "1", "--cpu", str(cpu), "--out", str(out), "--no-report"],
                   check=True, capture_output=True, cwd=ROOT)
    trials = [json.loads(line) for line in next(out.glob("*/trials.jsonl")).read_text().splitlines()]
    trial = next(t for t in trials if t["engine"] == engine)
    if trial["status"] != "ok":
        raise SystemExit(f"{engine}: trial {trial['status']}: {trial['reason']}")
    return trial["peak_resident_bytes"], trial["peak_virtual_bytes"], trial["warmup"] + trial["iterations"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default=",".join(BARE), help="comma-separated engine ids (default: all three)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=os.cpu_count() - 1)
    args = parser.parse_args()
    mib = 1024 * 1024
    print(f"{'engine':28} {'bare HWM':>9} {'trial HWM':>9} {'diff':>6}   {'bare Peak':>9} {'trial Peak':>10} {'diff':>6}  (MiB)")
    for engine in args.engine.split(","):
        rows = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                hwm, peak, iterations = trial_peaks(engine, args.cpu, Path(tmp))
                rows.append((*bare_peaks(engine, iterations, args.cpu, Path(tmp)), hwm, peak))
        b_hwm, b_peak, t_hwm, t_peak = (statistics.median(col) / mib for col in zip(*rows))
        print(f"{engine:28} {b_hwm:9.2f} {t_hwm:9.2f} {t_hwm - b_hwm:+6.2f}   {b_peak:9.2f} {t_peak:10.2f} {t_peak - b_peak:+6.2f}")


if __name__ == "__main__":
    main()
