"""Issue 48's principles 1, 3, 4 and 6, each broken from outside: a wrong program at a tiny time, numbers no
machine can measure, narrow terminals, and text with `|`, tags and escape sequences where a report shows it.
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from tests_support import fault_engines_env

from engines.base import BASELINE
from harness.analysis.compare import compare_runs, format_comparison
from harness.analysis.summary import format_seconds, summary_table
from harness.cluster import slurm
from harness.commands.cli import main
from harness.envs import revisions
from harness.analysis import cells
from harness.report import epilogue
from harness.analysis.tables import build_tables
from harness.store import results
from harness.store.runs import load_run

ROOT = Path(__file__).resolve().parent.parent
WRONG, OK = "fake/wrong/python/cpu", "fake/ok/python/cpu"
TINY_TIME = 1e-9  # a nanosecond an iteration: plausible, and far faster than the right program


def fault_run(out: Path) -> Path:
    with fault_engines_env():
        assert main(["run", "--engine", "fake/ok,fake/wrong", "--workload", "tiny", "--profile", "smoke",
                     "--trials", "2", "--no-report", "--out", str(out)]) == 0
    (run_dir,) = out.iterdir()
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    """Two runs measured apart: the wrong program's trials as fast as a nanosecond in both."""
    found = tuple(fault_run(tmp_path_factory.mktemp(name)) for name in ("a", "b"))
    for run_dir in found:
        edit(run_dir, lambda r: r["engine"] == WRONG, lambda r: r["per_iter_s"].update(median=TINY_TIME,
                                                                                         mean=TINY_TIME))
    return found


def edit(run_dir: Path, which, change) -> None:
    path = run_dir / results.TRIALS_FILE
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        if which(record):
            change(record)
    path.write_text("".join(json.dumps(r, allow_nan=True) + "\n" for r in records))


def copy(run_dir: Path, where: Path) -> Path:
    shutil.copytree(run_dir, where)
    return where


def burtbench(*argv: str, columns: int = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns), "BURTBENCH_ENGINE_MODULES": "fake_engines",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "fakes"), str(ROOT)])}
    return subprocess.run([sys.executable, "-c", "import sys; from harness.commands.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", *argv], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)


# ---------------------------------------------------------------- 1. a failed row is never an answer

def test_the_closing_lines_never_name_a_wrong_program_fastest(runs, tmp_path):
    buffer = io.StringIO()
    epilogue.after_run(runs[0], Console(file=buffer, width=120, color_system=None), tmp_path)
    said = buffer.getvalue()
    ranked = [line for line in said.splitlines() if line.startswith("  tiny")]
    assert any("check FAILED, not ranked: wrong" in line for line in ranked), said
    assert not any("faster than" in line or re.search(r"(?<![\d.])1 ns", line) for line in ranked), said  # not "121 ns"


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_the_summary_marks_a_wrong_row_and_divides_by_it_nothing(runs, columns):
    trials = results.read_trials(runs[0])
    for trial in trials:  # the right program stands in for BurTorch, whose factor column it then fills
        trial["engine"] = BASELINE if trial["engine"] == OK else trial["engine"]
    buffer = io.StringIO()
    Console(file=buffer, width=columns, color_system=None).print(summary_table(trials))
    shown = buffer.getvalue()
    assert all(len(line) <= columns for line in shown.splitlines()), shown
    wrong = next(line for line in shown.splitlines() if "fake/wrong" in line)
    assert "wrong" in wrong.split("fake/wrong")[1] and "1 ns" in wrong, shown
    header = [cell.strip() for cell in next(line for line in shown.splitlines() if "workload" in line).split("┃")]
    if "×BurTorch" in header:  # its cell is empty: a wrong time is no factor
        assert wrong.split("│")[header.index("×BurTorch")].strip() == "—", shown
    else:
        assert "left out at" in shown and "×BurTorch" in shown.split("left out at")[1].replace("\n", " "), shown


def test_compare_gives_no_answer_where_a_side_is_wrong(runs):
    result = compare_runs(*runs)
    (row,) = [r for r in result["rows"] if r["engine"] == WRONG]
    assert row["answer"] == "failed" and row["answer_text"] == "no answer: check FAILED in A and B"
    assert result["geomean"].get("tiny", {}).get("n", 0) <= 1  # the wrong row is in no workload's mean
    assert "check FAILED in A and B" in format_comparison(result, "md")


def test_a_report_table_divides_by_no_wrong_baseline(runs, tmp_path):
    run_dir = copy(runs[0], tmp_path / "run")
    edit(run_dir, lambda r: r["engine"] == WRONG, lambda r: r.update(engine=BASELINE))
    (table,) = build_tables(load_run(run_dir))
    ok = next(r for r in table.rows if r["engine"] == OK)
    assert ok["rel_time_per_iter_s"] is None
    assert any(note.startswith(f"{BASELINE}'s check FAILED") for note in table.notes)
    assert any(cell.startswith("✗ FAILED") for cell in table.shown["Check"])


# ---------------------------------------------------------------- 3. every number plausible, or dropped

EXTREME = ["1e-300", "1e300", "0", "-1", "5e-11", "NaN", "Infinity", '"inf"']
FIELDS = ["per_iter_s", "samples_s", "loop_time_s", "init_time_s", "peak_resident_bytes", "instructions_per_iter"]


def with_value(record: dict, raw: str) -> None:
    """Every measured field of the trial set to `raw` (JSON text: NaN and 1e300 included)."""
    for name in FIELDS:
        record[name] = {"median": "@@", "mean": "@@", "min": "@@", "std": 0.0, "n": 2} if name == "per_iter_s" \
            else ["@@", "@@"] if name == "samples_s" else "@@"


@pytest.mark.parametrize("raw", EXTREME)
def test_an_implausible_number_is_dropped_with_a_warning_by_every_command(runs, tmp_path, capfd, monkeypatch, raw):
    run_dir = copy(runs[1], tmp_path / "run")
    path = run_dir / results.TRIALS_FILE
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records[:2]:
        with_value(record, raw)
    path.write_text("".join(json.dumps(r).replace('"@@"', raw) + "\n" for r in records))
    for argv in (["report", str(run_dir), "--report-dir", str(tmp_path / "reports")],
                 ["claims", str(run_dir), "--report-dir", str(tmp_path / "claims")],
                 ["compare", str(runs[0]), str(run_dir)], ["compare", str(run_dir), str(runs[0]), "--format", "md"]):
        # In this process (32 interpreters started for the same answers cost half a minute), each command
        # as a process of its own: with none of the warnings an earlier command said once.
        monkeypatch.setattr(results, "_reported", set())
        code = main(argv)
        err = capfd.readouterr().err
        assert code == 0, (argv, err)
        assert "unexpected" not in err and "Traceback" not in err, (argv, err)
        assert "dropping the field per_iter_s" in err, (argv, err)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 1e300, 1e-300])
def test_no_number_shown_raises(value):
    assert format_seconds(value, "n/a") == "n/a" or "s" in format_seconds(value)
    for shown in (cells.number(value), cells.factor(value), cells.value_cell(value, value, value, 1e6)):
        assert isinstance(shown, str)


# ---------------------------------------------------------------- 4. what is cut says so

@pytest.mark.parametrize("columns", [60, 80, 120])
def test_compare_keeps_every_column_and_every_digit_at_any_width(runs, columns):
    done = burtbench("compare", str(runs[0]), str(runs[1]), columns=columns)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert all(len(line) <= columns for line in out.splitlines()), out
    rows = json.loads(burtbench("compare", str(runs[0]), str(runs[1]), "--format", "json").stdout)["rows"]
    # The terminal leads with the decided answers, every digit of them; the rest it counts (md and json hold them).
    decided = [r for r in rows if r["answer"] in ("faster", "slower", "same", "failed")]
    assert all(f"{r['time_ratio']:.3f}" in out for r in decided if r["answer"] != "failed"), out
    assert all(f"{r['answer_text']}" in " ".join(out.split()) for r in decided if r["answer"] == "failed"), out
    answered = [r for r in decided if r["answer"] != "failed"]  # a failed check is named, not counted as decided
    assert len(decided) == len(rows) or f"{len(answered)} of {len(rows)} rows decided" in " ".join(out.split()), out


# ---------------------------------------------------------------- 6. nothing from outside shown raw

HOSTILE = "Xeon | <b>bold</b> & <img src=x>"


def test_markdown_reports_escape_pipes_and_tags_from_outside(runs, tmp_path):
    run_dir = copy(runs[0], tmp_path / "run")
    manifest = json.loads((run_dir / results.MANIFEST_FILE).read_text())
    manifest["machine"]["cpu_model"] = HOSTILE
    (run_dir / results.MANIFEST_FILE).write_text(json.dumps(manifest))
    edit(run_dir, lambda r: r["engine"] == OK and r["trial"] == 0,
         lambda r: r.update(status="failed", reason="died | <script>x</script>\x1b[31m"))
    assert main(["report", str(run_dir), "--report-dir", str(tmp_path / "reports")]) == 0
    folder = tmp_path / "reports" / load_run(run_dir).run_id
    pages = [folder / "README.md", *sorted((folder / "tables").glob("*.md"))]
    for page in pages:
        text = page.read_text()
        assert "<b>" not in text and "<script>" not in text and "<img" not in text and "\x1b" not in text, page
    assert "Xeon \\| &lt;b&gt;bold&lt;/b&gt; &amp; &lt;img src=x&gt;" in (folder / "README.md").read_text()
    assert "died \\| &lt;script&gt;" in "".join(p.read_text() for p in pages[1:])
    compared = format_comparison(compare_runs(runs[1], run_dir), "md")
    assert "<b>" not in compared and "&lt;b&gt;" in compared


def test_a_garbled_sbatch_answer_is_one_escaped_line_and_no_job(tmp_path, monkeypatch):
    fake = tmp_path / "sbatch"
    fake.write_text("#!/bin/sh\nprintf 'Submitted \\033]0;pwned\\007 batch job 12\\n'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(slurm.SlurmError) as raised:
        slurm.sbatch([], "job.sh")
    said = str(raised.value)
    assert said.startswith("sbatch: answered") and "not a job id" in said
    assert "\x1b" not in said and "\\x1b" in said and "\n" not in said


def test_a_commit_subject_with_escape_sequences_is_shown_escaped(tmp_path):
    repo = tmp_path / "repo"
    (repo / revisions.SOURCE).mkdir(parents=True)
    (repo / revisions.SOURCE / "x.txt").write_text("x")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "fix \x1b[2J\x1b]0;pwned\x07 it"], check=True)
    name = revisions.resolve("HEAD", repo).name
    assert "\x1b" not in name and "\x07" not in name and "\\x1b[2J" in name
