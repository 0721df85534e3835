"""Everything fits where it is read (#49): the closing claim lines at 80, 100 and 120 columns (wrapped, never
cut with "…"), the progress bar's numbers with a long trial name (--instructions), and a versions table with
long answers in a 1,400 px window (no horizontal scroll, its answer column readable)."""
from __future__ import annotations

import io
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console
from tests_support import chromium

from harness.judging import claims
from harness.report import epilogue, html, versions
from harness.analysis.tables import build_tables
from harness.running import orchestrator
from harness.store.runs import load_run

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 1400


@pytest.fixture(scope="module")
def reference():
    run = load_run(ROOT / "results" / "reference")
    return SimpleNamespace(folder=ROOT / "reports" / "reference", status=[], versions=[], release=[], run=run,
                           judged=claims.judge(run, build_tables(run)))


def printed(lines: list[str], width: int) -> list[str]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None)
    for line in lines:
        console.print(line, highlight=False)
    return buffer.getvalue().splitlines()


@pytest.mark.parametrize("width", [40, 80, 100, 120])
def test_closing_lines_wrap_and_are_never_cut(reference, width):
    lines = printed(epilogue.summary_lines(reference, width), width)
    assert not any("…" in line for line in lines)
    assert max(map(len, lines)) <= width
    judged = [j for j in reference.judged if epilogue.judgeable(j)]
    claim_lines = [k for k, line in enumerate(lines) if line.startswith(tuple(f"  {j.claim.id} " for j in judged))]
    assert len(claim_lines) == len(judged)  # each claim's line is whole: none was wrapped by the terminal
    for j in judged:  # every verdict's whole text is there, its pieces under the claim's line
        for v in j.verdicts():
            head, value = epilogue.subject_text(v)
            assert (head + value).split()[-1] in "\n".join(lines)
    under = [lines[k + 1] if lines[k + 1].startswith("      ") else lines[k + 2] for k in claim_lines]
    if width >= 80:  # both subjects side by side under the claim, each wrapped in its own column where long
        assert all(line.startswith("      authors ") and " │ ours " in line for line in under)
    else:  # too narrow for two columns: a line per subject under its claim's
        assert sum(line.startswith("      ours ") for line in lines) == len(judged)


def test_the_progress_bar_keeps_its_numbers_beside_a_long_trial_name():
    for width in (80, 120):
        buffer = io.StringIO()
        console = Console(file=buffer, width=width, color_system=None)
        progress = orchestrator._progress(console)
        task = progress.add_task("burtorch/eager/cpp/cpu@burtorch@3f2a1b9c0d gpt batch=64 #7 "
                                 "(then its instructions, under valgrind)", total=497, eta_s=93.0,
                                 eta_at=time.monotonic())
        progress.update(task, advance=33)
        console.print(progress.make_tasks_table(progress.tasks))
        (line,) = buffer.getvalue().splitlines()
        assert "33/497" in line and "0:00:00" in line and re.search(r"ETA 0:01:(3\d|29)", line), line
        assert len(line) <= width


LONG = ("undecided: [0.950, 1.020] spans ×0.952 and ×1.05; ≈ 12 more trials a side would decide it "
        "(no A/A floor: --no-aa)")


def version_row(version: str, verdict: str) -> dict:
    return {"engine": "burtorch/eager/cpp/cpu", "params": {"batch": 64, "hidden_dim": 1024}, "version": version,
            "env": f"burtorch@{version.split()[0]}", "trials_ok": 8, "trials": 8, "check_ok": True, "in_run": True,
            "rounds": 8, "time_per_iter_s": 2.16e-3, "instructions_per_iter": 4.1e9, "instr_ratio": 1.0012,
            "noise_floor": 1.034, "floor_pair": "burtorch@3f2a1b9c0d (fix: the tape's arena grows by pages)",
            "verdict": verdict, "decided_by": "time and instructions", "init_verdict": "same within 1.2% [0.995, 1.010]",
            "mem_verdict": "larger by 12.5% [1.120, 1.130]", "peak_resident_bytes": 123456789}


COLUMN_WIDTHS = """<script>window.addEventListener("load", function () {
  var answer = document.querySelector("#versions td.answer");
  document.body.setAttribute("data-answer-width", Math.round(answer.getBoundingClientRect().width));
});</script>"""


def test_a_versions_table_fits_1400_px_with_its_answer_readable(tmp_path):
    rows = [version_row("3f2a1b9c0d dirty (fix: the tape's arena grows by pages)", versions.REFERENCE),
            version_row("9c8d7e6f5a4b (main)", LONG)]
    shown = versions._shown(rows)
    table = versions.VersionTable("versions_mlp", "mlp: framework versions", "", "mlp", list(shown.columns), rows,
                                  shown)
    path = html.write_index(load_run(ROOT / "results" / "reference"), [], [], tmp_path, [], [], [table])
    path.write_text(path.read_text(encoding="utf-8").replace("</body>", COLUMN_WIDTHS + "</body>"), encoding="utf-8")
    dom = chromium([f"--window-size={WINDOW},900", "--dump-dom", path.resolve().as_uri()], tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = dict(re.findall(r'([\w-]+)="([^"]*)"', re.search(r"<body([^>]*)>", dom.stdout).group(1)))
    widths = {name: int(width) for width, name in re.findall(r"(\d+) ([\w-]+)", found["data-table-widths"])}
    assert widths["table-versions_mlp"] <= int(found["data-page-width"]) - 2 * 16  # the body's padding
    assert int(found["data-answer-width"]) >= 150  # some 25 characters a line, not one word
