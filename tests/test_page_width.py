"""The report's page fits a 1,400 px window: no table is wider than the page, and no row is tall
for one line of text. Measured in headless Chromium by the page's own script (data-widest-table)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests_support import chromium

from harness.judging import claims
from harness.report import html
from harness.analysis.tables import build_tables
from harness.store.runs import load_run

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 1400
# A row of one line of text is about 25 px at the page's font; two lines of an engine's label, 45.
TALLEST_ROW_PX = 60

ROW_HEIGHTS = """<script>window.addEventListener("load", function () {
  var tallest = 0;
  document.querySelectorAll("section#tables tr").forEach(function (r) {
    tallest = Math.max(tallest, Math.ceil(r.getBoundingClientRect().height)); });
  document.body.setAttribute("data-tallest-row", tallest);
});</script>"""


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The committed reference run's page (its widest tables), without figures: those are checked
    by test_report.py."""
    run = load_run(ROOT / "results" / "reference")
    built = build_tables(run)
    folder = tmp_path_factory.mktemp("page")
    path = html.write_index(run, built, [], folder, claims.judge(run, built), [], [versions_table()])
    path.write_text(path.read_text(encoding="utf-8").replace("</body>", ROW_HEIGHTS + "</body>"), encoding="utf-8")
    return path


def versions_table():
    """A versions run's table (two environments of one engine), its intervals and verdicts long."""
    import pandas as pd

    from harness.report.versions import VersionTable

    ratio = "1.132 [0.849, 1.509] no significant change"
    shown = pd.DataFrame([{"Engine": "autograd/eager/python/cpu", "Point": "a=-41.0 b=2.0", "Version": v,
                           "Environment": f"autograd=={v}", "Trials": "5/5", "Time/iter": "671 µs",
                           "Time ×oldest [95% CI]": ratio, "Init": "624 ms", "Init ×oldest [95% CI]": ratio,
                           "Peak RSS": "34.8 MiB", "Memory ×oldest [95% CI]": ratio} for v in ("1.7.0", "1.9.1")])
    rows = [{"check_ok": True, "in_run": True} for _ in range(2)]
    return VersionTable("versions_tiny", "Versions", "", "tiny", list(shown.columns), rows, shown)


def body_attributes(path: Path, profile: Path) -> dict[str, str]:
    dom = chromium([f"--window-size={WINDOW},900", "--dump-dom", path.resolve().as_uri()], profile)
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", dom.stdout).group(1)
    return dict(re.findall(r'([\w-]+)="([^"]*)"', body))


def test_no_table_is_wider_than_the_page_at_1400_px(page, tmp_path):
    found = body_attributes(page, tmp_path / "profile")
    page_width = int(found["data-page-width"])
    widest = int(found["data-widest-table"].split()[0])
    assert WINDOW - 40 <= page_width <= WINDOW  # the window less its scroll bar
    assert widest <= page_width, f"tables wider than the page ({page_width} px): {found['data-table-widths']}"
    assert int(found["data-tallest-row"]) <= TALLEST_ROW_PX


def test_a_wide_table_is_split_and_its_notes_are_footnotes(page):
    text = page.read_text(encoding="utf-8")
    small = text[text.index("id='table-small'"):text.index("</article>", text.index("id='table-small'"))]
    assert "Part 1 of" in small and "Part 2 of" in small
    assert "<ol class='notes'>" in small and "href='#small-note-1'" in small and "id='small-note-1'" in small


def test_parts_keep_a_measure_whole_and_memory_apart():
    columns = ["Engine", "Check", "Time (µs), ours", "Time (µs), paper", "Min (µs), ours", "Min (µs), paper",
               "Clocks, ours", "Clocks, paper", "Peak resident (MiB), ours", "Peak resident (MiB), paper", "Notes"]
    lead, split = html.parts(columns)
    assert lead == ["Engine", "Check"]
    assert split == [columns[2:6], columns[6:8], columns[8:10]]
