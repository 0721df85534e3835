"""Peak memory: parsed from fake /proc trees, sampled for real, and the Windows/macOS branches with mocks."""
import sys
import types
from pathlib import Path

import pytest

from harness.measure import memory

FIXTURES = Path(__file__).parent / "fixtures" / "machine"
KB = 1024


def fake_proc(tmp_path, status=None, rollup=None) -> Path:
    (tmp_path / "self").mkdir(parents=True)
    if status is not None:
        (tmp_path / "self/status").write_text(status)
    if rollup is not None:
        (tmp_path / "self/smaps_rollup").write_text(rollup)
    return tmp_path


def test_linux_peaks_come_from_vmhwm_and_vmpeak(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    peaks = memory.peak_memory(FIXTURES / "proc_quiet")
    assert peaks["peak_resident_bytes"] == 123456 * KB
    assert peaks["peak_virtual_bytes"] == 812344 * KB
    assert peaks["peak_resident_source"] == "/proc/self/status VmHWM"
    assert peaks["peak_private_bytes"] is None
    assert "--sample-private" in peaks["peak_private_source"]


def test_missing_vm_fields_are_null_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    proc = fake_proc(tmp_path, status="Name:\tpython3\nVmRSS:\t  1000 kB\nThreads:\t1\n")
    peaks = memory.peak_memory(proc)
    assert peaks["peak_resident_bytes"] is None and peaks["peak_virtual_bytes"] is None
    assert peaks["peak_resident_source"] == "no VmHWM in /proc/self/status"
    assert peaks["peak_virtual_source"] == "no VmPeak in /proc/self/status"


def test_sampled_private_peak_is_reported_as_given(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    peaks = memory.peak_memory(FIXTURES / "proc_quiet", private=(4096, "sampled"))
    assert (peaks["peak_private_bytes"], peaks["peak_private_source"]) == (4096, "sampled")


def test_private_bytes_from_smaps_rollup():
    value, source = memory.read_private_bytes(FIXTURES / "proc_quiet")
    assert value == (5000 + 90000 + 1000) * KB
    assert source == "smaps_rollup Private_Clean+Private_Dirty+Swap"


def test_private_bytes_fall_back_to_rssanon_and_swap(tmp_path):
    proc = fake_proc(tmp_path, status=(FIXTURES / "proc_quiet/self/status").read_text())
    assert memory.read_private_bytes(proc) == ((90000 + 1000) * KB, "status RssAnon+VmSwap")


def test_private_bytes_unreadable_says_why(tmp_path):
    value, source = memory.read_private_bytes(fake_proc(tmp_path))
    assert value is None and "smaps_rollup" in source


def test_sampler_keeps_the_highest_sample(tmp_path):
    proc = fake_proc(tmp_path)
    sampler = memory.PrivateSampler(interval_s=0.02, proc_root=proc)
    for dirty_kb in (100, 300, 200):
        (proc / "self/smaps_rollup").write_text(
            f"Private_Clean:  0 kB\nPrivate_Dirty:  {dirty_kb} kB\nSwap:  0 kB\n")
        sampler.sample()
    peak, source = sampler.stop()
    assert peak == 300 * KB
    assert source.startswith("smaps_rollup") and "20 ms" in source


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the real /proc")
def test_sampler_sees_a_real_allocation():
    sampler = memory.PrivateSampler()
    sampler.start()
    block = bytearray(64 * 1024 * 1024)  # zero-filled: every page is touched
    peak, _ = sampler.stop()
    assert peak >= len(block)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the real /proc")
def test_real_linux_readings():
    peaks = memory.peak_memory()
    assert peaks["peak_resident_bytes"] > 1024 * KB
    assert peaks["peak_virtual_bytes"] >= peaks["peak_resident_bytes"]


def fake_psutil(**memory_info):
    process = types.SimpleNamespace(memory_info=lambda: types.SimpleNamespace(**memory_info))
    return types.SimpleNamespace(Process=lambda pid=None: process)


def test_windows_peaks_are_working_set_and_pagefile(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setitem(sys.modules, "psutil", fake_psutil(peak_wset=50_000_000, peak_pagefile=40_000_000,
                                                           rss=30_000_000, vms=90_000_000))
    peaks = memory.peak_memory()
    assert peaks["peak_resident_bytes"] == 50_000_000
    assert peaks["peak_private_bytes"] == 40_000_000
    assert "PeakPagefileUsage" in peaks["peak_private_source"]
    assert peaks["peak_virtual_bytes"] is None and "Windows" in peaks["peak_virtual_source"]


def test_windows_without_psutil_is_null_with_reason(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setitem(sys.modules, "psutil", None)  # makes `import psutil` raise ImportError
    peaks = memory.peak_memory()
    assert all(peaks[key] is None for key in ("peak_resident_bytes", "peak_private_bytes"))
    assert "psutil unavailable" in peaks["peak_resident_source"]


def test_macos_ru_maxrss_is_bytes(monkeypatch):
    import resource

    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(resource, "getrusage", lambda who: types.SimpleNamespace(ru_maxrss=123_456_789))
    peaks = memory.peak_memory()
    assert peaks["peak_resident_bytes"] == 123_456_789  # not multiplied by 1024 as on Linux
    assert peaks["peak_virtual_bytes"] is None
    # No libproc here: the private figure is null and says so.
    assert peaks["peak_private_bytes"] is None and "proc_pid_rusage" in peaks["peak_private_source"]


class FakeLibproc:
    def __init__(self, footprint, result=0):
        self.footprint, self.result, self.flavors = footprint, result, []

    def proc_pid_rusage(self, pid, flavor, info):
        self.flavors.append(flavor)
        info.contents.ri_lifetime_max_phys_footprint = self.footprint
        info.contents.ri_phys_footprint = 1  # a neighbouring field must not be what is reported
        return self.result


def test_macos_phys_footprint_peak_from_proc_pid_rusage():
    libproc = FakeLibproc(987_654_321)
    value, source = memory.macos_lifetime_max_footprint(libproc)
    assert value == 987_654_321 and "lifetime_max_phys_footprint" in source
    assert libproc.flavors == [memory.RUSAGE_INFO_V4]


def test_macos_phys_footprint_failure_is_null_with_reason():
    value, source = memory.macos_lifetime_max_footprint(FakeLibproc(5, result=-1))
    assert value is None and "failed" in source


def test_rusage_info_v4_layout_matches_the_sdk():
    import ctypes

    assert ctypes.sizeof(memory.RusageInfoV4) == 16 + 35 * 8
    assert memory.RusageInfoV4.ri_lifetime_max_phys_footprint.offset == 16 + 28 * 8


def test_sampler_thread_stops_cleanly(tmp_path):
    proc = fake_proc(tmp_path, rollup=(FIXTURES / "proc_quiet/self/smaps_rollup").read_text())
    sampler = memory.PrivateSampler(interval_s=0.001, proc_root=proc)
    sampler.start()
    peak, _ = sampler.stop()
    assert peak == 96000 * KB
    assert not sampler._thread.is_alive()

