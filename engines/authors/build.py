"""Building the authors' example programs with their own CMake, in Release, and variants of them.

    plan_changes(tree, step, {"batch": 8, "iterations": 20}) -> tuple[Change, ...]
    build(tree, target, changes=()) -> BuildResult          # never raises for a failed compile

Layout (build/ is git-ignored):

    build/upstream/<commit>/<variant>/src/burt/...   a copy of their burt/ folder (hard links where the
                                                     file system allows; a changed file is a new file)
    build/upstream/<commit>/<variant>/cmake/...      CMake's binary tree; the program is
                                                     cmake/<target>/<target>
    build/upstream/<commit>/<variant>/burtbench-build.json   what was built, with what, and how it went
    build/upstream/<commit>/<variant>/build.log

<variant> is "original" (their code unchanged; every target builds into the same tree) or, for a
program with some compile-time constants changed, "<target>.<symbol>=<value>...". The copy keeps
their tree clean: their CMake writes burt/system/include/Version.h into the source folder it
configures, and would otherwise write it into the user's checkout.

One build at a time across processes (engines.libtorch.exclusive on build/upstream/build.lock). A
finished build is remembered: a second call returns at once, for a success and for a failure alike
(pass retry=True to try a failure again). The configure step is their defaults plus
CMAKE_BUILD_TYPE=Release, which is what their `project_scripts.py -gr -br` does; only the target
asked for (and the libraries it links) is compiled.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from engines.authors.source import PROJECT_ROOT, SourceTree

BUILD_TIMEOUT_S = 1800
STATE_NAME = "burtbench-build.json"
# Bump when the way we configure or build changes: older records are then rebuilt.
RECIPE = 1


@dataclass(frozen=True)
class Change:
    """One line of the authors' source changed for a variant: a compile-time constant, nothing else."""
    file: str        # relative to the source root, e.g. burt/bin_gpt_example/src/main_gpt.cpp
    line: int        # 1-based
    old: str         # the line as they wrote it
    new: str         # the line in the variant
    symbol: str      # their name for the constant, e.g. k_batch_size
    knob: str        # ours: iterations, batch, hidden_dim, print_every
    old_value: str
    new_value: str

    def as_record(self) -> dict:
        return {"file": self.file, "line": self.line, "old": self.old, "new": self.new,
                "symbol": self.symbol, "knob": self.knob, "old_value": self.old_value,
                "new_value": self.new_value}


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    target: str
    variant: str
    executable: Path | None
    reason: str | None                 # one line when not ok: the compiler's (or CMake's) first error
    changes: tuple[Change, ...]
    build_dir: Path
    log: Path
    cached: bool                       # True when nothing had to be done
    seconds: float                     # this call's time (configure + compile, or the cache look-up)
    commit: str | None
    compiler: dict = field(default_factory=dict)   # {"path", "version", "cxx_flags", "generator"}

    def as_record(self) -> dict:
        """What a trial and the manifest carry about the program that ran."""
        return {"ok": self.ok, "target": self.target, "variant": self.variant,
                "executable": str(self.executable) if self.executable else None, "reason": self.reason,
                "changes": [c.as_record() for c in self.changes], "commit": self.commit,
                "compiler": self.compiler, "build_dir": str(self.build_dir)}


# --------------------------------------------------------------------------------------------------
# Variants


def _int_value(text: str) -> int | None:
    """The value of a constant written as digits and products of digits ("100 * 1000")."""
    text = text.strip()
    if not re.fullmatch(r"\d+(\s*\*\s*\d+)*", text):
        return None
    value = 1
    for factor in text.split("*"):
        value *= int(factor)
    return value


def find_knob(tree_root: Path, knob) -> tuple[int, str, re.Match]:
    """(line number, line, match) of the knob's single defining line in the source tree."""
    path = tree_root / knob.file
    lines = path.read_text(encoding="utf-8-sig", errors="strict").splitlines()
    pattern = re.compile(knob.pattern)
    hits = [(i + 1, line, m) for i, line in enumerate(lines) if (m := pattern.search(line))]
    if len(hits) != 1:
        raise ValueError(f"{knob.file}: expected one line defining {knob.symbol}, found {len(hits)}"
                         f" (pattern {knob.pattern!r}): is this the pinned commit?")
    return hits[0]


def current_values(tree: SourceTree, step) -> dict[str, int | None]:
    """Each knob's value as the authors' source has it."""
    return {name: _int_value(find_knob(tree.root, knob)[2].group("value")) for name, knob in step.knobs.items()}


def plan_changes(tree: SourceTree, step, values: Mapping[str, int]) -> tuple[Change, ...]:
    """The line changes that give `step` these knob values; a value equal to theirs changes nothing."""
    changes = []
    for name, value in sorted(values.items()):
        if name not in step.knobs:
            raise ValueError(f"{step.target} has no compile-time constant for {name!r}"
                             f" (it has: {', '.join(sorted(step.knobs)) or 'none'})")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{step.target}: {name} must be a positive integer, got {value!r}")
        knob = step.knobs[name]
        number, line, match = find_knob(tree.root, knob)
        old_value = match.group("value")
        if _int_value(old_value) == value:
            continue
        start, end = match.span("value")
        new_line = line[:start] + str(value) + line[end:]
        changes.append(Change(file=knob.file, line=number, old=line, new=new_line, symbol=knob.symbol,
                              knob=name, old_value=old_value.strip(), new_value=str(value)))
    return tuple(sorted(changes, key=lambda c: (c.file, c.line)))


def variant_name(target: str, changes: tuple[Change, ...]) -> str:
    if not changes:
        return "original"
    parts = [f"{c.symbol}={c.new_value}" for c in changes]
    name = ".".join([target, *parts])
    return re.sub(r"[^A-Za-z0-9_.=+-]", "_", name)


def _link_or_copy(src: str, dst: str) -> None:
    # Version.h is written by their CMake into the tree it configures: never share its inode.
    if os.path.basename(src) != "Version.h":
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)


def prepare_variant_source(tree: SourceTree, dest: Path, changes: tuple[Change, ...] = ()) -> Path:
    """Copy their burt/ folder to dest/burt and apply changes; returns dest (the copy's root).

    A changed file is written as a new file (never through a shared hard link). Each change's old
    line must be found as recorded, or ValueError.
    """
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("Version.h", ".git")
    shutil.copytree(tree.burt_dir, dest / "burt", copy_function=_link_or_copy, ignore=ignore, symlinks=True)
    by_file: dict[str, list[Change]] = {}
    for change in changes:
        by_file.setdefault(change.file, []).append(change)
    for rel, file_changes in by_file.items():
        path = dest / rel
        raw = path.read_bytes()
        text = raw.decode("utf-8")
        lines = text.splitlines(keepends=True)
        for change in file_changes:
            current = lines[change.line - 1]
            body = current.rstrip("\r\n")
            if body.lstrip("\ufeff") != change.old.lstrip("\ufeff"):
                raise ValueError(f"{rel}:{change.line} is {body!r}, expected {change.old!r}")
            ending = current[len(body):]
            prefix = "\ufeff" if body.startswith("\ufeff") and not change.new.startswith("\ufeff") else ""
            lines[change.line - 1] = prefix + change.new + ending
        path.unlink()   # break a hard link to the original before writing
        path.write_bytes("".join(lines).encode("utf-8"))
    return dest


# --------------------------------------------------------------------------------------------------
# Building


def _source_key(tree: SourceTree) -> tuple[str, str]:
    """(folder name under build/upstream/, fingerprint that says when a build is stale)."""
    # A `git archive` of a commit and a clean checkout of it are the same source: one build serves both.
    if tree.commit and (tree.kind == "archive" or (tree.kind == "checkout" and tree.dirty is False)):
        return tree.commit, f"commit:{tree.commit}"
    if tree.kind == "archive" and tree.archive_sha256:
        return f"archive-{tree.archive_sha256[:16]}", f"archive:{tree.archive_sha256}"
    # A dirty checkout or a plain folder: what its files are now.
    digest = hashlib.sha256()
    for path in sorted(tree.burt_dir.rglob("*")):
        if path.is_file() and path.name != "Version.h":
            stat = path.stat()
            digest.update(f"{path.relative_to(tree.root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    fingerprint = digest.hexdigest()
    prefix = f"{tree.commit}-dirty" if tree.commit else "folder"
    return f"{prefix}-{fingerprint[:12]}", f"files:{fingerprint}"


def upstream_build_root(project_root: Path = PROJECT_ROOT) -> Path:
    return Path(project_root) / "build" / "upstream"


def _read_state(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _write_state(path: Path, state: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
    os.replace(tmp, path)


def first_error(log_text: str) -> str:
    """The first line of a build log that says what went wrong, on one line."""
    lines = log_text.splitlines()
    patterns = (re.compile(r"\berror\b\s*:", re.I), re.compile(r"CMake Error"), re.compile(r"\berror\b", re.I),
                re.compile(r"\*\*\*|fatal", re.I))
    for pattern in patterns:
        for i, line in enumerate(lines):
            if pattern.search(line):
                text = line.strip()
                if text.startswith("CMake Error") and i + 1 < len(lines) and lines[i + 1].strip():
                    text = f"{text} {lines[i + 1].strip()}"
                return text[:400]
    tail = [line.strip() for line in lines if line.strip()]
    return (tail[-1] if tail else "no output")[:400]


def _nice(cmd: list[str]) -> list[str]:
    return ["nice", "-n", "10", *cmd] if shutil.which("nice") else cmd


def _generator() -> str:
    if shutil.which("make"):
        return "Unix Makefiles"
    if shutil.which("ninja"):
        return "Ninja"
    return ""


def _build_env() -> dict:
    env = dict(os.environ)
    # Their configure asks git for a commit to put into Version.h: inside build/ it would find this
    # project's repository. Point git nowhere, so it says "undefined" as it does for an archive.
    env["GIT_DIR"] = os.devnull
    env["LC_ALL"] = "C"
    return env


def _run_logged(cmd: list[str], log, cwd: Path, timeout: float) -> int:
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    proc = subprocess.run(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          env=_build_env(), timeout=timeout)
    log.write(f"[exit {proc.returncode}]\n")
    log.flush()
    return proc.returncode


def _compiler_info(binary_dir: Path, target: str) -> dict:
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
            out = subprocess.run([info["path"], "--version"], capture_output=True, text=True, timeout=30)
            info["version"] = (out.stdout.splitlines() or [""])[0]
        except (OSError, subprocess.TimeoutExpired):
            pass
    flags = binary_dir / target / "CMakeFiles" / f"{target}.dir" / "flags.make"
    if flags.is_file():
        for line in flags.read_text(errors="replace").splitlines():
            if line.startswith("CXX_FLAGS"):
                info["cxx_flags"] = line.split("=", 1)[1].strip()
    return info


def _find_executable(binary_dir: Path, target: str) -> Path | None:
    direct = binary_dir / target / target
    if direct.is_file() and os.access(direct, os.X_OK):
        return direct
    for path in binary_dir.rglob(target):
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def build(tree: SourceTree, target: str, changes: tuple[Change, ...] = (), project_root: Path = PROJECT_ROOT,
          jobs: int = 2, retry: bool = False, timeout_s: float = BUILD_TIMEOUT_S) -> BuildResult:
    """Build one of their targets (e.g. "bin_gpt_example"), as they wrote it or with `changes`.

    Never raises for a failed configure or compile: the result says why, in one line, and the
    failure is remembered for the same source and changes until retry=True.
    """
    started = time.monotonic()
    changes = tuple(changes)
    variant = variant_name(target, changes)
    key, fingerprint = _source_key(tree)
    variant_dir = upstream_build_root(project_root) / key / variant
    binary_dir = variant_dir / "cmake"
    state_path = variant_dir / STATE_NAME
    log_path = variant_dir / "build.log"
    identity = {"recipe": RECIPE, "fingerprint": fingerprint, "changes": [c.as_record() for c in changes]}

    def result(ok: bool, reason: str | None, executable: Path | None, cached: bool, compiler: dict) -> BuildResult:
        return BuildResult(ok=ok, target=target, variant=variant, executable=executable, reason=reason,
                           changes=changes, build_dir=variant_dir, log=log_path, cached=cached,
                           seconds=time.monotonic() - started, commit=tree.commit, compiler=compiler)

    def remembered(state: dict) -> BuildResult | None:
        if state.get("identity") != identity:
            return None
        entry = state.get("targets", {}).get(target)
        if not entry:
            return None
        if entry.get("ok"):
            exe = Path(entry["executable"])
            if exe.is_file():
                return result(True, None, exe, True, state.get("compiler", {}).get(target, {}))
            return None
        if not retry:
            return result(False, entry.get("reason"), None, True, {})
        return None

    hit = remembered(_read_state(state_path))
    if hit is not None:
        return hit

    from engines.libtorch import exclusive  # the project's one cross-process build lock, shared

    lock = upstream_build_root(project_root) / "build.lock"
    with exclusive(lock, f"burtbench: waiting for another process's build of the authors' programs (lock: {lock})"):
        state = _read_state(state_path)
        hit = remembered(state)
        if hit is not None:
            return hit
        if state.get("identity") != identity:
            shutil.rmtree(variant_dir, ignore_errors=True)
            state = {}
        variant_dir.mkdir(parents=True, exist_ok=True)
        state["identity"] = identity
        state.setdefault("targets", {})
        state.setdefault("compiler", {})
        state["source"] = tree.as_record()

        def failed(reason: str) -> BuildResult:
            state["targets"][target] = {"ok": False, "reason": reason}
            _write_state(state_path, state)
            return result(False, reason, None, False, {})

        if not tree.burt_dir.is_dir():
            return failed(f"{tree.burt_dir} not found: not the authors' BurTorch source")
        if shutil.which("cmake") is None:
            return failed("cmake not found on PATH (needed to build the authors' BurTorch programs)")
        if not (tree.burt_dir / target).is_dir():
            return failed(f"their source has no target folder burt/{target}")
        try:
            src_root = variant_dir / "src"
            if not (src_root / "burt" / "CMakeLists.txt").is_file():
                prepare_variant_source(tree, src_root, changes)
            with open(log_path, "a") as log:
                if not (binary_dir / "CMakeCache.txt").is_file():
                    binary_dir.mkdir(parents=True, exist_ok=True)
                    configure = ["cmake", "-S", str(src_root / "burt"), "-B", str(binary_dir),
                                 "-DCMAKE_BUILD_TYPE:STRING=Release"]
                    if _generator():
                        configure += ["-G", _generator()]
                    if _run_logged(_nice(configure), log, variant_dir, timeout_s) != 0:
                        shutil.rmtree(binary_dir, ignore_errors=True)
                        log.flush()
                        return failed(f"cmake configure failed: {first_error(_log_tail(log_path))}")
                print(f"burtbench: building the authors' {target} ({variant}; log: {log_path})", file=sys.stderr)
                compile_cmd = ["cmake", "--build", str(binary_dir), "--config", "Release", "--target", target,
                               "--parallel", str(max(1, jobs))]
                if _run_logged(_nice(compile_cmd), log, variant_dir, timeout_s) != 0:
                    return failed(f"compile failed: {first_error(_log_tail(log_path))}")
        except subprocess.TimeoutExpired:
            return failed(f"build timed out after {timeout_s:.0f} s")
        except (OSError, ValueError) as exc:
            return failed(f"cannot prepare the build: {exc}")
        exe = _find_executable(binary_dir, target)
        if exe is None:
            return failed(f"the build succeeded but no executable {target} is in {binary_dir}")
        compiler = _compiler_info(binary_dir, target)
        state["targets"][target] = {"ok": True, "executable": str(exe)}
        state["compiler"][target] = compiler
        _write_state(state_path, state)
        return result(True, None, exe, False, compiler)


def _log_tail(log_path: Path) -> str:
    """The last command's part of the log (the log accumulates one section per command)."""
    text = log_path.read_text(errors="replace")
    cut = text.rfind("\n$ ")
    return text[cut + 1:] if cut >= 0 else text


def compile_against(built: BuildResult, cpp_file: str | Path, output: str | Path, timeout_s: float = 600) -> str | None:
    """Compile one C++ file of ours with the flags, include paths and libraries of a built target.

    For experiments on their library (a test program that calls their backward, say): the file
    is compiled exactly as their CMake compiles that target's main and linked with the same
    static libraries. Returns None on success, else the compiler's first error line.
    """
    import shlex

    if not built.ok:
        return f"{built.target} is not built: {built.reason}"
    target_dir = built.build_dir / "cmake" / built.target
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
    proc = subprocess.run(_nice(cmd), capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        return first_error(proc.stderr + proc.stdout)
    return None
