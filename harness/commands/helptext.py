"""What `burtbench CMD --help` says besides the options: a description and examples per subcommand.

Kept apart from the parser (cli.py) so that the words can be read and changed in one place.
"""
from __future__ import annotations

import argparse
import textwrap

from harness.analysis.noise import MIN_RUNS
from harness.errors import EXIT_NOT_ALL_RUN, EXIT_USAGE
from harness.machine.calibrations import MAX_AGE_DAYS

# `burtbench --help`'s examples, after the list of commands.
EXAMPLES = """examples:
  burtbench list
  burtbench run                                   quick profile, every workload, every available engine;
                                                  ends with reports/<run-id>/ and a verdict for each paper claim
  burtbench run --workload tiny --engine burtorch,micrograd --profile smoke
  burtbench run --engine torch/eager --profile paper --trials 5
  burtbench run --engine autograd --workload tiny --env autograd==1.7.0 --env autograd==1.9.1
                                                  two versions in one interleaved run, with their A/A floor
  burtbench compare "RUN@autograd==1.7.0" "RUN@autograd==1.9.1"    two environments of one run
  burtbench envs --prune                          the cached environments; delete those unused for 30 days
  burtbench run --resume results/20261121-101500-quick
  burtbench run --profile paper --dry-run         the plan and its estimated time, nothing run
  burtbench run --cpus 2-15                       14 trials at once, each on its own core
  burtbench run --profile paper --shard 2/4       the second of 4 machines; then: burtbench merge RUN... --out DIR
  burtbench run --profile paper --slurm --wait --partition cpu --constraint epyc7763
                                                  a SLURM job array, resubmitted where it fails, merged and reported
  burtbench report results/20261121-101500-quick  tables, figures and index.html in reports/<run-id>/
  burtbench compare RUN_A RUN_B --fail-if-slower 10
  burtbench claims results/reference results/machines/*
                                                  the claims on several runs: one machine's pooled, machines apart
  burtbench run --workload mlp --param hidden_dim=4,1024 --param batch=1 --data-dir data
  burtbench fetch-data --data-dir data
  burtbench fetch-upstream                        the authors' BurTorch at the pinned commit (burtorch-authors engines)
  burtbench run --engine burtorch --workload tiny,small --upstream ~/src/burtorch-b1a9d66.tar.gz
  burtbench doctor
  burtbench calibrate                             about 5 minutes of runs: what this machine adds to every interval
"""

# (description, examples) per subcommand.
HELP = {
    "run": ("Plan engine × workload × params × trial, run each trial in a fresh process pinned to one core, "
            "append it to RESULTS/<run-id>/trials.jsonl, then render REPORTS/<run-id>/ and print a verdict per "
            f"paper claim. Exit status: 0 when everything asked ran; {EXIT_NOT_ALL_RUN} when it ran, but an engine "
            "named with --engine could not run here (the closing lines name it and why); 1 when planned trials "
            f"were not run (--resume runs them); {EXIT_USAGE} for bad input; 130 when interrupted.",
            """  burtbench run                                   quick profile, every workload, every available engine
  burtbench run --workload tiny --engine burtorch,micrograd --profile smoke
  burtbench run --engine torch/eager --profile paper --trials 5
  burtbench run --profile paper --dry-run         the plan and its estimated time, nothing run
  burtbench run --engine autograd --workload tiny --env autograd==1.7.0 --env autograd==1.9.1
                                                  two versions, each beside its A/A copy: the noise floor
                                                  their answer is held to (--no-aa: none, and it says so)
  burtbench run --engine burtorch --env burtorch@HEAD~1 --env burtorch@HEAD --instructions --trials 8
  burtbench run --workload mlp --param hidden_dim=4,1024 --param batch=1 --data-dir data
  burtbench run --cpus 2-15                       14 trials at once, each on its own core
  burtbench run --profile paper --slurm --wait    a SLURM job array of shards, merged and reported
  burtbench run --out /tmp/results --report-dir /tmp/reports
  burtbench run --resume results/20261121-101500-quick      the trials an interrupted run still lacks"""),
    "list": ("Which engine runs which workload (✓), and for each engine whether it is available here; an "
             "unavailable one says why (a framework not installed, no upstream source, no GPU).",
             """  burtbench list
  burtbench list | grep unavailable              the engines this machine cannot run, and why"""),
    "report": ("Render a run's report: one table per paper table (Markdown, LaTeX, CSV) beside the paper's "
               "figures, the figures (PNG, PDF), claims.md with a verdict per paper claim, README.md and a "
               "self-contained index.html. `burtbench run` does this itself when it ends.",
               """  burtbench report results/20261121-101500-quick               writes reports/20261121-101500-quick/
  burtbench report results/reference --report-dir /tmp/reports   elsewhere than ./reports"""),
    "claims": ("Judge the paper's claims on several runs. Runs of one machine (CPU model, OS, framework versions) "
               "pool their trials into one verdict per claim and subject, its interval over the runs' own "
               "factors (runs that agree give a surer verdict than either alone); runs of different machines are "
               "judged apart, one column each, and every claim says on how many machines it holds. Runs of "
               "different --timing or profiles are refused.",
               """  burtbench claims results/RUN_1 results/RUN_2 results/RUN_3           three runs of this machine, pooled
  burtbench claims results/reference results/machines/* --report-dir reports/reference
                                                  every machine the project has runs from (make reference-report)"""),
    "compare": ("Compare two runs, or two environments of one versions run: per engine, workload and "
                "parameters, the ratio B/A of time and memory with a 95% interval.",
                """  burtbench compare results/RUN_A results/RUN_B
  burtbench compare "results/RUN@autograd==1.7.0" "results/RUN@autograd==1.9.1"
  burtbench compare RUN_A RUN_B --fail-if-slower 10               exit 1 on a significant slow-down over 10%
  burtbench compare RUN_A RUN_B --format md > comparison.md"""),
    "fetch-data": ("Download makemore's names.txt and tiny-shakespeare's input.txt from their public origins "
                   "and check their sha256; `run --data-dir DIR` then trains mlp and gpt on them (the default "
                   "is a synthetic corpus with the same alphabets).",
                   """  burtbench fetch-data --data-dir data
  burtbench run --workload mlp,gpt --data-dir data"""),
    "fetch-upstream": ("Clone the authors' BurTorch at the commit behind the paper's rows and verify it: the "
                       "source the burtorch-authors engines build from.",
                       """  burtbench fetch-upstream
  burtbench fetch-upstream --dir /tmp/burtorch     then: burtbench run --upstream /tmp/burtorch ..."""),
    "envs": ("The Python environments `run --env SPEC` made and keeps for later runs: their SPEC, Python, "
             "size and last use. --prune deletes those unused for DAYS days.",
             """  burtbench envs
  burtbench envs --prune                          delete those unused for 30 days
  burtbench envs --prune 7
  burtbench envs --prune all                      delete every one"""),
    "merge": ("Join shards into one run folder that report and compare accept. Refuses runs of different "
              "plans, repeated trials, and runs whose machines differ in CPU model, profile or framework "
              "versions (unless --allow-mixed).",
              """  burtbench run --profile paper --shard 1/2      on machine 1 (and --shard 2/2 on machine 2)
  burtbench merge results/SHARD_1 results/SHARD_2 --out results/paper
  burtbench report results/paper"""),
    "slurm": ("A run submitted with `run --slurm`, by its folder: `status` says which shards are done, running "
              "or failed, the trials recorded and the time left; `cancel` cancels every job of it (the trials "
              "recorded stay); `finish` is what its follow-up job runs.",
              """  burtbench slurm status results/20261121-101500-paper
  burtbench slurm cancel results/20261121-101500-paper
  burtbench slurm finish results/20261121-101500-paper --allow-partial     a shard failed twice: report the rest"""),
    "doctor": ("What on this machine will make numbers noisy (load, other work on the pinned core, governor, "
               "turbo, SMT, isolation), each with its fix, and which measures the machine cannot take.",
               """  burtbench doctor
  burtbench doctor --interference --cpus 0-7      what running 8 trials at once costs here"""),
    "calibrate": ("Run a few engines at the same points, each beside an exact copy of itself (run --aa), in "
                  f"{MIN_RUNS} runs for about --minutes, then say what this machine adds beyond one run's rounds "
                  "(the correlation of rounds within a run, a run's own shift of a factor, engine against engine "
                  "as a claim's factors are made) and what it makes of the stated 95%: the shares of intervals "
                  "that hold the machine's factor, clustered by run, with that noise and without it; of planted "
                  "boundary cases the claims' rule decides; and how far reruns moved a factor. Writes "
                  "RESULTS/calibration/<machine>/calibration.md and .json; a run on the same host and core within "
                  f"{MAX_AGE_DAYS} days carries it in its intervals, and doctor shows the latest.",
                  """  burtbench calibrate                             about 5 minutes
  burtbench calibrate --minutes 20                more cases: a sharper reading of each share
  burtbench calibrate --engine torch/eager --minutes 10      one framework's noise beside its copy"""),
}


class Formatter(argparse.HelpFormatter):
    """Wraps a one-paragraph description; keeps the lines of the examples as written. Option names and paths are
    never broken at their hyphens or slashes (argparse's own wrapping gives '--index-' and 'url=…' on two lines):
    a word longer than the line stands whole."""

    def _fill_text(self, text, width, indent):
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return "\n".join(self._split_lines(text, width, indent))

    def _split_lines(self, text, width, indent=""):
        return textwrap.wrap(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False, break_long_words=False)


def describe(sub, name: str, summary: str) -> argparse.ArgumentParser:
    """A subcommand with its one-line summary (for `burtbench --help`), description and examples."""
    description, examples = HELP[name]
    return sub.add_parser(name, help=summary, description=description, epilog=f"examples:\n{examples}\n",
                          formatter_class=Formatter)
