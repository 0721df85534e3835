"""The child side of a trial: run one engine on one workload point, print ONE JSON line, exit.

The runner spawns this file as a script, pinned to one core:

    python harness/running/worker.py --engine ID --module M --workload W --kind K --precision P --timing paper|lean
        [--graph MODULE:NAME] [--param NAME=REPR ...] --iterations N --warmup N --blocks N [--inputs DIR]

It reports the child's own peak memory, so until the peaks are read it imports only what the
engine needs: the engine's module (not the registry), the workload's attributes the runner names
(not its declaration: a builder that asks for more loads it), a hand-parsed command line, no
version lookup (a Program's callable `version` runs after), no json. A bare script that imports
the framework and runs the same loop peaks within a MiB of it (benchmarks/worker_memory.py).
Anything the framework prints goes to stderr: stdout is reserved for the result line.
"""
import os
import sys

if __name__ == "__main__":
    # Run as a script, sys.path[0] is harness/running/: the project root must come first instead,
    # so that no harness module (session, spawn, ...) shadows one a framework imports.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # An editable install of this project (scikit-build-core) puts an import hook first on
    # sys.meta_path that resolves each of our modules through importlib.util and more (~1 MiB of
    # peak memory that a bare script does not pay); sys.path[0] finds the same files without it.
    sys.meta_path[:] = [f for f in sys.meta_path if "harness" not in getattr(f, "known_source_files", ())]

from harness.measure import clocks, memory, timer  # noqa: E402  (after the path fix above)

# Exit code of a worker whose framework failed to import: the runner records `unavailable`.
EXIT_UNAVAILABLE = 3
REPEATED = ("--param",)


class UsageFailure(Exception):
    """A command line the runner would never write."""


def parse_args(argv: list) -> dict:
    """`--name value` pairs into a dict; --param (repeatable) into a dict of parsed values."""
    args: dict = {"param": {}}
    if len(argv) % 2:
        raise UsageFailure(f"expected --name value pairs, got {argv}")
    for flag, value in zip(argv[::2], argv[1::2]):
        if not flag.startswith("--"):
            raise UsageFailure(f"expected an option, got {flag!r}")
        if flag in REPEATED:
            name, _, text = value.partition("=")
            args["param"][name] = parse_value(text)
        else:
            args[flag[2:]] = value
    missing = [n for n in ("engine", "module", "workload", "kind", "timing", "iterations") if n not in args]
    if missing:
        raise UsageFailure(f"missing --{', --'.join(missing)}")
    return args


def parse_value(text: str):
    """A parameter as the runner writes it: repr() of an int, float, str, bool or None."""
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    if text[:1] in "'\"" and text[-1:] == text[:1]:
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        return float(text)


class WorkloadView:
    """The workload as a builder sees it: the attributes the runner named; any other attribute
    loads the workload's declaration (and with it dataclasses and the catalog)."""

    def __init__(self, name: str, kind: str, precision: str, graph=None):
        self.name, self.kind, self.precision, self.graph = name, kind, precision, graph

    def __getattr__(self, attribute: str):
        from workloads import load  # the declaration only when a builder asks for more: it costs peak memory

        return getattr(load(self.name), attribute)


def import_object(path: str):
    module, _, name = path.partition(":")
    return getattr(__import__(module, fromlist=[name]), name)


def build_program(args: dict):
    """(spec, program): the engine module's builder for the workload's kind."""
    module = __import__(args["module"], fromlist=["BUILDERS"])
    spec = next(s for s in module.ENGINES if s.id == args["engine"])
    graph = import_object(args["graph"]) if "graph" in args else None
    workload = WorkloadView(args["workload"], args["kind"], args.get("precision"), graph)
    inputs = args.get("inputs")
    if inputs:
        from pathlib import Path  # only engines that load shared inputs (training) get here

        inputs = Path(inputs)
    return spec, module.BUILDERS[args["kind"]](spec, workload, args["param"], inputs)


def run(args: dict) -> dict:
    try:
        spec, program = build_program(args)
    except ImportError as exc:
        return {"status": "unavailable", "reason": f"{type(exc).__name__}: {exc}"}
    iterations, warmup = int(args["iterations"]), int(args.get("warmup", 0))
    # Under --timing paper a program with the authors' timed region (paper_step) steps with it.
    paper_step = getattr(program, "paper_step", None) if args["timing"] == "paper" else None
    step = paper_step or program.step
    prepare = getattr(program, "prepare", None)
    for _ in range(warmup):
        if prepare is not None:
            prepare()
        step()
    counter = clocks.CycleCounter()
    counter.start()
    loop_time_s, samples = timer.timed_blocks(step, iterations, int(args.get("blocks", 100)),
                                              getattr(program, "sync", None), prepare)
    counted = counter.stop()
    outputs = program.outputs()
    cpu_time_s = clocks.cpu_time_s()
    peaks = memory.peak_memory()
    # Read last: nothing below counts in the peaks. The runner computes per_iter_s from samples_s.
    version = getattr(program, "version", None)
    return {"status": "ok", "outputs": outputs, "precision": args.get("precision"), "iterations": iterations,
            "warmup": warmup, "loop_time_s": loop_time_s, "samples_s": samples,
            "timed_as": "paper" if paper_step else "lean",
            "framework_version": version() if callable(version) else version, **counted,
            **(getattr(program, "extra", None) or {}), "cpu_time_s": cpu_time_s, **peaks}


def claim_stdout():
    """Return a text stream on the real stdout and point fd 1 (and sys.stdout) at stderr."""
    result_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(result_fd, "w")


def main(argv: list | None = None) -> int:
    out = claim_stdout()
    try:
        result = run(parse_args(sys.argv[1:] if argv is None else argv))
    except Exception:
        import traceback

        traceback.print_exc()
        return 1
    import json

    out.write(json.dumps(result) + "\n")
    out.flush()
    return EXIT_UNAVAILABLE if result["status"] == "unavailable" else 0


if __name__ == "__main__":
    sys.exit(main())
