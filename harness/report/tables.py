"""The paper's tables rebuilt from a run, each row beside the paper's figure for the same row.

A table pairs our summaries with the paper's rows at the same point (MLP: hidden size and
batch; GPT: batch; graph workloads: one point). Paper rows the run lacks are listed as "not
in this run"; our engines the paper lacks get "—" in its columns. Every time is per iteration
(or per SGD step), so runs with fewer iterations than the paper compare fairly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from harness.report import paper
from workloads import theory
from harness.report.summary import DEFAULT_NOISE_THRESHOLD, Run, Summary, params_key, summarize_run

MB = 2**20
NOT_IN_RUN = "not in this run"


@dataclass(frozen=True)
class Metric:
    """One measured quantity: how to read ours (SI units) and the paper's (converted to the same)."""
    key: str
    title: str
    unit: str
    scale: float  # display value = SI value * scale
    ours: Callable[[Summary], float | None]
    paper: Callable[[paper.PaperRow], float | None] | None = None
    ours_std: Callable[[Summary], float | None] | None = None
    paper_std: Callable[[paper.PaperRow], float | None] | None = None
    # The paper's printed relative factor, where it prints one; otherwise it is computed.
    paper_rel: str | None = None
    # Trial field saying why this measure is missing on this machine.
    source_field: str | None = None


@dataclass(frozen=True)
class Column:
    title: str
    cell: Callable[[dict], str]


@dataclass
class Table:
    name: str
    title: str
    caption: str
    columns: list[Column]
    rows: list[dict]
    fields: list[str]
    notes: list[str] = field(default_factory=list)

    def cells(self) -> list[list[str]]:
        return [[column.cell(row) for column in self.columns] for row in self.rows]


# ----------------------------------------------------------------------------- number formatting

def number(value: float | None) -> str:
    """Three significant digits; whole numbers with thousands separators from 100 up."""
    if value is None:
        return "n/a"
    if abs(value) >= 100 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:#.3g}"


def spread(value: float) -> str:
    """A standard deviation: two significant digits are all it carries."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2g}"


def factor(value: float | None) -> str:
    if value is None:
        return ""
    return f"×{value:,.0f}" if value >= 100 else f"×{value:.3g}"


# ----------------------------------------------------------------------------- metrics

def _paper_total(metric: str, workload: str):
    """A paper total over its iteration count, as seconds (or clocks) per iteration."""
    def read(row: paper.PaperRow):
        value = row.values.get(metric)
        return None if value is None else value / paper.PAPER_ITERATIONS[workload]
    return read


def _paper_std_total(metric: str, workload: str):
    def read(row: paper.PaperRow):
        value = row.stds.get(metric)
        return None if value is None else value / paper.PAPER_ITERATIONS[workload]
    return read


def _paper_value(metric: str, to_si: float = 1.0):
    def read(row: paper.PaperRow):
        value = row.values.get(metric)
        return None if value is None else value * to_si
    return read


def _paper_std(metric: str, to_si: float = 1.0):
    def read(row: paper.PaperRow):
        value = row.stds.get(metric)
        return None if value is None else value * to_si
    return read


def time_metric(workload: str, title: str = "Time / iteration") -> Metric:
    return Metric(
        "time_per_iter_s", title, "µs", 1e6,
        ours=Summary.time_mean, ours_std=Summary.time_std_over_trials,
        paper=_paper_total("compute_time_s", workload), paper_std=_paper_std_total("compute_time_s", workload),
        paper_rel="relative_to_burtorch",
    )


def small_metrics() -> list[Metric]:
    return [
        time_metric("small"),
        Metric("min_time_per_iter_s", "Min time / iteration", "µs", 1e6, ours=Summary.time_min,
               paper=_paper_total("min_compute_time_s", "small"), paper_rel="relative_min_compute_time"),
        Metric("cpu_clocks_per_iter", "CPU clocks / iteration", "clocks", 1.0,
               ours=lambda s: s.per_iteration("cpu_clocks"),
               paper=lambda r: None if "cpu_clocks_mticks" not in r.values
               else r.values["cpu_clocks_mticks"] * 1e6 / paper.PAPER_ITERATIONS["small"],
               paper_rel="relative_cpu_clocks", source_field="cpu_clocks_source"),
        Metric("peak_private_bytes", "Peak private", "MB", 1 / MB, ours=lambda s: s.mean("peak_private_bytes"),
               paper=_paper_value("peak_private_mb", MB), paper_rel="relative_peak_private",
               source_field="peak_private_source"),
        Metric("peak_resident_bytes", "Peak resident", "MB", 1 / MB, ours=lambda s: s.mean("peak_resident_bytes"),
               paper=_paper_value("peak_resident_mb", MB), paper_rel="relative_peak_resident"),
    ]


def save_load_metrics() -> list[Metric]:
    return [
        Metric("save_per_iter_s", "Save / iteration", "µs", 1e6, ours=lambda s: s.per_iteration("save_s"),
               paper=_paper_total("save_s", "save_load")),
        Metric("load_per_iter_s", "Load / iteration", "µs", 1e6, ours=lambda s: s.per_iteration("load_s"),
               paper=_paper_total("load_s", "save_load")),
        Metric("file_size_bytes", "File size", "bytes", 1.0, ours=lambda s: s.mean("file_size_bytes"),
               paper=_paper_value("file_size_bytes")),
    ]


# The trial field holding the memory the paper reports for MLP/GPT on each OS (see paper_workloads.md).
PAPER_MEMORY = {
    "linux": ("peak_virtual_bytes", "Peak virtual (VmPeak)", None),
    "windows": ("peak_private_bytes", "Peak private", "peak_private_source"),
    "macos": ("peak_resident_bytes", "Peak resident", None),
}


def model_metrics(os_name: str, with_init: bool) -> list[Metric]:
    field_name, title, source = PAPER_MEMORY[os_name]
    metrics = []
    if with_init:
        metrics.append(Metric("init_time_s", "Init", "ms", 1e3, ours=lambda s: s.mean("init_time_s"),
                              paper=_paper_value("init_ms", 1e-3)))
    metrics.append(Metric("time_per_step_s", "Compute / step", "ms", 1e3, ours=Summary.time_mean,
                          ours_std=Summary.time_std_within, paper=_paper_value("compute_ms_per_iter", 1e-3),
                          paper_std=_paper_std("compute_ms_per_iter", 1e-3)))
    metrics.append(Metric(field_name, title, "MB", 1 / MB, ours=lambda s: s.mean(field_name),
                          paper=_paper_value("peak_mem_mb", MB), source_field=source))
    if field_name != "peak_resident_bytes":
        metrics.append(Metric("peak_resident_bytes", "Peak resident", "MB", 1 / MB,
                              ours=lambda s: s.mean("peak_resident_bytes")))
    return metrics


def energy_metrics() -> list[Metric]:
    mwh = 3.6  # joules per mWh
    return [
        Metric("wall_time_s", "Time incl. init", "s", 1.0, ours=lambda s: s.mean("wall_time_s"),
               paper=_paper_value("time_with_init_s")),
        Metric("energy_total_j", "Energy total", "mWh", 1 / mwh, ours=lambda s: s.mean("energy_total_j"),
               paper=_paper_value("energy_total_mwh", mwh), source_field="energy_source"),
        Metric("energy_task_j", "Energy task", "mWh", 1 / mwh, ours=lambda s: s.mean("energy_task_j"),
               paper=_paper_value("energy_task_mwh", mwh), source_field="energy_source"),
        Metric("energy_os_j", "Energy OS", "mWh", 1 / mwh, ours=lambda s: s.mean("energy_os_j"),
               paper=_paper_value("energy_os_mwh", mwh), source_field="energy_source"),
    ]


# ----------------------------------------------------------------------------- pairing ours with the paper

@dataclass
class Pair:
    point: dict
    ours: Summary | None
    paper_row: paper.PaperRow | None
    base: Summary | None  # our BurTorch at this point
    paper_base: paper.PaperRow | None


def pair_rows(summaries: list[Summary], paper_rows: list[paper.PaperRow],
              our_point: Callable[[dict], dict], paper_point: Callable[[paper.PaperRow], dict | None]) -> list[Pair]:
    """Ours and the paper's rows side by side, point by point, in the paper's row order."""
    points = [our_point(s.params) for s in summaries] + [p for p in map(paper_point, paper_rows) if p is not None]
    unique = list({params_key(p): p for p in points}.values())
    unique.sort(key=lambda p: tuple(v for v in p.values() if isinstance(v, (int, float))))
    pairs = []
    for point in unique:
        here = {s.engine: s for s in summaries if our_point(s.params) == point}
        base = here.get(paper.BASELINE_ENGINE)
        rows_here = [r for r in paper_rows if paper_point(r) in (None, point)]
        paper_base = next((r for r in rows_here if r.engine == paper.BASELINE_ENGINE), None)
        for row in rows_here:
            ours = here.pop(row.engine, None) if row.engine else None
            pairs.append(Pair(point, ours, row, base, paper_base))
        pairs.extend(Pair(point, s, None, base, paper_base) for s in here.values())
    return pairs


def _ratio(value: float | None, base: float | None) -> float | None:
    if value is None or not base:
        return None
    return value / base


def metric_values(metric: Metric, pair: Pair) -> dict:
    ours = metric.ours(pair.ours) if pair.ours else None
    values = {
        metric.key: ours,
        f"{metric.key}_std": metric.ours_std(pair.ours) if pair.ours and metric.ours_std else None,
        f"rel_{metric.key}": _ratio(ours, metric.ours(pair.base) if pair.base else None),
    }
    if metric.paper is not None:
        row, base = pair.paper_row, pair.paper_base
        paper_value = metric.paper(row) if row else None
        printed = row.values.get(metric.paper_rel) if row and metric.paper_rel else None
        computed = _ratio(paper_value, metric.paper(base) if base else None)
        values[f"paper_{metric.key}"] = paper_value
        values[f"paper_{metric.key}_std"] = metric.paper_std(row) if row and metric.paper_std else None
        values[f"paper_rel_{metric.key}"] = printed if printed is not None else computed
    return values


def metric_fields(metric: Metric) -> list[str]:
    names = [metric.key, f"{metric.key}_std", f"rel_{metric.key}"]
    if metric.paper is not None:
        names += [f"paper_{metric.key}", f"paper_{metric.key}_std", f"paper_rel_{metric.key}"]
    return names


def measure_notes(metrics: list[Metric], summary: Summary) -> list[str]:
    """Measures shown in this table that this run lacks (and why), or that are estimates.

    An engine with no successful trial is explained by its trial statuses instead."""
    if not summary.trials_ok():
        return []
    notes = []
    for metric in metrics:
        if metric.source_field == "cpu_clocks_source" and "tsc_estimate" in summary.sources(metric.source_field):
            notes.append("CPU clocks are an estimate (CPU time × TSC rate)")
        if metric.ours(summary) is None:
            why = "; ".join(sorted(summary.sources(metric.source_field))) if metric.source_field else ""
            notes.append(f"{metric.title.lower()} not measured" + (f": {why}" if why else ""))
    return notes


def _absence(row: paper.PaperRow, unavailable: dict) -> tuple[str, str]:
    """(cell text, note) for a paper row this run has no trial of."""
    if row.key[0] == "theory":
        return "see below", "the paper's lower bound; this machine's bound is the last note under the table"
    if row.engine in unavailable:
        return "unavailable", f"unavailable on this machine: {unavailable[row.engine]}"
    return NOT_IN_RUN, NOT_IN_RUN


def base_row(pair: Pair, unavailable: dict) -> dict:
    ours, row = pair.ours, pair.paper_row
    check_ok, worst = ours.check() if ours else (None, None)
    notes, absent = [], None
    if ours is None:
        absent, note = _absence(row, unavailable)
        notes.append(note)
    else:
        notes += ours.notes()
        if row is None:
            notes.append("no counterpart in the paper")
    return {
        "engine": ours.engine if ours else (row.engine or row.label),
        "paper_row": row.label if row else None,
        "params": pair.point,
        "in_run": ours is not None,
        "absent": absent,
        "version": ours.version() if ours else None,
        "paper_version": row.version if row else None,
        "trials_ok": ours.trials_ok() if ours else None,
        "trials": len(ours.trials) if ours else None,
        "iterations": ours.iterations() if ours else None,
        "check_ok": check_ok,
        "max_rel_err": worst,
        "param_count": (ours.param_count() if ours else None) or (row.params if row else None),
        "notes": notes,
    }


def build_rows(pairs: list[Pair], metrics: list[Metric], unavailable: dict) -> list[dict]:
    rows = []
    for pair in pairs:
        row = base_row(pair, unavailable)
        for metric in metrics:
            row.update(metric_values(metric, pair))
        if pair.ours:
            row["notes"] = row["notes"] + measure_notes(metrics, pair.ours)
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------- columns

def _version_cell(row: dict) -> str:
    return f"{row['version'] or '—'} / {row['paper_version'] or '—'}"


def _check_cell(row: dict) -> str:
    if not row["in_run"]:
        return ""
    if row["check_ok"] is None:
        return "—"
    if row["check_ok"]:
        return "✓"
    return "✗ FAILED" if row["max_rel_err"] is None else f"✗ FAILED ({row['max_rel_err']:.1e})"


def _trials_cell(row: dict) -> str:
    return f"{row['trials_ok']}/{row['trials']}" if row["in_run"] else ""


def _value_cell(value, std, rel, scale: float) -> str:
    if value is None:
        return "n/a"
    text = number(value * scale)
    if std is not None:
        text += f" ± {spread(std * scale)}"
    if rel is not None:
        text += f" ({factor(rel)})"
    return text


def ours_cell(metric: Metric):
    def cell(row: dict) -> str:
        if not row["in_run"]:
            return row["absent"]
        text = _value_cell(row[metric.key], row[f"{metric.key}_std"], row[f"rel_{metric.key}"], metric.scale)
        estimate = metric.source_field == "cpu_clocks_source" and any("estimate" in n for n in row["notes"])
        return f"≈{text}" if estimate and row[metric.key] is not None else text
    return cell


def paper_cell(metric: Metric):
    def cell(row: dict) -> str:
        if row["paper_row"] is None:
            return "—"
        if row[f"paper_{metric.key}"] is None:
            return "—"
        return _value_cell(row[f"paper_{metric.key}"], row[f"paper_{metric.key}_std"],
                           row[f"paper_rel_{metric.key}"], metric.scale)
    return cell


def metric_columns(metric: Metric) -> list[Column]:
    columns = [Column(f"{metric.title} ({metric.unit}), ours", ours_cell(metric))]
    if metric.paper is not None:
        columns.append(Column(f"{metric.title} ({metric.unit}), paper", paper_cell(metric)))
    return columns


def _point_column(name: str, title: str) -> Column:
    return Column(title, lambda row: str(row["params"].get(name, "")))


LEAD_COLUMNS = [
    Column("Engine", lambda row: row["engine"]),
    Column("Version (ours / paper)", _version_cell),
    Column("Check", _check_cell),
    Column("Trials ok", _trials_cell),
]
NOTES_COLUMN = Column("Notes", lambda row: "; ".join(row["notes"]))
LEAD_FIELDS = ["engine", "paper_row", "params", "in_run", "absent", "version", "paper_version", "trials_ok", "trials",
               "iterations", "check_ok", "max_rel_err", "param_count"]


def make_table(run: Run, name: str, title: str, caption: str, pairs: list[Pair], metrics: list[Metric],
               point_columns: list[Column] = (), notes: list[str] = ()) -> Table:
    columns = [*point_columns, *LEAD_COLUMNS]
    for metric in metrics:
        columns += metric_columns(metric)
    columns.append(NOTES_COLUMN)
    fields = LEAD_FIELDS + [f for m in metrics for f in metric_fields(m)] + ["notes"]
    rows = build_rows(pairs, metrics, run.manifest.get("unavailable") or {})
    notes = list(notes)
    if not any(r["in_run"] and r["engine"] == paper.BASELINE_ENGINE and r["trials_ok"] for r in rows):
        notes.insert(0, f"This run has no successful {paper.BASELINE_ENGINE} trial, so it has no relative factors.")
    return Table(name, title, caption, columns, rows, fields, notes)


# ----------------------------------------------------------------------------- the tables

def _paper_source(workload: str, run_os: str, rows: list[paper.PaperRow]) -> tuple[str, list[str]]:
    """'Table 11 (Linux)' and a note when the paper has no table for the run's OS."""
    if not rows:
        return "none", ["The paper has no table for this workload."]
    used_os = rows[0].os
    source = f"{paper.table_names(rows)} ({paper.OS_NAMES[used_os]})"
    notes = []
    if used_os != run_os:
        notes.append(f"The paper ran this workload on {paper.OS_NAMES[used_os]} only; "
                     f"this run is on {paper.OS_NAMES[run_os]}.")
    return source, notes


def _iterations_note(summaries: list[Summary], workload: str) -> str:
    counts = sorted({s.iterations() for s in summaries if s.iterations()})
    ours = ", ".join(f"{c:,}" for c in counts) or "unknown"
    return (f"Times are per iteration: ours = mean over trials of each trial's per-iteration time "
            f"({ours} iterations per trial); paper = its total over "
            f"{paper.PAPER_ITERATIONS[workload]:,} iterations / {paper.PAPER_ITERATIONS[workload]:,}.")


RELATIVE_NOTE = ("(×N) = relative to BurTorch (burtorch/eager/cpp/cpu) at the same point, in this run and "
                 "in the paper (the paper's printed factor where it prints one).")


def _graph_table(run: Run, workload: str, name: str, title: str, metrics: list[Metric],
                 summaries: list[Summary], extra_notes: list[str] = ()) -> Table:
    rows = paper.rows_for(workload, run.os)
    source, notes = _paper_source(workload, run.os, rows)
    pairs = pair_rows(summaries, rows, dict, lambda r: None)
    points = {params_key(s.params) for s in summaries}
    point_columns = [Column("Params", lambda row: params_key(row["params"]))] if len(points) > 1 else []
    return make_table(run, name, title, f"Paper column: {source}.", pairs, metrics, point_columns,
                      [*notes, RELATIVE_NOTE, *extra_notes])


def tiny_table(run: Run, summaries: list[Summary]) -> Table:
    return _graph_table(run, "tiny", "tiny", "Tiny graph (paper Fig. 1): compute time, mean ± std over trials",
                        [time_metric("tiny")], summaries,
                        [_iterations_note(summaries, "tiny"), theory.note("tiny", run.manifest)])


def small_table(run: Run, summaries: list[Summary]) -> Table:
    notes = [_iterations_note(summaries, "small"),
             "Min = the fastest trial. CPU clocks per iteration: ours = cpu_clocks / iterations, ≈ marks an "
             "estimate (CPU time × TSC rate); paper = its total clocks / 20,000.",
             "MB = 2^20 bytes. Peak private and resident memory as the paper's Table 3 (Windows) defines them.",
             theory.note("small", run.manifest)]
    return _graph_table(run, "small", "small", "Small graph (paper Fig. 2): compute time, CPU clocks, memory",
                        small_metrics(), summaries, notes)


def save_load_table(run: Run, summaries: list[Summary]) -> Table:
    notes = ["Save and load times are per iteration: ours = the trial's save_s / load_s totals / iterations; "
             "paper = its total over 5,000 iterations / 5,000."]
    return _graph_table(run, "save_load", "save_load", "Save and load of 7 activations (FP64)",
                        save_load_metrics(), summaries, notes)


def energy_table(run: Run, summaries: list[Summary]) -> Table:
    counts = sorted({s.iterations() for s in summaries if s.iterations()})
    notes = [f"Totals for the whole process, not per iteration: ours {', '.join(f'{c:,}' for c in counts) or '?'} "
             f"iterations, paper 200,000. 1 mWh = 3.6 J."]
    return _graph_table(run, "energy", "energy", "Energy of the small graph, end to end",
                        energy_metrics(), summaries, notes)


def _memory_note(os_name: str) -> str:
    _field, title, _source = PAPER_MEMORY[os_name]
    return (f"{title}: the memory the paper reports on {paper.OS_NAMES[os_name]}; MB = 2^20 bytes.")


def mlp_tables(run: Run, summaries: list[Summary]) -> list[Table]:
    rows = paper.rows_for("mlp", run.os)
    batches = sorted({s.params.get("batch") for s in summaries if s.params.get("batch") is not None})
    tables = []
    for batch in batches:
        ours = [s for s in summaries if s.params.get("batch") == batch]
        paper_rows = [r for r in rows if r.batch == batch]
        source, notes = _paper_source("mlp", run.os, paper_rows)
        pairs = pair_rows(ours, paper_rows,
                          lambda p: {"hidden_dim": p.get("hidden_dim"), "batch": p.get("batch")},
                          lambda r: {"hidden_dim": r.hidden_dim, "batch": r.batch})
        title = f"MLP (makemore), batch {batch}: init, compute per SGD step, memory"
        point_columns = [_point_column("hidden_dim", "Hidden e"),
                         Column("Params d", lambda row: f"{row['param_count']:,}" if row["param_count"] else "n/a")]
        table_notes = [*notes, RELATIVE_NOTE,
                       "Init = end-to-end time of a 1-step run. Compute = mean ± std per step; ours: std over "
                       "timing blocks averaged over trials, paper: std over its 4,000 steps.",
                       _memory_note(run.os)]
        tables.append(make_table(run, f"mlp_b{batch}", title, f"Paper column: {source}.", pairs,
                                 model_metrics(run.os, with_init=True), point_columns, table_notes))
    return tables


def gpt_table(run: Run, summaries: list[Summary]) -> Table:
    rows = paper.rows_for("gpt", run.os)
    source, notes = _paper_source("gpt", run.os, rows)
    pairs = pair_rows(summaries, rows, lambda p: {"batch": p.get("batch")}, lambda r: {"batch": r.batch})
    title = "Mini-GPT (46K parameters): compute per SGD step and memory by batch size"
    table_notes = [*notes, RELATIVE_NOTE,
                   "Compute = mean ± std per step; ours: std over timing blocks averaged over trials, "
                   "paper: std over its 3,000 steps.", _memory_note(run.os)]
    return make_table(run, "gpt", title, f"Paper column: {source}.", pairs,
                      model_metrics(run.os, with_init=False), [_point_column("batch", "Batch")], table_notes)


def build_tables(run: Run) -> list[Table]:
    """Every table whose workload has trials in the run, in the paper's order."""
    threshold = (run.manifest.get("plan") or {}).get("noise_threshold") or DEFAULT_NOISE_THRESHOLD
    summaries = list(summarize_run(run.trials, threshold).values())
    by_workload: dict[str, list[Summary]] = {}
    for summary in summaries:
        by_workload.setdefault(summary.workload, []).append(summary)
    builders = [("tiny", lambda s: [tiny_table(run, s)]), ("small", lambda s: [small_table(run, s)]),
                ("save_load", lambda s: [save_load_table(run, s)]), ("mlp", lambda s: mlp_tables(run, s)),
                ("gpt", lambda s: [gpt_table(run, s)]), ("energy", lambda s: [energy_table(run, s)])]
    tables = []
    for workload, build in builders:
        if by_workload.get(workload):
            tables += build(by_workload[workload])
    return tables
