"""Energy sources read from fake sysfs trees and a fake WMI query; the total / OS / task split."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from harness.measure import energy, energy_sources

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "energy"


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def tree(tmp_path: Path, name: str) -> Path:
    """A writable copy of a fixture sysfs tree."""
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    return root


def rapl_tree(tmp_path: Path) -> Path:
    root = tmp_path / "rapl"
    for domain, files in json.loads((FIXTURES / "rapl.json").read_text()).items():
        if domain.startswith("_"):
            continue
        folder = root / "class" / "powercap" / domain
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).write_text(text + "\n")
    return root


def write(root: Path, relative: str, text: str) -> None:
    (root / relative).write_text(text + "\n")


def measure(root: Path, change, seconds: float, idle_w: float | None = 2.0, kind: str = "auto") -> dict:
    """Select the source, start a meter, apply `change` to the tree, let `seconds` pass, stop."""
    source, why = energy.select_source(kind, root, platform="linux")
    assert source is not None, why
    clock = FakeClock()
    meter = energy.EnergyMeter(source, idle_w, clock)
    meter.start()
    change(root)
    clock.now += seconds
    return meter.stop()


BAT0 = "class/power_supply/BAT0"
BAT1 = "class/power_supply/BAT1"


def test_battery_energy_now_in_microwatt_hours(tmp_path):
    root = tree(tmp_path, "battery_energy")
    reading = measure(root, lambda r: write(r, f"{BAT0}/energy_now", "49990000"), seconds=3.0)
    # 10,000 µWh = 36 J in 3 s; idle 2 W over those 3 s is the OS's share.
    assert reading["energy_total_j"] == pytest.approx(36.0)
    assert reading["energy_os_j"] == pytest.approx(6.0)
    assert reading["energy_task_j"] == pytest.approx(30.0)
    assert reading["energy_source"] == "battery BAT0 (energy_now)"


def test_battery_charge_times_mean_voltage(tmp_path):
    root = tree(tmp_path, "battery_charge")

    def drain(r):
        write(r, f"{BAT1}/charge_now", "3999000")  # 1,000 µAh = 3.6 C
        write(r, f"{BAT1}/voltage_now", "11000000")  # sagged from 11.1 V

    reading = measure(root, drain, seconds=2.0, idle_w=1.0)
    assert reading["energy_total_j"] == pytest.approx(3.6 * 11.05)
    assert reading["energy_task_j"] == pytest.approx(3.6 * 11.05 - 2.0)
    assert "charge_now x voltage_now" in reading["energy_source"]


def test_a_battery_that_starts_charging_mid_run_is_rejected(tmp_path):
    root = tree(tmp_path, "battery_energy")

    def plug_in(r):
        write(r, f"{BAT0}/status", "Charging")
        write(r, f"{BAT0}/energy_now", "50010000")

    reading = measure(root, plug_in, seconds=5.0)
    assert reading["energy_total_j"] is None and reading["energy_task_j"] is None and reading["energy_os_j"] is None
    assert "charging" in reading["energy_source"]


def test_on_ac_power_auto_finds_no_source_and_battery_readings_are_rejected(tmp_path):
    root = tree(tmp_path, "battery_energy")
    write(root, f"{BAT0}/status", "Full")
    source, why = energy.select_source("auto", root, platform="linux")
    assert source is None and "'Full'" in why and "RAPL" in why
    reading = measure(root, lambda r: None, seconds=5.0, kind="battery")
    assert reading["energy_total_j"] is None and "not running on battery" in reading["energy_source"]


def test_rapl_sums_packages_unwraps_and_ignores_sub_domains(tmp_path):
    root = rapl_tree(tmp_path)

    def work(r):
        write(r, "class/powercap/intel-rapl:0/energy_uj", "4000000")  # wrapped: 1 J before, 4 J after
        write(r, "class/powercap/intel-rapl:0:0/energy_uj", "900000000")  # part of package 0 already
        write(r, "class/powercap/intel-rapl:1/energy_uj", "7000000")  # 2 J
    reading = measure(root, work, seconds=0.5, idle_w=4.0)
    assert reading["energy_total_j"] == pytest.approx(7.0)
    assert reading["energy_os_j"] == pytest.approx(2.0)
    assert reading["energy_task_j"] == pytest.approx(5.0)
    assert reading["energy_source"] == "rapl package-0+package-1"


def test_a_reading_shorter_than_the_update_period_is_null(tmp_path):
    root = rapl_tree(tmp_path)
    reading = measure(root, lambda r: write(r, "class/powercap/intel-rapl:1/energy_uj", "5000100"), seconds=0.0004)
    assert reading["energy_total_j"] is None
    assert "shorter than the counter's update period" in reading["energy_source"]


def test_a_counter_that_did_not_move_is_null(tmp_path):
    root = tree(tmp_path, "battery_energy")
    reading = measure(root, lambda r: None, seconds=4.0)
    assert reading["energy_total_j"] is None and "did not change" in reading["energy_source"]


def test_without_an_idle_baseline_only_the_total_is_given(tmp_path):
    root = tree(tmp_path, "battery_energy")
    reading = measure(root, lambda r: write(r, f"{BAT0}/energy_now", "49999000"), seconds=2.0, idle_w=None)
    assert reading["energy_total_j"] == pytest.approx(3.6)
    assert reading["energy_task_j"] is None and reading["energy_os_j"] is None
    assert "no idle baseline" in reading["energy_source"]


def test_idle_power_is_energy_over_the_idle_time(tmp_path):
    root = tree(tmp_path, "battery_energy")
    source, _ = energy.select_source("battery", root, platform="linux")
    clock = FakeClock()

    def idle(seconds):
        write(root, f"{BAT0}/energy_now", "49995000")  # 5,000 µWh = 18 J
        clock.now += seconds

    watts, why = energy.idle_power_w(source, 6.0, sleep=idle, clock=clock)
    assert why is None and watts == pytest.approx(3.0)


def test_rapl_readable_by_root_only_says_so(tmp_path, monkeypatch):
    root = rapl_tree(tmp_path)
    real = Path.read_text

    def denied(self, *args, **kwargs):
        if self.name == "energy_uj":
            raise PermissionError(13, "Permission denied")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", denied)
    source, why = energy.select_source("rapl", root, platform="linux")
    assert source is None and "root only" in why


def test_no_battery_and_no_rapl_gives_the_reasons(tmp_path):
    root = tree(tmp_path, "none")
    source, why = energy.select_source("auto", root, platform="linux")
    assert source is None and "no battery" in why and "no RAPL package domain" in why
    assert energy.select_source("none", root, platform="linux") == (None, "energy not measured (--energy none)")
    with pytest.raises(ValueError):
        energy.select_source("gpu", root)


def test_macos_has_no_source():
    source, why = energy.select_source("auto", platform="darwin")
    assert source is None and "macOS" in why


def test_describe_says_whether_the_machine_ran_on_battery(tmp_path):
    on_battery = tree(tmp_path, "battery_energy")
    source, _ = energy.select_source("auto", on_battery, platform="linux")
    described = energy.describe(source, sys_root=on_battery, platform="linux")
    assert described["energy_source"] == "battery BAT0 (energy_now)" and described["on_battery"] is True
    write(on_battery, f"{BAT0}/status", "Charging")
    assert energy.describe(source, sys_root=on_battery, platform="linux")["on_battery"] is False
    none = tree(tmp_path, "none")
    described = energy.describe(None, "no source", sys_root=none, platform="linux")
    assert described["energy_source"] is None and described["on_battery"] is None
    assert described["energy_source_reason"] == "no source"


# ---- Windows, through a fake of the PowerShell WMI query ----------------------------------

def wmi(remaining_mwh=50_000, charging=False, discharging=True, power_online=False, capabilities=0x80000000):
    return {"status": [{"RemainingCapacity": remaining_mwh, "Charging": charging, "Discharging": discharging,
                        "PowerOnline": power_online}],
            "capabilities": [capabilities]}


def windows_reading(before: dict, after: dict, seconds: float, idle_w: float = 14.04) -> dict:
    answers = iter([before, before, after])  # select_source reads once to check, then start, stop
    source, why = energy.select_source("auto", platform="win32", windows_query=lambda: next(answers))
    assert source is not None, why
    clock = FakeClock()
    meter = energy.EnergyMeter(source, idle_w, clock)
    meter.start()
    clock.now += seconds
    return meter.stop()


def test_windows_battery_remaining_capacity_in_milliwatt_hours():
    # The paper's cold state: 3.9 mWh per second = 14.04 W.
    reading = windows_reading(wmi(50_000), wmi(49_961), seconds=10.0)
    assert reading["energy_total_j"] == pytest.approx(39 * 3.6)
    assert reading["energy_os_j"] == pytest.approx(140.4)
    assert reading["energy_task_j"] == pytest.approx(0.0, abs=1e-9)


def test_windows_battery_charging_mid_run_is_rejected():
    reading = windows_reading(wmi(50_000), wmi(50_100, charging=True, discharging=False), seconds=10.0)
    assert reading["energy_total_j"] is None and "charging" in reading["energy_source"]


@pytest.mark.parametrize("state, why", [
    (wmi(capabilities=0x80000000 | energy_sources.BATTERY_CAPACITY_RELATIVE), "relative units"),
    (wmi(power_online=True, discharging=False), "on AC power"),
    ({"status": [], "capabilities": []}, "no battery"),
])
def test_windows_battery_that_cannot_be_used(state, why):
    source, reason = energy.select_source("auto", platform="win32", windows_query=lambda: state)
    assert source is None and why in reason


def test_asking_for_the_battery_gets_none_when_there_is_no_usable_one():
    relative = wmi(capabilities=energy_sources.BATTERY_CAPACITY_RELATIVE)
    source, why = energy.select_source("battery", platform="win32", windows_query=lambda: relative)
    assert source is None and "relative units" in why


def test_a_rapl_window_long_enough_to_wrap_twice_is_null(tmp_path):
    root = rapl_tree(tmp_path)
    for package in ("intel-rapl:0", "intel-rapl:1"):
        write(root, f"class/powercap/{package}/max_energy_range_uj", "10000000")  # a 10 J range
        write(root, f"class/powercap/{package}/energy_uj", "1000000")
    reading = measure(root, lambda r: write(r, "class/powercap/intel-rapl:1/energy_uj", "3000000"),
                      seconds=3.0, idle_w=4.0)
    assert reading["energy_total_j"] is None and "wrapped more than once" in reading["energy_source"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="suite_meter reads this OS's own sources")
def test_suite_meter_measures_idle_first_and_describes_it(tmp_path):
    root = tree(tmp_path, "battery_energy")
    clock = FakeClock()

    def idle(seconds):
        write(root, f"{BAT0}/energy_now", "49990000")  # 36 J
        clock.now += seconds

    meter, described = energy.suite_meter("auto", 12.0, root, sleep=idle, clock=clock)
    assert isinstance(meter, energy.EnergyMeter) and meter.idle_w == pytest.approx(3.0)
    assert described["idle_w"] == pytest.approx(3.0) and described["idle_source"] is None
    assert described["on_battery"] is True and described["energy_source"] == "battery BAT0 (energy_now)"
    none = tree(tmp_path, "none")
    meter, described = energy.suite_meter("auto", 5.0, none)
    reading = meter.stop()
    assert reading["energy_total_j"] is None and "no battery" in reading["energy_source"]
    assert described["energy_source"] is None and "no battery" in described["energy_source_reason"]
