"""Builds burtorch_ext/ with CMake for the other test_burtorch_* files, and tests the build itself.

The tree is configured once into build/burtorch-tests/ and rebuilt incrementally, so after the
first run a test session pays only for what changed. The driver and the module come from the
installed project (`pip install -e .`) when present, else from this tree.
"""
from __future__ import annotations

import functools
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "burtorch_ext"
BUILD = ROOT / "build" / "burtorch-tests"


def _configure(build: Path, extra_env: dict | None = None, extra_args: tuple = ()) -> subprocess.CompletedProcess:
    args = ["cmake", "-S", str(SOURCE), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython_EXECUTABLE={sys.executable}", *extra_args]
    if shutil.which("ninja"):
        args += ["-G", "Ninja"]
    try:
        import pybind11

        args.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
    except ImportError:
        pass
    env = {**os.environ, **(extra_env or {})}
    return subprocess.run(args, capture_output=True, text=True, env=env)


@functools.lru_cache(maxsize=None)
def build_targets(*targets: str) -> Path:
    """Builds the named CMake targets in build/burtorch-tests/ and returns that folder."""
    if not (BUILD / "CMakeCache.txt").exists():
        configured = _configure(BUILD)
        assert configured.returncode == 0, configured.stdout + configured.stderr
    built = subprocess.run(["nice", "cmake", "--build", str(BUILD), "-j2", "--target", *targets],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]
    return BUILD


def driver_path() -> Path:
    """The installed burtorch-bench beside this interpreter, else one built here."""
    installed = Path(sys.executable).parent / "burtorch-bench"
    if installed.is_file() and os.access(installed, os.X_OK):
        return installed
    return build_targets("burtorch-bench") / "burtorch-bench"


def import_burtorch():
    """The installed module, else the one built here."""
    try:
        return importlib.import_module("burtorch")
    except ImportError:
        build = build_targets("burtorch")
        sys.path.insert(0, str(build))
        return importlib.import_module("burtorch")


def test_standalone_build_makes_driver_tests_and_module():
    build = build_targets("burtorch-bench", "burtorch-tests", "burtorch")
    assert (build / "burtorch-bench").is_file()
    assert (build / "burtorch-tests").is_file()
    assert list(build.glob("burtorch*.so")) or list(build.glob("burtorch*.pyd"))


def test_driver_links_no_python():
    if shutil.which("ldd") is None:
        pytest.skip("ldd not available: cannot list the driver's shared libraries")
    libraries = subprocess.run(["ldd", str(driver_path())], capture_output=True, text=True).stdout
    assert "python" not in libraries.lower()
    assert "libstdc++" not in libraries  # linked statically: see BURTORCH_STATIC_RUNTIME


def _compile_flags(build: Path) -> str:
    return "\n".join(p.read_text() for p in build.rglob("flags.make")) + "\n".join(
        p.read_text() for p in build.glob("build.ninja"))


def test_release_flags_portable_unless_native_is_asked(tmp_path):
    flags = _compile_flags(build_targets("burtorch-bench"))
    assert "-O3" in flags and "-fno-exceptions" in flags and "-fno-rtti" in flags
    assert "-flto" in flags
    assert "-march=native" not in flags
    native = tmp_path / "native"
    configured = _configure(native, extra_env={"BURTORCH_NATIVE": "1"}, extra_args=("-DBURTORCH_BUILD_TESTS=OFF",))
    assert configured.returncode == 0, configured.stderr
    assert "-march=native" in _compile_flags(native)
