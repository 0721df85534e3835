"""The paper's figures redrawn from the report's tables (matplotlib, Agg), as PNG and PDF.

Each table's declaration (PaperTable.figure) says which:
- "bars", Fig. 3/5/6 style: time per iteration per engine, log scale, ×factor over BurTorch on
  each bar, with the paper's bar beside ours;
- "energy", Fig. 7 style: energy per engine (total, task, OS), where the run has energy readings;
- "lines": compute time and memory against `figure_x` (a parameter, or the parameter count),
  one column per table of the workload (the MLP's batch sizes).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from engines import all_engines
from engines.base import AUTHORS, BASELINE, split_id
from engines.none import FLOOR
from harness.analysis.cells import factor
from harness.analysis.metrics import METRICS, PAPER_MEMORY
from harness.analysis.tables import Table
from harness.units import MIB, MIB_LABEL

FAILED_COLOR = "#d62728"
# Both BurTorch rows stand out: their own colours and markers, thicker lines, drawn on top.
BURTORCH_STYLES = {BASELINE: ("#000000", "*"), AUTHORS: ("#e6550d", "D")}
# Every other engine: one colour and marker of its own, the same in every figure (its place in the registry);
# the palette holds more colours than the registry has engines, so no two share one.
PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f", "#e7298a", "#66a61e",
           "#a6761d", "#2166ac", "#b2182b", "#5aae61", "#fdae61", "#4d4d4d", "#c51b7d", "#35978f", "#762a83",
           "#ff7f00", "#1b9e77", "#6a3d9a", "#b15928")
MARKERS = ("o", "s", "^", "v", "P", "X", "<", ">", "h", "p", "d", "8")


def engine_style(engine: str) -> tuple[str, str]:
    """(colour, marker) of an engine, stable across figures and runs."""

    base = split_id(engine)[0]
    if base in BURTORCH_STYLES:
        return BURTORCH_STYLES[base]
    others = [e for e in all_engines() if e not in BURTORCH_STYLES and e != FLOOR]
    index = others.index(base) if base in others else len(others) + sum(map(ord, base))
    return PALETTE[index % len(PALETTE)], MARKERS[index % len(MARKERS)]


def _emphasis(engine: str) -> dict:
    return {"linewidth": 2.6, "markersize": 9, "zorder": 5} if split_id(engine)[0] in BURTORCH_STYLES else \
        {"linewidth": 1.2, "markersize": 5, "zorder": 3, "alpha": 0.85}


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    png: Path
    pdf: Path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, folder: Path, name: str, title: str) -> Figure:
    folder.mkdir(parents=True, exist_ok=True)
    png, pdf = folder / f"{name}.png", folder / f"{name}.pdf"
    # Every label from a file was escaped where the run was read (harness/text.py); a character the
    # font still lacks is drawn as a box, not warned of with our source paths.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from")
        warnings.filterwarnings("ignore", message=r"Matplotlib currently does not support")
        fig.savefig(png, dpi=110, bbox_inches="tight")
        fig.savefig(pdf, bbox_inches="tight")
    _pyplot().close(fig)
    return Figure(name, title, png, pdf)


def time_bars(table: Table, folder: Path) -> Figure | None:
    """Per-iteration time per engine on a log axis, ours beside the paper's, ×factor on our bars."""
    rows = [r for r in table.rows if r["in_run"] and r.get("time_per_iter_s") and r["engine"] != FLOOR]
    if not rows:
        return None
    rows.sort(key=lambda r: r["time_per_iter_s"])
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(rows) + 1.6))
    height = 0.38
    paper_labelled = False
    for i, row in enumerate(rows):
        failed = row["check_ok"] is False
        ours = row["time_per_iter_s"] * 1e6
        color = engine_style(row["engine"])[0]
        ax.barh(i + height / 2, ours, height, color=color, edgecolor=FAILED_COLOR if failed else color,
                linewidth=2 if failed else 0, label="this run (filled)" if i == 0 else None)
        label = factor(row.get("rel_time_per_iter_s")) + ("  check FAILED" if failed else "")
        ax.text(ours, i + height / 2, f" {label}", va="center", fontsize=8)
        paper_value = row.get("paper_time_per_iter_s")
        if paper_value:
            ax.barh(i - height / 2, paper_value * 1e6, height, color="none", edgecolor=color, hatch="//",
                    label=None if paper_labelled else "paper (hollow)")
            paper_labelled = True
            ax.text(paper_value * 1e6, i - height / 2, f" {factor(row.get('paper_rel_time_per_iter_s'))}",
                    va="center", fontsize=7, color="#555555")
    ax.set_yticks(range(len(rows)), [r["engine"] for r in rows], fontsize=8)
    for tick, row in zip(ax.get_yticklabels(), rows):
        if split_id(row["engine"])[0] in BURTORCH_STYLES:
            tick.set_fontweight("bold")
    ax.set_xscale("log")
    ax.set_xlabel("time per iteration (µs, log scale)")
    title = f"{table.title.split(':')[0]}: time per iteration"
    ax.set_title(f"{title}\n(×N = relative to BurTorch)", fontsize=10)
    ax.margins(x=0.25)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return _save(fig, folder, f"fig_{table.name}_time", title)


def energy_bars(table: Table, folder: Path) -> Figure | None:
    """Total, task and OS energy per engine side by side (a log axis cannot stack), the paper's total as ◆."""
    rows = [r for r in table.rows if r["in_run"] and r.get("energy_total_j") is not None and r["engine"] != FLOOR]
    if not rows:
        return None
    rows.sort(key=lambda r: r["energy_total_j"])
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 0.8 * len(rows) + 1.6))
    height = 0.25
    parts = (("energy_total_j", "total", "#1f77b4"), ("energy_task_j", "task", "#2ca02c"),
             ("energy_os_j", "OS / idle", "#ff7f0e"))
    for offset, (key, label, color) in zip((height, 0, -height), parts):
        ys = [i + offset for i, r in enumerate(rows) if r.get(key)]
        ax.barh(ys, [r[key] / 3.6 for r in rows if r.get(key)], height, color=color, label=label)
    paper_totals = [(i, r["paper_energy_total_j"] / 3.6) for i, r in enumerate(rows) if r.get("paper_energy_total_j")]
    if paper_totals:
        ax.scatter([v for _, v in paper_totals], [i + height for i, _ in paper_totals], marker="D",
                   color="black", zorder=3, label="paper total")
    for i, row in enumerate(rows):
        right = max(row["energy_total_j"], row.get("paper_energy_total_j") or 0) / 3.6
        ax.text(right, i + height, f"  {row['energy_total_j'] / 3.6:,.3g} mWh {factor(row.get('rel_energy_total_j'))}",
                va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [r["engine"] for r in rows], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("energy (mWh, log scale)")
    ax.set_title(f"{table.title}\n(×N = total relative to BurTorch)", fontsize=10)
    ax.margins(x=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _save(fig, folder, f"fig_{table.name}", table.title)


def _series(rows: list[dict], x_key, y_key: str) -> dict[str, list[tuple]]:
    """engine -> sorted (x, y) points where both exist."""
    series: dict[str, list[tuple]] = {}
    for row in rows:
        x, y = x_key(row), row.get(y_key)
        if x and y:
            series.setdefault(row["engine"], []).append((x, y))
    return {engine: sorted(points) for engine, points in series.items()}


def _plot_lines(ax, rows: list[dict], x_key, y_key: str, scale: float) -> None:
    """This run's values as filled markers on solid lines, the paper's as hollow markers on dashed ones,
    both in the engine's own colour and marker; the harness's floor row is no framework and stays out."""
    rows = [r for r in rows if r["engine"] != FLOOR]
    ours = _series([r for r in rows if r["in_run"]], x_key, y_key)
    # The paper's BurTorch row stands beside both BurTorch engines: drawn once, as ours.
    papers = _series([r for r in rows if r["paper_row"] and r["engine"] != AUTHORS], x_key, f"paper_{y_key}")
    for engine in sorted(set(ours) | set(papers), key=lambda e: (split_id(e)[0] not in BURTORCH_STYLES, e)):
        color, marker = engine_style(engine)
        if engine in ours:
            xs, ys = zip(*ours[engine])
            ax.plot(xs, [y * scale for y in ys], marker=marker, linestyle="-", color=color, label=engine,
                    **_emphasis(engine))
        if engine in papers:
            xs, ys = zip(*papers[engine])
            ax.plot(xs, [y * scale for y in ys], marker=marker, linestyle="--", color=color,
                    markerfacecolor="none", label=f"{engine} (paper)", **_emphasis(engine))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)


def lines(tables: list[Table], os_name: str, folder: Path) -> Figure:
    """Compute per step (top) and the paper's memory (bottom) against the declared x, a column per table."""
    memory = PAPER_MEMORY[os_name]
    x_name = tables[0].declaration.figure_x

    def x_of(row: dict):
        return row.get("param_count") if x_name == "param_count" else row["params"].get(x_name)

    plt = _pyplot()
    fig, axes = plt.subplots(2, len(tables), figsize=(6 * len(tables) + 3.5, 8), squeeze=False)
    for col, table in enumerate(tables):
        time_ax, mem_ax = axes[0][col], axes[1][col]
        _plot_lines(time_ax, table.rows, x_of, METRICS["step_time"].key, 1e3)
        _plot_lines(mem_ax, table.rows, x_of, memory.key, 1 / MIB)
        name = table.title.split(":")[0]
        time_ax.set_title(f"{name}: compute per step", fontsize=10)
        time_ax.set_ylabel("ms per SGD step")
        mem_ax.set_title(f"{name}: {memory.title}", fontsize=10)
        mem_ax.set_ylabel(MIB_LABEL)
        mem_ax.set_xlabel("trainable parameters d" if x_name == "param_count" else x_name)
    # One legend for the figure, outside the axes: every series of every panel, once.
    handles = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.tight_layout(rect=(0, 0, 1 - 3.4 / (6 * len(tables) + 3.5), 1))
    fig.legend(handles.values(), handles.keys(), loc="upper left", fontsize=7,
               bbox_to_anchor=(1 - 3.3 / (6 * len(tables) + 3.5), 0.98), title="filled: this run; hollow: paper",
               title_fontsize=7)
    title = f"{tables[0].title.split(',')[0].split(':')[0]}: time and memory against {x_name.replace('_', ' ')}"
    return _save(fig, folder, f"fig_{tables[0].workload}", title)


def draw_all(tables: list[Table], os_name: str, folder: Path) -> list[Figure]:
    figures = []
    by_workload: dict[str, list[Table]] = {}
    for table in tables:
        kind = table.declaration.figure
        if kind == "bars":
            figures.append(time_bars(table, folder))
        elif kind == "energy":
            figures.append(energy_bars(table, folder))
        elif kind == "lines":
            by_workload.setdefault(table.workload, []).append(table)
    figures += [lines(group, os_name, folder) for group in by_workload.values()]
    return [f for f in figures if f is not None]
