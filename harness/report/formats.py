"""A Table written as Markdown, LaTeX (booktabs) and CSV.

Markdown and LaTeX show the formatted cells; the CSV keeps the raw numbers (SI units: seconds,
bytes, joules, clocks) so that a reader can recompute anything.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from harness.report.tables import Table


def markdown(table: Table) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    out = [f"## {table.title}", "", table.caption, "",
           line([c.title for c in table.columns]), line(["---"] * len(table.columns))]
    out += [line(cells) for cells in table.cells()]
    if table.notes:
        out += [""] + [f"- {note}" for note in table.notes]
    return "\n".join(out) + "\n"


# One pass over the characters, so no replacement is escaped again.
_TEX = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "±": r"$\pm$", "×": r"$\times$", "µ": r"$\mu$", "≈": r"$\approx$", "✓": r"\checkmark{}",
    "✗": r"$\times$", "—": "---", "–": "--", "→": r"$\to$", "Ω": r"$\Omega$",
}


def tex_escape(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in text)


def latex(table: Table) -> str:
    """A booktabs table; needs \\usepackage{booktabs} (and amssymb for \\checkmark)."""
    def line(cells: list[str]) -> str:
        return " & ".join(tex_escape(c) for c in cells) + r" \\"

    out = [r"\begin{table}[ht]", r"\centering", r"\scriptsize",
           rf"\caption{{{tex_escape(table.title)}. {tex_escape(table.caption)}}}",
           rf"\label{{tab:burtbench-{table.name}}}",
           r"\begin{tabular}{" + "l" * len(table.columns) + "}", r"\toprule",
           line([c.title for c in table.columns]), r"\midrule"]
    out += [line(cells) for cells in table.cells()]
    out += [r"\bottomrule", r"\end{tabular}"]
    if table.notes:
        out += [r"\par\smallskip", r"\begin{minipage}{\linewidth}\scriptsize"]
        out += [tex_escape(note) + r"\par" for note in table.notes]
        out += [r"\end{minipage}"]
    out.append(r"\end{table}")
    return "\n".join(out) + "\n"


def _csv_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def csv_text(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.fields)
    for row in table.rows:
        writer.writerow([_csv_value(row.get(name)) for name in table.fields])
    return buffer.getvalue()


def write_table(table: Table, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix, render in ((".md", markdown), (".tex", latex), (".csv", csv_text)):
        path = folder / f"{table.name}{suffix}"
        path.write_text(render(table), encoding="utf-8")
        written.append(path)
    return written
