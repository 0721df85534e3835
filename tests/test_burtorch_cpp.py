"""The C++ unit tests of burtorch_ext/tests/, one pytest item per C++ TEST_CASE.

Names are read from the sources, so collection needs no build; a guard test checks that the
binary registers exactly those names, so none is silently left out.
"""
from __future__ import annotations

import os
import re
import subprocess

import pytest

try:
    from tests.test_burtorch_build import SOURCE, built_executable
except ImportError:
    from test_burtorch_build import SOURCE, built_executable

CASE = re.compile(r'^TEST_CASE\("((?:[^"\\]|\\.)*)"\)', re.MULTILINE)
NAMES = sorted(name for path in (SOURCE / "tests").glob("test_*.cpp") for name in CASE.findall(path.read_text()))


def binary():
    return built_executable("burtorch-tests")


def test_every_cpp_test_is_collected():
    listed = subprocess.run([binary(), "--list"], capture_output=True, text=True, check=True).stdout.splitlines()
    assert sorted(listed) == NAMES
    assert len(NAMES) >= 40


@pytest.mark.parametrize("name", NAMES)
def test_cpp(name, tmp_path):
    run = subprocess.run([binary(), name], capture_output=True, text=True,
                         env={**os.environ, "BURTORCH_TEST_TMP": str(tmp_path)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"ok   {name}" in run.stdout
