"""The memory roofs (harness/machine/bandwidth.py, burtorch-bench --bandwidth): cache sizes read from a fake
/sys tree or assumed with the reason, working sets sized from them, the probe's line read, cached per CPU model,
"not measured" with the driver's own line where it fails, doctor's line; a stream of known bytes at each level
within 80-100% of its bound on recorded rates (doctor --remeasure's line); and one real probe of the built driver."""
from __future__ import annotations

import json
import math
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness.machine import bandwidth, roofs
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


def test_working_sets_sit_inside_each_level_and_five_times_past_the_one_below():
    sets = bandwidth.working_sets({"L1": 48 * KIB, "L2": 2 * MIB, "L3": 480 * MIB})
    # L1: half of it; L2: half of it (1 MiB) or 5 x L1 (240 KiB); L3: 5 x L2, far less than half of 480 MiB;
    # DRAM: five times the last level, so that a cache keeping its size of the stream holds at most a fifth.
    assert sets == {"L1": 24 * KIB, "L2": 240 * KIB, "L3": 10 * MIB, "DRAM": 2400 * MIB}
    assert bandwidth.working_sets({"L1": 32 * KIB, "L2": 4 * MIB})["DRAM"] == bandwidth.MIN_DRAM
    # A second level smaller than five first levels: half of it, the most it holds beside the rest.
    assert bandwidth.working_sets({"L1": 32 * KIB, "L2": 256 * KIB})["L2"] == 128 * KIB


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
    assert (tmp_path / "calls").read_text() == f"--bandwidth {24 * KIB},{240 * KIB},{10 * MIB},{2400 * MIB}\n"
    assert [lv["level"] for lv in record["levels"]] == ["L1", "L2", "L3", "DRAM"]
    assert record["levels"][2] == {"level": "L3", "size_bytes": 480 * MIB, "working_set_bytes": 10 * MIB,
                                   "read_bytes_per_s": 3e10, "rmw_bytes_per_s": 5.7e10}
    assert record["levels"][3]["size_bytes"] is None
    assert record["source"].startswith(f"burtorch-bench --bandwidth on core 1, measured ")
    assert bandwidth.measure(1, root, cache, str(driver)) == record
    assert (tmp_path / "calls").read_text().count("\n") == 1, "a second look at the same machine probes nothing"
    lines = bandwidth.table(record)
    assert lines[3].split() == ["L3", "480", "MiB", "10", "MiB", "30.0", "57.0"]


def test_a_failing_or_implausible_probe_is_not_measured_with_the_reason(tmp_path):
    failing = fake_driver(tmp_path, "", 2, "burtorch-bench: error: unknown option '--bandwidth'\n")
    record = bandwidth.measure(1, tmp_path, tmp_path / "bandwidth.json", str(failing))
    assert record == {"levels": None, "reason": "burtorch-bench --bandwidth failed: burtorch-bench: error: unknown "
                                                "option '--bandwidth'", "sizes_source": record["sizes_source"]}
    (tmp_path / "calls").unlink()
    zero = fake_driver(tmp_path, json.dumps({"read_bytes_per_s": [0, 1, 1, 1], "rmw_bytes_per_s": [1, 1, 1, 1]}))
    assert "not one positive rate" in bandwidth.measure(1, tmp_path, tmp_path / "bandwidth.json", str(zero))["reason"]
    assert not (tmp_path / "bandwidth.json").exists(), "nothing measured, nothing cached"


# This core's roofs as the probe recorded them (an AMD EPYC VM, cpu1, 2026-11-29), read and update bytes per
# second at the working sets of its caches.
EPYC = [(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "512K"), (3, "Unified", "32768K")]
EPYC_READ, EPYC_RMW = [168e9, 103e9, 81e9, 23e9], [207e9, 146e9, 124e9, 36e9]


def probe_line(read: list[float], rmw: list[float]) -> str:
    return json.dumps({"read_bytes_per_s": read, "rmw_bytes_per_s": rmw})


def roofs_of(folder: Path, caches: list, read: list[float], rmw: list[float]) -> dict:
    """measure's record of a core with these caches whose probe printed these rates."""
    folder.mkdir()
    return bandwidth.measure(1, fake_sys(folder / "sys", 1, caches), folder / "bandwidth.json",
                             str(fake_driver(folder, probe_line(read, rmw))))


def test_a_stream_at_each_levels_recorded_rate_lands_within_80_to_100_percent_of_its_bound(tmp_path):
    """The probe's stream at each level's set timed at the rates the probe recorded: at L1 exactly its roof, at
    each farther level charged a share to the caches below, at most a fifth; doctor's line says it is a floor."""
    record = roofs_of(tmp_path / "roofs", EPYC, EPYC_READ, EPYC_RMW)
    assert [lv["working_set_bytes"] for lv in record["levels"]] == [16 * KIB, 160 * KIB, 2560 * KIB, 160 * MIB]
    found = bandwidth.streams(record, 1, str(fake_driver(tmp_path, probe_line(EPYC_READ, EPYC_RMW))))
    # DRAM: 32 KiB of 160 MiB at L1's rate, the next 480 KiB at L2's, the next 31.5 MiB at L3's, the rest at 23 GB/s.
    dram = 23e9 * (32 * KIB / 168e9 + 480 * KIB / 103e9 + (32 * MIB - 512 * KIB) / 81e9 + 128 * MIB / 23e9) \
        / (160 * MIB)
    assert [(lv["level"], lv["read_pct"], lv["rmw_pct"]) for lv in found["levels"]] == \
        [("L1", 100, 100), ("L2", 92, 94), ("L3", 95, 97), ("DRAM", round(100 * dram), 86)]
    assert round(100 * dram) == 86
    line = bandwidth.stream_finding(found)
    assert (line.level, line.topic) == ("ok", "stream")
    assert "L1 100%/100%; L2 92%/94%; L3 95%/97%; DRAM 86%/86%" in line.message
    # The DRAM set of old, twice the last cache, had half its bytes charged to L3: a loose floor.
    assert roofs.Memory(record["levels"]).stream_shares(64 * MIB, 23e9, 36e9)[0] < roofs.LEAST_STREAM_SHARE


def test_a_stream_faster_than_its_roof_or_far_slower_is_a_warning_naming_the_level(tmp_path):
    record = roofs_of(tmp_path / "roofs", EPYC, EPYC_READ, EPYC_RMW)
    faster_l1, slower_dram = [1.1 * EPYC_READ[0], *EPYC_READ[1:]], [*EPYC_RMW[:3], EPYC_RMW[3] / 2]
    timed = fake_driver(tmp_path, probe_line(faster_l1, slower_dram))
    line = bandwidth.stream_finding(bandwidth.streams(record, 1, str(timed)))
    assert line.level == "warn" and "L1 110%/100%" in line.message and "DRAM 86%/43%" in line.message
    assert "outside 80-100% at L1, DRAM" in line.message and line.fix.startswith("the machine's load")
    broken = bandwidth.stream_finding(bandwidth.streams(record, 1, str(fake_driver(tmp_path / "roofs", "", 2, "no\n"))))
    assert broken.level == "info"
    assert broken.message == "no stream timed against the roofs: burtorch-bench --bandwidth failed: no"


@pytest.mark.parametrize("caches", [SAPPHIRE, EPYC, [(1, "Data", "32K"), (2, "Unified", "256K"), (3, "Unified", "8M")]])
def test_on_any_host_a_stream_at_its_levels_rate_is_a_floor_no_looser_than_80_percent(caches, tmp_path):
    """Rates where each nearer level is a hundred times faster, as no host is: a stream at its level's own rate
    still lands at 80% of its bound at least wherever its set reaches five times past the level below (DRAM always),
    and at 100% at most; at L1 its share is its rate over L1's."""
    sizes = bandwidth.cache_sizes(1, fake_sys(tmp_path, 1, caches))[0]
    read = [1e13 / 100**k for k in range(len(sizes) + 1)]
    record = roofs_of(tmp_path / "roofs", caches, read, [2 * r for r in read])
    memory, sizes = roofs.Memory(record["levels"]), [*sizes.values(), None]
    for k, level in enumerate(record["levels"]):
        shares = memory.stream_shares(level["working_set_bytes"], read[k], 2 * read[k])
        assert max(shares) <= 1.0 + 1e-12
        if k == 0 or level["working_set_bytes"] >= bandwidth.PAST_BELOW * sizes[k - 1]:
            assert min(shares) >= roofs.LEAST_STREAM_SHARE, level["level"]
    assert memory.stream_shares(record["levels"][0]["working_set_bytes"], 0.5e13, 1e13) == pytest.approx((0.5, 0.5))


def test_doctor_says_the_roofs_or_why_there_are_none(tmp_path, monkeypatch):
    monkeypatch.setattr(bandwidth, "find_executable", lambda name: None)
    monkeypatch.setattr(bandwidth, "cache_dir", lambda: tmp_path)
    [found] = bandwidth.findings(1, tmp_path, again=True)
    assert (found.level, found.topic) == ("info", "bandwidth"), "no roofs: no stream timed against them"
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
