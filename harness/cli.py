"""burtbench: regenerate the BurTorch paper's tables on this machine, one pinned core, one process per trial.

Every argument is checked before any trial starts; bad input gets one line on stderr and exit code 2.
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from datetime import datetime
from pathlib import Path

from rich.console import Console

from harness.lock import RunLock, RunLocked
from harness.results import ResultsUnwritable
from harness.runner import MemoryCapFailed

from workloads.base import PROFILES

EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input: reported as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line instead of usage + message
        raise UsageError(f"{message} (see '{self.prog} --help')")


EXAMPLES = """examples:
  burtbench list
  burtbench run                                   quick profile, every workload, every available engine
  burtbench run --workload tiny --engine burtorch,micrograd --profile smoke
  burtbench run --engine torch/eager --profile paper --trials 5
  burtbench run --resume results/20261121-101500-quick
  burtbench report results/20261121-101500-quick     tables, figures and index.html in reports/<run-id>/
  burtbench compare RUN_A RUN_B --fail-if-slower 10
  burtbench run --workload mlp --param hidden_dim=4,1024 --param batch=1 --data-dir data
  burtbench fetch-data --data-dir data
  burtbench doctor
"""


def build_parser() -> Parser:
    parser = Parser(prog="burtbench", description=__doc__, epilog=EXAMPLES,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    sub.add_parser("list", help="support matrix: engine × workload, unavailable engines with the reason")

    run = sub.add_parser("run", help="run trials and write results/<run-id>/",
                         description="Plan engine × workload × params × trial, run each trial in a fresh "
                                     "process pinned to one core, append it to trials.jsonl.")
    run.add_argument("--workload", default="all", metavar="W,...", help="workload names, or 'all' (default)")
    run.add_argument("--engine", default="all", metavar="E,...",
                     help="engine ids or prefixes ('torch' = every torch engine, 'torch/eager' = its eager ones), "
                          "or 'all' (default: every available engine)")
    run.add_argument("--profile", metavar="P",
                     help=f"iteration counts: {', '.join(PROFILES)} (default quick; paper = the paper's counts)")
    run.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2",
                     help="narrow a workload's parameter grid (repeatable)")
    run.add_argument("--trials", type=_positive_int, metavar="N", help="trials per point (default: per workload and profile)")
    run.add_argument("--adaptive", action="store_true",
                     help="add trials to points whose trials disagree until the 95%% interval of the mean is within "
                          "--noise-threshold of it, or --max-trials is reached")
    run.add_argument("--max-trials", type=_positive_int, default=10, metavar="N", help="with --adaptive (default 10)")
    run.add_argument("--noise-threshold", type=_positive_float, default=5.0, metavar="PCT",
                     help="coefficient of variation over trials above which a point is noisy (default 5)")
    run.add_argument("--cpu", type=int, metavar="N", help="core to pin every trial to (default: the last core)")
    run.add_argument("--timeout", type=_positive_float, metavar="S", help="per-trial timeout in seconds (default: per workload and profile)")
    run.add_argument("--mem-limit", type=_size, metavar="SIZE", help="address-space cap per trial, e.g. 4G; a trial over it is recorded as oom")
    run.add_argument("--energy", choices=("auto", "battery", "rapl", "none"), default="auto",
                     help="energy source for the energy workload (default auto: battery, else RAPL, else none)")
    run.add_argument("--idle-seconds", type=_positive_float, default=10.0, metavar="S",
                     help="how long to measure the idle power before an energy run (default 10; 30+ for a battery)")
    run.add_argument("--sample-private", action="store_true",
                     help="also sample peak private memory from a thread in each Python worker (it shares the pinned core)")
    run.add_argument("--python", metavar="PATH", help="interpreter that runs the Python workers (e.g. another venv's) to compare framework versions")
    run.add_argument("--data-dir", metavar="DIR",
                     help="read the real makemore names.txt and tiny-shakespeare input.txt from DIR for mlp and gpt "
                          "(default: a synthetic corpus with the same alphabets; see fetch-data)")
    run.add_argument("--out", default="results", metavar="DIR", help="results folder (default: results)")
    run.add_argument("--resume", metavar="RUN_DIR", help="run only the trials missing from RUN_DIR, with its plan")

    report = sub.add_parser("report", help="render a run's tables, figures and index.html beside the paper's numbers")
    report.add_argument("run_dir", metavar="RUN_DIR", help="a folder written by burtbench run")
    report.add_argument("--out", default="reports", metavar="DIR", help="reports folder (default: reports); writes DIR/<run-id>/")

    compare = sub.add_parser("compare", help="ratio B/A of time and memory per engine and workload, with a 95%% interval")
    compare.add_argument("run_a", metavar="RUN_A")
    compare.add_argument("run_b", metavar="RUN_B")
    compare.add_argument("--format", default="table", choices=("table", "md", "json"), help="output format (default: table)")
    compare.add_argument("--fail-if-slower", type=_positive_float, metavar="PCT",
                         help="exit with status 1 if any (engine, workload, params) is slower in RUN_B than in RUN_A "
                              "by more than PCT percent and significantly so (its 95%% interval of B/A lies above 1)")

    fetch = sub.add_parser("fetch-data", help="download names.txt and input.txt from their public origins (sha256-checked)")
    fetch.add_argument("--data-dir", default="data", metavar="DIR", help="where to put them (default: data)")

    sub.add_parser("doctor", help="what on this machine will make numbers noisy, and which measures are unavailable")
    return parser


def _positive_int(text: str) -> int:
    if not re.fullmatch(r"\d+", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}")
    return int(text)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def _size(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)i?B?", text.strip(), re.IGNORECASE)
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"expected a size like 512M or 4G, got {text!r}")
    scale = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[match.group(2).upper()]
    return int(float(match.group(1)) * scale)


def did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.5)
    return f"; did you mean '{close[0]}'?" if close else ""


def resolve_engines(text: str, registry: dict) -> list:
    if text.strip() == "all":
        return list(registry.values())
    chosen = []
    for token in _tokens(text, "--engine"):
        matches = [spec for eid, spec in registry.items() if eid == token or eid.startswith(token.rstrip("/") + "/")]
        if not matches:
            raise UsageError(f"unknown engine '{token}'{did_you_mean(token, _engine_names(registry))} "
                             f"(burtbench list shows them)")
        chosen += [m for m in matches if m not in chosen]
    return chosen


def _engine_names(registry: dict) -> set[str]:
    names = set(registry)
    for eid in registry:
        parts = eid.split("/")
        names.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return names


def resolve_workloads(text: str, registry: dict) -> list:
    if text.strip() == "all":
        return list(registry.values())
    chosen = []
    for token in _tokens(text, "--workload"):
        if token not in registry:
            raise UsageError(f"unknown workload '{token}'{did_you_mean(token, registry)} "
                             f"(known: {', '.join(registry)})")
        if registry[token] not in chosen:
            chosen.append(registry[token])
    return chosen


def _tokens(text: str, option: str) -> list[str]:
    tokens = [t.strip() for t in text.split(",")]
    if not all(tokens):
        raise UsageError(f"{option}: empty name in {text!r}")
    return tokens


def parse_params(items: list[str], workloads: list) -> dict[str, tuple]:
    grids: dict[str, tuple] = {}
    for w in workloads:
        for name, values in w.grid.items():
            grids[name] = tuple(dict.fromkeys(grids.get(name, ()) + tuple(values)))
    narrow: dict[str, tuple] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise UsageError(f"--param expects NAME=V1,V2, got {item!r}")
        if name not in grids:
            where = ", ".join(w.name for w in workloads)
            known = ", ".join(sorted(grids)) or "none"
            raise UsageError(f"--param {name}: no selected workload ({where}) has a parameter '{name}'"
                             f"{did_you_mean(name, grids)} (parameters: {known})")
        narrow[name] = tuple(_grid_value(name, v.strip(), grids[name]) for v in values.split(","))
    return narrow


def _grid_value(name: str, text: str, allowed: tuple):
    for value in allowed:
        try:
            if type(value)(text) == value:
                return value
        except ValueError:
            pass
    shown = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in allowed)
    raise UsageError(f"--param {name}={text}: not in the workload's grid ({shown})")


def check_out_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {path}: cannot create the results folder ({exc.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"--out {path}: the results folder is not writable")


def check_cpu(cpu: int | None) -> int:
    from harness.measure import affinity

    if cpu is None:
        return affinity.default_cpu()
    problem = affinity.validate_cpu(cpu)
    if problem:
        raise UsageError(problem)
    return cpu


def check_python(path: str | None) -> str:
    if path is None:
        return sys.executable
    if not (Path(path).is_file() and os.access(path, os.X_OK)):
        raise UsageError(f"--python {path}: not an executable file")
    return str(Path(path).absolute())


def new_run_dir(out: Path, profile: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = out / f"{stamp}-{profile}"
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = out / f"{stamp}-{profile}-{suffix}"
    return run_dir


def _worker_pythonpath() -> dict:
    """Another interpreter finds the harness through PYTHONPATH (it has only its own packages)."""
    root = str(Path(__file__).resolve().parent.parent)
    return {"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}


def cmd_list(args, console: Console) -> int:
    from rich.table import Table

    from engines import all_engines
    from workloads import WORKLOADS

    table = Table(title="burtbench: engines × workloads", title_justify="left")
    table.add_column("engine")
    for name in WORKLOADS:
        table.add_column(name, justify="center")
    table.add_column("status")
    for eid, spec in all_engines().items():
        reason = spec.unavailable_reason()
        marks = ["✓" if name in spec.workloads else "·" for name in WORKLOADS]
        status = "[green]available[/]" if reason is None else f"[yellow]unavailable: {reason}[/]"
        if spec.note:
            status += f" ({spec.note})"
        table.add_row(eid, *marks, status)
    console.print(table)
    return 0


def cmd_doctor(args, console: Console) -> int:
    from harness import doctor
    from harness.measure import affinity

    console.print(doctor.format_findings(doctor.diagnose(affinity.default_cpu())), highlight=False)
    return 0


def existing_run(path: str, what: str) -> Path:
    from harness import results

    run_dir = Path(path)
    if not results.is_run_dir(run_dir):
        raise UsageError(f"{what} {path}: not a burtbench run folder (no manifest.json)")
    return run_dir


def cmd_report(args, console: Console) -> int:
    from harness import report

    run_dir = existing_run(args.run_dir, "RUN_DIR")
    out = Path(args.out)
    check_out_dir(out)
    folder = report.render(run_dir, out)
    console.print(f"report: {folder / 'index.html'}  (tables in {folder / 'tables'}, figures in {folder / 'figures'})")
    return 0


def cmd_compare(args, console: Console) -> int:
    from harness import compare

    result = compare.compare_runs(existing_run(args.run_a, "RUN_A"), existing_run(args.run_b, "RUN_B"))
    text = compare.format_comparison(result, args.format)
    print(text) if args.format == "json" else console.print(text, highlight=False)
    return compare.exit_status(result, args.fail_if_slower)


def cmd_fetch_data(args, console: Console) -> int:
    from workloads import data

    try:
        paths = data.fetch(Path(args.data_dir))
    except data.DataError as exc:
        print(f"burtbench: error: {exc}", file=sys.stderr)
        return 1
    for path in paths:
        console.print(f"{path}: sha256 ok", highlight=False)
    return 0


def use_data_dir(folder: str | None) -> None:
    from workloads import data

    try:
        data.set_data_dir(folder)
    except data.DataError as exc:
        raise UsageError(f"--data-dir: {exc}") from None


def plan_spec_from_args(args) -> dict:
    from engines import all_engines
    from workloads import WORKLOADS

    args.profile = args.profile or "quick"
    if args.profile not in PROFILES:
        raise UsageError(f"--profile: unknown profile '{args.profile}'{did_you_mean(args.profile, PROFILES)} "
                         f"(choose {', '.join(PROFILES)})")
    workloads = resolve_workloads(args.workload, WORKLOADS)
    engines = resolve_engines(args.engine, all_engines())
    narrow = parse_params(args.param, workloads)
    usable = [w for w in workloads if any(w.name in e.workloads for e in engines)]
    if not usable:
        raise UsageError("no selected engine implements any selected workload (burtbench list shows who does what)")
    data_dir = str(Path(args.data_dir).resolve()) if args.data_dir else None
    use_data_dir(data_dir)
    if args.adaptive and args.trials and args.max_trials < args.trials:
        raise UsageError(f"--max-trials {args.max_trials} is below --trials {args.trials}")
    return {"profile": args.profile, "engines": [e.id for e in engines], "workloads": [w.name for w in usable],
            "narrow": {k: list(v) for k, v in narrow.items()}, "trials": args.trials, "timeout_s": args.timeout,
            "explicit_engines": args.engine.strip() != "all", "noise_threshold": args.noise_threshold / 100,
            "adaptive": {"max_trials": args.max_trials} if args.adaptive else None, "data_dir": data_dir}


def plan_from_spec(spec: dict):
    from engines import all_engines
    from harness.plan import make_plan
    from workloads import WORKLOADS

    registry = all_engines()
    missing = [e for e in spec["engines"] if e not in registry]
    if missing:
        raise UsageError(f"the run names engines this installation does not know: {', '.join(missing)}")
    engines = [registry[e] for e in spec["engines"]]
    workloads = [WORKLOADS[w] for w in spec["workloads"]]
    narrow = {k: tuple(v) for k, v in spec["narrow"].items()}
    return make_plan(engines, workloads, spec["profile"], narrow, spec["trials"], spec["timeout_s"])


def cmd_run(args, console: Console) -> int:
    from harness import results

    python = check_python(args.python)
    if args.resume:
        run_dir = existing_run(args.resume, "--resume")
        given = [o for o in ("workload", "engine", "param", "profile", "trials", "timeout", "data_dir")
                 if getattr(args, o) not in ("all", [], None)]
        if given:
            raise UsageError("--resume runs the folder's own plan; drop --workload/--engine/--param/--profile/--trials/--timeout")
        manifest = results.read_manifest(run_dir)
        spec = manifest["plan"]
        use_data_dir(spec.get("data_dir"))
        cpu = check_cpu(args.cpu if args.cpu is not None else manifest.get("cpu"))
    else:
        spec = plan_spec_from_args(args)
        cpu = check_cpu(args.cpu)
        check_out_dir(Path(args.out))
    plan = plan_from_spec(spec)
    unavailable = {}
    for pt in plan:
        if pt.engine.id not in unavailable:
            # An engine built on first use (the LibTorch driver) is built here, before the first trial.
            prepare = getattr(pt.engine, "prepare", None)
            unavailable[pt.engine.id] = pt.engine.unavailable_reason() or (prepare() if prepare else None)
    unavailable = {k: v for k, v in unavailable.items() if v}
    plan = [pt for pt in plan if pt.engine.id not in unavailable]
    for eid, reason in unavailable.items():
        console.print(f"[yellow]skipping[/] {eid}: unavailable: {reason}", highlight=False)
    if not plan:
        raise UsageError("nothing to run: every selected engine is unavailable (burtbench list says why)")

    with RunLock(run_dir) if args.resume else _new_run(args, spec) as lock:
        run_dir = lock.path.parent
        return _run_locked(args, console, run_dir, manifest if args.resume else None, spec, plan,
                           unavailable, cpu, python)


def _new_run(args, spec) -> RunLock:
    run_dir = new_run_dir(Path(args.out), spec["profile"])
    run_dir.mkdir()
    return RunLock(run_dir)


def _run_locked(args, console, run_dir, manifest, spec, plan, unavailable, cpu, python) -> int:
    from harness import manifest as manifest_mod
    from harness import orchestrator, results, summary
    from harness.measure import clocks
    from harness.runner import RunOptions

    if manifest is not None:
        manifest["status"] = "running"
        manifest.setdefault("resumed_at", []).append(manifest_mod.now())
    else:
        manifest = manifest_mod.build(run_dir.name, spec, cpu, python, sys.argv)
    manifest["unavailable"] = {**manifest.get("unavailable", {}), **unavailable}
    manifest["options"] = {"mem_limit_bytes": args.mem_limit, "python": python, "sample_private": args.sample_private}
    manifest_mod.save(run_dir, manifest)
    noisy = [f["topic"] for f in manifest.get("doctor", []) if f.get("level") == "warn"]
    if noisy:
        console.print(f"[yellow]warning[/]: machine not quiet ({', '.join(noisy)}): see burtbench doctor",
                      highlight=False)

    tsc = clocks.tsc_rate_hz()
    options = RunOptions(cpu=cpu, python=python, mem_limit_bytes=args.mem_limit, sample_private=args.sample_private,
                         env=_worker_pythonpath() if args.python else {})
    console.print(f"burtbench: {len(plan)} trials ({spec['profile']} profile) pinned to core {cpu} → {run_dir}",
                  highlight=False)
    meter = None
    if "energy" in spec["workloads"]:
        from harness.measure import energy

        meter, manifest["energy"] = energy.suite_meter(args.energy, args.idle_seconds)
        manifest_mod.save(run_dir, manifest)
        found = manifest["energy"]
        if found["energy_source"]:
            console.print(f"energy: {found['energy_source']}, idle power {found.get('idle_w')} W "
                          f"over {args.idle_seconds:g} s", highlight=False)
        else:
            console.print(f"energy: not measured ({found['energy_source_reason']})", highlight=False)
    adaptive = spec.get("adaptive") and orchestrator.Adaptive(spec["adaptive"]["max_trials"], spec["noise_threshold"])
    code = orchestrator.execute(plan, run_dir, manifest, options, tsc, console, adaptive or None, meter)
    console.print(summary.summary_table(results.read_trials(run_dir), spec.get("noise_threshold", 0.05)))
    console.print(f"results: {run_dir}  (burtbench report {run_dir})", highlight=False)
    return code


COMMANDS = {"list": cmd_list, "run": cmd_run, "report": cmd_report, "compare": cmd_compare,
            "fetch-data": cmd_fetch_data, "doctor": cmd_doctor}


def main(argv: list[str] | None = None) -> int:
    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 170)
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args, console)
    except UsageError as exc:
        print(f"burtbench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("burtbench: interrupted", file=sys.stderr)
        return 130
    except RunLocked as exc:
        print(f"burtbench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryCapFailed as exc:
        print(f"burtbench: error: {exc}; the run stopped (trials already written are kept)", file=sys.stderr)
        return 1
    except ResultsUnwritable as exc:
        print(f"burtbench: error: {exc}; the run stopped (trials already written are kept)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
