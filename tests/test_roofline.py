"""Each training point's roofline bound (harness/machine/roofs.py) under fixed roofs, hand-computed; every engine's
time as its share in the report table, `make perf-grid`'s table and the roofline figure (harness/report/roofline.py,
each point labelled with ours' and the best other framework's shares, the labels apart);
"n/a" with the reason, and no figure, where the run measured no bandwidth."""
from __future__ import annotations

import numpy as np
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
from harness.analysis.metrics import point_bound
from harness.analysis.points import in_order, run_points
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
# MLP e = 1024, b = 1: 4,316,012 B read and 8,648,624 B read and written over a working set of 4,324,312 B (the
# weights and the kept activations), which fits L3. A cache holds at most its size of it between two sweeps:
# 48 KiB of each sweep's bytes are charged to L1 (200 / 300 GB/s), the next 2 MiB - 48 KiB to L2 (100 / 100 GB/s),
# the rest to L3 (30 / 60 GB/s): 210.3 µs; compute: 6,457,344 FLOPs at 100 GFLOP/s = 64.6 µs.
B1_READ, B1_UPDATED, B1_SET = 4_316_012, 8_648_624, 4_324_312
B1_BOUND = (48 * 1024 * (B1_READ / 200e9 + B1_UPDATED / 300e9) + (2**21 - 48 * 1024) * (B1_READ / 100e9 + B1_UPDATED / 100e9)
            + (B1_SET - 2**21) * (B1_READ / 30e9 + B1_UPDATED / 60e9)) / B1_SET


def test_a_b1_step_is_memory_bound_where_its_working_set_fits_and_b64_is_compute_bound():
    mlp = load("mlp")
    b1 = roofs.bound(mlp, {"hidden_dim": 1024, "batch": 1}, "fp32", MACHINE)
    assert (b1.kind, b1.level, b1.label) == ("memory", "L3", "memory, L3")
    assert b1.seconds == pytest.approx(B1_BOUND) == pytest.approx(210.31e-6, rel=1e-4)
    assert b1.compute_s == pytest.approx(6_457_344 / 100e9)
    assert b1.intensity == pytest.approx(6_457_344 / (4_316_012 + 8_648_624))
    b64 = roofs.bound(mlp, {"hidden_dim": 1024, "batch": 64}, "fp32", MACHINE)
    assert (b64.kind, b64.label, b64.seconds) == ("compute", "compute", pytest.approx(413_270_016 / 100e9))
    # e = 4: 5,963 parameters and 1,055 kept values, 28 KB: in L1.
    assert roofs.bound(mlp, {"hidden_dim": 4, "batch": 1}, "fp32", MACHINE).level == "L1"
    # In FP64 the same step moves twice the bytes over twice the working set (8.6 MB, still in L3): the caches
    # below hold a smaller share of it, so more than twice the time.
    fp64 = roofs.bound(mlp, {"hidden_dim": 1024, "batch": 1}, "fp64", MACHINE)
    assert fp64.level == "L3" and fp64.memory_s == pytest.approx(MACHINE.memory_seconds(2 * B1_READ, 2 * B1_UPDATED, 2 * B1_SET))
    assert 2 * B1_BOUND < fp64.memory_s < 2 * (B1_READ / 30e9 + B1_UPDATED / 60e9)
    assert roofs.bound(load("tiny"), {"a": 1.0, "b": 2.0}, "fp64", MACHINE) is None


def test_a_working_set_past_every_cache_is_served_by_dram():
    assert MACHINE.level_for(2**25)["level"] == "L3" and MACHINE.level_for(2**25 + 1)["level"] == "DRAM"
    assert [share for share, _, _ in MACHINE.served(2**26)] == pytest.approx([48 * 1024 / 2**26, (2**21 - 48 * 1024) / 2**26,
                                                                              (2**25 - 2**21) / 2**26, 0.5])


@pytest.mark.parametrize("working_set", [1_000, 40_000, 100_000, 3_000_000, 2**25, 10**9])
def test_no_step_at_the_machines_best_exceeds_its_bound_even_where_a_probe_read_a_near_level_slowly(working_set):
    """A probe's noise (here L2 read slower than L3) must not push a bound above a step that runs at the best rate
    measured at or beyond where its working set fits: a nearer level counts at least a farther one's rate."""
    noisy = roofs.Memory([{**lv, "read_bytes_per_s": 20e9} if lv["level"] == "L2" else lv for lv in LEVELS])
    fits = noisy.level_for(working_set)
    farther = noisy.levels[noisy.levels.index(fits):]
    best = (max(lv["read_bytes_per_s"] for lv in farther), max(lv["rmw_bytes_per_s"] for lv in farther))
    assert max(noisy.stream_shares(working_set, *best)) <= 1.0 + 1e-12


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
    assert ours["roofline_share_fraction"] == pytest.approx(0.5) and torch["roofline_share_fraction"] == pytest.approx(0.25)
    assert ours["roofline_share_fraction_kind"] == "memory, L3"
    shown = [cell for cell, row in zip(table.shown["Share of roofline (%), ours"], table.rows) if row["in_run"]]
    assert sorted(float(cell.split()[0]) for cell in shown) == pytest.approx([25, 50], abs=0.1)
    assert all(cell.endswith(" (memory, L3)") for cell in shown)
    assert any("Share of roofline = the point's roofline bound / its time" in n and "fake sizes" in n for n in table.notes)
    b64 = next(t for t in build_tables(run) if t.name == "mlp_b64")
    assert next(r for r in b64.rows if r["engine"] == BASELINE and r["in_run"])["roofline_share_fraction_kind"] == "compute"


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
    assert " 50% " in line and " 25% " in line and "memory, L3" in line and "210 µs" in line
    peer_peak = 100 * load("mlp").step_rate({"hidden_dim": 1024, "batch": 1}, 4 * B1_BOUND) / 100e9
    assert f" {f'{peer_peak:3.0f}%':>5} {'25%':>5} " in line, "the peer's share of the peak beside its share of the bound"
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


def test_the_roofline_figure_labels_each_point_with_ours_and_the_best_frameworks_share_of_its_bound(tmp_path):
    run = load_run(run_with(tmp_path / "run", NATIVE))
    marks = [roofline.Mark(p, point_bound(p, MACHINE)) for p in in_order(run_points(run))]
    found = {label.text: label for label in roofline.labels("mlp", marks, 100.0)}
    mlp, b1_flops = load("mlp"), 6_457_344
    b64 = roofs.bound(mlp, {"hidden_dim": 1024, "batch": 64}, "fp32", MACHINE)
    b1_text = (f"hidden_dim=1024 batch=1\nroof 50% / 25%, peak {b1_flops / (2 * B1_BOUND) / 100e9:.0%} / "
               f"{b1_flops / (4 * B1_BOUND) / 100e9:.0%}")
    b64_text = (f"hidden_dim=1024 batch=64\nroof {b64.seconds / 5e-3:.0%} / {b64.seconds / 8e-3:.0%}, "
                f"peak {b64.flops / 5e-3 / 100e9:.0%} / {b64.flops / 8e-3 / 100e9:.0%}")
    assert set(found) == {b1_text, b64_text}, "the point, then ours' and the best framework's shares of bound and peak"
    b1 = found[b1_text]
    assert b1.y == pytest.approx(b1.gap[0]) and b1.gap[0] == pytest.approx(2 * b1.gap[1]), "at ours, down to the peer"


def test_labels_of_near_points_are_stacked_apart_inside_the_axes_and_clear_of_the_legend():
    """Points as the MLP's fall: five b = 1 points at one intensity, close in GFLOP/s; b = 64 ones far right, near the
    top. No two labels that reach across one another share a height, none leaves the axes, none crosses the legend."""
    x, y = np.log10([0.5, 0.5, 0.51, 0.5, 0.52, 2.6, 23, 30]), np.log10([20, 21, 20, 22, 18, 33, 95, 99])
    x_span, y_span = (-1.0, 2.0), (-2.0, 2.0)
    heights, left = roofline.placed(x, y, x_span, y_span)
    reach, offset, gap = roofline.LABEL_REACH * 3, np.log10(roofline.LABEL_OFFSET), roofline.LABEL_HEIGHT * 4
    start = np.where(left, x - offset - reach, x + offset)
    for i in range(len(x)):
        for j in range(i):
            if abs(start[i] - start[j]) < reach:
                assert abs(heights[i] - heights[j]) >= gap - 1e-9, (i, j)
    assert (heights >= -2.0 + gap - 1e-9).all() and (heights <= 2.0 - gap + 1e-9).all()
    assert list(left) == [False] * 6 + [True] * 2 and (start + reach <= 2.0).all(), "the right third's on the left"


def test_every_engine_of_the_registry_has_a_colour_and_marker_no_other_shares():
    styles = [engine_style(e) for e in all_engines()]
    assert len(set(styles)) == len(styles)
    assert len({colour for colour, _ in styles}) == len(styles)
