"""The practical ceiling (harness/machine/ceiling.py): the best library SGEMM at a step's own products, cached
per CPU model, shown beside the share of the FMA peak in the report and in `make perf-grid`'s table; "n/a"
with the reason where no library is there. The libraries here are faked: fixed times, or a child that
multiplies nothing."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.commands import versus
from harness.machine import ceiling
from harness.measure import affinity
from harness.analysis.tables import build_tables
from harness.store.runs import load_run, read_trials
from workloads import load

REFERENCE = Path(__file__).resolve().parents[1] / "results" / "reference"
MLP = (load("mlp"), {"hidden_dim": 1024, "batch": 64})
GPT = (load("gpt"), {"batch": 8})


@pytest.fixture
def fixed_times(monkeypatch):
    """Two fake libraries, installed: "slow" takes 2 ms a product and "fast" 1 ms; every child call is logged."""
    calls = []

    def time_library(name, code, shapes, cpu, python=None):
        calls.append((name, list(shapes)))
        return f"{name} 1.0", [{"slow": 2e-3, "fast": 1e-3}[name]] * len(shapes)

    monkeypatch.setattr(ceiling, "time_library", time_library)
    monkeypatch.setattr(ceiling, "time_ours", lambda shapes, cpu: ("burtorch 0.1.0 (fake)", [5e-4] * len(shapes)))
    monkeypatch.setattr(ceiling, "_installed", lambda name: None if name == "absent" else "1.0")
    return calls


def test_the_ceiling_is_the_fastest_library_over_the_steps_products_and_is_cached(fixed_times, tmp_path):
    cache = tmp_path / "ceiling.json"
    libraries = {"slow": "", "fast": ""}
    [mlp, gpt] = ceiling.measure([MLP, GPT], 1, libraries, cache)
    products = load("mlp").step_products(MLP[1])
    assert len(products) == 6  # forward, dW and dX of w1 and w2
    flops = sum(2 * m * k * n for m, k, n in products)
    assert flops == load("mlp").step_flops(MLP[1])  # the MLP's step is its products
    assert mlp == {"workload": "mlp", "params": MLP[1], "gflops": flops / (6 * 1e-3) / 1e9, "library": "fast 1.0",
                   "ours_gflops": flops / (6 * 5e-4) / 1e9, "ours_build": "burtorch 0.1.0 (fake)"}
    assert gpt["library"] == "fast 1.0"
    assert [name for name, _ in fixed_times] == ["slow", "fast"]
    again = ceiling.measure([MLP, GPT], 1, libraries, cache)
    assert again == [mlp, gpt] and len(fixed_times) == 2, "a second run measures no library shape it has seen"
    assert list(json.loads(cache.read_text())["models"]) == [ceiling.host.describe().get("cpu_model") or "unknown CPU"]


def test_without_a_library_the_ceiling_is_none_with_the_reason(fixed_times, tmp_path):
    [mlp] = ceiling.measure([MLP], 1, {"absent": ""}, tmp_path / "ceiling.json")
    assert mlp["gflops"] is None and mlp["reason"] == "no library SGEMM: absent: not installed"
    assert fixed_times == []


def test_a_library_child_times_each_product(tmp_path):
    fake = "version = 'fake 1'\ndef matrices(m, k, n):\n    return m, k, n\ndef product(a, b, c):\n    pass\n"
    version, seconds = ceiling.time_library("fake", fake, [(2, 3, 4), (5, 6, 7)], affinity.allowed_cpus()[-1])
    assert version == "fake 1" and len(seconds) == 2 and all(s > 0 for s in seconds)
    version, why = ceiling.time_library("broken", "raise SystemExit('no BLAS here')", [(2, 3, 4)], 0)
    assert version is None and why == "broken: no BLAS here"


def test_our_driver_times_our_products_at_each_shape_and_refuses_a_bad_one():
    """The real driver (make setup builds it): one time per shape, as a library's child gives them."""
    driver = ceiling.find_executable(ceiling.DRIVER)
    if driver is None:
        pytest.skip("no burtorch-bench built here")
    version, seconds = ceiling.time_ours([(2, 3, 4), (16, 64, 24)], affinity.allowed_cpus()[-1])
    assert version.startswith("burtorch ") and len(seconds) == 2 and all(0 < s < 1e-3 for s in seconds)
    bad = subprocess.run([driver, "--products", "16x0x4"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "16x0x4" in bad.stderr


def test_without_our_driver_our_share_is_na_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(ceiling, "_installed", lambda name: "1.0")
    monkeypatch.setattr(ceiling, "time_library", lambda name, code, shapes, cpu, python=None: ("fast 1.0", [1e-3] * len(shapes)))
    monkeypatch.setattr(ceiling, "find_executable", lambda name: None)
    [mlp] = ceiling.measure([MLP], 1, {"fast": ""}, tmp_path / "ceiling.json")
    assert mlp["gflops"] and mlp["ours_gflops"] is None
    assert mlp["ours_reason"] == "our products: no burtorch-bench (make setup builds it)"


def _run_with(tmp_path, ceilings):
    run_dir = tmp_path / "run"
    shutil.copytree(REFERENCE, run_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["ceiling"] = ceilings
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir


def test_the_report_and_the_perf_grid_show_the_share_of_the_ceiling_or_na(tmp_path, capsys):
    ours = [{"workload": "mlp", "params": {"batch": 64, "hidden_dim": 1024}, "gflops": 50.0, "library": "fake 1.0",
             "ours_gflops": 60.0, "ours_build": "burtorch 0.1.0 (fake)"},
            {"workload": "mlp", "params": {"batch": 64, "hidden_dim": 128}, "gflops": None,
             "reason": "no library SGEMM: numpy: not installed", "ours_gflops": None,
             "ours_reason": "our products: no burtorch-bench (make setup builds it)"}]
    run_dir = _run_with(tmp_path, ours)
    table = next(t for t in build_tables(load_run(run_dir)) if t.name == "mlp_b64")
    row = next(r for r in table.rows if r["engine"] == "burtorch/eager/cpp/cpu" and r["params"]["hidden_dim"] == 1024)
    assert row["library_share_fraction"] == pytest.approx(413_270_016 / row["time_per_step_s"] / 50e9)
    assert "Share of library SGEMM (%), ours" in table.shown.columns
    assert row["products_share_fraction"] == pytest.approx(60 / 50)
    python_row = next(r for r in table.rows if r["engine"] == "burtorch/eager/python/cpu" and r["params"]["hidden_dim"] == 1024)
    assert python_row["products_share_fraction"] is None, "our products are the driver's: shown on its row only"
    assert any("fake 1.0; n/a: no library SGEMM: numpy: not installed" in note for note in table.notes)
    versus.main([str(run_dir), "--peak-gflops", "100"])
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if '"batch": 64, "hidden_dim": 1024' in line)
    gflops = versus.step_gflops("mlp", json.dumps({"batch": 64, "hidden_dim": 1024}, sort_keys=True),
                                row["time_per_step_s"])
    assert f"{100 * gflops / 50:3.0f}%" in line and line.endswith(" 120%")
    assert " n/a " in next(line for line in out.splitlines() if '"batch": 64, "hidden_dim": 128}' in line)
    assert "n/a: no library SGEMM: numpy: not installed" in out


def test_the_perf_grid_holds_a_step_to_the_peak_its_run_recorded_the_one_its_roofline_uses(tmp_path, capsys):
    run_dir = _run_with(tmp_path, [])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["native"]["peak_gflops_fp32"] = 400.0
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    versus.main([str(run_dir)])
    out = capsys.readouterr().out
    assert "400.0 GFLOP/s" in out, "the run's own peak, not one probed now on whatever core runs versus"
    point = json.dumps({"batch": 64, "hidden_dim": 1024}, sort_keys=True)
    line = next(line for line in out.splitlines() if point in line)
    ours = next(r for r in versus.rows(read_trials(run_dir), "burtorch/eager/cpp/cpu") if r[1] == point)
    assert f"{100 * versus.step_gflops('mlp', point, ours[2]) / 400:3.0f}%" in line
