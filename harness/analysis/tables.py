"""The paper's tables rebuilt from a run, each row beside the paper's figure for the same row.

Every workload with trials in the run gets its table (one per value of its `split_by`), built
from its declaration (workloads/base.py, PaperTable): its metrics (metrics.py), point columns and
notes. Our points and the paper's rows are two pandas frames joined on (point, engine), in the
paper's row order with our extra engines after; relative factors divide by the baseline engine's
row at the same point. Paper rows the run lacks stay and say why; our engines the paper lacks get
"—" in its columns. Every time is per iteration (or per SGD step), so runs with fewer iterations
than the paper compare fairly.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from engines.base import BASELINE
from harness.analysis.points import FAILED, Point, in_order, run_points
from harness.analysis.summary import param_text
from harness.analysis import cells, notes, paper
from harness.analysis.metrics import INSTRUCTIONS, Metric, memory_note, resolve
from harness.store.results import params_key
from harness.store.runs import Run
from workloads import all_workloads, differences
from workloads.base import PaperTable, Workload

NOT_IN_RUN = "not in this run"
LEAD_FIELDS = ["engine", "paper_row", "params", "in_run", "absent", "version", "paper_version", "trials_ok", "trials",
               "iterations", "check_ok", "check_status", "max_rel_err", "param_count"]


@dataclass
class Table:
    name: str
    title: str
    caption: str
    workload: str
    declaration: PaperTable
    fields: list[str]  # the CSV's columns
    rows: list[dict]  # raw values in SI units, a missing one as None
    shown: pd.DataFrame  # the rows as formatted cells: what Markdown, LaTeX and HTML show
    notes: list[str] = field(default_factory=list)
    paper_source: str = "none"  # 'Table 11 (Linux)': the paper's table beside ours
    paper_os: str | None = None  # the OS of that table


def default_declaration(workload: Workload) -> PaperTable:
    """A workload the paper does not report still gets a table of its time per iteration and a figure."""
    return PaperTable(csv_name=workload.name, title=workload.title, metrics=("time",), figure="bars")


def build_tables(run: Run) -> list[Table]:
    """Every table whose workload has trials in the run, in the paper's order."""
    by_workload: dict[str, list[Point]] = {}
    for point in in_order(run_points(run)):
        by_workload.setdefault(point.workload, []).append(point)
    known = all_workloads()
    declared = [(known[name], known[name].paper or default_declaration(known[name]))
                for name in by_workload if name in known]
    declared.sort(key=lambda item: (paper.first_table(item[1].csv_name), item[0].name))
    tables = []
    for workload, declaration in declared:
        points = by_workload[workload.name]
        split = declaration.split_by
        values = sorted({p.params.get(split) for p in points if p.params.get(split) is not None}) if split else [None]
        for value in values:
            subset = [p for p in points if value is None or p.params.get(split) == value]
            tables.append(workload_table(run, workload, declaration, subset, value))
    return tables


def workload_table(run: Run, workload: Workload, declaration: PaperTable, points: list[Point], split_value) -> Table:
    paper_rows = [r for r in paper.rows_for(declaration.csv_name, run.os)
                  if split_value is None or getattr(r, declaration.split_by, None) == split_value]
    source, source_notes = notes.paper_source(paper_rows, run.os)
    metrics = resolve(declaration.metrics, run.os, run.manifest.get("native"), run.manifest.get("ceiling"))
    if any(p.values("instructions_per_iter") for p in points):
        metrics.append(INSTRUCTIONS)
    frame = joined_frame(points, paper_rows, metrics, declaration, run.manifest.get("unavailable") or {})
    rows = frame.to_dict("records")
    table_notes = [*source_notes, notes.RELATIVE_NOTE.format(baseline=BASELINE),
                   *notes.metric_notes(metrics, points, declaration.iterations), *declaration.notes]
    if "paper_memory" in declaration.metrics:
        table_notes.append(memory_note(run.os, paper.OS_NAMES[run.os]))
    if declaration.theory_bound:
        table_notes.append(notes.theory_note(workload, run.manifest))
    table_notes += [d.note() for d in differences.get(declaration.differences)]
    table_notes += notes.timed_region_notes(points, workload.name, run.timing)
    if any(r["in_run"] and r["engine"] == BASELINE and r["check_ok"] is False for r in rows):
        table_notes.insert(0, f"{BASELINE}'s {FAILED} at some points: rows there have no relative factors.")
    if not any(r["in_run"] and r["engine"] == BASELINE and r["trials_ok"] for r in rows):
        table_notes.insert(0, f"This run has no successful {BASELINE} trial, so it has no relative factors.")
    fields = LEAD_FIELDS + [f for m in metrics for f in metric_fields(m)] + ["notes"]
    split = {declaration.split_by: split_value} if declaration.split_by else {}
    return Table(name=(declaration.name or workload.name).format(**split), title=declaration.title.format(**split),
                 caption=f"Paper column: {source}.", workload=workload.name, declaration=declaration, fields=fields,
                 rows=rows, shown=shown_cells(rows, metrics, declaration, points), notes=table_notes,
                 paper_source=source, paper_os=paper_rows[0].os if paper_rows else None)


def metric_fields(metric: Metric) -> list[str]:
    names = [metric.key, f"{metric.key}_std", f"rel_{metric.key}", *([f"{metric.key}_kind"] if metric.kind else [])]
    if metric.paper is not None:
        names += [f"paper_{metric.key}", f"paper_{metric.key}_std", f"paper_rel_{metric.key}"]
    return names


def point_of(params: dict, names: tuple[str, ...]) -> dict:
    """The parameters that tell the paper's rows apart; all of them where the paper has one row per engine."""
    return {n: params.get(n) for n in names} if names else dict(params)


def our_frame(points: list[Point], metrics: list[Metric], point_names: tuple[str, ...]) -> pd.DataFrame:
    # A measure no point has, with no trial field to say why (the roofline share of a run without bandwidth),
    # is explained once, by its note under the table, not on every row.
    explained = [m for m in metrics if m.source_field or any(m.ours(p) is not None for p in points)]
    records = []
    for order, p in enumerate(points):
        check_ok, worst = p.check()
        record = {"point": params_key(point_of(p.params, point_names)), "engine": p.engine, "in_run": True,
                  "version": p.version(), "trials_ok": p.trials_ok(), "trials": len(p.trials),
                  "iterations": p.iterations(), "check_ok": check_ok, "check_status": p.check_status(),
                  "max_rel_err": worst,
                  "our_param_count": p.param_count(), "point_notes": p.notes(),
                  "measure_notes": notes.measure_notes(explained, p), "our_order": order}
        for m in metrics:
            record[m.key] = m.ours(p)
            record[f"{m.key}_std"] = m.ours_std(p) if m.ours_std else None
            if m.kind:
                record[f"{m.key}_kind"] = m.kind(p)
        records.append(record)
    return pd.DataFrame.from_records(records)


def paper_frame(rows: list[paper.PaperRow], metrics: list[Metric], point_names: tuple[str, ...],
                our_points: list[str], iterations: int | None, present: set | None = None) -> pd.DataFrame:
    """The paper's rows at each point; a row of a one-point table (no point names) stands at every point of ours.
    Where several engines stand for a row, the first takes it at every point, the others where they ran
    (`present`: the run's (point, engine) pairs)."""
    records = []
    for rank, row in enumerate(rows):
        row_points = [params_key({n: getattr(row, n) for n in point_names})] if point_names else our_points
        # One record per engine that stands for the row: BurTorch's row sits beside ours and the authors' code.
        engines = row.engines or (row.label,)
        for point, engine in ((p, e) for p in row_points for e in engines
                              if e == engines[0] or present is None or (p, e) in present):
            record = {"point": point, "engine": engine, "paper_row": row.label,
                      "paper_version": row.version or None, "paper_param_count": row.params, "paper_rank": rank,
                      "theory": row.key[0] == "theory"}
            for m in (m for m in metrics if m.paper):
                per = iterations if m.paper_per_iteration else 1
                value, std = row.values.get(m.paper), row.stds.get(m.paper)
                record[f"paper_{m.key}"] = None if value is None else value * m.paper_to_si / per
                record[f"paper_{m.key}_std"] = None if std is None else std * m.paper_to_si / per
                record[f"paper_printed_rel_{m.key}"] = row.values.get(m.paper_rel) if m.paper_rel else None
            records.append(record)
    columns = ["point", "engine", "paper_row", "paper_version", "paper_param_count", "paper_rank", "theory"]
    columns += [f"paper_{part}{m.key}" for m in metrics if m.paper for part in ("", "printed_rel_")]
    columns += [f"paper_{m.key}_std" for m in metrics if m.paper]
    return pd.DataFrame.from_records(records, columns=columns)


def relative(frame: pd.DataFrame, column: str, checked: bool = False) -> pd.Series:
    """Each row's value over the baseline engine's at the same point; `checked` (our measures): a row
    whose check failed (points.Point.failed) neither divides nor is divided, its Check cell says why."""
    wrong = frame["check_ok"].eq(False) if checked else pd.Series(False, index=frame.index)
    base = frame[(frame["engine"] == BASELINE) & ~wrong].set_index("point")[column]
    base = base[base.notna() & (base != 0)]
    return (frame[column] / frame["point"].map(base)).where(~wrong)


def joined_frame(points: list[Point], rows: list[paper.PaperRow], metrics: list[Metric], declaration: PaperTable,
                 unavailable: dict) -> pd.DataFrame:
    ours = our_frame(points, metrics, declaration.point)
    theirs = paper_frame(rows, metrics, declaration.point, list(dict.fromkeys(ours["point"])), declaration.iterations,
                         set(zip(ours["point"], ours["engine"])))
    frame = theirs.merge(ours, on=["point", "engine"], how="outer", sort=False)
    frame["in_run"] = frame["in_run"].eq(True)
    for m in metrics:
        frame[f"rel_{m.key}"] = relative(frame, m.key, checked=True) if m.relative else None
        if m.paper:
            computed = relative(frame, f"paper_{m.key}")
            frame[f"paper_rel_{m.key}"] = frame[f"paper_printed_rel_{m.key}"].astype(float).fillna(computed)
    order = sorted(set(frame["point"]), key=lambda key: tuple(v for v in json.loads(key).values()
                                                            if isinstance(v, (int, float))))
    frame["point_rank"] = frame["point"].map({key: i for i, key in enumerate(order)})
    frame["row_rank"] = frame["paper_rank"].fillna(len(rows) + frame["our_order"])
    frame = frame.sort_values(["point_rank", "row_rank"], kind="stable").reset_index(drop=True)
    frame["params"] = frame["point"].map(json.loads)
    frame["param_count"] = frame["our_param_count"].fillna(frame["paper_param_count"])
    presence = [_presence(row, unavailable) for row in frame.to_dict("records")]
    frame["absent"], frame["notes"] = [a for a, _ in presence], [n for _, n in presence]
    for column in ("trials_ok", "trials", "iterations", "param_count"):
        frame[column] = frame[column].astype("Int64")
    return frame.astype(object).where(frame.notna(), None)


def _presence(row: dict, unavailable: dict) -> tuple:
    """(text in our columns when the run lacks the row, the row's notes)."""
    if row["in_run"]:
        alone = ["no counterpart in the paper"] if pd.isna(row["paper_row"]) else []
        return None, [*row["point_notes"], *alone, *row["measure_notes"]]
    if row.get("theory") is True:
        return "see below", ["the paper's lower bound; this machine's bound is the last note under the table"]
    if row["engine"] in unavailable:
        return "unavailable", [f"unavailable on this machine: {unavailable[row['engine']]}"]
    return NOT_IN_RUN, [NOT_IN_RUN]


def shown_cells(rows: list[dict], metrics: list[Metric], declaration: PaperTable, points: list[Point]) -> pd.DataFrame:
    """The table as the reader sees it: point columns, engine, version, check, trials, each metric
    ours and the paper's, notes."""
    columns = {}
    for name in (n for n in declaration.point if n != declaration.split_by):
        columns[declaration.point_titles.get(name, name)] = lambda row, name=name: param_text(row["params"].get(name, ""))
    if declaration.figure_x == "param_count":
        columns["Params d"] = cells.param_count
    if not declaration.point and len({params_key(p.params) for p in points}) > 1:
        columns["Params"] = lambda row: " ".join(f"{k}={param_text(v)}" for k, v in row["params"].items())
    columns.update({"Engine": cells.engine, "Version (ours / paper)": cells.version,
                    "Check": cells.check, "Trials ok": cells.trials})
    for m in metrics:
        columns[f"{m.title} ({m.unit}), ours"] = lambda row, m=m: cells.ours(m, row)
        if m.paper is not None:
            columns[f"{m.title} ({m.unit}), paper"] = lambda row, m=m: cells.theirs(m, row)
    shown = pd.DataFrame([[cell(row) for cell in columns.values()] for row in rows], columns=list(columns))
    shown["Notes"] = note_cells(row_notes(rows))
    return shown


@dataclass(frozen=True)
class RowNotes:
    """The rows' notes as every format writes them: the same error in 22 rows is written once."""
    shared: list[str]  # the notes several rows have, numbered from 1 in the order they first appear
    refs: list[list[int]]  # each row's numbers of shared notes
    own: list[list[str]]  # each row's notes that no other row has


# A note this short reads better in its cell than as a reference ("not in this run"), however many rows have it.
SHORT_NOTE = 40


def row_notes(rows: list[dict]) -> RowNotes:
    """The one numbering of a table's row notes: Markdown, LaTeX and HTML refer to a note by it."""
    per_row = [list(dict.fromkeys(row.get("notes") or [])) for row in rows]
    rows_with = Counter(note for found in per_row for note in found)
    first_seen = dict.fromkeys(note for found in per_row for note in found)
    number = {note: k for k, note in enumerate((n for n in first_seen if rows_with[n] > 1 and len(n) > SHORT_NOTE),
                                               start=1)}
    return RowNotes(list(number), [[number[n] for n in found if n in number] for found in per_row],
                    [[n for n in found if n not in number] for found in per_row])


def note_cells(split: RowNotes) -> list[str]:
    """Each row's Notes cell: its own notes, then 'see [1], [3]' for the shared ones under the table."""
    return ["; ".join(own + ([f"see {', '.join(f'[{n}]' for n in refs)}"] if refs else []))
            for own, refs in zip(split.own, split.refs)]
