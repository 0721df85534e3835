"""Render one run's report: every table, figure, claims file and page, in `reports/<run-id>/`."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.analysis import tables
from harness.judging import claims, release
from harness.judging.rows import run_noise
from harness.report import authors, claim_files, figures, forest, formats, html, readme, roofline, versions
from harness.report.run import status_notes
from harness.store.runs import load_run


FOREST = "claims-forest.png"  # the claims as a picture, beside claims.md


def render(run_dir: Path, out_root: Path = Path("reports")) -> Path:
    """Render the report of `run_dir` into `out_root/<run-id>/` and return that folder."""
    return render_report(run_dir, out_root).folder


@dataclass
class Rendered:
    folder: Path
    run: object  # harness.store.runs.Run
    tables: list
    judged: list  # harness.judging.claims.Judged: each claim with both subjects' verdicts
    status: list[str]  # the run did not finish, trials failed
    versions: list  # harness.report.versions.VersionTable, where the run has several environments
    release: list  # other sources' claims' verdicts (harness/judging/release.py)


def render_report(run_dir: Path, out_root: Path = Path("reports")) -> Rendered:
    """The report of `run_dir` in `out_root/<run-id>/`, with what it found (for the terminal summary)."""
    run = load_run(Path(run_dir))
    folder = Path(out_root) / run.run_id
    # A re-render after more trials landed must not leave figures of an older render behind.
    for generated in ("tables", "figures"):
        shutil.rmtree(folder / generated, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    built = tables.build_tables(run)
    for table in built:
        formats.write_table(table, folder / "tables")
    drawn = figures.draw_all(built, run.os, folder / "figures") + roofline.draw_all(run, folder / "figures")
    # Several environments of one framework (--env): their versions side by side.
    by_version = versions.build(run)
    for table in by_version:
        formats.write_table(table, folder / "tables")
    drawn += [f for f in (versions.figure(t, folder / "figures") for t in by_version) if f is not None]
    judged = claims.judge(run, built)
    status = status_notes(run)
    noise = run_noise(run)
    picture = forest.draw(judged, folder / FOREST, f"{claim_files.machine_text(run)}: run {run.run_id}")
    other = release.judge(run, built)
    claim_files.write(folder, run, judged, status, noise, picture, (built, other))
    authors.write_page(run, folder)
    readme.write(run, [*by_version, *built], drawn, judged, status, folder)
    html.write_index(run, built, drawn, folder, judged, status, by_version,
                     claim_files.sureness(run, judged, noise), picture)
    return Rendered(folder, run, built, judged, status, by_version, other)
