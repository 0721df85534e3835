"""A Table written as Markdown, LaTeX (booktabs) and CSV, by pandas.

A note that several rows share is written once under the table, numbered (tables.row_notes), and
their Notes cells refer to it; html.py numbers them alike.

Markdown and LaTeX show the formatted cells; the CSV keeps the raw numbers (SI units: seconds,
bytes, joules, clocks; a share as a fraction of 1) so that a reader can recompute anything, each column
named with its unit where the Markdown shows another (time_per_iter_s beside µs, peak_private_bytes beside
MiB, energy_total_j beside mWh, peak_share_fraction beside %: harness/analysis/metrics.py's keys).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.analysis import cells
from harness.analysis.tables import Table, row_notes
from harness.text import markdown_cell


def markdown(table: Table) -> str:
    escaped = table.shown.map(markdown_cell)
    body = escaped.to_markdown(index=False, tablefmt="pipe", disable_numparse=True)
    parts = [f"## {table.title}", table.caption, body]
    if shared := row_notes(table.rows).shared:
        parts.append("Notes on rows:\n\n" + "\n".join(f"- [{k}] {markdown_cell(note)}"
                                                       for k, note in enumerate(shared, start=1)))
    if table.notes:
        parts.append("\n".join(f"- {markdown_cell(note)}" for note in table.notes))
    return "\n\n".join(parts) + "\n"


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
    shown = table.shown.map(tex_escape)
    shown.columns = [tex_escape(c) for c in shown.columns]
    tex = shown.to_latex(index=False, escape=False, column_format="l" * len(shown.columns), position="ht",
                         caption=f"{tex_escape(table.title)}. {tex_escape(table.caption)}",
                         label=f"tab:burtbench-{table.name}")
    lines = [f"[{k}] {tex_escape(note)}" for k, note in enumerate(row_notes(table.rows).shared, start=1)]
    lines += [tex_escape(note) for note in table.notes]
    if lines:
        notes = "\n".join(line + r"\par" for line in lines)
        tex = tex.replace(r"\end{table}", r"\par\smallskip" "\n" r"\begin{minipage}{\linewidth}\scriptsize" "\n"
                          + notes + "\n" r"\end{minipage}" "\n" r"\end{table}")
    return tex


def csv_text(table: Table) -> str:
    frame = pd.DataFrame([[cells.raw(row.get(name)) for name in table.fields] for row in table.rows],
                         columns=table.fields)
    return frame.to_csv(index=False, lineterminator="\n")


def write_table(table: Table, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix, render in ((".md", markdown), (".tex", latex), (".csv", csv_text)):
        path = folder / f"{table.name}{suffix}"
        path.write_text(render(table), encoding="utf-8")
        written.append(path)
    return written
