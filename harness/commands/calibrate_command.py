"""`burtbench calibrate`'s options and its call to the running stage (apart from cli.py, which is at its
size limit): each calibration run is asked as `burtbench run`'s options are, parsed by run's own parser."""
from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from harness.commands.options import add_run_options, path_text, positive_float


def add_options(calibrate: argparse.ArgumentParser) -> None:
    calibrate.add_argument("--minutes", type=positive_float, default=5.0, metavar="M",
                           help="about how long its A/A runs take in all (default 5; more gives more cases and "
                                "a sharper reading)")
    calibrate.add_argument("--engine", metavar="E,...",
                           help="the engines to run beside their copies (default: our native driver, micrograd "
                                "and our Python module: steps from tens of nanoseconds to milliseconds)")
    calibrate.add_argument("--out", type=path_text, default="results", metavar="DIR",
                           help="results folder (default: results); writes DIR/calibration/<machine>/, its runs "
                                "in runs/ there")


def run_request(argv: list[str]):
    """The checked request of `burtbench run ARGV`."""
    from harness.running import session  # when it runs: `burtbench --help` stays quick

    parser = argparse.ArgumentParser(prog="burtbench run")
    add_run_options(parser)
    return session.request(parser.parse_args(argv))


def cmd_calibrate(args, console: Console) -> int:
    from harness.running import calibrate  # when it runs, as every command's stage

    return calibrate.calibrate(args.minutes, args.engine, Path(args.out), run_request, console)
