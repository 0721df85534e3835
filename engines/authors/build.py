"""Building the authors' example programs with their own CMake, in Release, and variants of them.

    build(tree, target, changes=()) -> BuildResult          # never raises for a failed compile

Layout (build/ is git-ignored):

    build/upstream/<source>/work/src/burt/...   one copy of their burt/ folder (hard links where the file
                                                system allows; a file a variant changes is a new file)
    build/upstream/<source>/work/cmake/         CMake's binary tree, configured once per source
    build/upstream/<source>/work/build.log      every configure and compile, one section per command
    build/upstream/<source>/<variant>/<target>  the program, copied out of the shared tree
    build/upstream/<source>/<variant>/burtbench-build.json   what was built, with what, and how it went

<variant> is "original" (their code unchanged) or, for a program with some compile-time constants
changed, "<target>.<symbol>=<value>..." (variants.py). A variant changes lines of one main file
only, so it is built in the shared tree: that file is rewritten (and any file an earlier variant
changed is restored to theirs) and their CMake recompiles it and relinks; their libraries are
compiled once per source. The copy keeps their tree clean: their CMake writes
burt/system/include/Version.h into the source folder it configures.

One build at a time across processes (engines.file_lock.exclusive on build/upstream/build.lock). A
finished build is remembered: a second call returns at once, for a success and for a failure alike
(pass retry=True to try a failure again). The configure step is their defaults plus
CMAKE_BUILD_TYPE=Release, which is what their `project_scripts.py -gr -br` does; only the target
asked for (and the libraries it links) is compiled.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from engines.authors.cmake import (compile_against, compiler_info, find_executable, first_error, generator, log_tail,
                                   nice, run_logged)
from engines.authors.source import PROJECT_ROOT, SourceTree
from engines.authors.variants import (Change, changed_bytes, current_values, find_knob, plan_changes,
                                      prepare_variant_source, variant_name)
from engines.file_lock import exclusive
from engines.state import AuthorsState, AuthorsWork, read_json

__all__ = ["BuildResult", "Change", "build", "compile_against", "current_values", "find_knob", "first_error",
           "is_built", "plan_changes", "prepare_variant_source", "upstream_build_root", "variant_name"]

BUILD_TIMEOUT_S = 1800
STATE_NAME = "burtbench-build.json"
WORK = "work"
WORK_STATE = "burtbench-work.json"
# Bump when the way we configure or build changes: older records are then rebuilt.
RECIPE = 2


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    target: str
    variant: str
    executable: Path | None
    reason: str | None                 # one line when not ok: the compiler's (or CMake's) first error
    changes: tuple[Change, ...]
    build_dir: Path                    # the variant's folder (its program and record)
    log: Path
    cached: bool                       # True when nothing had to be done
    seconds: float                     # this call's time (configure + compile, or the cache look-up)
    commit: str | None
    compiler: dict = field(default_factory=dict)   # {"path", "version", "cxx_flags", "generator"}
    binary_dir: Path | None = None     # CMake's binary tree it was compiled in

    def as_record(self) -> dict:
        """What a trial and the manifest carry about the program that ran."""
        return {"ok": self.ok, "target": self.target, "variant": self.variant,
                "executable": str(self.executable) if self.executable else None, "reason": self.reason,
                "changes": [c.as_record() for c in self.changes], "commit": self.commit,
                "compiler": self.compiler, "build_dir": str(self.build_dir)}


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


def _write_state(path: Path, state: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
    os.replace(tmp, path)


def _configured(tree: SourceTree, work: Path, fingerprint: str, timeout_s: float) -> str | None:
    """The shared tree copied and configured (once per source); None when ready, else why not."""
    identity = {"recipe": RECIPE, "fingerprint": fingerprint}
    binary = work / "cmake"
    if (read_json(work / WORK_STATE, AuthorsWork).get("identity") == identity and (binary / "CMakeCache.txt").is_file()
            and (work / "src" / "burt" / "CMakeLists.txt").is_file()):
        return None
    shutil.rmtree(work, ignore_errors=True)
    prepare_variant_source(tree, work / "src")
    binary.mkdir(parents=True)
    configure = ["cmake", "-S", str(work / "src" / "burt"), "-B", str(binary), "-DCMAKE_BUILD_TYPE:STRING=Release"]
    if generator():
        configure += ["-G", generator()]
    log_path = work / "build.log"
    with open(log_path, "a") as log:
        if run_logged(nice(configure), log, work, timeout_s, "configuring the authors' programs (CMake)") != 0:
            shutil.rmtree(binary, ignore_errors=True)
            return f"cmake configure failed: {first_error(log_tail(log_path))}"
    _write_state(work / WORK_STATE, {"identity": identity, "changed": []})
    return None


def _apply(tree: SourceTree, work: Path, changes: tuple[Change, ...]) -> None:
    """Make the shared tree's files the variant's: its changed lines, and theirs everywhere else."""
    state = read_json(work / WORK_STATE, AuthorsWork)
    changed = []
    for rel in sorted(set(state.get("changed", [])) | {c.file for c in changes}):
        original = (tree.root / rel).read_bytes()
        wanted = changed_bytes(original, [c for c in changes if c.file == rel], rel)
        path = work / "src" / rel
        if not path.is_file() or path.read_bytes() != wanted:
            path.unlink(missing_ok=True)   # never write through a hard link to their file
            path.write_bytes(wanted)
        if wanted != original:
            changed.append(rel)
    state["changed"] = changed
    _write_state(work / WORK_STATE, state)


def _identity(fingerprint: str, changes: tuple[Change, ...]) -> dict:
    return {"recipe": RECIPE, "fingerprint": fingerprint, "changes": [c.as_record() for c in changes]}


def _finished(state: dict, identity: dict, target: str, work: Path) -> dict | None:
    """The record of a finished build of `target` (a success whose program is still there, or a failure)
    that build() returns at once, else None."""
    entry = state.get("targets", {}).get(target) if state.get("identity") == identity else None
    if not entry:
        return None
    if entry.get("ok") and not (Path(entry["executable"]).is_file() and (work / "cmake" / "CMakeCache.txt").is_file()):
        return None
    return entry


def is_built(tree: SourceTree, target: str, changes: tuple[Change, ...] = (),
             project_root: Path = PROJECT_ROOT) -> bool:
    """Whether build() would return at once, nothing compiled (for the ETA): a check that changes nothing."""
    changes = tuple(changes)
    key, fingerprint = _source_key(tree)
    root = upstream_build_root(project_root) / key
    state = read_json(root / variant_name(target, changes) / STATE_NAME, AuthorsState)
    return _finished(state, _identity(fingerprint, changes), target, root / WORK) is not None


def build(tree: SourceTree, target: str, changes: tuple[Change, ...] = (), project_root: Path = PROJECT_ROOT,
          jobs: int = 2, retry: bool = False, timeout_s: float = BUILD_TIMEOUT_S, progress: str = "") -> BuildResult:
    """Build one of their targets (e.g. "bin_gpt_example"), as they wrote it or with `changes`;
    `progress` ("[3/36, about 2 min left] ") leads the line that announces a build.

    Never raises for a failed configure or compile: the result says why, in one line, and the
    failure is remembered for the same source and changes until retry=True.
    """
    started = time.monotonic()
    changes = tuple(changes)
    variant = variant_name(target, changes)
    key, fingerprint = _source_key(tree)
    root = upstream_build_root(project_root) / key
    variant_dir, work = root / variant, root / WORK
    state_path = variant_dir / STATE_NAME
    log_path = work / "build.log"
    identity = _identity(fingerprint, changes)

    def result(ok: bool, reason: str | None, executable: Path | None, cached: bool, compiler: dict) -> BuildResult:
        return BuildResult(ok=ok, target=target, variant=variant, executable=executable, reason=reason,
                           changes=changes, build_dir=variant_dir, log=log_path, cached=cached,
                           seconds=time.monotonic() - started, commit=tree.commit, compiler=compiler,
                           binary_dir=work / "cmake")

    def remembered(state: dict) -> BuildResult | None:
        entry = _finished(state, identity, target, work)
        if entry is None or (not entry.get("ok") and retry):
            return None
        if entry.get("ok"):
            return result(True, None, Path(entry["executable"]), True, state.get("compiler", {}).get(target, {}))
        return result(False, entry.get("reason"), None, True, {})

    hit = remembered(read_json(state_path, AuthorsState))
    if hit is not None:
        return hit

    lock = upstream_build_root(project_root) / "build.lock"
    with exclusive(lock, f"burtbench: waiting for another process's build of the authors' programs (lock: {lock})"):
        state = read_json(state_path, AuthorsState)
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
            why = _configured(tree, work, fingerprint, timeout_s)
            if why is not None:
                return failed(why)
            _apply(tree, work, changes)
            print(f"burtbench: {progress}building the authors' {target} ({variant}; log: {log_path})", file=sys.stderr)
            compile_cmd = ["cmake", "--build", str(work / "cmake"), "--config", "Release", "--target", target,
                           "--parallel", str(max(1, jobs))]
            with open(log_path, "a") as log:
                log.write(f"# {variant}\n")
                if run_logged(nice(compile_cmd), log, work, timeout_s, f"building the authors' {target} (CMake)") != 0:
                    return failed(f"compile failed: {first_error(log_tail(log_path))}")
            built = find_executable(work / "cmake", target)
            if built is None:
                return failed(f"the build succeeded but no executable {target} is in {work / 'cmake'}")
            exe = variant_dir / target
            tmp = variant_dir / f".{target}.{os.getpid()}"
            shutil.copy2(built, tmp)
            os.replace(tmp, exe)
        except subprocess.TimeoutExpired:
            return failed(f"build timed out after {timeout_s:.0f} s")
        except (OSError, ValueError) as exc:
            return failed(f"cannot prepare the build: {exc}")
        compiler = compiler_info(work / "cmake", target)
        state["targets"][target] = {"ok": True, "executable": str(exe)}
        state["compiler"][target] = compiler
        _write_state(state_path, state)
        return result(True, None, exe, False, compiler)
