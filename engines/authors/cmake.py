"""Running the authors' CMake (and ours, for a revision): logged commands, the first or last error line
of a log, the compiler used, and compiling a file of ours like one of their targets (for experiments on
their library).

    first_error(log_text) -> one line           # what a failed build says in `unavailable: ...`
    compile_against(built, cpp_file, output)     # None, or the compiler's first error line
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from engines import children


# What a build log's lines say went wrong, the compiler's own first: make's "*** Error 2" follows it.
ERRORS = (re.compile(r"\berror\b\s*:", re.I), re.compile(r"CMake Error"), re.compile(r"\berror\b", re.I),
          re.compile(r"\*\*\*|fatal", re.I))


def first_error(log_text: str) -> str:
    """The first line of a build log that says what went wrong, on one line."""
    lines = log_text.splitlines()
    for pattern in ERRORS:
        for i, line in enumerate(lines):
            if pattern.search(line):
                text = line.strip()
                if text.startswith("CMake Error") and i + 1 < len(lines) and lines[i + 1].strip():
                    text = f"{text} {lines[i + 1].strip()}"
                return text[:400]
    tail = [line.strip() for line in lines if line.strip()]
    return (tail[-1] if tail else "no output")[:400]


def last_error(log_text: str) -> str:
    """The last line of a build log that says what went wrong (run_logged's own lines left out), on one line."""
    lines = [line.strip() for line in log_text.splitlines() if line.strip() and not line.startswith(("$ ", "[exit"))]
    for pattern in ERRORS:
        hits = [line for line in lines if pattern.search(line)]
        if hits:
            return hits[-1][:400]
    return (lines or ["no output"])[-1][:400]


def compiler_identity() -> dict:
    """The C++ compiler CMake will pick ($CXX, else c++ on PATH) and its version line: part of a build's key."""
    path = shutil.which(os.environ.get("CXX") or "c++") or ""
    try:
        version = children.run([path, "--version"], f"asking {path} its version", 30, capture_output=True,
                               text=True).stdout if path else ""
    except (OSError, subprocess.SubprocessError):
        version = ""
    return {"path": path, "version": version.partition("\n")[0].strip()}


def nice(cmd: list[str]) -> list[str]:
    return ["nice", "-n", "10", *cmd] if shutil.which("nice") else cmd


def generator() -> str:
    if shutil.which("make"):
        return "Unix Makefiles"
    if shutil.which("ninja"):
        return "Ninja"
    return ""


def build_env() -> dict:
    env = dict(os.environ)
    # Their configure asks git for a commit to put into Version.h: inside build/ it would find this
    # project's repository. Point git nowhere, so it says "undefined" as it does for an archive.
    env["GIT_DIR"] = os.devnull
    env["LC_ALL"] = "C"
    return env


def run_logged(cmd: list[str], log, cwd: Path, timeout: float, doing: str) -> int:
    """`doing`: what the command is for, said if a signal stops it (engines/children.py)."""
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    proc = children.run(cmd, doing, timeout, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                        env=build_env())
    log.write(f"[exit {proc.returncode}]\n")
    log.flush()
    return proc.returncode


def log_tail(log_path: Path) -> str:
    """The last command's part of the log (the log accumulates one section per command)."""
    text = log_path.read_text(errors="replace")
    cut = text.rfind("\n$ ")
    return text[cut + 1:] if cut >= 0 else text


def compiler_info(binary_dir: Path, target: str) -> dict:
    info: dict = {}
    cache = binary_dir / "CMakeCache.txt"
    if cache.is_file():
        for line in cache.read_text(errors="replace").splitlines():
            if line.startswith("CMAKE_CXX_COMPILER:"):
                info["path"] = line.split("=", 1)[1]
            elif line.startswith("CMAKE_GENERATOR:"):
                info["generator"] = line.split("=", 1)[1]
    if info.get("path"):
        try:
            out = children.run([info["path"], "--version"], f"asking {info['path']} its version", 30,
                               capture_output=True, text=True)
            info["version"] = (out.stdout.splitlines() or [""])[0]
        except (OSError, subprocess.TimeoutExpired):
            pass
    flags = binary_dir / target / "CMakeFiles" / f"{target}.dir" / "flags.make"
    if flags.is_file():
        for line in flags.read_text(errors="replace").splitlines():
            if line.startswith("CXX_FLAGS"):
                info["cxx_flags"] = line.split("=", 1)[1].strip()
    return info


def find_executable(binary_dir: Path, target: str) -> Path | None:
    direct = binary_dir / target / target
    if direct.is_file() and os.access(direct, os.X_OK):
        return direct
    for path in binary_dir.rglob(target):
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def compile_against(built, cpp_file: str | Path, output: str | Path, timeout_s: float = 600) -> str | None:
    """Compile one C++ file of ours with the flags, include paths and libraries of a built target.

    For experiments on their library (a test program that calls their backward, say): the file
    is compiled exactly as their CMake compiles that target's main and linked with the same
    static libraries. Returns None on success, else the compiler's first error line.
    """
    if not built.ok:
        return f"{built.target} is not built: {built.reason}"
    target_dir = built.binary_dir / built.target
    meta = target_dir / "CMakeFiles" / f"{built.target}.dir"
    try:
        flags = {}
        for line in (meta / "flags.make").read_text().splitlines():
            if "=" in line and not line.startswith("#"):
                name, value = line.split("=", 1)
                flags[name.strip()] = value.strip()
        link = shlex.split((meta / "link.txt").read_text())
    except OSError as exc:
        return f"cannot read {built.target}'s CMake flags: {exc}"
    libs = []
    for token in link:
        if token.endswith(".a"):
            path = (target_dir / token).resolve()
            if str(path) not in libs:
                libs.append(str(path))
    cxx = built.compiler.get("path") or link[0]
    cmd = [cxx, *shlex.split(flags.get("CXX_DEFINES", "")), *shlex.split(flags.get("CXX_INCLUDES", "")),
           *shlex.split(flags.get("CXX_FLAGS", "")), str(cpp_file), "-o", str(output), *libs, *libs]
    proc = children.run(nice(cmd), f"compiling {cpp_file.name} against the authors' build", timeout_s, capture_output=True,
                        text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        return first_error(proc.stderr + proc.stdout)
    return None
