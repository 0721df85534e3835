"""`burtbench compare`'s answer as a person reads it: a terminal table, Markdown, or JSON.

The terminal leads with the decided answers and counts the rest (undecided, not measured), with the
--trials that would decide most of them; --format md and json hold every row. A terminal too narrow for the table's least width gets one block per row instead,
every column a line of its own, and says so; a column the terminal view leaves out is named under it.
"""
from __future__ import annotations

import io
import json
import shutil
import textwrap

from rich.markup import escape

from engines.base import finite
from engines.none import FLOOR
from harness.analysis.labels import short_ids
from harness.analysis.points import POINT_SHORT
from harness.analysis.summary import format_seconds, natural_width, param_text
from harness.text import markdown_cell
from harness.units import mib

ONLY_SHOWN = 6  # "Only in A/B": names listed before "and N more"


def ratio_text(ratio: float | None, interval: list[float] | None) -> str:
    if ratio is None:
        return "n/a"
    return f"{ratio:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


HEADERS = ["Point", "Engine", f"Time A → B ({POINT_SHORT})", "Answer: time B/A [95% CI]", "Decided by",
           "Instr. B/A (a proxy)", "Mem A → B", "Memory B/A"]
WIDTH = 120  # compare's table fits a 120-column terminal
# The columns that give way to the answer's (decided by, instructions, memory), and the answer's own
# least and most: a table at these widths is the least one that folds no word.
NARROW = {2: 16, 4: 12, 5: 12, 7: 16}
ANSWER_WIDTH = (26, 44)


def arrow(a: str, b: str) -> str:
    return "—" if a in ("—", "n/a") and b in ("—", "n/a") else f"{a} → {b}"


def varying_params(rows: list[dict]) -> list[str]:
    """The parameters whose values differ between rows of one workload: those that tell them apart."""
    names = dict.fromkeys(k for row in rows for k in row["params"])
    return [k for k in names if any(len({json.dumps(r["params"].get(k)) for r in rows if r["workload"] == w}) > 1
                                    for w in {r["workload"] for r in rows})]


def point_text(row: dict, shown: list[str]) -> str:
    return " ".join([row["workload"], *(f"{k}={param_text(row['params'][k])}" for k in shown if k in row["params"])])


def table_rows(result: dict) -> list[list[str]]:
    labels, _ = short_ids([row["engine"] for row in result["rows"]])
    shown = varying_params(result["rows"])
    rows = []
    for row in result["rows"]:
        instr = "—" if row["instr_ratio"] is None else f"{row['instr_ratio']:.4f}"
        rows.append([point_text(row, shown), labels.get(row["engine"], row["engine"]),
                     arrow(format_seconds(row["time_a"], "n/a"), format_seconds(row["time_b"], "n/a")),
                     row["answer_text"], row["decided_by"] or "—", instr,
                     arrow(mib(row["mem_a"]), mib(row["mem_b"])),
                     row["mem_verdict"] if row["mem_verdict"].startswith(("smaller", "larger", "undecided"))
                     else f"{ratio_text(row['mem_ratio'], None)} {row['mem_verdict']}"])
    for workload, mean in sorted(result["geomean"].items()):
        if mean["n"] < 2:  # the one row says it already
            continue
        rows.append([workload, f"geo. mean of {mean['n']}", "", mean["answer_text"],
                     mean["decided_by"] or "—", "",
                     "", ""])
    return rows


def shown_columns(rows: list[list[str]]) -> list[int]:
    """The columns that say something: a column of blanks and dashes only (no instructions counted)
    is left out."""
    return [i for i in range(len(HEADERS)) if any(r[i] not in ("", "—") for r in rows) or i < 2]


def _only(described: list[dict]) -> str:
    """A count and a short list without repeats: the engines, then the workloads."""
    engines = list(dict.fromkeys(g["engine"] for g in described))
    workloads = list(dict.fromkeys(g["workload"] for g in described))

    def short(names):
        more = len(names) - ONLY_SHOWN
        return ", ".join(names[:ONLY_SHOWN]) + (f" and {more} more" if more > 0 else "")
    return (f"{len(described)} point{'s' if len(described) != 1 else ''} "
            f"(engines: {short(engines)}; workloads: {short(workloads)})")


def _preamble(result: dict) -> list[str]:
    lines = [f"A = {result['run_a']['run_id']}, B = {result['run_b']['run_id']}. {result['method']}."]
    lines.append(f"Answer: faster/slower where the whole interval lies beyond the A/A floor (beyond ×1 without one, "
                 "which the answer says); "
                 f"same where it lies within a floor narrower than ±{result['threshold']:.0%} (the change "
                 "asked about, --change); else undecided, with what would decide it. Instructions decide where time "
                 "cannot.")
    _, legend = short_ids([row["engine"] for row in result["rows"]])
    if legend:
        lines.append(legend.capitalize() + ".")
    if result["geomean"]:
        lines.append("Geometric-mean rows: per trial, over the workload's rows but the harness's floor row "
                     f"({FLOOR}).")
    lines += [f"WARNING: {w}" for w in result["warnings"]]
    for side in ("only_in_a", "only_in_b"):
        if result[side]:
            lines.append(f"Only in {side[-1].upper()}: {_only(result[side])}")
    return lines


def _markdown(result: dict) -> str:
    def line(cells):
        return "| " + " | ".join(map(markdown_cell, cells)) + " |"

    rows = table_rows(result)
    keep = shown_columns(rows)
    out = [f"- {markdown_cell(text)}" for text in _preamble(result)] + ["", line([HEADERS[i] for i in keep]),
                                                        line(["---"] * len(keep))]
    out += [line([cells[i] for i in keep]) for cells in rows]
    return "\n".join(out) + "\n"


DECIDED = ("faster", "slower", "same")
# A wrong program's row is no answer, but it is named whatever else is cut, and counted apart from the answers.
FAILED = "failed"
SHOWN = (*DECIDED, FAILED)


def decided(result: dict) -> dict:
    """The comparison cut to its decided answers (and rows whose check failed), for the terminal."""
    return {**result, "rows": [r for r in result["rows"] if r["answer"] in SHOWN],
            "geomean": {w: m for w, m in result["geomean"].items() if m["decided_by"]}}


def rest_line(result: dict) -> str:
    """How many rows the terminal leaves out, what they are, and the --trials that would decide most of them."""
    rest = [r for r in result["rows"] if r["answer"] not in SHOWN]
    if not rest:
        return ""
    kinds = {kind: sum(r["answer"] == kind for r in rest) for kind in dict.fromkeys(r["answer"] for r in rest)}
    answered = sum(r["answer"] in DECIDED for r in result["rows"])
    failed = sum(r["answer"] == FAILED for r in result["rows"])
    line = (f"{answered} of {len(result['rows'])} rows decided" + (f", {failed} with a failed check" if failed else "")
            + f"{', shown above' if answered + failed else ''}; the rest: "
            + ", ".join(f"{n} {kind}" for kind, n in kinds.items()))
    wanting = [r["decide_with"] for r in rest if r.get("decide_with")]
    if wanting:
        need = max(wanting, key=wanting.count)
        line += (f"; rerun {'the run' if result['paired'] else 'both runs'} with --trials {need}: "
                 f"{sum(w <= need for w in wanting)} of them need that many or fewer, by their spread")
    return line + "; every row: --format md or json"


def _terminal(result: dict) -> str:
    """The decided answers first, one block per point (its name on a line of its own), one line per
    engine where the width allows: engines and numbers are never cut, the answer's words wrap. Where
    even that cannot fit, one block per row, a line per column. Then a count of the rest."""
    from rich.console import Console
    from rich.table import Table

    rest = rest_line(result)
    result = decided(result)
    rows = table_rows(result)
    keep = [i for i in shown_columns(rows) if i not in (0, 6)]  # the memory's ratio and answer say enough
    table = Table(title="burtbench compare: B relative to A", padding=(0, 1), collapse_padding=True,
                  show_lines=False)
    for i in keep:
        table.add_column(HEADERS[i], no_wrap=i == 1, overflow="fold", max_width=ANSWER_WIDTH[1] if i == 3 else NARROW.get(i),
                         min_width=ANSWER_WIDTH[0] if i == 3 else None)
    point = None
    for cells in rows:
        if cells[0] != point:
            if point is not None:
                table.add_section()
            point = cells[0]
            table.add_row(f"[bold]{escape(point)}[/]", *[""] * (len(keep) - 1))
        table.add_row(*[escape(cells[i]) for i in keep])
    buffer = io.StringIO()
    width = shutil.get_terminal_size((WIDTH, 24)).columns
    console = Console(file=buffer, width=width, color_system=None)
    for text in _preamble(result):
        console.print(text, markup=False, highlight=False)
    if not rows:
        console.print("burtbench compare: no row decided", markup=False, highlight=False)
    # Below its least width rich would fold numbers mid-digit and crop the columns past the edge.
    elif natural_width(console, table) <= width:
        console.print(table)
        if 6 in shown_columns(rows):
            console.print(f"{HEADERS[6]}: in --format md and json.", highlight=False)
    else:
        console.print(f"burtbench compare: B relative to A (one block per row: a table does not fit {width} columns)",
                      markup=False, highlight=False)
        console.file.write("".join(_block(cells, keep, width) for cells in rows))
    if rest:
        console.print(rest, markup=False, highlight=False)
    return buffer.getvalue()


def _block(cells: list[str], keep: list[int], width: int) -> str:
    """A row as lines: its point and engine, then each column as 'header: value', wrapped at spaces only."""
    lines = [f"{cells[0]} · {cells[1]}"]
    for i in (i for i in sorted({*keep, 6}) if i > 1 and cells[i] not in ("", "—")):
        lines += textwrap.wrap(f"{HEADERS[i]}: {cells[i]}", max(width - 2, 20), initial_indent="  ",
                               subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines) + "\n"


def format_comparison(result: dict, fmt: str = "table") -> str:
    if fmt == "json":
        # A ratio that is not a number is null.
        return json.dumps(finite(result, lambda _: None), indent=2, allow_nan=False) + "\n"
    if fmt == "md":
        return _markdown(result)
    if fmt == "table":
        return _terminal(result)
    raise ValueError(f"unknown format {fmt!r}: use table, md or json")
