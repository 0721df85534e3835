"""The report's figures and page: what a Windows run draws, what index.html says of the run, re-rendering,
and runs with nothing to compare (test_report.py holds the tables)."""
from __future__ import annotations

import pytest
# linux_report is a module-scoped fixture: imported, pytest finds it here too.
from test_report import (graph_trials, linux_report, make_trial, paper_value, rows_by_engine,  # noqa: F401
                         windows_trials, write_run)

from harness.report.render import render
from harness.analysis.tables import build_tables
from harness.store.runs import load_run

# ----------------------------------------------------------------------------- figures and the page

def test_figures_are_written_and_non_empty(linux_report):
    figures = linux_report / "figures"
    for name in ("fig_tiny_time", "fig_small_time", "fig_mlp", "fig_gpt"):
        assert (figures / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (figures / f"{name}.png").stat().st_size > 10_000
        assert (figures / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    assert not (figures / "fig_energy.png").exists()  # no energy readings on this machine


def test_windows_run_uses_the_windows_tables_and_draws_energy(tmp_path):
    run_dir = write_run(tmp_path / "results" / "win-run", "Windows 11 Home", windows_trials())
    folder = render(run_dir, tmp_path / "reports")
    tables = {t.name: t for t in build_tables(load_run(run_dir))}
    torch = rows_by_engine(tables["tiny"])["torch/eager/python/cpu"]
    assert torch["paper_rel_time_per_iter_s"] == paper_value("Table 2", "pytorch", "eager", "relative_to_burtorch")
    energy = rows_by_engine(tables["energy"])["torch/eager/python/cpu"]
    assert energy["rel_energy_total_j"] == pytest.approx(1400 / 3)
    assert energy["paper_energy_total_j"] / 3.6 == pytest.approx(
        paper_value("Table 19", "pytorch", "eager", "energy_total_mwh"))
    assert (folder / "figures" / "fig_energy.png").stat().st_size > 10_000
    save_load = tables["save_load"]
    torch = rows_by_engine(save_load)["torch/eager/python/cpu"]
    assert torch["save_per_iter_s"] == pytest.approx(2.0 / 5000)
    assert torch["rel_save_per_iter_s"] == pytest.approx(4)
    assert torch["paper_save_per_iter_s"] * 5000 == pytest.approx(2.54)  # Table 4 row 5, plain torch.save
    numpy_path = [r for r in save_load.rows if r["paper_row"] and "NumPy" in r["paper_row"]]
    assert len(numpy_path) == 1 and not numpy_path[0]["in_run"]


def test_index_html_summarises_the_manifest(linux_report):
    page = (linux_report / "index.html").read_text(encoding="utf-8")
    for text in ("Synthetic CPU 9000", "Debian GNU/Linux 12", "turbo boost is on", "2.13.0", "not installed",
                 "8.0 GiB", "1 timeout", "tensorflow/eager/python/cpu", "n/a (no boost file in sysfs)",
                 "executable: /usr/bin/python3", "unavailable: libtorch/eager/cpp/cpu"):
        assert text in page
    assert page.count("<img src='data:image/png;base64,") == 5  # four figures and the claims' forest plot
    assert page.count("<article id='table-") == 6


@pytest.mark.parametrize("machine, expected", [
    ({"os": "Ubuntu 22.04", "platform": "Linux-6.1.0-x86_64-with-glibc2.36"}, "linux"),
    ({"os": "Windows 11 Home", "platform": "Windows-10-10.0.22631-SP0"}, "windows"),
    ({"platform": "macOS-14.5-x86_64-i386-64bit"}, "macos"),
    ({"os": "Darwin 23.5.0"}, "macos"),
    ({}, "linux"),
])
def test_the_run_os_picks_the_paper_table(machine, expected):
    from harness.store.runs import run_os

    assert run_os({"machine": machine}) == expected


def test_rerender_replaces_old_outputs(tmp_path):
    run_dir = write_run(tmp_path / "results" / "again", "Linux", graph_trials("tiny", {}, 1e-7))
    folder = render(run_dir, tmp_path / "reports")
    (folder / "figures" / "fig_stale.png").write_bytes(b"old")
    render(run_dir, tmp_path / "reports")
    assert not (folder / "figures" / "fig_stale.png").exists()
    assert (folder / "figures" / "fig_tiny_time.png").exists()


def test_a_run_without_burtorch_says_it_has_no_relative_factors(tmp_path):
    trials = [make_trial("torch/eager/python/cpu", "tiny", {}, 0, 1e-4)]
    table = build_tables(load_run(write_run(tmp_path / "no-baseline", "Linux", trials)))[0]
    torch = rows_by_engine(table)["torch/eager/python/cpu"]
    assert torch["rel_time_per_iter_s"] is None and torch["paper_rel_time_per_iter_s"] is not None
    assert "no relative factors" in table.notes[0]


def test_empty_run_renders_a_page(tmp_path):
    run_dir = write_run(tmp_path / "results" / "empty", "Linux", [])
    folder = render(run_dir, tmp_path / "reports")
    assert "No trials in this run yet." in (folder / "index.html").read_text(encoding="utf-8")
