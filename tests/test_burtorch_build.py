"""Builds burtorch_ext/ with CMake for the other test_burtorch_* files, and tests the build itself.

The tree is configured once into build/burtorch-tests/ and rebuilt incrementally, so after the
first run a test session pays only for what changed. The driver and the module come from the
installed project (`pip install -e .`) when present, else from this tree.
"""
from __future__ import annotations

import contextlib
import fcntl
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


@contextlib.contextmanager
def _one_builder():
    """Holds build/burtorch-tests/ for one process at a time: the suite's workers (pytest -n) share it."""
    BUILD.parent.mkdir(parents=True, exist_ok=True)
    with open(BUILD.parent / "burtorch-tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def configured_tree() -> Path:
    """build/burtorch-tests/, configured (not built)."""
    with _one_builder():
        return _configured()


def _configured() -> Path:
    if not (BUILD / "CMakeCache.txt").exists():
        done = _configure(BUILD, extra_args=("-DBURTORCH_NATIVE=OFF",))  # portable whatever the environment says
        assert done.returncode == 0, done.stdout + done.stderr
    return BUILD


@functools.lru_cache(maxsize=None)
def build_targets(*targets: str) -> Path:
    """Builds the named CMake targets in build/burtorch-tests/ and returns that folder."""
    nice = ["nice"] if shutil.which("nice") else []  # the machine is shared: build politely
    with _one_builder():
        _configured()
        built = subprocess.run([*nice, "cmake", "--build", str(BUILD), "-j2", "--config", "Release", "--target",
                                *targets], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]
    return BUILD


def built_executable(target: str) -> Path:
    """A target's executable in the test build (multi-config generators nest it in Release/)."""
    build = build_targets(target)
    suffix = ".exe" if os.name == "nt" else ""
    found = sorted(build.rglob(target + suffix), key=lambda p: len(p.parts))
    assert found, f"{target} was built but not found under {build}"
    return found[0]


def driver_path() -> Path:
    """The installed burtorch-bench beside this interpreter, else one built here."""
    scripts = Path(sys.executable).parent
    for installed in (scripts / "burtorch-bench", scripts / "burtorch-bench.exe"):
        if installed.is_file() and os.access(installed, os.X_OK):
            return installed
    return built_executable("burtorch-bench")


def import_burtorch():
    """The installed module, else the one built here."""
    try:
        return importlib.import_module("burtorch")
    except ImportError:
        build = build_targets("burtorch")
        module = next(p for pattern in ("burtorch*.so", "burtorch*.pyd") for p in build.rglob(pattern))
        sys.path.insert(0, str(module.parent))
        return importlib.import_module("burtorch")


def test_standalone_build_makes_the_tests_and_declares_driver_and_module():
    """The C++ tests built without pip; the driver and module only declared: `make setup` (run before `make
    test`) compiles them from the same CMakeLists.txt, and test_burtorch_driver and test_burtorch_module run them."""
    assert built_executable("burtorch-tests").is_file()
    build = configured_tree()
    rules = next(p.read_text() for p in (build / "build.ninja", build / "CMakeFiles" / "Makefile2") if p.is_file())
    assert "CMakeFiles/burtorch-bench.dir/" in rules and "CMakeFiles/burtorch.dir/" in rules


# Compiles the driver and the module a second time (minutes on two cores) beside the ones `make setup` built.
@pytest.mark.slow
def test_standalone_build_makes_driver_tests_and_module():
    build = build_targets("burtorch-bench", "burtorch-tests", "burtorch")
    assert built_executable("burtorch-bench").is_file()
    assert built_executable("burtorch-tests").is_file()
    assert list(build.rglob("burtorch*.so")) or list(build.rglob("burtorch*.pyd"))


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
    flags = _compile_flags(configured_tree())
    assert "-O3" in flags and "-fno-exceptions" in flags and "-fno-rtti" in flags
    assert "-flto" in flags
    assert "-march=native" not in flags
    native = tmp_path / "native"
    configured = _configure(native, extra_env={"BURTORCH_NATIVE": "1"}, extra_args=("-DBURTORCH_BUILD_TESTS=OFF",))
    assert configured.returncode == 0, configured.stderr
    assert "-march=native" in _compile_flags(native)
