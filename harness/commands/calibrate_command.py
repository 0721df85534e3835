"""`burtbench calibrate`'s options and its call to the running stage (apart from cli.py, which is at its
size limit): each calibration run is a RunAsk, checked by `burtbench run`'s one check."""
from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from harness.commands.options import at_most, path_text, positive_float

MAX_MINUTES = 7 * 24 * 60  # a week of A/A runs: past it, a typo


def add_options(calibrate: argparse.ArgumentParser) -> None:
    calibrate.add_argument("--minutes", type=at_most(positive_float, MAX_MINUTES), default=5.0, metavar="M",
                           help="about how long its A/A runs take in all (default 5; more gives more cases and "
                                "a sharper reading)")
    calibrate.add_argument("--engine", metavar="E,...",
                           help="the engines to run beside their copies (default: our native driver, micrograd "
                                "and our Python module: steps from tens of nanoseconds to milliseconds)")
    calibrate.add_argument("--cpu", type=int, metavar="N",
                           help="the core its runs are pinned to, as `run --cpu` (default: run's, the last core); "
                                "a calibration applies to runs on the core it measured")
    calibrate.add_argument("--out", type=path_text, default="results", metavar="DIR",
                           help="results folder (default: results); writes DIR/calibration/<machine>/, its runs "
                                "in runs/ there")


def cmd_calibrate(args, console: Console) -> int:
    from harness.commands.request import check  # when it runs, as every command's stage
    from harness.running import calibrate

    return calibrate.calibrate(args.minutes, args.engine, Path(args.out), check, console, args.cpu)
