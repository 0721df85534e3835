"""A note that several rows of a report table share is written once, numbered, under the table, in
Markdown, LaTeX and HTML alike; a note of one row stays in its cell (Markdown, LaTeX)."""
from __future__ import annotations

import pandas as pd

from harness.report import formats, html
from harness.analysis.tables import Table, note_cells, row_notes
from workloads.base import PaperTable

ERROR = "\n".join(f"line {k} of a build error that every engine of the toolchain hit alike" for k in range(1, 7))
ROWS = 22


def table() -> Table:
    rows = [{"engine": f"engine-{k}", "in_run": True, "check_ok": None,
             "notes": [ERROR] + (["only this row timed out once"] if k == 3 else [])} for k in range(ROWS)]
    shown = pd.DataFrame({"Engine": [r["engine"] for r in rows], "Notes": note_cells(row_notes(rows))})
    return Table(name="shared", title="Shared notes", caption="22 rows, one error", workload="tiny",
                 declaration=PaperTable(csv_name="tiny", title="Shared notes", metrics=("time",)), fields=["engine", "notes"],
                 rows=rows, shown=shown, notes=["a note on the whole table"])


def test_the_numbering_counts_only_long_notes_rows_share():
    a, b, c = ("a" * 50, "b" * 50, "c" * 50)
    split = row_notes([{"notes": [a, b, "short"]}, {"notes": [b, c, a, "short"]}, {"notes": ["d"]}, {}])
    assert split.shared == [a, b]  # "short" stays in its cells: a reference would be longer than the note
    assert split.refs == [[1, 2], [2, 1], [], []]
    assert split.own == [["short"], [c, "short"], ["d"], []]
    assert note_cells(split) == ["short; see [1], [2]", f"{c}; short; see [2], [1]", "d", ""]


def test_markdown_writes_a_shared_note_once_and_refers_to_it_from_each_row():
    text = formats.markdown(table())
    first_line = ERROR.splitlines()[0]
    assert text.count(first_line) == 1
    assert text.count("see [1]") == ROWS
    assert "| only this row timed out once; see [1]" in text  # a note of one row stays in its cell
    assert "- [1] " + first_line in text and "- a note on the whole table" in text


def test_latex_writes_a_shared_note_once():
    text = formats.latex(table())
    assert text.count(ERROR.splitlines()[0]) == 1 and text.count("see [1]") == ROWS
    assert "[1] " + ERROR.splitlines()[0] in text


def test_html_numbers_the_notes_as_markdown_does():
    text = html.table_html(table())
    assert text.count(ERROR.splitlines()[0]) == 1
    assert text.count("href='#shared-note-1'") == ROWS
    refs, texts = html.footnotes(table())
    assert texts == [ERROR, "only this row timed out once"]  # the shared note is [1] in Markdown too
    assert refs[3] == "<a href='#shared-note-1'>1</a>,<a href='#shared-note-2'>2</a>"
