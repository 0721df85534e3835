"""The memory roofs (harness/machine/bandwidth.py, burtorch-bench --bandwidth): cache sizes read from a fake
/sys tree or assumed with the reason, working sets sized from them, the probe's line read, cached per CPU model,
"not measured" with the driver's own line where it fails, doctor's line; and one real probe of the built driver."""
from __future__ import annotations

import json
import math
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness.machine import bandwidth
from harness.measure import affinity

KIB, MIB = 1024, 2**20


def fake_sys(root: Path, cpu: int, caches: list[tuple[int, str, str]]) -> Path:
    """A /sys tree whose core `cpu` lists these (level, type, size) caches."""
    for index, (level, kind, size) in enumerate(caches):
        folder = root / "devices/system/cpu" / f"cpu{cpu}" / "cache" / f"index{index}"
        folder.mkdir(parents=True)
        (folder / "level").write_text(f"{level}\n")
        (folder / "type").write_text(f"{kind}\n")
        (folder / "size").write_text(f"{size}\n")
    return root


SAPPHIRE = [(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"), (3, "Unified", "491520K")]


def test_cache_sizes_are_the_cores_data_and_unified_levels(tmp_path):
    sizes, source = bandwidth.cache_sizes(1, fake_sys(tmp_path, 1, SAPPHIRE))
    assert sizes == {"L1": 48 * KIB, "L2": 2 * MIB, "L3": 480 * MIB}, "the instruction cache holds no data"
    assert source == f"{tmp_path}/devices/system/cpu/cpu1/cache/index*/size"


def test_cache_sizes_are_assumed_with_the_reason_where_the_machine_does_not_say(tmp_path):
    sizes, source = bandwidth.cache_sizes(3, tmp_path)
    assert sizes == bandwidth.ASSUMED and source.startswith("assumed sizes: no data cache listed under")
    sizes, source = bandwidth.cache_sizes(0, fake_sys(tmp_path / "odd", 0, [(1, "Data", "lots")]))
    assert sizes == bandwidth.ASSUMED and "unreadable" in source and "lots" in source


def test_working_sets_sit_inside_each_level_and_past_the_one_below():
    sets = bandwidth.working_sets({"L1": 48 * KIB, "L2": 2 * MIB, "L3": 480 * MIB})
    # L1: half of it; L2: half of it (1 MiB) or 4 x L1 (192 KiB); L3: 4 x L2, far less than half of 480 MiB;
    # DRAM: twice the last level.
    assert sets == {"L1": 24 * KIB, "L2": 192 * KIB, "L3": 8 * MIB, "DRAM": 960 * MIB}
    assert bandwidth.working_sets({"L1": 32 * KIB, "L2": 4 * MIB})["DRAM"] == bandwidth.MIN_DRAM


def fake_driver(folder: Path, line: str, exit_code: int = 0, stderr: str = "") -> Path:
    """An executable that logs each call and prints `line`."""
    script = folder / "fake-bench"
    script.write_text(f"#!{sys.executable}\nimport sys\nopen({str(folder / 'calls')!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
                      f"print({line!r})\nsys.stderr.write({stderr!r})\nsys.exit({exit_code})\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_a_probe_is_read_into_one_record_per_level_and_cached_per_cpu_model(tmp_path):
    line = json.dumps({"bytes": [1, 2, 3, 4], "read_bytes_per_s": [3e11, 1.5e11, 3e10, 9e9],
                       "rmw_bytes_per_s": [3.5e11, 1.2e11, 5.7e10, 9.5e9], "lanes": 16, "sink": 1.0})
    driver, cache, root = fake_driver(tmp_path, line), tmp_path / "bandwidth.json", fake_sys(tmp_path / "sys", 1, SAPPHIRE)
    record = bandwidth.measure(1, root, cache, str(driver))
    assert (tmp_path / "calls").read_text() == f"--bandwidth {24 * KIB},{192 * KIB},{8 * MIB},{960 * MIB}\n"
    assert [lv["level"] for lv in record["levels"]] == ["L1", "L2", "L3", "DRAM"]
    assert record["levels"][2] == {"level": "L3", "size_bytes": 480 * MIB, "working_set_bytes": 8 * MIB,
                                   "read_bytes_per_s": 3e10, "rmw_bytes_per_s": 5.7e10}
    assert record["levels"][3]["size_bytes"] is None
    assert record["source"].startswith(f"burtorch-bench --bandwidth on core 1, measured ")
    assert bandwidth.measure(1, root, cache, str(driver)) == record
    assert (tmp_path / "calls").read_text().count("\n") == 1, "a second look at the same machine probes nothing"
    lines = bandwidth.table(record)
    assert lines[3].split() == ["L3", "480", "MiB", "8", "MiB", "30.0", "57.0"]


def test_a_failing_or_implausible_probe_is_not_measured_with_the_reason(tmp_path):
    failing = fake_driver(tmp_path, "", 2, "burtorch-bench: error: unknown option '--bandwidth'\n")
    record = bandwidth.measure(1, tmp_path, tmp_path / "bandwidth.json", str(failing))
    assert record == {"levels": None, "reason": "burtorch-bench --bandwidth failed: burtorch-bench: error: unknown "
                                                "option '--bandwidth'", "sizes_source": record["sizes_source"]}
    (tmp_path / "calls").unlink()
    zero = fake_driver(tmp_path, json.dumps({"read_bytes_per_s": [0, 1, 1, 1], "rmw_bytes_per_s": [1, 1, 1, 1]}))
    assert "not one positive rate" in bandwidth.measure(1, tmp_path, tmp_path / "bandwidth.json", str(zero))["reason"]
    assert not (tmp_path / "bandwidth.json").exists(), "nothing measured, nothing cached"


def test_doctor_says_the_roofs_or_why_there_are_none(tmp_path, monkeypatch):
    monkeypatch.setattr(bandwidth, "find_executable", lambda name: None)
    monkeypatch.setattr(bandwidth, "cache_dir", lambda: tmp_path)
    found = bandwidth.finding(1, tmp_path)
    assert (found.level, found.topic) == ("info", "bandwidth")
    assert found.message == ("memory bandwidth not measured: no burtorch-bench: build the project (make setup) "
                             "to measure the memory bandwidth")


def test_the_built_driver_measures_positive_finite_rates_and_refuses_bad_sizes():
    """A real probe at three small working sets: plausible, not ordered (a VM's levels need not be)."""
    from test_burtorch_build import driver_path

    driver = str(driver_path())
    rates, how = bandwidth.probe([16 * KIB, 256 * KIB, 4 * MIB], affinity.allowed_cpus()[-1], driver)
    assert how.startswith("burtorch-bench --bandwidth on core ")
    for rate in rates["read"] + rates["rmw"]:
        assert math.isfinite(rate) and 1e8 < rate < 1e13, "between 0.1 GB/s and 10 TB/s"
    bad = subprocess.run([driver, "--bandwidth", "4096,12x"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "12x" in bad.stderr
