"""Each training point's roofline bound (harness/machine/roofs.py) under fixed roofs, hand-computed; every engine's
time as its share in the report table, `make perf-grid`'s table and the roofline figure (harness/report/roofline.py);
"n/a" with the reason, and no figure, where the run measured no bandwidth."""
from __future__ import annotations

import pytest
from test_claims import LINUX
from test_forest import png_size
from test_report import make_trial, write_run

from engines import all_engines
from engines.base import BASELINE
from harness.commands import versus
from harness.machine import roofs
from harness.report import roofline
from harness.report.figures import engine_style
from harness.analysis.tables import build_tables
from harness.store.runs import load_run
from workloads import load

PT = "torch/eager/python/cpu"
LEVELS = [{"level": "L1", "size_bytes": 48 * 1024, "working_set_bytes": 24 * 1024, "read_bytes_per_s": 200e9,
           "rmw_bytes_per_s": 300e9},
          {"level": "L2", "size_bytes": 2**21, "working_set_bytes": 2**20, "read_bytes_per_s": 100e9, "rmw_bytes_per_s": 100e9},
          {"level": "L3", "size_bytes": 2**25, "working_set_bytes": 2**23, "read_bytes_per_s": 30e9, "rmw_bytes_per_s": 60e9},
          {"level": "DRAM", "size_bytes": None, "working_set_bytes": 2**26, "read_bytes_per_s": 10e9, "rmw_bytes_per_s": 10e9}]
NATIVE = {"peak_gflops_fp32": 100.0, "peak_source": "burtorch-bench --peak on core 1",
          "bandwidth": {"levels": LEVELS, "source": "burtorch-bench --bandwidth on core 1, measured 2026-11-28",
                        "sizes_source": "fake sizes"}}
MACHINE = roofs.roofs(NATIVE)[0]
# MLP e = 1024, b = 1: the weights (4.3 MB) fit L3. Memory: 4,316,012 B read at 30 GB/s and 8,648,624 B read and
# written at 60 GB/s = 143.867 + 144.144 µs; compute: 6,457,344 FLOPs at 100 GFLOP/s = 64.6 µs.
B1_BOUND = 4_316_012 / 30e9 + 8_648_624 / 60e9


def test_a_b1_step_is_memory_bound_where_its_working_set_fits_and_b64_is_compute_bound():
    mlp = load("mlp")
    b1 = roofs.bound(mlp, {"hidden_dim": 1024, "batch": 1}, "fp32", MACHINE)
    assert (b1.kind, b1.level, b1.label) == ("memory", "L3", "memory, L3")
    assert b1.seconds == pytest.approx(B1_BOUND) == pytest.approx(288.01e-6, rel=1e-4)
    assert b1.compute_s == pytest.approx(6_457_344 / 100e9)
    assert b1.intensity == pytest.approx(6_457_344 / (4_316_012 + 8_648_624))
    b64 = roofs.bound(mlp, {"hidden_dim": 1024, "batch": 64}, "fp32", MACHINE)
    assert (b64.kind, b64.label, b64.seconds) == ("compute", "compute", pytest.approx(413_270_016 / 100e9))
    # e = 4: 5,963 parameters and 1,055 kept values, 28 KB: in L1.
    assert roofs.bound(mlp, {"hidden_dim": 4, "batch": 1}, "fp32", MACHINE).level == "L1"
    # In FP64 the same step moves twice the bytes, out of L3's 32 MiB? No: 8.6 MB still fits, at twice the time.
    fp64 = roofs.bound(mlp, {"hidden_dim": 1024, "batch": 1}, "fp64", MACHINE)
    assert fp64.memory_s == pytest.approx(2 * B1_BOUND)
    assert roofs.bound(load("tiny"), {"a": 1.0, "b": 2.0}, "fp64", MACHINE) is None


def test_a_working_set_past_every_cache_is_served_by_dram():
    assert MACHINE.level_for(2**25)["level"] == "L3" and MACHINE.level_for(2**25 + 1)["level"] == "DRAM"


def test_without_a_roof_there_is_no_bound_and_the_reason_says_which():
    assert roofs.roofs({"peak_gflops_fp32": 100.0})[1] == ("no memory bandwidth in this run (its manifest predates "
                                                           "burtorch-bench --bandwidth)")
    assert roofs.roofs({"peak_gflops_fp32": 100.0, "bandwidth": {"levels": None, "reason": "no burtorch-bench"}})[1] \
        == "no memory bandwidth in this run: no burtorch-bench"
    assert roofs.roofs(None)[1] == "no FP32 peak in this run (no burtorch-bench when it ran)"


def run_with(folder, native):
    """Ours and PyTorch at MLP b = 1 and 64, e = 1024; ours at b = 1 takes twice its bound."""
    trials = []
    for engine, b1, b64 in ((BASELINE, 2 * B1_BOUND, 5e-3), (PT, 4 * B1_BOUND, 8e-3)):
        for batch, seconds in ((1, b1), (64, b64)):
            trials.append(make_trial(engine, "mlp", {"hidden_dim": 1024, "batch": batch}, 0, seconds,
                                     precision="fp32", extra={"param_count": 1_079_003}))
    return write_run(folder, LINUX, trials, native=native)


def test_every_engines_row_shows_its_share_of_the_bound_and_its_kind(tmp_path):
    run = load_run(run_with(tmp_path / "run", NATIVE))
    table = next(t for t in build_tables(run) if t.name == "mlp_b1")
    ours, torch = (next(r for r in table.rows if r["engine"] == e and r["in_run"]) for e in (BASELINE, PT))
    assert ours["roofline_share"] == pytest.approx(0.5) and torch["roofline_share"] == pytest.approx(0.25)
    assert ours["roofline_share_kind"] == "memory, L3"
    shown = [cell for cell, row in zip(table.shown["Share of roofline (%), ours"], table.rows) if row["in_run"]]
    assert sorted(float(cell.split()[0]) for cell in shown) == pytest.approx([25, 50], abs=0.1)
    assert all(cell.endswith(" (memory, L3)") for cell in shown)
    assert any("Share of roofline = the point's roofline bound / its time" in n and "fake sizes" in n for n in table.notes)
    b64 = next(t for t in build_tables(run) if t.name == "mlp_b64")
    assert next(r for r in b64.rows if r["engine"] == BASELINE and r["in_run"])["roofline_share_kind"] == "compute"


def test_a_run_without_bandwidth_shows_na_with_the_reason_and_draws_no_roofline(tmp_path):
    run = load_run(run_with(tmp_path / "run", {"peak_gflops_fp32": 100.0, "peak_source": "burtorch-bench --peak"}))
    table = next(t for t in build_tables(run) if t.name == "mlp_b1")
    assert {cell for cell, row in zip(table.shown["Share of roofline (%), ours"], table.rows) if row["in_run"]} == {"n/a"}
    assert any("n/a: no memory bandwidth in this run (its manifest predates burtorch-bench --bandwidth)" in n
               for n in table.notes)
    assert not any("roofline" in note for row in table.rows for note in row["notes"]), "said once, under the table"
    assert roofline.draw_all(run, tmp_path / "figures") == []


def test_the_perf_grid_shows_ours_and_the_peers_share_of_the_bound(tmp_path, capsys):
    versus.main([str(run_with(tmp_path / "run", NATIVE)), "--peak-gflops", "100"])
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("mlp") and '"batch": 1,' in line)
    assert " 50% " in line and " 25% " in line and "memory, L3" in line and "288 µs" in line
    assert "%roof: the point's roofline bound / the time" in out
    versus.main([str(run_with(tmp_path / "old", {"peak_gflops_fp32": 100.0})), "--peak-gflops", "100"])
    out = capsys.readouterr().out
    assert "%roof n/a: no memory bandwidth in this run (its manifest predates burtorch-bench --bandwidth)" in out
    line = next(line for line in out.splitlines() if line.startswith("mlp") and '"batch": 1,' in line)
    assert line.count(" n/a ") == 2


def test_the_roofline_figure_renders_every_engines_points_under_the_roofs(tmp_path):
    run = load_run(run_with(tmp_path / "run", NATIVE))
    [figure] = roofline.draw_all(run, tmp_path / "figures")
    assert figure.png.name == "fig_roofline_mlp.png" and figure.pdf.exists()
    width, height = png_size(figure.png)
    assert 800 < width < 2000 and 500 < height < 1200


def test_every_engine_of_the_registry_has_a_colour_and_marker_no_other_shares():
    styles = [engine_style(e) for e in all_engines()]
    assert len(set(styles)) == len(styles)
    assert len({colour for colour, _ in styles}) == len(styles)
