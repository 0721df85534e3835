"""`make perf-grid`'s table (harness.commands.versus): GFLOP/s of a step and the measured peak."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from harness.commands import versus
from harness.machine import peak
from harness.measure import affinity
from harness.analysis.tables import build_tables
from harness.store import manifest
from harness.store.runs import load_run


def test_a_training_point_has_gflops_from_its_step_flops_and_others_none():
    mlp = json.dumps({"batch": 64, "hidden_dim": 1024}, sort_keys=True)
    assert versus.step_gflops("mlp", mlp, 413_270_016e-9) == 1.0  # one second per GFLOP
    assert versus.step_gflops("tiny", json.dumps({"a": -4.0, "b": 2.0}), 1e-6) is None
    assert versus._rate(200.0, 250.0) == " 200.0  80%"
    assert versus._rate(200.0, None) == " 200.0" and versus._rate(None, 250.0) == ""


def fake_driver(folder, peak_line: str):
    driver = folder / "burtorch-bench"
    driver.write_text(f"#!{sys.executable}\nimport sys\n"
                      "if sys.argv[1:] == ['--version']: print('burtorch 0.1.0 (fake)'); sys.exit(0)\n"
                      f"assert sys.argv[1:] == ['--peak']\nprint({peak_line!r})\n")
    os.chmod(driver, 0o755)
    return str(driver)


def test_the_peak_is_read_from_the_driver_on_the_core_and_none_without_one(tmp_path, monkeypatch):
    good = fake_driver(tmp_path, '{"peak_gflops_fp32": 123.5, "fma": true, "lanes": 16, "sink": 0}')
    monkeypatch.setattr(peak, "find_executable", lambda name: good)
    cpu = affinity.allowed_cpus()[-1]
    assert peak.fp32_peak(cpu) == (123.5, f"burtorch-bench --peak on core {cpu}")
    broken = fake_driver(tmp_path, "nonsense")
    monkeypatch.setattr(peak, "find_executable", lambda name: broken)
    assert peak.fp32_peak(cpu)[0] is None and "failed" in peak.fp32_peak(cpu)[1]
    monkeypatch.setattr(peak, "find_executable", lambda name: None)
    assert peak.fp32_peak(cpu) == (None, "no burtorch-bench: build the project (make setup) to measure the core's peak")


def test_a_run_that_trains_records_the_cores_peak_and_a_graph_run_does_not(tmp_path, monkeypatch):
    driver = fake_driver(tmp_path, '{"peak_gflops_fp32": 99.0, "fma": true, "lanes": 16, "sink": 0}')
    monkeypatch.setattr(peak, "find_executable", lambda name: driver)
    monkeypatch.setattr(manifest, "find_executable", lambda name: driver)
    cpu = affinity.allowed_cpus()[-1]
    trained = manifest.native_build_info(cpu, ("mlp", "tiny"))
    assert trained["peak_gflops_fp32"] == 99.0 and trained["peak_source"].endswith(f"core {cpu}")
    assert "peak_gflops_fp32" not in manifest.native_build_info(cpu, ("tiny", "small"))


def test_the_training_tables_show_each_steps_gflops_and_their_share_of_the_measured_peak():
    run = load_run(Path(__file__).resolve().parents[1] / "results" / "reference")
    run.manifest["native"] = {"peak_gflops_fp32": 100.0, "peak_source": "burtorch-bench --peak on core 1"}
    table = next(t for t in build_tables(run) if t.name == "mlp_b64")
    ours = next(r for r in table.rows if r["engine"] == "burtorch/eager/cpp/cpu" and r["params"]["hidden_dim"] == 1024)
    rate = 413_270_016 / ours["time_per_step_s"]
    assert ours["flops_per_s"] == rate and ours["peak_share_fraction"] == rate / 100e9
    assert {"Step rate (GFLOP/s), ours", "Share of FP32 peak (%), ours"} <= set(table.shown.columns)
    assert any("100.0 GFLOP/s (burtorch-bench --peak on core 1" in note for note in table.notes)
    del run.manifest["native"]["peak_gflops_fp32"]
    assert "Share of FP32 peak (%), ours" not in next(t for t in build_tables(run) if t.name == "mlp_b64").shown.columns


def test_the_python_rows_table_says_its_time_over_the_native_drivers(capsys):
    """`make perf-grid`'s second table: the module's time over the driver's at each point, the goal of ×1.25."""
    reference = Path(__file__).resolve().parents[1] / "results" / "reference"
    assert versus.main(["--engine", "burtorch/eager/python/cpu", str(reference), "--peak-gflops", "100"]) == 0
    out = capsys.readouterr().out
    trials = [t for t in versus.read_trials(reference) if t["workload"] == "gpt" and t["params"] == {"batch": 64}]
    [(_, _, python, *_, native)] = versus.rows(trials, "burtorch/eager/python/cpu")
    line = next(line for line in out.splitlines() if line.startswith("gpt") and '{"batch": 64}' in line)
    assert line.endswith(f" {python / native:7.2f}") and 1.0 < python / native < 2.0
    assert "/native: burtorch/eager/python/cpu's time over burtorch/eager/cpp/cpu's" in out
    assert versus.main([str(reference), "--peak-gflops", "100"]) == 0
    assert "/native" not in capsys.readouterr().out, "the driver's own table has no such column"
