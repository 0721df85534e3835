"""The child side of a trial: run one engine on one workload point, print ONE JSON line, exit.

The runner spawns this module pinned to one core. Anything the framework prints goes to
stderr: stdout is reserved for the result line, so a chatty library cannot corrupt it.

    python -m harness.worker --engine ID --workload W --params JSON --iterations N --warmup N --blocks N
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

from harness.measure import clocks, memory, timer
from harness.stats import summarize

# Exit code of a worker whose framework failed to import: the runner records `unavailable`.
EXIT_UNAVAILABLE = 3


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m harness.worker", description=__doc__)
    parser.add_argument("--engine", required=True)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--params", default="{}", help="workload point as a JSON object")
    parser.add_argument("--iterations", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--blocks", type=int, default=100)
    parser.add_argument("--inputs", help="folder of shared inputs the harness prepared (weights, batches)")
    parser.add_argument("--sample-private", action="store_true",
                        help="sample private memory from a thread (it shares the pinned core)")
    return parser.parse_args(argv)


def claim_stdout() -> object:
    """Return a text stream on the real stdout and point fd 1 (and sys.stdout) at stderr."""
    result_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(result_fd, "w")


def build_program(engine_id: str, workload_name: str, params: dict, inputs: str | None):
    """(spec, workload, program): the engine's builder for the workload's kind."""
    from engines import all_engines, module_of
    from workloads import load

    spec = all_engines()[engine_id]
    workload = load(workload_name)
    builder = module_of(spec).BUILDERS[workload.kind]
    return spec, workload, builder(spec, workload, params, Path(inputs) if inputs else None)


def run(args: argparse.Namespace) -> dict:
    sampler = memory.PrivateSampler() if args.sample_private else None
    if sampler:
        sampler.start()
    try:
        spec, workload, program = build_program(args.engine, args.workload, json.loads(args.params), args.inputs)
    except ImportError as exc:
        return {"status": "unavailable", "reason": f"{type(exc).__name__}: {exc}"}
    prepare = getattr(program, "prepare", None)
    for _ in range(args.warmup):
        if prepare is not None:
            prepare()
        program.step()
    counter = clocks.CycleCounter()
    counter.start()
    loop_time_s, samples = timer.timed_blocks(program.step, args.iterations, args.blocks,
                                              getattr(program, "sync", None), prepare)
    counted = counter.stop()
    result = {
        "status": "ok",
        "outputs": program.outputs(),
        "precision": spec.precision or workload.precision,
        "iterations": args.iterations,
        "warmup": args.warmup,
        "loop_time_s": loop_time_s,
        "per_iter_s": summarize(samples),
        "samples_s": samples,
        "framework_version": getattr(program, "version", None),
        **counted,
    }
    result.update(getattr(program, "extra", {}) or {})
    result["cpu_time_s"] = clocks.cpu_time_s()
    result.update(memory.peak_memory(private=sampler.stop() if sampler else None))
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = claim_stdout()
    try:
        result = run(args)
    except Exception:
        traceback.print_exc()
        return 1
    out.write(json.dumps(result) + "\n")
    out.flush()
    return EXIT_UNAVAILABLE if result["status"] == "unavailable" else 0


if __name__ == "__main__":
    sys.exit(main())
