"""The preloaded peak-memory library: a child's own VmHWM / VmPeak and core, not its spawner's size."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engines.authors import memory

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_PRELOAD and /proc are Linux's"),
    pytest.mark.skipif(memory._compiler() is None, reason="no C compiler"),
]

MiB = 1024 * 1024

ALLOCATE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char** argv) {
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 0;
    if (mib) {
        char* p = malloc(mib << 20);
        if (!p) return 2;
        memset(p, 1, mib << 20);          /* touch every page */
        printf("%d\n", p[(mib << 20) - 1]);
        free(p);
    }
    printf("line one\n");
    if (argc > 2) { fflush(stdout); for (;;) {} }   /* spin until killed */
    return 0;
}
"""


@pytest.fixture(scope="module")
def allocator(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("alloc")
    (folder / "alloc.c").write_text(ALLOCATE)
    exe = folder / "alloc"
    subprocess.run([memory._compiler(), "-O0", "-o", str(exe), str(folder / "alloc.c")], check=True)
    return exe


def run_with_report(exe: Path, args: list[str], out: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, **memory.child_env(out, **kwargs)}
    return subprocess.run([str(exe), *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)


def own_vm_hwm() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_the_library_is_built_once_and_reused():
    first = memory.preload_library()
    assert first.is_file() and first.parent.parent.name == "preload"
    stamp = first.stat().st_mtime_ns
    assert memory.preload_library() == first and first.stat().st_mtime_ns == stamp


def test_a_child_touching_64_mib_reports_its_own_peak(allocator, tmp_path):
    out = tmp_path / "peak.txt"
    proc = run_with_report(allocator, ["64"], out)
    assert proc.returncode == 0, proc.stderr
    peak = memory.read_peak(out, allocator)
    assert peak["peak_resident_bytes"] >= 64 * MiB
    assert peak["peak_resident_bytes"] < 64 * MiB + 16 * MiB
    assert peak["peak_virtual_bytes"] >= peak["peak_resident_bytes"]
    assert "VmHWM" in peak["peak_resident_source"] and "VmPeak" in peak["peak_virtual_source"]
    assert peak["ran_on_cpu"] in os.sched_getaffinity(0)


def test_a_small_child_reports_a_few_mib_not_the_spawners_size(allocator, tmp_path):
    # This Python process (the spawner) is tens of MiB; ru_maxrss of its child starts there.
    spawner = own_vm_hwm()
    out = tmp_path / "peak.txt"
    proc = run_with_report(allocator, [], out)
    assert proc.returncode == 0
    peak = memory.read_peak(out, allocator)
    assert peak["peak_resident_bytes"] < 8 * MiB
    assert peak["peak_resident_bytes"] < spawner / 2
    # What wait4 says of the same kind of child: at least the spawner's size (so useless here).
    child = subprocess.Popen([str(allocator)], stdout=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    child.returncode = 0
    assert usage.ru_maxrss * 1024 > peak["peak_resident_bytes"]


def test_pinning_is_seen_from_inside(allocator, tmp_path):
    cpu = max(os.sched_getaffinity(0))
    out = tmp_path / "peak.txt"
    env = {**os.environ, **memory.child_env(out)}
    subprocess.run([str(allocator)], env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True,
                   preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    peak = memory.read_peak(out, allocator)
    assert peak["ran_on_cpu"] == cpu and peak["cpus_allowed"] == str(cpu)


def test_the_report_variable_does_not_reach_grandchildren(tmp_path):
    # A child that starts a process of its own: only the child reports (with its own pid).
    (tmp_path / "spawn.c").write_text(
        '#include <stdlib.h>\nint main(void) { return system("env > grandchild_env.txt") == 0 ? 0 : 1; }\n')
    exe = tmp_path / "spawn"
    subprocess.run([memory._compiler(), "-o", str(exe), str(tmp_path / "spawn.c")], check=True)
    out = tmp_path / "peak.txt"
    env = {**os.environ, **memory.child_env(out)}
    proc = subprocess.Popen([str(exe)], env=env, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.wait() == 0
    assert "BURTBENCH_PEAK_OUT" not in (tmp_path / "grandchild_env.txt").read_text()
    assert "pid=%d" % proc.pid in out.read_text()
    assert memory.read_peak(out)["peak_resident_bytes"] is not None


def test_a_killed_child_reports_nothing_and_says_why(allocator, tmp_path):
    out = tmp_path / "peak.txt"
    env = {**os.environ, **memory.child_env(out, line_buffered=True)}
    proc = subprocess.Popen([str(allocator), "0", "spin"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            text=True)
    # Line-buffered stdout: the line arrives before the child ends.
    assert proc.stdout.readline().strip() == "line one"
    proc.kill()
    proc.wait()
    peak = memory.read_peak(out, allocator)
    assert peak["peak_resident_bytes"] is None and "no report" in peak["peak_resident_source"]


def test_an_existing_ld_preload_is_kept(tmp_path):
    env = memory.child_env(tmp_path / "x", base={"LD_PRELOAD": "/lib/other.so"})
    assert env["LD_PRELOAD"].endswith(":/lib/other.so")
    assert env["LD_PRELOAD"].split(":")[0].endswith(memory.LIB_NAME)


def test_a_static_program_is_recognised(tmp_path):
    (tmp_path / "s.c").write_text("int main(void) { return 0; }\n")
    exe = tmp_path / "s"
    made = subprocess.run([memory._compiler(), "-static", "-o", str(exe), str(tmp_path / "s.c")], capture_output=True)
    if made.returncode != 0:
        pytest.skip("no static C library to link against")
    assert memory.is_dynamic_elf(exe) is False
    out = tmp_path / "peak.txt"
    run_with_report(exe, [], out)
    peak = memory.read_peak(out, exe)
    assert peak["peak_resident_bytes"] is None and "statically linked" in peak["peak_resident_source"]
    assert memory.is_dynamic_elf(shutil.which("sh")) is True
    assert memory.is_dynamic_elf(tmp_path / "s.c") is None
