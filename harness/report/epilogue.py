"""The end of `burtbench run`: render the run's report and print, hyperfine-style, what it found.

One line per claim of the paper with its verdict, the fastest and slowest engine at each
workload point, and the report's index.html as a file:// URL. A run that was interrupted or has
failed trials gets its report too, marked so. A report that cannot be rendered never changes
the run's exit status: the trials are safe in the run folder and `burtbench report` retries.
"""
from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from harness.analysis.points import group
from harness.analysis.summary import _shown_params, format_seconds

STYLES = {"reproduced": "green", "partly": "yellow", "not reproduced": "red", "not measurable here": "dim"}


def reports_root() -> Path:
    """Where a run's report goes: reports/ in the working directory, as for `burtbench report`
    (BURTBENCH_REPORTS names another folder; the tests point it at a temporary one)."""
    return Path(os.environ.get("BURTBENCH_REPORTS") or "reports")


def after_run(run_dir: Path, console: Console, out_root: Path | None = None) -> None:
    from harness.report.render import render_report

    out_root = out_root if out_root is not None else reports_root()
    try:
        rendered = render_report(run_dir, out_root)
    except Exception as exc:  # noqa: BLE001 - the run's results stand whatever the report does
        console.print(f"[red]report[/]: could not render the report of {escape(str(run_dir))}: {escape(repr(exc))} "
                      f"(burtbench report {escape(str(run_dir))} tries again)", highlight=False)
        return
    for line in summary_lines(rendered):
        console.print(line, highlight=False)


def claim_line(v) -> str:
    from harness.report import claim_files, claims

    paper = claim_files.shown(v, "paper")
    if v.verdict == claims.NOT_MEASURABLE:
        detail = v.why if len(v.why) <= 110 else v.why[:109] + "…"
    else:
        detail = f"ours {claim_files.shown(v, 'ours')} vs paper {paper}" + (f" at {v.at}" if v.at else "")
    style = STYLES[v.verdict]
    return (f"  [{style}]{claims.SYMBOLS[v.verdict]} {v.verdict:<19}[/] {escape(v.claim.id):<24} "
            f"{escape(detail)}")


def speed_lines(trials: list[dict]) -> list[str]:
    """At each workload point, the fastest engine and how much faster than the slowest it ran."""
    from engines.none import FLOOR
    from harness.report import claims

    by_point: dict[tuple, list] = {}
    for point in group(trials).values():
        if point.time_mean() is not None and point.engine != FLOOR:  # the harness's floor is no framework
            by_point.setdefault((point.workload, point.key.params), []).append(point)
    lines = []
    for (workload, _), points in by_point.items():
        fast = min(points, key=lambda p: p.time_mean())
        slow = max(points, key=lambda p: p.time_mean())
        name = workload + _shown_params(workload, fast.params)
        line = f"  {escape(name):<28} [bold]{escape(fast.engine)}[/] {format_seconds(fast.time_mean())}"
        if slow is not fast:
            line += (f" ran {claims.fx(slow.time_mean() / fast.time_mean())} faster than {escape(slow.engine)} "
                     f"{format_seconds(slow.time_mean())} (slowest of {len(points)})")
        lines.append(line)
    return lines


def summary_lines(rendered) -> list[str]:
    from harness.report import claim_files, versions

    lines = [""] + [f"[yellow]{escape(s)}[/]" for s in rendered.status]
    lines.append(f"[bold]The paper's claims on this run[/]: {claim_files.counts(rendered.verdicts)}")
    lines += [claim_line(v) for v in rendered.verdicts]
    speeds = speed_lines(rendered.run.trials)
    if speeds:
        lines += ["", "[bold]Fastest and slowest engine at each workload point[/] (time per iteration or SGD step):"]
        lines += speeds
    for table in rendered.versions:
        lines += ["", f"[bold]{escape(table.title)}[/] (time per iteration, ×the oldest version, 95% interval, "
                      f"verdict): {escape(str(Path(rendered.folder).resolve() / 'tables' / table.name))}.md"]
        lines += [f"  {escape(row['engine'])} {escape(row['version']):<10} {format_seconds(row['time_per_iter_s'], 'n/a'):>9}"
                  f"  {escape(versions.ratio(row, 'time'))}" for row in table.rows]
    folder = Path(rendered.folder).resolve()
    lines += ["", f"claims:  {escape(str(folder / 'claims.md'))}",
              f"report:  {escape((folder / 'index.html').as_uri())}"]
    return lines
