"""`burtbench doctor` on fake quiet, noisy and VM trees, and once on this machine."""
import errno
import shutil
import struct
import sys
import types
from dataclasses import asdict
from pathlib import Path

import pytest

from harness.machine import doctor
from harness.machine import host as machine
from harness.machine import other_os as machine_other
from harness.measure import clocks

FIXTURES = Path(__file__).parent / "fixtures" / "machine"


class CountingPerf:
    """perf_event_open that works (as on bare metal) or fails with `fail` (as in a VM)."""

    def __init__(self, fail=None):
        self.fail = fail

    def open(self, attr, pid, cpu, group_fd, flags):
        if self.fail:
            raise OSError(self.fail, "faked")
        return 10 + attr.config

    def ioctl(self, fd, request):
        pass

    def read(self, fd, size):
        return struct.pack("=QQQ", 1000, 5, 5)

    def close(self, fd):
        pass


@pytest.fixture(autouse=True)
def linux(monkeypatch):
    """The fake trees are Linux trees; the Windows and macOS tests below switch again."""
    monkeypatch.setattr(sys, "platform", "linux")


def run_doctor(tmp_path, sys_name, proc_name, cpu, perf=None):
    """diagnose() on copies of the fixtures; its wait swaps in the later /proc/stat, as time passing would."""
    proc = Path(shutil.copytree(FIXTURES / proc_name, tmp_path / proc_name))

    def time_passes(seconds):
        shutil.copyfile(proc / "stat.later", proc / "stat")

    return doctor.diagnose(cpu, FIXTURES / sys_name, proc, perf=perf or CountingPerf(), sleep=time_passes)


def by_topic(findings):
    return {finding.topic: finding for finding in findings}


def test_quiet_tuned_machine_has_no_warnings(tmp_path):
    findings = run_doctor(tmp_path, "sys_tuned", "proc_quiet", cpu=3)
    topics = by_topic(findings)
    assert [f for f in findings if f.level == "warn"] == []
    for topic in ("governor", "turbo", "smt", "load", "isolation", "pinned core", "cpu_clocks", "memory"):
        assert topics[topic].level == "ok", topics[topic]
    assert "0% busy" in topics["pinned core"].message
    assert doctor.summary(findings) is None
    assert doctor.format_findings(findings).endswith("quiet: nothing found that should add noise")


def test_noisy_laptop_warns_about_each_cause(tmp_path):
    findings = run_doctor(tmp_path, "sys_laptop", "proc_noisy", cpu=3, perf=CountingPerf(fail=errno.ENOENT))
    topics = by_topic(findings)
    warned = {f.topic for f in findings if f.level == "warn"}
    assert warned == {"governor", "turbo", "smt", "load", "pinned core", "steal", "power"}
    assert "powersave" in topics["governor"].message and "cpupower -c 3" in topics["governor"].fix
    assert "intel_pstate/no_turbo" in topics["turbo"].fix
    assert "cpus 1,3" in topics["smt"].message
    pinned = topics["pinned core"].message
    assert "90% busy" in pinned
    assert "stress-ng (x2)" in pinned and "my (odd) name" in pinned
    assert "make" not in pinned and "cron" not in pinned  # other core / sleeping
    assert "10%" in topics["steal"].message
    assert topics["isolation"].level == "info" and "isolcpus=3" in topics["isolation"].fix
    assert "ENOENT" in topics["cpu_clocks"].message and "tsc_estimate" in topics["cpu_clocks"].message
    assert "battery BAT0" in topics["energy"].message and "RAPL intel-rapl:0" in topics["energy"].message
    line = doctor.summary(findings)
    assert line.startswith("machine not quiet (") and "governor" in line


def test_vm_reports_unknown_frequency_scaling_not_a_warning(tmp_path):
    findings = run_doctor(tmp_path, "sys_vm", "proc_vm", cpu=1, perf=CountingPerf(fail=errno.ENOENT))
    topics = by_topic(findings)
    assert topics["governor"].level == "info" and "unknown in this VM" in topics["governor"].message
    assert topics["turbo"].level == "info"
    assert topics["virtualization"].level == "info" and "virtual machine" in topics["virtualization"].message
    assert topics["energy"].message.startswith("no battery and no RAPL")
    assert "--sample-private" in topics["peak_private"].message
    assert [f.topic for f in findings if f.level == "warn"] == []


def test_unreadable_rapl_says_how_to_open_it(tmp_path, monkeypatch):
    monkeypatch.setattr(doctor.os, "access", lambda path, mode: False)
    topics = by_topic(run_doctor(tmp_path, "sys_laptop", "proc_noisy", cpu=3))
    assert topics["rapl"].level == "warn" and "chmod a+r" in topics["rapl"].fix
    assert "RAPL" not in topics["energy"].message


def test_a_core_that_does_not_exist(tmp_path):
    findings = run_doctor(tmp_path, "sys_vm", "proc_vm", cpu=9)
    assert by_topic(findings)["cpu"].level == "warn"


def test_format_shows_fixes_under_warnings(tmp_path):
    text = doctor.format_findings(run_doctor(tmp_path, "sys_laptop", "proc_noisy", cpu=3))
    lines = text.splitlines()
    governor = next(i for i, line in enumerate(lines) if line.startswith("warn") and "governor" in line)
    fix = next(line for line in lines[governor + 1:] if "fix:" in line)
    assert "fix: sudo cpupower" in fix and not lines[governor + 1].strip().startswith(("warn", "info", "ok"))
    assert max(map(len, lines)) <= 120  # wrapped under its topic, to the terminal's width
    ending = text[text.rindex("\nmachine not quiet"):]
    assert "the fix lines above" in " ".join(ending.split()) and "burtbench doctor" not in ending  # not the command just run


def test_findings_are_plain_data_for_the_manifest(tmp_path):
    record = asdict(run_doctor(tmp_path, "sys_vm", "proc_vm", cpu=1)[0])
    assert set(record) == {"level", "topic", "message", "fix"}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the real machine")
def test_this_machine(monkeypatch):
    findings = doctor.diagnose(watch_s=0.05)
    topics = by_topic(findings)
    assert {f.level for f in findings} <= {"ok", "warn", "info"}
    for topic in ("machine", "governor", "turbo", "smt", "load", "isolation", "pinned core", "cpu_clocks",
                  "memory", "energy"):
        assert topic in topics
    assert topics["memory"].level == "ok"


def fake_psutil(busy_percent, plugged):
    return types.SimpleNamespace(
        cpu_percent=lambda interval, percpu: [0.0, busy_percent],
        sensors_battery=lambda: types.SimpleNamespace(percent=80, power_plugged=plugged),
        cpu_count=lambda logical=True: 2 if logical else 1,
        cpu_freq=lambda: types.SimpleNamespace(current=2000.0, min=0.0, max=3000.0),
        virtual_memory=lambda: types.SimpleNamespace(total=8 * 2**30))


def test_windows_balanced_plan_on_battery(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setitem(sys.modules, "psutil", fake_psutil(busy_percent=40.0, plugged=False))
    monkeypatch.setattr(machine_other, "command", lambda args: "Power Scheme GUID: 381b4222  (Balanced)")
    monkeypatch.setattr(clocks, "windows_kernel32", lambda: FakeKernel32())
    topics = by_topic(doctor.diagnose(1, watch_s=0.01))
    assert topics["governor"].level == "warn" and "Balanced" in topics["governor"].message
    assert topics["smt"].level == "warn"
    assert topics["pinned core"].level == "warn" and "40% busy" in topics["pinned core"].message
    assert topics["power"].level == "warn"
    assert topics["cpu_clocks"].level == "ok" and "QueryProcessCycleTime" in topics["cpu_clocks"].message
    assert "PeakPagefileUsage" in topics["memory"].message


def test_macos_quiet_core_and_no_cycle_counter(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setitem(sys.modules, "psutil", fake_psutil(busy_percent=1.0, plugged=True))
    values = {"machdep.cpu.brand_string": "Apple M1", "hw.logicalcpu": "2", "hw.physicalcpu": "2"}
    monkeypatch.setattr(machine_other, "command", lambda args: values.get(args[-1]))
    topics = by_topic(doctor.diagnose(1, watch_s=0.01))
    assert topics["pinned core"].level == "ok"
    assert topics["governor"].level == "info" and "Low Power Mode" in topics["governor"].fix
    assert "macOS" in topics["cpu_clocks"].message and "tsc_estimate" in topics["cpu_clocks"].message
    assert "power" not in topics


class FakeKernel32:
    def __init__(self):
        self.cycles = 0

    def GetCurrentProcess(self):
        return -1

    def QueryProcessCycleTime(self, handle, cycles):
        self.cycles += 1000
        cycles.contents.value = self.cycles
        return 1
