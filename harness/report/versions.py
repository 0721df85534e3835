"""The versions of a framework side by side, for a run with several environments (--env SPEC).

Per workload, a "versions" table: one row per environment of each engine, with time per
iteration, init time and peak memory, each as a ratio to the oldest version with its 95%
interval and verdict, computed as `burtbench compare` computes them (harness/analysis/compare.py); and a
trend figure: time per iteration against version, one line per engine, log scale.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from engines.base import split_id
from harness.analysis import compare
from harness.analysis.points import Point, run_points
from harness.analysis.summary import format_seconds
from harness.report.figures import Figure, _pyplot, _save
from harness.store.runs import Run

FIELDS = ["engine", "params", "version", "env", "trials_ok", "trials", "check_ok",
          "time_per_iter_s", "time_ratio", "time_ci_low", "time_ci_high", "time_verdict",
          "init_time_s", "init_ratio", "init_ci_low", "init_ci_high", "init_verdict",
          "peak_resident_bytes", "mem_ratio", "mem_ci_low", "mem_ci_high", "mem_verdict"]


@dataclass
class VersionTable:
    """Shaped like report/tables.Table where formats.py reads one (name, title, caption, fields, rows, shown, notes)."""
    name: str
    title: str
    caption: str
    workload: str
    fields: list[str]
    rows: list[dict]
    shown: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def _version_key(text: str):
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(text), "")
    except InvalidVersion:
        return (1, None, text)


def version_of(point: Point, env: str) -> str:
    """The version the engine reported in that environment (else the SPEC)."""
    return str(point.version() or env)


def _row(engine: str, params: str, env: str, point: Point, oldest: Point) -> dict:
    same = point is oldest
    time, _ = compare.compare_time(oldest, point)
    init, memory = compare.compare_init(oldest, point), compare.compare_memory(oldest, point)
    row = {"engine": engine, "params": json.loads(params), "version": version_of(point, env), "env": env,
           "trials_ok": point.trials_ok(), "trials": len(point.trials), "check_ok": point.check()[0], "in_run": True,
           "time_per_iter_s": point.time_mean(), "init_time_s": point.mean("init_time_s"),
           "peak_resident_bytes": point.mean("peak_resident_bytes")}
    for name, found in (("time", time), ("init", init), ("mem", memory)):
        interval = found[f"{name}_ci"]
        row.update({f"{name}_ratio": 1.0 if same else found[f"{name}_ratio"],
                    f"{name}_ci_low": None if same or not interval else interval[0],
                    f"{name}_ci_high": None if same or not interval else interval[1],
                    f"{name}_verdict": "reference (oldest)" if same else found[f"{name}_verdict"]})
    return row


def ratio(row: dict, name: str) -> str:
    low, high = row[f"{name}_ci_low"], row[f"{name}_ci_high"]
    interval = [low, high] if low is not None else None
    return f"{compare.ratio_text(row[f'{name}_ratio'], interval)} {row[f'{name}_verdict']}"


def _shown(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{
        "Engine": r["engine"], "Point": " ".join(f"{k}={v}" for k, v in r["params"].items()),
        "Version": r["version"], "Environment": r["env"], "Trials": f"{r['trials_ok']}/{r['trials']}",
        "Time/iter": format_seconds(r["time_per_iter_s"], "n/a"), "Time ×oldest [95% CI]": ratio(r, "time"),
        "Init": format_seconds(r["init_time_s"], "n/a"), "Init ×oldest [95% CI]": ratio(r, "init"),
        "Peak RSS": compare.size(r["peak_resident_bytes"]), "Memory ×oldest [95% CI]": ratio(r, "mem"),
    } for r in rows])


def build(run: Run) -> list[VersionTable]:
    """A table per workload where some engine ran in two environments or more."""
    by_workload: dict[str, dict[tuple, dict[str, Point]]] = {}
    for key, point in run_points(run).items():
        base, env = split_id(key.engine)
        if env:
            by_workload.setdefault(key.workload, {}).setdefault((base, key.params), {})[env] = point
    listed = run.manifest.get("unavailable")  # a damaged manifest may hold anything here
    unavailable = {eid: why for eid, why in listed.items() if split_id(str(eid))[1]} if isinstance(listed, dict) else {}
    tables = []
    for workload, engines in by_workload.items():
        rows = []
        for (engine, params), points in sorted(engines.items()):
            if len(points) < 2:
                continue
            ordered = sorted(points.items(), key=lambda item: _version_key(version_of(item[1], item[0])))
            oldest = ordered[0][1]
            rows += [_row(engine, params, env, point, oldest) for env, point in ordered]
        if not rows:
            continue
        notes = [f"{eid}: unavailable: {why}" for eid, why in sorted(unavailable.items())]
        tables.append(VersionTable(
            f"versions_{workload}", f"{workload}: framework versions",
            "Each version relative to the oldest of its engine: B/A with its 95% Welch interval over trials "
            "(as burtbench compare computes it) and the verdict; the oldest row is the reference.",
            workload, FIELDS, rows, _shown(rows), notes))
    return tables


def figure(table: VersionTable, folder: Path) -> Figure | None:
    """Time per iteration against version, one line per engine (and point), log scale."""
    series: dict[str, list[tuple[str, float]]] = {}
    for row in table.rows:
        if row["time_per_iter_s"]:
            point = " ".join(f"{k}={v}" for k, v in row["params"].items())
            series.setdefault(f"{row['engine']} {point}".strip(), []).append((row["version"], row["time_per_iter_s"]))
    if not series:
        return None
    versions = sorted({v for points in series.values() for v, _ in points}, key=_version_key)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(versions) + 3), 4))
    for label, points in sorted(series.items()):
        ax.plot([versions.index(v) for v, _ in points], [t * 1e6 for _, t in points], "o-", label=label)
    ax.set_xticks(range(len(versions)), versions, fontsize=8)
    ax.set_yscale("log")
    ax.set_xlabel("framework version")
    ax.set_ylabel("time per iteration (µs, log scale)")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(f"{table.title}: time per iteration", fontsize=10)
    ax.legend(fontsize=7)
    return _save(fig, folder, f"fig_{table.name}", f"{table.title}: time per iteration against version")
