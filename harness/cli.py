"""burtbench: regenerate the BurTorch paper's tables on this machine, one pinned core, one process per trial.

Every argument is checked before any trial starts; bad input gets one line on stderr and exit code 2.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from rich.console import Console

from harness.errors import EXIT_USAGE, UsageError
from harness.lock import RunLocked
from harness.results import TIMINGS, ResultsError, ResultsUnreadable
from harness.spawn import MemoryCapFailed
from harness.selection import check_out_dir
from harness.session import existing_run
from workloads.base import PROFILES


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line instead of usage + message
        raise UsageError(f"{message} (see '{self.prog} --help')")


EXAMPLES = """examples:
  burtbench list
  burtbench run                                   quick profile, every workload, every available engine;
                                                  ends with reports/<run-id>/ and a verdict for each paper claim
  burtbench run --workload tiny --engine burtorch,micrograd --profile smoke
  burtbench run --engine torch/eager --profile paper --trials 5
  burtbench run --resume results/20261121-101500-quick
  burtbench report results/20261121-101500-quick     tables, figures and index.html in reports/<run-id>/
  burtbench compare RUN_A RUN_B --fail-if-slower 10
  burtbench run --workload mlp --param hidden_dim=4,1024 --param batch=1 --data-dir data
  burtbench fetch-data --data-dir data
  burtbench fetch-upstream                        the authors' BurTorch at the pinned commit (burtorch-authors engines)
  burtbench run --engine burtorch --workload tiny,small --upstream ../shared/upstream/burtorch-b1a9d66.tar.gz
  burtbench doctor
"""


def build_parser() -> Parser:
    parser = Parser(prog="burtbench", description=__doc__, epilog=EXAMPLES,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true",
                        help="print the traceback of an unexpected error (also: BURTBENCH_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    sub.add_parser("list", help="support matrix: engine × workload, unavailable engines with the reason")

    run = sub.add_parser("run", help="run trials and write results/<run-id>/",
                         description="Plan engine × workload × params × trial, run each trial in a fresh "
                                     "process pinned to one core, append it to trials.jsonl.")
    run.add_argument("--workload", default="all", metavar="W,...", help="workload names, or 'all' (default)")
    run.add_argument("--engine", default="all", metavar="E,...",
                     help="engine ids or prefixes ('torch' = every torch engine, 'torch/eager' = its eager ones; "
                          "'burtorch' includes the authors' burtorch-authors), or 'all' (default: every available engine)")
    run.add_argument("--profile", metavar="P",
                     help=f"iteration counts: {', '.join(PROFILES)} (default quick; paper = the paper's counts)")
    run.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2",
                     help="narrow a workload's parameter grid (repeatable)")
    run.add_argument("--trials", type=_positive_int, metavar="N", help="trials per point (default: per workload and profile)")
    run.add_argument("--adaptive", action="store_true",
                     help="add trials to points whose trials disagree until the 95%% interval of the mean is within "
                          "--noise-threshold of it, or --max-trials is reached")
    run.add_argument("--max-trials", type=_at_most(_positive_int, 1000), default=10, metavar="N", help="with --adaptive (default 10)")
    run.add_argument("--noise-threshold", type=_at_most(_positive_float, 100), default=5.0, metavar="PCT",
                     help="coefficient of variation over trials above which a point is noisy (default 5)")
    run.add_argument("--cpu", type=int, metavar="N", help="core to pin every trial to (default: the last core)")
    run.add_argument("--timeout", type=_at_most(_positive_float, 7 * 86400), metavar="S", help="per-trial timeout in seconds (default: per workload and profile)")
    run.add_argument("--mem-limit", type=_size, metavar="SIZE", help="address-space cap per trial, e.g. 4G; a trial over it is recorded as oom")
    run.add_argument("--energy", choices=("auto", "battery", "rapl", "none"), default="auto",
                     help="energy source for the energy workload (default auto: battery, else RAPL, else none)")
    run.add_argument("--idle-seconds", type=_at_most(_positive_float, 3600), default=10.0, metavar="S",
                     help="how long to measure the idle power before an energy run (default 10; 30+ for a battery)")
    run.add_argument("--timing", choices=TIMINGS,
                     help="paper (default): time each row as the authors' script for it does, where we adopted it "
                          "(workloads/timed_regions.csv); lean: the same lean region for every framework")
    run.add_argument("--sample-private", action="store_true",
                     help="also sample each child's peak private memory (Linux: from the runner, every 20 ms)")
    run.add_argument("--python", metavar="PATH", help="interpreter that runs the Python workers (e.g. another venv's) to compare framework versions")
    run.add_argument("--data-dir", metavar="DIR",
                     help="read the real makemore names.txt and tiny-shakespeare input.txt from DIR for mlp and gpt "
                          "(default: a synthetic corpus with the same alphabets; see fetch-data)")
    run.add_argument("--upstream", metavar="DIR|ARCHIVE",
                     help="the authors' BurTorch source (a checkout or a `git archive` tarball) for the "
                          "burtorch-authors engines (default: $BURTBENCH_UPSTREAM, else the fetch-upstream checkout)")
    run.add_argument("--out", default="results", metavar="DIR", help="results folder (default: results)")
    run.add_argument("--resume", metavar="RUN_DIR", help="run only the trials missing from RUN_DIR, with its plan")
    run.add_argument("--no-report", action="store_true",
                     help="do not render reports/<run-id>/ (tables, figures, claims, index.html) at the end")

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

    upstream = sub.add_parser("fetch-upstream", help="clone the authors' BurTorch at a pinned commit and verify it "
                                                     "(the source of the burtorch-authors engines)")
    upstream.add_argument("--dir", metavar="DIR", help="where to clone (default: build/upstream/checkout, "
                                                       "where the engines look when given no --upstream)")
    upstream.add_argument("--commit", metavar="C", help="a 40-digit commit (default: the one behind the paper's rows)")
    upstream.add_argument("--url", metavar="URL", help="another copy of their repository (default: their GitHub)")

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


def _at_most(kind, highest: float):
    def parse(text: str):
        value = kind(text)
        if value > highest:
            raise argparse.ArgumentTypeError(f"expected at most {highest:g}, got {text!r}")
        return value
    return parse


def _size(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)i?B?", text.strip(), re.IGNORECASE)
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"expected a size like 512M or 4G, got {text!r}")
    scale = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[match.group(2).upper()]
    return int(float(match.group(1)) * scale)


def cmd_list(args, console: Console) -> int:
    from rich.table import Table

    from engines import all_engines
    from workloads import all_workloads

    workloads = all_workloads()
    table = Table(title="burtbench: engines × workloads", title_justify="left")
    table.add_column("engine")
    for name in workloads:
        table.add_column(name, justify="center")
    table.add_column("status")
    for eid, spec in all_engines().items():
        reason = spec.unavailable_reason()
        marks = ["✓" if spec.runs(w) else "·" for w in workloads.values()]
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


def cmd_report(args, console: Console) -> int:
    from harness import report

    run_dir = existing_run(args.run_dir, "RUN_DIR")
    out = Path(args.out)
    check_out_dir(out, "reports folder")
    try:
        folder = report.render(run_dir, out)
    except OSError as exc:
        raise ReportUnwritable(f"cannot write the report in {out}: {exc.strerror or exc}") from None
    console.print(f"report: {folder / 'index.html'}  (claims in {folder / 'claims.md'}, tables in {folder / 'tables'}, "
                  f"figures in {folder / 'figures'})")
    return 0


def cmd_compare(args, console: Console) -> int:
    from harness import compare

    result = compare.compare_runs(existing_run(args.run_a, "RUN_A"), existing_run(args.run_b, "RUN_B"))
    text = compare.format_comparison(result, args.format)
    print(text) if args.format == "json" else console.print(text, highlight=False)
    return compare.exit_status(result, args.fail_if_slower)


def cmd_fetch_data(args, console: Console) -> int:
    from workloads import data

    check_out_dir(Path(args.data_dir), "data folder", "--data-dir")
    try:
        paths = data.fetch(Path(args.data_dir))
    except data.DataError as exc:
        raise UsageError(str(exc)) from None
    for path in paths:
        console.print(f"{path}: sha256 ok", highlight=False)
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


def cmd_run(args, console: Console) -> int:
    from harness import session

    return session.run(session.request(args), console)


class ReportUnwritable(Exception):
    """The reports folder refused a file: one line, exit code 1."""


COMMANDS = {"list": cmd_list, "run": cmd_run, "report": cmd_report, "compare": cmd_compare,
            "fetch-data": cmd_fetch_data, "fetch-upstream": cmd_fetch_upstream, "doctor": cmd_doctor}


def main(argv: list[str] | None = None) -> int:
    """Every command's one error path: one line on stderr and an exit code, a traceback only with --debug."""
    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 170)
    debug = os.environ.get("BURTBENCH_DEBUG") == "1" or "--debug" in (sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args, console)
    except (UsageError, RunLocked) as exc:
        return _fail(exc, EXIT_USAGE)
    except KeyboardInterrupt:
        print("burtbench: interrupted", file=sys.stderr)
        return 130
    except (ReportUnwritable, ResultsUnreadable) as exc:
        return _fail(exc, 1)
    except (MemoryCapFailed, ResultsError) as exc:
        return _fail(f"{exc}; the run stopped (trials already written are kept)", 1)
    except Exception as exc:  # noqa: BLE001 (the one place an unexpected error becomes one line)
        if debug:
            raise
        return _fail(f"unexpected {type(exc).__name__}: {exc} (run again with --debug for the traceback)", 1)


def _fail(message, code: int) -> int:
    print(f"burtbench: error: {' '.join(str(message).split())}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
