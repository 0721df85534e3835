"""`burtbench report RUN_DIR`: the paper's tables and figures for one run, and index.html.

    reports/<run-id>/index.html
    reports/<run-id>/tables/<name>.md | .tex | .csv
    reports/<run-id>/figures/<name>.png | .pdf
    reports/<run-id>/authors.md          (where the run has trials of the authors' BurTorch programs)

pandas and matplotlib are imported only while rendering, so importing this package stays cheap.
"""
from __future__ import annotations

import shutil
from pathlib import Path


def render(run_dir: Path, out_root: Path = Path("reports")) -> Path:
    """Render the report of `run_dir` into `out_root/<run-id>/` and return that folder."""
    from harness.report import authors, figures, formats, html, tables
    from harness.report.run import load_run

    run = load_run(Path(run_dir))
    folder = Path(out_root) / run.run_id
    # A re-render after more trials landed must not leave figures of an older render behind.
    for generated in ("tables", "figures"):
        shutil.rmtree(folder / generated, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    built = tables.build_tables(run)
    for table in built:
        formats.write_table(table, folder / "tables")
    drawn = figures.draw_all(built, run.os, folder / "figures")
    authors.write_page(run, folder)
    html.write_index(run, built, drawn, folder)
    return folder
