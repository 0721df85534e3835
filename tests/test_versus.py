"""`make perf-grid`'s table (harness.commands.versus): GFLOP/s of a step and the measured peak."""
from __future__ import annotations

import json
import os
import sys

from harness.commands import versus


def test_a_training_point_has_gflops_from_its_step_flops_and_others_none():
    mlp = json.dumps({"batch": 64, "hidden_dim": 1024}, sort_keys=True)
    assert versus.step_gflops("mlp", mlp, 413_270_016e-9) == 1.0  # one second per GFLOP
    assert versus.step_gflops("tiny", json.dumps({"a": -4.0, "b": 2.0}), 1e-6) is None
    assert versus._rate(200.0, 250.0) == " 200.0  80%"
    assert versus._rate(200.0, None) == " 200.0" and versus._rate(None, 250.0) == ""


def test_the_peak_is_read_from_the_driver_and_none_without_one(tmp_path):
    driver = tmp_path / "burtorch-bench"
    driver.write_text(f"#!{sys.executable}\nimport sys\nassert sys.argv[1:] == ['--peak']\n"
                      "print('{\"peak_gflops_fp32\": 123.5, \"fma\": true, \"lanes\": 16, \"sink\": 0}')\n")
    os.chmod(driver, 0o755)
    assert versus.measured_peak(str(driver)) == 123.5
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho nonsense\n")
    os.chmod(broken, 0o755)
    assert versus.measured_peak(str(broken)) is None
