"""Machine description from fake /sys and /proc trees, this machine, and the macOS/Windows branches."""
import os
import shutil
import sys
import types
from pathlib import Path

import pytest

from harness.machine import host as machine
from harness.machine import other_os as machine_other

FIXTURES = Path(__file__).parent / "fixtures" / "machine"
CPU = "devices/system/cpu"


@pytest.fixture
def linux(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")


def copy_tree(tmp_path, name) -> Path:
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name))


def assert_every_null_has_a_source(facts):
    for key, value in facts.items():
        if value is None and not key.endswith("_source"):
            source = key.removesuffix("_bytes") + "_source"  # peak_private_bytes -> peak_private_source
            assert facts.get(source), f"{key} is null without a reason"


def test_laptop_is_powersave_turbo_smt(linux):
    facts = machine.describe(FIXTURES / "sys_laptop", FIXTURES / "proc_noisy")
    assert facts["cpu_model"] == "Intel(R) Core(TM) i7-1165G7 @ 2.80GHz"
    assert facts["governor"] == "powersave"
    assert facts["turbo"] is True and facts["turbo_source"] == "intel_pstate/no_turbo=0"
    assert facts["smt"] is True
    assert (facts["logical_cores"], facts["physical_cores"]) == (4, 2)
    assert facts["cpu_mhz"]["current"] == 1200.0
    assert facts["cpu_mhz"]["nominal"] == 2800.0
    assert facts["cpu_mhz"]["max"] == 4700.0
    assert facts["isolated_cores"] == []
    assert facts["virtualized"] is False
    assert facts["load_average"] == [3.5, 2.1, 1.0]
    assert facts["memory_total_bytes"] == 16303916 * 1024


def test_tuned_machine_is_performance_no_turbo_isolated(linux):
    facts = machine.describe(FIXTURES / "sys_tuned", FIXTURES / "proc_quiet")
    assert facts["governor"] == "performance"
    assert facts["turbo"] is False
    assert facts["smt"] is False and "smt/control=off" in facts["smt_source"]
    assert facts["isolated_cores"] == [3]
    assert facts["physical_cores"] == 4


def test_vm_without_cpufreq_reports_unknowns_with_reasons(linux):
    facts = machine.describe(FIXTURES / "sys_vm", FIXTURES / "proc_vm")
    assert facts["governor"] is None and "cpufreq" in facts["governor_source"]
    assert facts["turbo"] is None
    assert facts["smt"] is False and "notsupported" in facts["smt_source"]
    assert facts["virtualized"] is True and "hypervisor" in facts["virtualized_source"]
    assert facts["cpu_mhz"]["current"] == 2596.15
    assert facts["cpu_mhz"]["nominal"] is None and "cpuinfo" in facts["cpu_mhz"]["source"]
    assert_every_null_has_a_source(facts)


def test_mixed_governors_are_named_per_core(tmp_path, linux):
    sys_root = copy_tree(tmp_path, "sys_tuned")
    (sys_root / CPU / "cpu1/cpufreq/scaling_governor").write_text("powersave\n")
    facts = machine.describe(sys_root, FIXTURES / "proc_quiet")
    assert facts["governor"] == "mixed: cpu0=performance, cpu1=powersave, cpu2=performance, cpu3=performance"
    assert machine.governors(sys_root)[1] == "powersave"


def test_boost_switch_of_acpi_cpufreq(tmp_path, linux):
    sys_root = copy_tree(tmp_path, "sys_vm")
    (sys_root / CPU / "cpufreq").mkdir()
    (sys_root / CPU / "cpufreq/boost").write_text("1\n")
    facts = machine.describe(sys_root, FIXTURES / "proc_vm")
    assert facts["turbo"] is True and facts["turbo_source"] == "cpufreq/boost=1"


def test_smt_from_thread_siblings_when_smt_dir_is_absent(tmp_path, linux):
    sys_root = copy_tree(tmp_path, "sys_laptop")
    shutil.rmtree(sys_root / CPU / "smt")
    facts = machine.describe(sys_root, FIXTURES / "proc_noisy")
    assert facts["smt"] is True and facts["smt_source"] == "topology/thread_siblings_list"


def test_empty_trees_give_nulls_with_reasons(tmp_path, linux):
    (tmp_path / "sys").mkdir()
    (tmp_path / "proc").mkdir()
    facts = machine.describe(tmp_path / "sys", tmp_path / "proc")
    assert facts["governor"] is None and facts["smt"] is None and facts["isolated_cores"] is None
    assert facts["memory_total_bytes"] is None and facts["load_average"] is None
    assert_every_null_has_a_source(facts)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the real /sys and /proc")
def test_this_machine():
    facts = machine.describe()
    assert facts["logical_cores"] == os.cpu_count()
    assert facts["cpu_model"]
    assert facts["memory_total_bytes"] > 0
    assert len(facts["load_average"]) == 3
    assert_every_null_has_a_source(facts)


def test_macos_branch_reads_sysctl(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    values = {"machdep.cpu.brand_string": "Apple M2", "hw.logicalcpu": "8", "hw.physicalcpu": "8",
              "hw.memsize": "17179869184", "kern.hv_vmm_present": "0"}
    monkeypatch.setattr(machine_other, "command", lambda args: values.get(args[-1]))
    facts = machine.describe()
    assert facts["cpu_model"] == "Apple M2"
    assert (facts["logical_cores"], facts["physical_cores"], facts["smt"]) == (8, 8, False)
    assert facts["memory_total_bytes"] == 17179869184
    assert facts["virtualized"] is False
    assert facts["governor"] is None and "macOS" in facts["governor_source"]
    assert facts["cpu_mhz"]["nominal"] is None and "Apple silicon" in facts["cpu_mhz"]["source"]
    assert_every_null_has_a_source(facts)


class FakeKey:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_windows_branch_reads_registry_powercfg_and_psutil(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    registry = {"ProcessorNameString": "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz ", "~MHz": 2112}
    monkeypatch.setitem(sys.modules, "winreg", types.SimpleNamespace(
        HKEY_LOCAL_MACHINE="HKLM", OpenKey=lambda root, path: FakeKey(),
        QueryValueEx=lambda key, name: (registry[name], 1)))
    monkeypatch.setattr(machine_other, "command", lambda args: (
        "Power Scheme GUID: 8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c  (High performance)"
        if args[0] == "powercfg" else None))
    monkeypatch.setitem(sys.modules, "psutil", types.SimpleNamespace(
        cpu_count=lambda logical=True: 8 if logical else 4,
        cpu_freq=lambda: types.SimpleNamespace(current=1800.0, min=400.0, max=4200.0),
        virtual_memory=lambda: types.SimpleNamespace(total=16 * 2**30)))
    facts = machine.describe()
    assert facts["cpu_model"] == "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz"
    assert facts["governor"] == "High performance"
    assert facts["cpu_mhz"] == {"current": 1800.0, "nominal": 2112.0, "max": 4200.0,
                                "source": "psutil.cpu_freq (current, max), registry ~MHz (nominal)"}
    assert (facts["logical_cores"], facts["physical_cores"], facts["smt"]) == (8, 4, True)
    assert facts["memory_total_bytes"] == 16 * 2**30
    assert facts["load_average"] is None and "Windows" in facts["load_average_source"]
    assert_every_null_has_a_source(facts)
