"""LibTorch: PyTorch's C++ API (the paper's "PyTorch, Eager, LibTorch, C++" rows), as a native driver.

The driver (engines/libtorch_driver/main.cpp) links against the LibTorch that ships inside the installed
torch wheel, so it needs no separate download. It is built with CMake on first use, not at install
and never by `burtbench list`: the runner calls the spec's prepare() once before the engine's
first trial. The build lives in build/libtorch/; later runs only ask CMake to bring it up to date,
which takes a moment when nothing changed. A failed build is remembered with its reason, for the
same sources and torch version, so the engine is listed as unavailable instead of being rebuilt
at every run; changing a source or deleting build/libtorch/ retries it.

The driver shares burtorch-bench's driver headers (burtorch_ext/src/driver), so it builds from a
source checkout of burtbench, which is how `make setup` installs it.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from engines import children
from engines.base import BuiltOnFirstUse
from engines.file_lock import exclusive
from engines.state import LibTorchState, read_json

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIR = Path(__file__).resolve().parent / "libtorch_driver"
DRIVER_HEADERS = PROJECT_ROOT / "burtorch_ext" / "src" / "driver"
BUILD_DIR = PROJECT_ROOT / "build" / "libtorch"
EXECUTABLE = BUILD_DIR / ("libtorch-bench.exe" if os.name == "nt" else "libtorch-bench")
# What the last configure and the last failed build were done with (see module docstring).
STATE_FILE = BUILD_DIR / "burtbench-state.json"
# What it holds: engines/state.LibTorchState (anything else is no state, and the driver is built again).
BUILD_LOG = BUILD_DIR / "build.log"
# Beside BUILD_DIR, not in it: a fresh build deletes BUILD_DIR.
BUILD_LOCK = BUILD_DIR.with_name("libtorch.lock")
BUILD_TIMEOUT_S = 1800


def torch_cmake_prefix() -> Path | None:
    """torch.utils.cmake_prefix_path, found without importing torch (the runner stays lean)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "share" / "cmake"


def torch_version() -> str | None:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def sources_digest() -> str:
    """The driver's sources and the torch it builds against: a failure is remembered for these."""
    digest = hashlib.sha256(f"torch {torch_version()} at {torch_cmake_prefix()}".encode())
    files = [SOURCE_DIR / "CMakeLists.txt", SOURCE_DIR / "main.cpp", *sorted(SOURCE_DIR.glob("*.hpp")),
             *sorted(DRIVER_HEADERS.glob("*.hpp"))]
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
    return digest.hexdigest()


def read_state() -> dict:
    return read_json(STATE_FILE, LibTorchState)


def write_state(state: dict) -> None:
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    STATE_FILE.write_text(json.dumps(state, indent=1))


def build_blocker() -> str | None:
    """Why the driver cannot be built (or was not, last time), judged without building anything."""
    prefix = torch_cmake_prefix()
    if prefix is None:
        return "python module 'torch' is not installed"
    if not (prefix / "Torch" / "TorchConfig.cmake").is_file():
        return f"the torch wheel has no LibTorch CMake files ({prefix / 'Torch'} is missing)"
    if shutil.which("cmake") is None:
        return "cmake not found on PATH (needed to build the LibTorch driver)"
    if not (DRIVER_HEADERS / "json_line.hpp").is_file():
        return f"burtorch-bench's driver headers not found in {DRIVER_HEADERS} (build from a source checkout)"
    failure = read_state().get("failure")
    if failure and failure.get("digest") == sources_digest():
        return failure["reason"]
    return None


def _run_logged(cmd: list[str], log) -> int:
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    return children.run(cmd, "building the LibTorch driver (CMake)", BUILD_TIMEOUT_S, stdout=log,
                        stderr=subprocess.STDOUT).returncode


def _first_error(log_text: str) -> str:
    lines = [line.strip() for line in log_text.splitlines()]
    errors = [line for line in lines if "error:" in line.lower() or "cmake error" in line.lower()]
    return (errors or [line for line in lines if line] or ["no output"])[0][:300]


def _configure_command(prefix: Path) -> list[str]:
    cmd = ["cmake", "-S", str(SOURCE_DIR), "-B", str(BUILD_DIR), f"-DCMAKE_PREFIX_PATH={prefix}",
           f"-DBURTORCH_DRIVER_DIR={DRIVER_HEADERS}", "-DCMAKE_BUILD_TYPE=Release"]
    return cmd + ["-G", "Ninja"] if shutil.which("ninja") else cmd


def _build_command() -> list[str]:
    cmd = ["cmake", "--build", str(BUILD_DIR), "--config", "Release"]
    # Compiling against LibTorch is heavy: stay out of the way of anything else on the machine.
    return ["nice", "-n", "10", *cmd] if shutil.which("nice") else cmd


def build_driver() -> str | None:
    """Configure (first time, or when torch changed) and build; None when the driver is ready, else why not.

    One build at a time: a second run (another terminal, another test process) waits for the
    first and then finds the driver up to date, or its failure remembered.
    """
    with exclusive(BUILD_LOCK, f"libtorch-bench: waiting for another process's build to finish (lock: {BUILD_LOCK})"):
        return _build_driver()


def _build_driver() -> str | None:
    blocker = build_blocker()
    if blocker is not None:
        return blocker
    prefix, digest = torch_cmake_prefix(), sources_digest()
    configured = {"torch": torch_version(), "prefix": str(prefix)}
    fresh = read_state().get("configured") != configured or not (BUILD_DIR / "CMakeCache.txt").is_file()
    if fresh:
        shutil.rmtree(BUILD_DIR, ignore_errors=True)
        BUILD_DIR.mkdir(parents=True)
        print(f"libtorch-bench: building against torch {configured['torch']} (first use; log: {BUILD_LOG})",
              file=sys.stderr)

    def failed(why: str, still_configured: bool) -> str:
        reason = f"LibTorch driver build failed ({why}; full log: {BUILD_LOG})"
        write_state({"configured": configured if still_configured else None,
                     "failure": {"digest": digest, "reason": reason}})
        return reason

    try:
        with open(BUILD_LOG, "w") as log:
            if fresh and _run_logged(_configure_command(prefix), log) != 0:
                return failed(f"cmake configure: {_first_error(BUILD_LOG.read_text(errors='replace'))}", False)
            if _run_logged(_build_command(), log) != 0:
                return failed(f"compile: {_first_error(BUILD_LOG.read_text(errors='replace'))}", True)
    except subprocess.TimeoutExpired:
        return failed(f"timed out after {BUILD_TIMEOUT_S} s", False)
    if not EXECUTABLE.is_file():
        return failed(f"the build succeeded but {EXECUTABLE} is missing", True)
    write_state({"configured": configured})
    return None


ENGINES = [
    # The driver (libtorch_driver/main.cpp) has its workloads compiled in.
    # Built by CMake against the installed torch's libtorch on first use.
    BuiltOnFirstUse("libtorch", "eager", "cpp", "cpu",
                    workloads=("tiny", "small", "energy", "save_load", "max_pool2d"),
                    kind="native", executable=str(EXECUTABLE), paper_row=("libtorch", "eager", "cpp", "cpu"),
                    condition=build_blocker, build=build_driver),
]
