"""burtbench: regenerate the BurTorch paper's tables on this machine, one pinned core, one process per trial.

Every argument is checked before any trial starts; bad input gets one line on stderr and exit code 2.
Each command imports its stage when it runs, so that `burtbench --help` or `list` starts in a
fraction of a second and never loads pandas, matplotlib or scipy.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from rich.console import Console

from engines import PROBE_ENGINES
from harness.commands import calibrate_command
from harness.commands.helptext import EXAMPLES, describe
from harness.commands.info import cmd_list, version_text
from harness.cluster.slurm import SlurmError
from harness.commands.options import (add_run_options, add_slurm_command, add_slurm_options, check_own_code,
                                      default_env_dir, path_text, positive_float, prune_days)
from harness.commands.streams import tolerant_streams
from harness.errors import EXIT_NOT_ALL_RUN, EXIT_USAGE, UsageError
from harness.paths import reports_root
from harness.planning import selection
from harness.running.spawn import MemoryCapFailed
from harness.store.lock import RunLocked
from harness.store.results import ResultsError, ResultsUnreadable
from harness.store.runs import check_out_dir, existing_run
from harness.text import clean
from harness.units import count
from workloads import PROBE_WORKLOADS


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line instead of usage + message
        unknown = re.match(r"argument command: invalid choice: '(.*)' \(choose from", message, re.S)
        if unknown and hasattr(self, "commands"):  # argparse names no closest command of its own before 3.14
            word = unknown.group(1)
            message = f"no command '{clean(word)}'{selection.did_you_mean(word, self.commands)} " \
                      f"(commands: {', '.join(self.commands)})"
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def parse_args(self, args=None, namespace=None):
        """An unknown option is named with the subcommand's closest one, and that subcommand's help."""
        args = sys.argv[1:] if args is None else list(args)
        if hasattr(self, "commands"):
            self.check_before_command(args)
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            where = getattr(self, "commands", {}).get(getattr(parsed, "command", None), self)
            known = [o for action in where._actions for o in action.option_strings]
            guess = selection.did_you_mean(extra[0].split("=")[0], known) if extra[0].startswith("-") else ""
            where.error(f"unrecognized argument{'s' if len(extra) > 1 else ''}: {' '.join(extra)}{guess}")
        return parsed

    def check_before_command(self, args: list[str]) -> None:
        """Options before the command are burtbench's own: argparse would report an unknown one there as a
        missing command, or under the command's help."""
        known = [o for action in self._actions for o in action.option_strings]
        for word in args:
            if not word.startswith("-") or word == "--":
                return
            if word.split("=")[0] not in known:
                self.error(f"unknown option {clean(word)}{selection.did_you_mean(word.split('=')[0], known)}")


def build_parser() -> Parser:
    parser = Parser(prog="burtbench", description=__doc__, epilog=EXAMPLES,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true",
                        help="print the traceback of an unexpected error (also: BURTBENCH_DEBUG=1)")
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    parser.commands = sub.choices  # for an unknown option's did-you-mean

    describe(sub, "list", "support matrix: engine × workload, unavailable engines with the reason")

    run = describe(sub, "run", "run trials and write results/<run-id>/")
    add_run_options(run)
    add_slurm_options(run)

    report = describe(sub, "report", "render a run's tables, figures and index.html beside the paper's numbers")
    report.add_argument("run_dir", metavar="RUN_DIR", help="a folder written by burtbench run")
    report.add_argument("--report-dir", type=path_text, default=str(reports_root()), metavar="DIR",
                        help="reports folder (default: $BURTBENCH_REPORTS, else reports); writes DIR/<run-id>/")
    report.add_argument("--out", help=argparse.SUPPRESS)  # the old spelling: one line naming the new one

    pooled = describe(sub, "claims", "the paper's claims judged on several runs: runs of one machine pooled, "
                                     "each machine apart, \"holds on k of n machines\"")
    pooled.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders (of one --timing and profile)")
    pooled.add_argument("--report-dir", metavar="DIR", help="also write DIR/claims-pooled.md and claims-pooled.json")

    compare = describe(sub, "compare", "ratio B/A of time and memory per engine and workload, with a 95%% interval")
    compare.add_argument("run_a", metavar="RUN_A", help="a run folder, or RUN@SPEC: one environment (--env SPEC) of it")
    compare.add_argument("run_b", metavar="RUN_B", help="likewise (RUN@SPEC with the same RUN compares two versions)")
    compare.add_argument("--format", default="table", choices=("table", "md", "json"), help="output format (default: table)")
    compare.add_argument("--fail-if-slower", type=positive_float, metavar="PCT",
                         help="exit with status 1 if any (engine, workload, params) is slower in RUN_B than in RUN_A "
                              "by more than PCT percent over its whole 95%% interval (beyond the A/A floor where the "
                              "run measured one), or if a row cannot be judged (fewer than 3 trials a side); never "
                              "the harness's floor row")
    compare.add_argument("--change", type=positive_float, metavar="PCT", help="the change each answer is asked to "
                         "decide: 'same' is within it, a floor wider than it decides nothing (default 5, as a run's)")
    compare.add_argument("--allow-mixed", action="store_true",
                         help="with --fail-if-slower: gate runs of different CPU models (refused otherwise)")
    compare.add_argument("--fail-if-more-instructions", type=positive_float, metavar="PCT",
                         help="exit with status 1 if any (engine, workload, params) of RUN_B counts more instructions "
                              "per iteration than RUN_A by more than PCT percent, beyond their repeat spread, or has "
                              "no count (both runs need --instructions): the engine's gate, `make gate-engine`")

    fetch = describe(sub, "fetch-data", "download names.txt and input.txt from their public origins (sha256-checked)")
    fetch.add_argument("--data-dir", type=path_text, default="data", metavar="DIR", help="where to put them (default: data)")

    upstream = describe(sub, "fetch-upstream", "clone the authors' BurTorch at a pinned commit and verify it "
                                               "(the source of the burtorch-authors engines)")
    upstream.add_argument("--dir", type=path_text, metavar="DIR", help="where to clone (default: build/upstream/checkout, "
                                                       "where the engines look when given no --upstream)")
    upstream.add_argument("--commit", metavar="C", help="a 40-digit commit (default: the one behind the paper's rows)")
    upstream.add_argument("--url", metavar="URL", help="another copy of their repository (default: their GitHub)")

    envs = describe(sub, "envs", "the environments --env made: SPEC, Python, size, last use")
    envs.add_argument("--env-dir", type=path_text, metavar="DIR", help=f"where they are kept (default: {default_env_dir()})")
    envs.add_argument("--prune", nargs="?", const=30.0, type=prune_days, metavar="DAYS",
                      help="delete those unused for DAYS days (default 30; 'all': every one)")

    merge = describe(sub, "merge", "join the runs of a plan's shards (--shard K/N) into one run")
    merge.add_argument("runs", nargs="+", metavar="RUN_DIR")
    merge.add_argument("--out", type=path_text, required=True, metavar="DIR", help="the merged run's folder (new or empty)")
    merge.add_argument("--allow-mixed", action="store_true",
                       help="merge runs from different CPU models or framework versions (the report says so)")
    merge.add_argument("--allow-partial", action="store_true",
                       help="merge although a shard is missing or planned trials are absent (marked partial)")

    add_slurm_command(describe(sub, "slurm", "a run submitted with run --slurm: its jobs' state; cancel it"), Parser)

    doctor = describe(sub, "doctor", "what on this machine will make numbers noisy, and which measures are unavailable")
    doctor.add_argument("--cpu", type=int, metavar="N",
                        help="the core a run will use (run --cpu N): its load and isolation are checked (default: "
                             "the last core, where a run pins its trials)")
    doctor.add_argument("--remeasure", action="store_true", help="measure the core's bandwidth and peak again, "
                        "time a stream of known bytes at each level against the new roofs (its share of its bound), "
                        "and forget its cached library SGEMM times (the next run measures them)")
    doctor.add_argument("--interference", action="store_true",
                        help="measure what running trials in parallel costs: a reference trial alone, then with "
                             "every other core of --cpus busy with the same kind of trial; prints the slow-down")
    doctor.add_argument("--cpus", metavar="LIST", help="with --interference: the cores; the reference trial runs on "
                                                       "the first (default: every allowed core)")
    doctor.add_argument("--engine", default=",".join(PROBE_ENGINES), metavar="E,...",
                        help="with --interference: engines of the reference trials")
    doctor.add_argument("--workload", default=",".join(PROBE_WORKLOADS), metavar="W,...",
                        help="with --interference: workloads of the reference trials")
    calibrate_command.add_options(describe(sub, "calibrate", "runs for a few minutes: what this machine "
                                                             "adds to every interval, and whether its 95%% holds"))
    return parser


def cmd_doctor(args, console: Console) -> int:
    from harness.machine import doctor

    if args.interference:
        if args.cpu is not None:
            raise UsageError("--cpu and --interference: --interference takes its cores from --cpus")
        return doctor_interference(args, console)
    alone = [o for o, given in (("--cpus", args.cpus), ("--engine", args.engine != ",".join(PROBE_ENGINES)),
                                ("--workload", args.workload != ",".join(PROBE_WORKLOADS))) if given]
    if alone:
        raise UsageError(f"{', '.join(alone)}: only with --interference (the core a run will use: --cpu N)")
    findings = doctor.diagnose(selection.check_cpu(args.cpu), remeasure=args.remeasure)
    console.print(doctor.format_findings(findings, console.width), highlight=False, soft_wrap=True)
    return 0


def doctor_interference(args, console: Console) -> int:
    from engines import all_engines
    from harness.measure import affinity
    from harness.planning import selection
    from harness.running import interference
    from workloads import all_workloads

    # By default the reference trial runs where a one-core run would (the last core), the rest beside it.
    default = [affinity.default_cpu()] + [c for c in affinity.allowed_cpus() if c != affinity.default_cpu()]
    cpus = list(selection.check_cpus(args.cpus)) if args.cpus else default
    if len(cpus) < 2:
        raise UsageError(f"--interference needs at least two cores (this process may use {affinity.format_cpus(cpus)})")
    engines = selection.resolve_engines(args.engine, all_engines())
    workloads = selection.resolve_workloads(args.workload, all_workloads())
    console.print(f"interference: {count(len(engines), 'engine')} × {count(len(workloads), 'workload')}, "
                  f"{interference.ROUNDS} rounds alone and busy; this takes a few minutes", highlight=False)
    rows = interference.interference(engines, workloads, cpus)
    console.print(interference.format_table(rows, cpus))
    return 0


def cmd_report(args, console: Console) -> int:
    from harness.report.render import render

    renamed(args, "out", "--report-dir", "the reports folder, as `run --report-dir` names it; `run --out` is the "
                                         "results folder")
    run_dir = existing_run(args.run_dir, "RUN_DIR")
    out = Path(args.report_dir)
    check_out_dir(out, "reports folder", "--report-dir")
    try:
        folder = render(run_dir, out)
    except OSError as exc:
        raise ReportUnwritable(f"cannot write the report in {out}: {exc.strerror or exc}") from None
    console.print(f"report: {folder / 'index.html'}  (claims in {folder / 'claims.md'}, tables in {folder / 'tables'}, "
                  f"figures in {folder / 'figures'})")
    return 0


def renamed(args, old: str, new: str, meaning: str) -> None:
    if getattr(args, old, None) is not None:
        raise UsageError(f"--{old.replace('_', '-')}: did you mean {new}? ({meaning})")


def cmd_compare(args, console: Console) -> int:
    from harness.analysis import change, compare, gate
    from harness.envs.specs import run_side

    (run_a, env_a), (run_b, env_b) = run_side(args.run_a, "RUN_A"), run_side(args.run_b, "RUN_B")
    result = compare.compare_runs(run_a, run_b, env_a, env_b, change.asked(args.change))
    if args.fail_if_slower is not None:
        gate.check_gate(result, args.allow_mixed)
    text = compare.format_comparison(result, args.format)
    print(text) if args.format == "json" else console.print(text, highlight=False)
    code = gate.exit_status(result, args.fail_if_slower)
    lines = gate.regression_lines(result, args.fail_if_slower) if code else []
    if args.fail_if_more_instructions is not None:
        more = gate.instruction_regressions(result, args.fail_if_more_instructions)
        code, lines = (1 if more else code), lines + more
    for line in lines:
        print(f"burtbench compare: {line}", file=sys.stderr)
    return code


def cmd_claims(args, console: Console) -> int:
    from rich.markup import escape

    from harness.judging.pooled import judge_machines
    from harness.report import pooled

    runs = [str(existing_run(r, "RUN_DIR")) for r in args.runs]
    if args.report_dir:  # refused before any verdict is printed
        check_out_dir(Path(args.report_dir), "reports folder", "--report-dir")
    machines = judge_machines(runs)
    for line in pooled.lines(machines):
        console.print(escape(line), highlight=False)
    if args.report_dir:
        for path in pooled.write(Path(args.report_dir), machines):
            console.print(f"wrote {escape(str(path))}", highlight=False)
    return 0


def cmd_fetch_data(args, console: Console) -> int:
    from workloads import data

    check_out_dir(Path(args.data_dir), "data folder", "--data-dir")
    try:
        paths = data.fetch(Path(args.data_dir))
    except data.DataError as exc:
        raise UsageError(str(exc)) from None
    for path in paths:
        console.print(f"{path}: sha256 ok", highlight=False)
    console.print(f"next: burtbench run --workload mlp,gpt --data-dir {args.data_dir}", highlight=False)
    return 0


def cmd_fetch_upstream(args, console: Console) -> int:
    from engines.authors import source
    from engines.burtorch_authors import DEFAULT_CHECKOUT

    folder = Path(args.dir) if args.dir else DEFAULT_CHECKOUT
    try:
        tree = source.fetch(folder, args.commit or source.PINNED_COMMIT, args.url or source.DEFAULT_URL)
    except source.SourceError as exc:
        print(f"burtbench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    hint = "" if folder == DEFAULT_CHECKOUT else f" (run with --upstream {tree.root})"
    console.print(f"{tree.root}: commit {tree.commit} verified{hint}", highlight=False)
    return 0


def cmd_envs(args, console: Console) -> int:
    from harness.envs import cache

    cache.show(cache.env_dir(args.env_dir), args.prune, console)
    return 0


def cmd_merge(args, console: Console) -> int:
    from harness.store import merge

    from harness.running.session import planned_keys

    folder = merge.merge([existing_run(r, "RUN_DIR") for r in args.runs], Path(args.out), args.allow_mixed,
                         args.allow_partial, planned_keys)
    console.print(f"merged {len(args.runs)} runs → {folder}  (burtbench report {folder})", highlight=False)
    return 0


def cmd_run(args, console: Console) -> int:
    from harness.commands.request import ask_of, check
    from harness.judging.deciding import Deciding
    from harness.report.epilogue import after_run, asked_not_run
    from harness.running import session

    req = check(ask_of(args))
    if req.slurm is not None:
        from harness.cluster.submit import submit

        return submit(req, console)
    # The rounds for undecided claims judge the claims: the report's stage, joined to the run here.
    outcome = session.run(req, console, extend=Deciding)
    # The report is the run's last stage, above it: the command joins the two.
    if outcome.run_dir is not None and not args.no_report:
        after_run(outcome.run_dir, console, Path(args.report_dir))  # its closing lines name what did not run
    missed = asked_not_run(outcome.run_dir) if outcome.run_dir is not None else []
    for line in missed if args.no_report else ():
        console.print(line, highlight=False)
    return EXIT_NOT_ALL_RUN if missed and outcome.code == 0 else outcome.code


def cmd_slurm(args, console: Console) -> int:
    from harness.cluster import finish, follow

    run = Path(args.run_dir).resolve()
    if args.slurm_command == "finish":
        return finish.finish(run, console, args.allow_partial)
    return {"status": follow.status, "cancel": follow.cancel}[args.slurm_command](run, console)


# Wider than any table or line the commands print, and small enough for rich to lay out a table in.
PIPED_WIDTH = 1000


class ReportUnwritable(Exception):
    """The reports folder refused a file: one line, exit code 1."""


COMMANDS = {"list": cmd_list, "run": cmd_run, "report": cmd_report, "claims": cmd_claims, "compare": cmd_compare,
            "envs": cmd_envs, "fetch-data": cmd_fetch_data, "fetch-upstream": cmd_fetch_upstream, "doctor": cmd_doctor,
            "merge": cmd_merge, "slurm": cmd_slurm,
            "calibrate": calibrate_command.cmd_calibrate}


def main(argv: list[str] | None = None) -> int:
    """Every command's one error path: one line on stderr and an exit code, a traceback only with --debug; a
    closed stdout or stderr stops no command (commands/streams.py)."""
    with tolerant_streams():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    console = Console(highlight=False)
    if not console.is_terminal:  # piped or in a file: nothing is cut or wrapped to a guessed width
        console.width = PIPED_WIDTH
    debug = os.environ.get("BURTBENCH_DEBUG") == "1" or "--debug" in (sys.argv[1:] if argv is None else argv)
    argv = sys.argv[1:] if argv is None else argv
    try:
        check_own_code()
        if not argv:  # a bare `burtbench`: what it can do (exit 0: nothing went wrong)
            build_parser().print_help()
            return 0
        args = build_parser().parse_args(argv)
        args.argv = argv
        return COMMANDS[args.command](args, console)
    except (UsageError, RunLocked) as exc:
        return _fail(exc, EXIT_USAGE)
    except KeyboardInterrupt:
        print("burtbench: interrupted", file=sys.stderr)
        return 130
    except (ReportUnwritable, ResultsUnreadable, SlurmError) as exc:
        return _fail(exc, 1)
    except (MemoryCapFailed, ResultsError) as exc:
        return _fail(f"{exc}; the run stopped (trials already written are kept)", 1)
    except Exception as exc:  # noqa: BLE001 (the one place an unexpected error becomes one line)
        if debug:
            raise
        return _fail(f"unexpected {type(exc).__name__}: {exc} (run again with --debug for the traceback)", 1)


def _fail(message, code: int) -> int:
    print(f"burtbench: error: {clean(' '.join(str(message).split()))}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
