"""Pinning and priority: real on Linux, Windows and macOS branches with a fake psutil."""
import os
import subprocess
import sys
import types

import pytest

from harness.measure import affinity

linux_only = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")


def test_cpu_lists_round_trip():
    assert affinity.parse_cpus("0-2,5") == [0, 1, 2, 5]
    assert affinity.parse_cpus("\n") == []
    assert affinity.format_cpus([5, 0, 2, 1]) == "0-2,5"
    assert affinity.format_cpus([3]) == "3"


@pytest.mark.parametrize("bad", [-1, "1", 1.0, True, None])
def test_validate_rejects_what_is_not_a_core_number(bad):
    assert "expected a core number" in affinity.validate_cpu(bad)


def test_validate_rejects_a_core_this_process_cannot_use():
    message = affinity.validate_cpu(max(affinity.allowed_cpus()) + 1000)
    assert f"cores {affinity.format_cpus(affinity.allowed_cpus())}" in message


def test_default_cpu_is_the_last_allowed_core_and_valid():
    assert affinity.default_cpu() == max(affinity.allowed_cpus())
    assert affinity.validate_cpu(affinity.default_cpu()) is None


@linux_only
def test_a_child_spawned_while_pinned_runs_on_the_core_from_its_start_and_the_runner_is_unpinned():
    cpu = affinity.default_cpu()
    before = os.sched_getaffinity(0)
    with affinity.pinned_spawning(cpu):
        child = subprocess.Popen([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                                 stdout=subprocess.PIPE, text=True)
    assert child.communicate()[0].strip() == f"[{cpu}]"
    assert os.sched_getaffinity(0) == before


@linux_only
def test_pin_process_pins_a_running_child():
    cpu = affinity.default_cpu()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert affinity.pin_process(child.pid, cpu) is None
        assert os.sched_getaffinity(child.pid) == {cpu}
    finally:
        child.kill()
        child.wait()


class FakeProcess:
    calls: list = []

    def __init__(self, pid=None):
        self.pid = pid

    def cpu_affinity(self, cpus=None):
        if cpus is None:
            return [0, 1, 2, 3]
        FakeProcess.calls.append(("cpu_affinity", self.pid, cpus))


@pytest.fixture
def windows(monkeypatch):
    FakeProcess.calls = []
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.delattr(os, "sched_setaffinity", raising=False)
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setitem(sys.modules, "psutil", types.SimpleNamespace(Process=FakeProcess))


def test_windows_pins_with_psutil(windows):
    assert affinity.pin_process(4321, 3) is None
    assert FakeProcess.calls == [("cpu_affinity", 4321, [3])]


def test_windows_default_cpu_from_psutil(windows):
    assert affinity.default_cpu() == 3


def test_macos_cannot_pin(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.delattr(os, "sched_setaffinity", raising=False)
    assert "macOS" in affinity.pin_process(1234, 0)
