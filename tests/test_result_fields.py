"""Every trial writer — the Python worker and the native drivers (ours, Burn's) — reports exactly the fields of
results.CHILD_FIELDS, and every one of them is a Trial field (or a measure the parent replaces)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engines.base import find_executable
from harness.store.results import CHILD_FIELDS, OPTIONAL_CHILD_FIELDS, Trial
from tests.tests_support import worker_argv

ROOT = Path(__file__).resolve().parents[1]
COUNTS = ["--iterations", "20", "--warmup", "1", "--blocks", "2"]
# Read by the parent for its checks and estimates, not stored as they come.
PARENT_READS = {"status", "outputs", "loop_cpu_time_s"}


def fields_of(stdout: str) -> set[str]:
    return set(json.loads(stdout.strip().splitlines()[-1]))


def test_the_python_worker_reports_the_child_fields():
    done = subprocess.run(worker_argv("micrograd/eager/python/cpu", "tiny", {"a": -41.0, "b": 2.0}, *COUNTS),
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert fields_of(done.stdout) == CHILD_FIELDS | {"timed_as"}  # per_iter_s: the runner's


def test_the_native_driver_reports_the_child_fields():
    driver = find_executable("burtorch-bench")
    if driver is None:
        pytest.skip("burtorch-bench is not built (make setup)")
    done = subprocess.run([driver, "tiny", *COUNTS, "--param", "a=-41.0", "--param", "b=2.0"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert fields_of(done.stdout) == CHILD_FIELDS | OPTIONAL_CHILD_FIELDS  # its own per_iter_s, and timed_as


def test_the_burn_driver_reports_the_child_fields():
    from engines import burn

    if not burn.is_built():
        pytest.skip("burn-bench is not built (make burn; without internet: make burn CARGO_VENDOR=DIR)")
    done = subprocess.run([str(burn.executable()), "tiny", *COUNTS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert fields_of(done.stdout) == CHILD_FIELDS | OPTIONAL_CHILD_FIELDS


def test_every_child_field_has_a_place_in_the_trial():
    assert (CHILD_FIELDS | OPTIONAL_CHILD_FIELDS) - PARENT_READS <= set(Trial.__dataclass_fields__)
