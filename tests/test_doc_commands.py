"""Every command the pages show works as written.

The commands are read from the files: each line of a code block in README.md and docs/*.md that
starts with `burtbench`, `.venv/bin/burtbench` (after a `$ ` prompt) or `make`, and each example of
`burtbench --help` and `burtbench CMD --help` (harness/commands/helptext.py). Each runs in a fresh
tree (a temporary folder holding the committed results/ and nothing else, as a clone has), in this
process through harness.commands.cli.main: a `run` as its `--dry-run` (a run takes minutes), the
rest as written. It must exit 0 (or its documented status, EXIT below) and say nothing
"unexpected". Where a command names a placeholder (RUN_A, SHARD_1, a run id), PLACEHOLDERS says
which real folder stands in for it; what cannot run here is in SKIP, with why.
"""
from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.commands import helptext
from harness.commands.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
STAMP = ".venv/.burtbench-installed"

REFERENCE = "results/reference"
OTHER = "results/machines/20261127-120948-quick"  # the same machine as the reference run
OLDER = "results/machines/20261126-040626-quick"
# Placeholders of the pages → the folders of the fresh tree that stand in for them (longest first).
PLACEHOLDERS = {
    "results/20261121-101500-quick": "shards/1/RUN",  # a run of a few seconds: its report renders fast
    "results/RUN_A": REFERENCE, "results/RUN_B": OTHER, "RUN_A": REFERENCE, "RUN_B": OTHER,
    "results/RUN_1": REFERENCE, "results/RUN_2": OTHER, "results/RUN_3": OLDER,
    "RUN1": REFERENCE, "RUN2": OTHER, "RUN3": OLDER,
    "results/SHARD_1": "shards/1/RUN", "results/SHARD_2": "shards/2/RUN",
    "shard-1/RUN": "shards/1/RUN", "shard-2/RUN ...": "shards/2/RUN",
}

# What cannot run here, by a part of the command: why.
SKIP = {
    "calibrate": "minutes of A/A runs, and calibrate has no --dry-run",
    "--interference": "runs trials on every listed core at once, which this test's machine may not have",
    "fetch-data": "downloads from the network",
    "fetch-upstream": "clones the authors' repository from the network",
    "--slurm": "submits jobs to a SLURM cluster (tests/test_slurm.py and test_slurm_nodes.py run it on one-node and three-node clusters)",
    "slurm status": "a run submitted with --slurm", "slurm cancel": "a run submitted with --slurm",
    "slurm finish": "a run submitted with --slurm",
    "${SLURM_": "a line of the SLURM array script: its variables are SLURM's",
    "RUN@": "needs a run of several versions (--env SPEC installs them from PyPI)",
    "--upstream ~/": "needs the authors' source at that path",
    "burtorch-authors@": "needs a checkout of the authors' repository",
    "make test": "the suite this test is part of",
    "make bench-windows": "Windows only (docs/platforms.md: never run here)",
    "make bench-macos": "macOS only (docs/platforms.md: never run here)",
    "--cpus 2-15": "needs 16 cores", "--cpus 1-7": "needs 8 cores",
    "--data-dir data": "needs names.txt and input.txt, which `burtbench fetch-data` downloads",
}
# A documented exit status other than 0, by the command as shown (without .venv/bin/).
EXIT = {
    # "exit 1 on a row slower by more than PCT ... or on a row it cannot judge" (docs/versions.md): the
    # authors' small graph fails its check in both runs that stand in for RUN_A and RUN_B.
    "burtbench compare RUN_A RUN_B --fail-if-slower 10": 1,
}


@dataclass(frozen=True)
class Shown:
    where: str
    text: str


def _page_commands(page: Path) -> list[Shown]:
    found, block, pending = [], False, ""
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            block, pending = not block, ""
            continue
        if not block:
            continue
        line = pending + line.strip()
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        line = line.removeprefix("$ ")
        if re.match(r"(\.venv/bin/)?burtbench(\s|$)|make\s", line) and "─►" not in line:  # not a diagram
            command = re.split(r"\s+#", line)[0].strip().removeprefix(".venv/bin/")
            found.append(Shown(page.relative_to(ROOT).as_posix(), command))
    return found


def _help_commands() -> list[Shown]:
    texts = [("burtbench --help", helptext.EXAMPLES)] + [(f"burtbench {name} --help", examples)
                                                         for name, (_, examples) in helptext.HELP.items()]
    return [Shown(where, re.split(r"\s{2,}", line.strip())[0])
            for where, text in texts for line in text.splitlines() if line.strip().startswith("burtbench")]


def shown_commands() -> list[Shown]:
    seen, unique = set(), []
    for shown in [c for page in PAGES for c in _page_commands(page)] + _help_commands():
        if shown.text not in seen:
            seen.add(shown.text)
            unique.append(shown)
    return unique


COMMANDS = shown_commands()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A fresh tree: the committed results/, and two shards of one small plan for `merge` to join."""
    tree = tmp_path_factory.mktemp("fresh")
    listed = subprocess.run(["git", "ls-files", "-z", "results"], cwd=ROOT, capture_output=True, check=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tree / name)
    for k in (1, 2):
        out = tree / "shards" / str(k)
        argv = ["run", "--engine", "burtorch/eager/cpp", "--workload", "tiny,small", "--profile", "smoke",
                "--shard", f"{k}/2", "--no-report", "--out", str(out)]
        done = subprocess.run([sys.executable, "-m", "harness.commands.cli", *argv], cwd=ROOT,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        (only,) = [p for p in out.iterdir() if p.is_dir()]
        if k == 1:  # a clone after its first run, for the make targets that take the newest run
            shutil.copytree(tree / "results", tree / "clone" / "results")
            shutil.copytree(only, tree / "clone" / "results" / only.name)
            os.symlink(ROOT / ".venv", tree / "clone" / ".venv")
            shutil.copy2(ROOT / "Makefile", tree / "clone" / "Makefile")
        only.rename(out / "RUN")
    return tree


def as_run(text: str, tree: Path) -> list[str] | str:
    """The argv to give main(), or why the command cannot run here."""
    for part, why in SKIP.items():
        if part in text:
            return why
    for name, stands_in in sorted(PLACEHOLDERS.items(), key=lambda kv: -len(kv[0])):
        text = re.sub(rf"(?<![\w/@-]){re.escape(name)}(?![\w])", stands_in, text)
    text = text.split(" | ")[0].split(" > ")[0].replace("/tmp/", f"{tree}/tmp/")  # a pipe's or redirect's burtbench
    words = re.sub(r"^(\.venv/bin/)?burtbench\s*", "", text)
    argv = [w for word in shlex.split(words) for w in (sorted(glob.glob(word, root_dir=tree)) or [word])]
    if argv[:1] == ["run"] and "--dry-run" not in argv:
        argv.append("--dry-run")
    return argv


@pytest.mark.parametrize("shown", COMMANDS, ids=[c.text for c in COMMANDS])
def test_the_command_works_as_written(shown, fresh, monkeypatch, capsys):
    monkeypatch.chdir(fresh)
    monkeypatch.setenv("XDG_CACHE_HOME", str(fresh / "cache"))  # `envs --prune` prunes nobody's environments
    monkeypatch.setenv("BURTBENCH_REPORTS", str(fresh / "reports"))
    if shown.text.startswith("make "):
        return run_make(shown, fresh / "clone")
    argv = as_run(shown.text, fresh)
    if isinstance(argv, str):
        pytest.skip(argv)
    try:
        code = main(argv)
    except SystemExit as exc:  # --help, --version
        code = exc.code or 0
    out, err = capsys.readouterr()
    assert code == EXIT.get(shown.text, 0), f"{shown.where}: {shown.text}\n{err[-2000:]}"
    assert "unexpected" not in out + err, f"{shown.where}: {shown.text}\n{err[-2000:]}"


def run_make(shown: Shown, tree: Path) -> None:
    """A make target in a fresh clone after its first run, its set-up taken as done (.venv is this
    checkout's); a run's targets as dry runs."""
    for part, why in SKIP.items():
        if part in shown.text:
            pytest.skip(why)
    argv = ["make", "-s", "-o", STAMP, *shlex.split(shown.text)[1:]]
    if argv[4:5] == ["bench-linux"]:
        argv.append("RUN_ARGS=--dry-run")
    done = subprocess.run(argv, cwd=tree, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "BURTBENCH_REPORTS": str(tree / "reports")})
    assert done.returncode == EXIT.get(shown.text, 0), f"{shown.where}: {shown.text}\n{done.stderr[-2000:]}"
    assert "unexpected" not in done.stdout + done.stderr, f"{shown.where}: {shown.text}\n{done.stderr[-2000:]}"


def test_the_pages_show_commands():
    """The reader above reads them all: every page's code blocks and every --help's examples."""
    pages = {c.where for c in COMMANDS}
    assert "README.md" in pages and "burtbench run --help" in pages and "docs/parallel.md" in pages
    assert len(COMMANDS) >= 40
