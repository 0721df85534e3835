"""The Python module's training step against the native driver's, and builds of either against each other,
in alternating rounds on one core, with their losses compared to the bit.

    taskset -c 0 python benchmarks/module_vs_driver.py [--rounds 5] [--iterations 30] [--cpu 1]
        [--module NAME=CHECKOUT ...] [--driver NAME=PATH ...] mlp:hidden_dim=128,batch=64 gpt:batch=8 ...

Each point's inputs are prepared once (the workload's prepare(), as a run does). Each round runs every
variant once, in an order rotated round by round, each a fresh child pinned to --cpu: the drivers
(default: the installed burtorch-bench) and the module as the harness's worker runs it (the row
burtorch/eager/python/cpu), from each --module's CHECKOUT (another copy of the project: its worker, its
engines/burtorch_models.py, and a burtorch.*.so at its root, where it holds one, before the installed
module); the default variant "module" is this checkout with the installed module. A variant's time is
the median over rounds of its run's median step; its ratio to the first variant is the product's
paired effect over the rounds (harness/analysis/effect.py: paired t on the rounds' log ratios, its
95% interval widened for rounds that drift together), the interval a verdict would read. "bits" says
whether its three checked losses equal the first variant's exactly.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import all_engines  # noqa: E402
from engines.base import find_executable  # noqa: E402
from harness.analysis.effect import effect  # noqa: E402
from harness.paths import ROOT  # noqa: E402
from harness.running.runner import param_args, worker_command  # noqa: E402
from workloads import load  # noqa: E402

WARMUP = 3


def parse_point(text: str) -> tuple[str, dict]:
    name, _, rest = text.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        params[key] = int(value)
    return name, params


def named(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            sys.exit(f"module_vs_driver: error: {flag} takes NAME=VALUE, got {item!r}")
        out[name] = value
    return out


def run(command: list[str], cpu: int) -> dict:
    done = subprocess.run(["taskset", "-c", str(cpu), *command], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"module_vs_driver: error: {command[0]} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    result = json.loads(done.stdout.splitlines()[-1])
    return {"step_s": statistics.median(result["samples_s"]),
            "losses": [float(result["outputs"][f"loss_{k}"]).hex() for k in range(3)]}


def commands(workload, params: dict, folder: Path, iterations: int, drivers: dict, modules: dict) -> dict:
    counts = ["--iterations", str(iterations), "--warmup", str(WARMUP), "--blocks", str(iterations),
              "--inputs", str(folder)]
    out = {name: [path, workload.name, *counts, *param_args(params)] for name, path in drivers.items()}
    python = worker_command(sys.executable, all_engines()["burtorch/eager/python/cpu"], workload, params)
    worker = Path(python[1]).relative_to(ROOT)
    for name, checkout in modules.items():
        out[name] = [python[0], str(Path(checkout or ROOT) / worker), *python[2:], *counts]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("points", nargs="+", help="WORKLOAD:NAME=V,... e.g. mlp:hidden_dim=128,batch=64")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--cpu", type=int, default=1)
    parser.add_argument("--driver", action="append", default=[], help="NAME=PATH of a burtorch-bench")
    parser.add_argument("--module", action="append", default=[], help="NAME=CHECKOUT of the project ('' for this one)")
    args = parser.parse_args()
    drivers = named(args.driver, "--driver") or {"native": find_executable("burtorch-bench")}
    modules = named(args.module, "--module") or {"module": ""}
    with tempfile.TemporaryDirectory() as tmp:
        for text in args.points:
            name, params = parse_point(text)
            workload = load(name)
            folder = Path(tmp) / text.replace(":", "_").replace(",", "_").replace("=", "-")
            folder.mkdir()
            workload.prepare(params, WARMUP + args.iterations, folder, None)
            variants = commands(workload, params, folder, args.iterations, drivers, modules)
            names = list(variants)
            runs = {n: [] for n in names}
            for r in range(args.rounds):
                for n in names[r % len(names):] + names[:r % len(names)]:
                    runs[n].append(run(variants[n], args.cpu))
            base = names[0]
            print(f"{text}  ({args.rounds} rounds of {args.iterations} steps, core {args.cpu})", flush=True)
            for n in names:
                ratio = effect(dict(enumerate(x["step_s"] for x in runs[base])),
                               dict(enumerate(x["step_s"] for x in runs[n])))
                shown = f"×{ratio.estimate:.3f} {ratio.interval_text()}" if n != base else f"×1 {' ' * 16}"
                same = all(x["losses"] == runs[base][0]["losses"] for x in runs[n])
                print(f"  {n:>12}  {statistics.median(x['step_s'] for x in runs[n]) * 1e6:10.1f} µs  "
                      f"{shown} of {base}  bits {'same' if same else 'DIFFER'}", flush=True)


if __name__ == "__main__":
    main()
