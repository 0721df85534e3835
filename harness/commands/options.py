"""The options of `burtbench run` (and of `burtbench slurm`, its SLURM side) and the argument types
they parse with."""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from harness.analysis.change import ASKED_CHANGE
from harness.envs.cache import default_env_dir as where
from harness.errors import UsageError
from harness.paths import reports_root
from harness.planning import selection
from harness.records.run import MAX_ADAPTIVE_TRIALS
from harness.running.ask import RunAsk
from harness.store.run_plan import (DEFAULT_MAX_TRIALS, DEFAULT_TIMING, MAX_NOISE_PCT,
                                    MAX_TIMEOUT_S, TIMINGS)
from workloads.base import PROFILES

ASKED = RunAsk()  # the request's defaults are the options' (harness/running/ask.py)


def add_run_options(run: argparse.ArgumentParser) -> None:
    run.add_argument("--workload", default=ASKED.workload, metavar="W,...", help="workload names, or 'all' (default)")
    run.add_argument("--engine", default=ASKED.engine, metavar="E,...",
                     help="engine ids or prefixes ('torch' = every torch engine, 'torch/eager' = its eager ones; "
                          "'burtorch' includes the authors' burtorch-authors), or 'all' (default: every available engine)")
    run.add_argument("--profile", metavar="P",
                     help=f"iteration counts: {', '.join(PROFILES)} (default quick; paper = the paper's counts)")
    run.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2",
                     help="narrow a workload's parameter grid (repeatable)")
    run.add_argument("--trials", type=positive_int, metavar="N", help="trials per point (default: per workload and profile)")
    run.add_argument("--adaptive", action="store_true",
                     help="add trials to points whose trials disagree until the 95%% interval of the mean is within "
                          "--noise-threshold of it, or --max-trials is reached")
    run.add_argument("--max-trials", type=at_most(positive_int, MAX_ADAPTIVE_TRIALS), metavar="N",
                     help=f"with --adaptive: the most trials per point (default {DEFAULT_MAX_TRIALS})")
    run.add_argument("--noise-threshold", type=at_most(positive_float, MAX_NOISE_PCT), default=ASKED.noise_threshold,
                     metavar="PCT", help="coefficient of variation over trials above which a point is noisy, "
                                         "and --adaptive's target; not the change a versions answer decides "
                                         f"(--change) (default {ASKED.noise_threshold:g})")
    run.add_argument("--change", type=at_most(positive_float, MAX_NOISE_PCT), metavar="PCT",
                     help="with several --env: the change each versions answer decides, faster, slower or the same "
                          f"within it (default {ASKED_CHANGE * 100:g}, as compare --change)")
    run.add_argument("--claims-budget", type=at_most(non_negative_float, 24 * 60), default=ASKED.claims_budget,
                     metavar="MINUTES",
                     help="after the plan, add rounds at the points of the paper's claims still undecided (their "
                          "factor's interval spans a boundary), where they narrow it most for their cost, for at "
                          f"most this long (default {ASKED.claims_budget:g}; 0: none)")
    run.add_argument("--cpu", type=int, metavar="N", help="core to pin every trial to (default: the last core)")
    run.add_argument("--cpus", metavar="LIST",
                     help="run up to len(LIST) trials at once, each pinned to its own core of LIST (e.g. 2-15 or 0,1); "
                          "the runner keeps off them where a core is left. Check the cost first: burtbench doctor "
                          "--interference (default: one core, --cpu)")
    run.add_argument("--shard", metavar="K/N",
                     help="run only shard K of N: a deterministic split of the plan by point, for N machines "
                          "(join them with burtbench merge)")
    run.add_argument("--dry-run", action="store_true",
                     help="print the plan per workload and its estimated time, and exit without running")
    run.add_argument("--estimate-from", type=path_text, metavar="RUN_DIR",
                     help="previous run whose per-iteration times estimate this one's (default: the run under --out "
                          "on this CPU model that measured most of the plan's points, the newest of equals; else "
                          "rough built-in figures)")
    run.add_argument("--timeout", type=at_most(positive_float, MAX_TIMEOUT_S), metavar="S", help="per-trial timeout in seconds (default: per workload and profile)")
    run.add_argument("--mem-limit", type=size, metavar="SIZE", help="address-space cap per trial, e.g. 4G; a trial over it is recorded as oom")
    run.add_argument("--energy", choices=("auto", "battery", "rapl", "none"), default=ASKED.energy,
                     help="energy source for the energy workload (default auto: battery, else RAPL, else none)")
    run.add_argument("--idle-seconds", type=at_most(positive_float, selection.MAX_IDLE_S), default=ASKED.idle_seconds,
                     metavar="S", help="how long to measure the idle power before an energy run "
                                       f"(default {ASKED.idle_seconds:g}; 30+ for a battery)")
    run.add_argument("--timing", choices=TIMINGS,
                     help="paper: time each row as the authors' script for it does, where we adopted it "
                          "(workloads/timed_regions.csv); lean: the same lean region for every framework "
                          f"(default: {DEFAULT_TIMING})")
    run.add_argument("--sample-private", action="store_true",
                     help="also sample each child's peak private memory (Linux: from the runner, every 20 ms)")
    run.add_argument("--env", action="append", default=[], metavar="SPEC",
                     help="run the engines of the framework SPEC names in a managed environment with SPEC installed "
                          "(e.g. 'jax==0.4.38' or 'jax==0.5.0,jaxlib==0.5.0'); repeat to compare versions in one "
                          "interleaved run. Environments are cached (burtbench envs). 'burtorch@REV' is our engine "
                          "built at a git revision of this repository (a commit, tag, branch, HEAD~3, or 'worktree'); "
                          "'burtorch-authors@COMMIT' the authors' programs at a commit of their checkout (--upstream)")
    floor = run.add_mutually_exclusive_group()  # argparse refuses both in one line, before any work
    floor.add_argument("--aa", action="store_true",
                       help="A/A: also run every engine (or --env SPEC) as an exact copy of itself, "
                            "`<id>@<SPEC>#copy`, in the same rounds: their ratio measures the noise floor, the "
                            "smallest change this machine can detect now (the default where two versions or more of "
                            "one engine run: --env SPEC, burtorch@REV); --env X --env X needs it")
    floor.add_argument("--no-aa", action="store_true",
                       help="no A/A copies, even for versions of an engine: half as many trials, and every versions "
                            "answer then says 'no A/A floor' (it cannot know the noise it was measured in)")
    run.add_argument("--seed", type=int, metavar="N",
                     help="seed of the random order of the engines in each round (default: drawn, or with --shard "
                          "computed from the plan alike on every machine; the manifest's plan records it as round_seed)")
    run.add_argument("--instructions", action="store_true",
                     help="also count each trial's instructions per iteration under valgrind (a proxy for time: "
                          "deterministic where time is noisy); two short children per trial, ~100x slower per "
                          "iteration")
    run.add_argument("--env-dir", type=path_text, metavar="DIR", help=f"where environments are kept (default: {default_env_dir()})")
    run.add_argument("--pip-arg", action="append", default=[], metavar="ARG",
                     help="an argument for the installer (uv if on PATH, else pip), e.g. "
                          "--pip-arg=--index-url=https://download.pytorch.org/whl/cpu (repeatable)")
    run.add_argument("--python", type=path_text, metavar="PATH", help="interpreter that runs the Python workers (e.g. another venv's); "
                                                      "with --env, the interpreter the environments are made from")
    run.add_argument("--data-dir", type=path_text, metavar="DIR",
                     help="read the real makemore names.txt and tiny-shakespeare input.txt from DIR for mlp and gpt "
                          "(default: a synthetic corpus with the same alphabets; see fetch-data)")
    run.add_argument("--upstream", type=path_text, metavar="DIR|ARCHIVE",
                     help="the authors' BurTorch source (a checkout or a `git archive` tarball) for the "
                          "burtorch-authors engines (default: $BURTBENCH_UPSTREAM, else the checkout of an earlier "
                          "fetch-upstream, else the run fetches the pinned commit once)")
    run.add_argument("--cargo-vendor", metavar="DIR",
                     help="a `cargo vendor` folder of the Burn engine's crates (engines/burn_driver), for a machine "
                          "without internet: cargo then builds offline from it (default: $BURTBENCH_CARGO_VENDOR, "
                          "else cargo fetches the crates from crates.io)")
    run.add_argument("--no-upstream", action="store_true",
                     help="leave the authors' programs (burtorch-authors) out: no source looked for, no fetch")
    run.add_argument("--out", type=path_text, default=ASKED.out, metavar="DIR",
                     help=f"results folder (default: {ASKED.out}); writes DIR/<run-id>/")
    run.add_argument("--report-dir", type=path_text, default=str(reports_root()), metavar="DIR",
                     help="reports folder (default: $BURTBENCH_REPORTS, else reports); writes DIR/<run-id>/")
    run.add_argument("--resume", type=path_text, metavar="RUN_DIR", help="run only the trials missing from RUN_DIR, with its plan")
    run.add_argument("--no-report", action="store_true",
                     help="do not render reports/<run-id>/ (tables, figures, claims, index.html) at the end")


def path_text(text: str) -> str:
    """A path option's value: an empty one names nothing (and would fall back to a default unseen)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path names nothing")
    return text
def add_slurm_options(run: argparse.ArgumentParser) -> None:
    cluster = run.add_argument_group("on a SLURM cluster (docs/parallel.md)")
    cluster.add_argument("--slurm", nargs="?", const=0, type=positive_int, metavar="N",
                         help="submit the plan as a job array of N shards split by estimated cost (default: one "
                              "per half hour of work, at most one per point), each task on one core with a time "
                              "limit of twice its estimate + 10 min; then a job that resubmits failed shards once "
                              "(resuming them), merges them and renders the report. --out must be on a file "
                              "system the nodes share")
    cluster.add_argument("--wait", action="store_true",
                         help="with --slurm: follow the jobs (shards done, running, failed; trials recorded; ETA) "
                              "until the merged report is there")
    cluster.add_argument("--partition", metavar="P", help="with --slurm: sbatch's --partition")
    cluster.add_argument("--account", metavar="A", help="with --slurm: sbatch's --account")
    cluster.add_argument("--constraint", metavar="C",
                         help="with --slurm: sbatch's --constraint, e.g. one CPU model: merge refuses mixed ones")
    cluster.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                         help="with --slurm: another sbatch option for every job, e.g. --sbatch-arg=--qos=long "
                              "(repeatable)")


def add_slurm_command(slurm: argparse.ArgumentParser, parser_class) -> None:
    """`burtbench slurm status|cancel|finish RUN`."""
    sub = slurm.add_subparsers(dest="slurm_command", required=True, parser_class=parser_class)
    for name, summary in (("status", "shards done, running, failed; trials recorded; ETA; each shard's jobs and log"),
                          ("cancel", "cancel every job of the run (the trials recorded stay)"),
                          ("finish", "what the run's follow-up job does: resubmit failed shards once, else merge "
                                     "and report (by hand: --allow-partial)")):
        command = sub.add_parser(name, help=summary, description=summary)
        command.add_argument("run_dir", metavar="RUN", help="the folder run --slurm printed")
        if name == "finish":
            command.add_argument("--allow-partial", action="store_true",
                                 help="merge and report although a shard failed twice")


def shard_argv(argv: list[str]) -> list[str]:
    """`run`'s arguments as every array task of a --slurm run gets them: less the submission's own."""
    own = argparse.ArgumentParser(add_help=False)
    add_slurm_options(own)
    for name in ("--out", "--report-dir"):
        own.add_argument(name)
    own.add_argument("--no-report", action="store_true")
    return own.parse_known_args(argv[argv.index("run") + 1:])[1]


def default_env_dir() -> str:
    return str(where())


def prune_days(text: str) -> float:
    """`envs --prune DAYS`: a number of days > 0, or 'all' (every environment, however recent)."""
    if text.strip() == "all":
        return 0.0
    try:
        return positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a number of days > 0, or 'all', got {text!r}") from None


def positive_int(text: str) -> int:
    if not re.fullmatch(r"\d+", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}")
    return int(text)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number ≥ 0, got {text!r}")
    return value


def at_most(kind, highest: float):
    def parse(text: str):
        value = kind(text)
        if value > highest:
            raise argparse.ArgumentTypeError(f"expected at most {highest:g}, got {text!r}")
        return value
    return parse


def size(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)i?B?", text.strip(), re.IGNORECASE)
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"expected a size like 512M or 4G, got {text!r}")
    scale = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[match.group(2).upper()]
    return int(float(match.group(1)) * scale)


def check_own_code(prefix: str | None = None, package: str | None = None) -> None:
    """A checkout's .venv runs that checkout's code: an editable install maps `harness` to the clone it was made
    in, so a copy of a clone would report results of the original's code. Refused in one line."""
    import harness

    venv = Path(prefix or sys.prefix).resolve()
    checkout = venv.parent
    if venv.name != ".venv" or not (checkout / "pyproject.toml").is_file() or not (checkout / "harness").is_dir():
        return
    running = Path(package or harness.__file__).resolve().parent
    if running != checkout / "harness":
        raise UsageError(f"{venv} runs the code of {running.parent}, not of this checkout ({checkout}): its "
                         f"editable install was made there; remove {venv} and run `make setup` here")
