"""CPU clocks: perf_event_open against a faked syscall, the real syscall plumbing, Windows and macOS with
mocks, the TSC rate from fake trees, and the labelled estimate."""
import ctypes
import errno
import struct
import sys
import types
from pathlib import Path

import pytest

from harness.measure import clocks, tsc

FIXTURES = Path(__file__).parent / "fixtures" / "machine"


class FakePerf:
    """Stands in for the perf_event_open syscall, ioctl, read and close."""

    def __init__(self, counts=None, fail=None):
        self.counts = counts or {}   # config -> (value, time_enabled, time_running)
        self.fail = fail or {}       # config -> errno
        self.opened, self.ioctls, self.closed = [], [], []
        self.config_of = {}

    def open(self, attr, pid, cpu, group_fd, flags):
        self.opened.append({"type": attr.type, "size": attr.size, "config": attr.config, "flags": attr.flags,
                            "read_format": attr.read_format, "pid": pid, "cpu": cpu, "group_fd": group_fd})
        if attr.config in self.fail:
            raise OSError(self.fail[attr.config], "faked")
        fd = 100 + attr.config
        self.config_of[fd] = attr.config
        return fd

    def ioctl(self, fd, request):
        self.ioctls.append((fd, request))

    def read(self, fd, size):
        assert size == 24
        return struct.pack("=QQQ", *self.counts[self.config_of[fd]])

    def close(self, fd):
        self.closed.append(fd)


@pytest.fixture
def linux(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")


def counted(perf, proc_root="/proc"):
    counter = clocks.CycleCounter(perf=perf, proc_root=proc_root)
    counter.start()
    sum(range(10_000))
    return counter.stop()


def test_perf_counts_own_user_mode_cycles_and_instructions(linux):
    perf = FakePerf(counts={0: (1_000_000, 50, 50), 1: (2_500_000, 50, 50)})
    result = counted(perf)
    assert result["cpu_clocks"] == 1_000_000
    assert result["instructions"] == 2_500_000
    assert result["cpu_clocks_source"] == "perf_event_open"
    assert result["loop_cpu_time_s"] >= 0
    cycles, instructions = perf.opened
    assert (cycles["type"], cycles["config"], instructions["config"]) == (0, 0, 1)
    assert (cycles["pid"], cycles["cpu"], cycles["group_fd"]) == (0, -1, -1)
    assert cycles["size"] == 64
    wanted = clocks.ATTR_DISABLED | clocks.ATTR_EXCLUDE_KERNEL | clocks.ATTR_EXCLUDE_HV
    assert cycles["flags"] == wanted  # user mode only, starts disabled
    for fd in (100, 101):
        calls = [request for (called_fd, request) in perf.ioctls if called_fd == fd]
        assert calls == [clocks.PERF_EVENT_IOC_RESET, clocks.PERF_EVENT_IOC_ENABLE, clocks.PERF_EVENT_IOC_DISABLE]
    assert sorted(perf.closed) == [100, 101]


def test_perf_without_an_instructions_counter_still_counts_cycles(linux):
    result = counted(FakePerf(counts={0: (777, 9, 9)}, fail={1: errno.ENOENT}))
    assert result["cpu_clocks"] == 777
    assert result["instructions"] is None
    assert result["cpu_clocks_source"] == "perf_event_open"


def test_perf_refused_in_a_vm_is_null_with_the_errno(linux):
    result = counted(FakePerf(fail={0: errno.ENOENT, 1: errno.ENOENT}))
    assert result["cpu_clocks"] is None and result["instructions"] is None
    assert result["cpu_clocks_source"].startswith("perf_event_open: ENOENT")
    assert "VM" in result["cpu_clocks_source"]
    assert result["loop_cpu_time_s"] >= 0


def test_perf_not_permitted_names_the_paranoid_setting(linux):
    result = counted(FakePerf(fail={0: errno.EACCES}), proc_root=FIXTURES / "proc_quiet")
    assert result["cpu_clocks"] is None
    assert result["cpu_clocks_source"].startswith("perf_event_open: EACCES")
    assert "perf_event_paranoid=2" in result["cpu_clocks_source"]


def test_multiplexed_counter_is_scaled_and_labelled(linux):
    result = counted(FakePerf(counts={0: (1000, 100, 50), 1: (10, 100, 100)}))
    assert result["cpu_clocks"] == 2000
    assert "scaled" in result["cpu_clocks_source"] and "50%" in result["cpu_clocks_source"]


def test_counter_never_scheduled_is_null(linux):
    result = counted(FakePerf(counts={0: (0, 100, 0), 1: (0, 100, 0)}))
    assert result["cpu_clocks"] is None
    assert "time_running = 0" in result["cpu_clocks_source"]


def test_unknown_architecture_has_no_syscall_number(linux):
    result = counted(clocks.LinuxPerf(machine="sparc64"))
    assert result["cpu_clocks"] is None
    assert result["cpu_clocks_source"].startswith("perf_event_open: ENOSYS")
    assert "sparc64" in result["cpu_clocks_source"]


def test_syscall_numbers_per_architecture():
    assert clocks.LinuxPerf(machine="x86_64").number == 298
    assert clocks.LinuxPerf(machine="aarch64").number == 241


def test_perf_event_attr_layout_matches_the_kernel_abi():
    assert ctypes.sizeof(clocks.PerfEventAttr) == 64  # PERF_ATTR_SIZE_VER0
    assert clocks.PerfEventAttr.config.offset == 8
    assert clocks.PerfEventAttr.read_format.offset == 32
    assert clocks.PerfEventAttr.flags.offset == 40


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="real syscall")
def test_real_syscall_opens_a_software_counter():
    # Software task-clock works even in VMs without a PMU: it checks the struct, syscall, ioctls and read.
    perf = clocks.LinuxPerf()
    attr = clocks.counting_attr(1)  # PERF_COUNT_SW_TASK_CLOCK
    attr.type = 1                   # PERF_TYPE_SOFTWARE
    try:
        fd = perf.open(attr, 0, -1, -1, clocks.PERF_FLAG_FD_CLOEXEC)
    except OSError as exc:
        pytest.skip(f"perf_event_open not permitted here: {exc}")
    perf.ioctl(fd, clocks.PERF_EVENT_IOC_RESET)
    perf.ioctl(fd, clocks.PERF_EVENT_IOC_ENABLE)
    sum(range(200_000))
    perf.ioctl(fd, clocks.PERF_EVENT_IOC_DISABLE)
    value, enabled, running = struct.unpack("=QQQ", perf.read(fd, 24))
    perf.close(fd)
    assert value > 0 and enabled >= running > 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="real counters")
def test_real_cycle_counter_counts_or_says_why():
    result = counted(None)
    if result["cpu_clocks"] is None:
        assert result["cpu_clocks_source"].startswith("perf_event_open: ")
    else:
        assert result["cpu_clocks"] > 0 and result["cpu_clocks_source"].startswith("perf_event_open")


class FakeKernel32:
    def __init__(self, readings, ok=True):
        self.readings, self.ok, self.handles = list(readings), ok, []

    def GetCurrentProcess(self):
        return "pseudo-handle"

    def QueryProcessCycleTime(self, handle, cycles):
        self.handles.append(handle)
        cycles.contents.value = self.readings.pop(0)
        return self.ok


def test_windows_counts_with_query_process_cycle_time(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    kernel32 = FakeKernel32([1_000, 51_000])
    counter = clocks.CycleCounter(kernel32=kernel32)
    counter.start()
    result = counter.stop()
    assert result["cpu_clocks"] == 50_000
    assert result["cpu_clocks_source"] == "QueryProcessCycleTime"
    assert result["instructions"] is None
    assert kernel32.handles == ["pseudo-handle", "pseudo-handle"]


def test_windows_failure_is_null_with_reason(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    counter = clocks.CycleCounter(kernel32=FakeKernel32([0, 0], ok=False))
    counter.start()
    result = counter.stop()
    assert result["cpu_clocks"] is None and "QueryProcessCycleTime failed" in result["cpu_clocks_source"]


def test_macos_has_no_cycle_counter(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    counter = clocks.CycleCounter()
    counter.start()
    result = counter.stop()
    assert result["cpu_clocks"] is None and result["cpu_clocks_source"].startswith("macOS")
    assert result["loop_cpu_time_s"] >= 0


def test_cpu_time_grows_with_work():
    before = clocks.cpu_time_s()
    sum(range(2_000_000))
    assert clocks.cpu_time_s() > before


def test_tsc_rate_prefers_sysfs_tsc_freq_khz(tmp_path, linux):
    path = tmp_path / "devices/system/cpu/cpu0/tsc_freq_khz"
    path.parent.mkdir(parents=True)
    path.write_text("2995200\n")
    assert tsc.tsc_rate_hz(tmp_path, FIXTURES / "proc_vm") == (2_995_200_000.0, "sysfs cpu0/tsc_freq_khz")


def test_tsc_rate_falls_back_to_cpuinfo_mhz(tmp_path, linux):
    hz, source = tsc.tsc_rate_hz(tmp_path, FIXTURES / "proc_vm")
    assert hz == pytest.approx(2596.150e6)
    assert source == "/proc/cpuinfo cpu MHz"


def test_tsc_rate_unknown_says_why(tmp_path, linux):
    hz, source = tsc.tsc_rate_hz(tmp_path, tmp_path)
    assert hz is None and "cpu MHz" in source


def test_tsc_rate_elsewhere_uses_psutil_nominal(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setitem(sys.modules, "psutil", types.SimpleNamespace(
        cpu_freq=lambda: types.SimpleNamespace(current=1800.0, min=0.0, max=3000.0)))
    assert tsc.tsc_rate_hz() == (3_000_000_000.0, "psutil.cpu_freq().max (nominal)")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the real /proc")
def test_real_tsc_rate():
    hz, source = tsc.tsc_rate_hz()
    assert hz is None or hz > 1e8, source


def test_estimate_fills_a_missing_count_and_labels_it():
    reason = "perf_event_open: ENOENT: no hardware cycle counter exposed"
    result = tsc.estimate_cycles({"cpu_clocks": None, "instructions": None, "cpu_clocks_source": reason,
                                     "loop_cpu_time_s": 0.5}, 2e9, "/proc/cpuinfo cpu MHz")
    assert result["cpu_clocks"] == 1_000_000_000
    assert result["cpu_clocks_source"] == "tsc_estimate"
    assert "2000.000 MHz from /proc/cpuinfo cpu MHz" in result["cpu_clocks_note"]
    assert reason in result["cpu_clocks_note"]


def test_estimate_leaves_a_real_count_alone():
    real = {"cpu_clocks": 123, "cpu_clocks_source": "perf_event_open", "loop_cpu_time_s": 1.0}
    assert tsc.estimate_cycles(real, 2e9, "x") == real


def test_estimate_without_a_rate_stays_null():
    result = tsc.estimate_cycles({"cpu_clocks": None, "cpu_clocks_source": "perf_event_open: ENOENT",
                                     "loop_cpu_time_s": 0.5}, None, "no cpu MHz")
    assert result["cpu_clocks"] is None
    assert "perf_event_open: ENOENT" in result["cpu_clocks_source"] and "no cpu MHz" in result["cpu_clocks_source"]
