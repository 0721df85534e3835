"""Versions of BurTorch itself as environments: `--env burtorch@REV` (a revision of this repository)
and `--env burtorch-authors@COMMIT` (a commit of the authors' repository).

burtorch@REV is any git revision of this checkout (a commit, tag, branch, HEAD~3) or `worktree` (the
files as they are now, uncommitted changes included). Its burtorch_ext/ and its Python row's model
code (MODELS) are exported (`git archive`, or a copy of the working tree's files) into a scratch
folder, never by touching the checkout, built with CMake (the driver and the pybind11 module), and
kept as an environment of its own in the environments' folder (`burtbench envs` lists it): a venv
whose site-packages holds that module and that model code and whose bin/ holds that driver (both of
our rows run there), keyed by git's ids of the revision's burtorch_ext/ and MODELS (a dirty tree's: a
hash of its files), the compiler, the flags and Python.

Instruction counts: valgrind (every release up to 3.24) emulates no AVX-512; a build using it dies
with SIGILL. Where the CPU has it and --instructions is asked, the revision is built again without
it (BURTORCH_AVX512=OFF: AVX and FMA) and only that build is counted, never timed; the trial's
`instructions_build` says so. Our rows in no environment are counted on such a build of this checkout.
burtorch-authors@COMMIT: harness/envs/authors_commits.py finds it; its engine builds it.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from engines import children
from engines.authors.cmake import compiler_identity, last_error, log_tail, nice, run_logged
from engines.file_lock import exclusive
from harness.envs.authors_commits import THEIRS, TheirsEnv, find_theirs
from harness.envs.cache import RECORD, default_env_dir, read_record
from harness.errors import UsageError
from harness.machine.valgrind import uncountable_isa
from harness.paths import ROOT
from harness.store.results import write_json_atomic
from harness.text import clean

OURS = "burtorch"
WORKTREE = "worktree"  # burtorch@worktree: the checkout's files as they are, uncommitted changes included
SOURCE = "burtorch_ext"  # the part of this repository a revision's build needs
# The Python row's model code, which calls the module's API as it was at its revision: the
# revision's own copy runs beside its module (engines/burtorch.py), not this checkout's.
MODELS = "engines/burtorch_models.py"
# The build of a revision as timed (what `pip install .` makes on this CPU), and the one counted
# where valgrind cannot run the host's (the same revision with no AVX-512 in its block products).
HOST, COUNTING = "host", "avx-fma"
ISA_OPTIONS = {HOST: [], COUNTING: ["-DBURTORCH_AVX512=OFF", "-DBURTORCH_NATIVE=OFF"]}
COUNTED_LABEL = "instructions of the AVX+FMA build (valgrind cannot run AVX-512); time of the host build"
CHECKOUT = "(this checkout)"  # the environments' entry of the counting build of our rows in no environment
CHECKOUT_LABEL = ("instructions of the AVX+FMA build of this checkout's burtorch_ext/ (valgrind cannot run "
                  "AVX-512); time of the installed host build")
BUILD_TIMEOUT_S = 1800
RECIPE = 3  # bump when the way a revision is built changes: older builds are then made again
SUBJECT_CHARS = 60


def is_revision(text: str) -> bool:
    name, at, rev = text.partition("@")
    return bool(at) and name.strip().lower() in (OURS, THEIRS)


@dataclass(frozen=True)
class RevisionSpec:
    text: str     # "burtorch@REV" or "burtorch-authors@COMMIT", as the engine ids carry it
    project: str  # OURS or THEIRS
    rev: str

    def provides(self, engine) -> bool:
        return engine.framework == self.project and engine.kind in (("native", "python") if self.project == OURS
                                                                     else ("program",))


def parse(text: str, option: str = "--env") -> RevisionSpec:
    name, _, rev = text.partition("@")
    rev = rev.strip()
    if not rev or any(c.isspace() for c in rev) or rev.startswith("-"):
        raise UsageError(f"{option} {text!r}: name a revision after the '@' (e.g. {name.strip()}@HEAD~1"
                         + (f", {name.strip()}@{WORKTREE}" if name.strip().lower() == OURS else "") + ")")
    project = name.strip().lower()
    return RevisionSpec(f"{project}@{rev}", project, rev)


def _git(repo: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    env.pop("GIT_DIR", None)
    return children.run(["git", "-C", str(repo), *args], f"asking git ({args[0]})", timeout, capture_output=True,
                        text=True, env=env, stdin=subprocess.DEVNULL)


@dataclass(frozen=True)
class Revision:
    commit: str               # 40 hex digits (the working tree's: its HEAD)
    subject: str              # the commit's subject line
    committed_at: int         # the commit's time (seconds): the versions table's "oldest"
    tree: str = ""            # git's id of its burtorch_ext/, what a build is made of
    dirty: bool = False       # burtorch@worktree with uncommitted changes to burtorch_ext/
    fingerprint: str = ""     # those files' content hash, where dirty
    models: str = ""          # git's id of its MODELS, where it has one

    @property
    def short(self) -> str:
        return self.commit[:7] + (f"-dirty-{self.fingerprint[:7]}" if self.dirty else "")

    @property
    def name(self) -> str:
        """What tables and figures call it: short hash, subject, and whether uncommitted changes are in it."""
        subject = self.subject if len(self.subject) <= SUBJECT_CHARS else self.subject[:SUBJECT_CHARS - 1] + "…"
        return f"{self.commit[:7]} {subject}" + (" (dirty: uncommitted changes)" if self.dirty else "")


def resolve(rev: str, repo: Path | None = None, option: str = "--env burtorch@") -> Revision:
    """A revision of the repository at `repo` (this project's), or UsageError (one line)."""
    repo = repo or ROOT
    if shutil.which("git") is None:
        raise UsageError(f"{option}{rev}: git not found on PATH")
    top = _git(repo, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise UsageError(f"{option}{rev}: {repo} is not a git checkout (a revision needs this project's repository)")
    target = "HEAD" if rev == WORKTREE else rev
    found = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{target}^{{commit}}")
    if found.returncode != 0:
        raise UsageError(f"{option}{rev}: no such revision in {top.stdout.strip()} "
                         f"(a commit, tag, branch, HEAD~N, or {WORKTREE})")
    commit = found.stdout.strip()
    subject, _, stamp = _git(repo, "log", "-1", "--format=%s%x00%ct", commit).stdout.strip().partition("\0")
    subject = clean(subject)  # anyone's words: shown on the build line, in tables and figures as the version's name
    tree = _git(repo, "rev-parse", f"{commit}:{SOURCE}").stdout.strip()
    models = _git(repo, "rev-parse", "--verify", "--quiet", f"{commit}:{MODELS}").stdout.strip()
    revision = Revision(commit, subject, int(stamp or 0), tree, models=models)
    if rev != WORKTREE:
        return revision
    changed = _git(repo, "status", "--porcelain", "--", SOURCE, MODELS).stdout.strip()
    if not changed:
        return revision
    return Revision(commit, subject, int(time.time()), tree, True, _fingerprint(repo), models)


def _worktree_files(repo: Path) -> list[str]:
    """burtorch_ext/'s files and MODELS as a commit of the working tree would hold them (ignored files left out)."""
    listed = _git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", SOURCE, MODELS).stdout
    return sorted(p for p in set(listed.split("\0")) if p and (repo / p).is_file())


def _fingerprint(repo: Path) -> str:
    digest = hashlib.sha256()
    for rel in _worktree_files(repo):
        digest.update(rel.encode() + b"\0" + hashlib.sha256((repo / rel).read_bytes()).digest())
    return digest.hexdigest()


def export(revision: Revision, repo: Path, dest: Path) -> None:
    """burtorch_ext/ and MODELS of the revision into dest/ (a `git archive` of the commit, or the working tree's files)."""
    dest.mkdir(parents=True, exist_ok=True)
    if revision.dirty:
        for rel in _worktree_files(repo):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / rel, dest / rel)
        return
    tar_path = dest / ".source.tar"
    done = _git(repo, "archive", "--format=tar", "-o", str(tar_path), revision.commit, "--", SOURCE,
                *([MODELS] if revision.models else []))
    if done.returncode != 0:
        raise OSError(f"git archive {revision.commit[:12]}: {done.stderr.strip() or 'failed'}")
    with tarfile.open(tar_path) as tar:
        tar.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(dest)
    tar_path.unlink()


@dataclass
class Build:
    """One build of a revision for one ISA: a folder of the environments' cache."""
    spec: str
    isa: str
    path: str
    python: str = ""          # the folder's interpreter: finds this build's module first
    driver: str = ""          # its burtorch-bench
    no_module: str | None = None  # why the Python module was not built (pybind11 missing), else None
    reused: bool = False
    setup_s: float = 0.0
    identity: dict = field(default_factory=dict)
    problem: str | None = None



def _python_facts(python: str) -> dict:
    code = ("import json, platform, sys\n"
            "try:\n import pybind11; cmake = pybind11.get_cmake_dir()\nexcept Exception: cmake = ''\n"
            "print(json.dumps({'version': platform.python_implementation() + ' ' + platform.python_version(),"
            " 'path': [p for p in sys.path if p], 'pybind11': cmake}))")
    done = children.run([python, "-c", code], f"asking {python} its paths", 120, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def build(revision: Revision, spec: str, isa: str, root: Path, python: str = sys.executable,
          repo: Path | None = None, jobs: int = 2) -> Build:
    """The build of `revision` for `isa` under `root`, made where it is not there yet; never raises for
    a failed build (its `problem` says why in one line, and the next run tries again)."""
    started = time.perf_counter()
    repo = repo or ROOT
    facts = _python_facts(python)
    flags = [*ISA_OPTIONS[isa], *([] if isa == COUNTING else [f"BURTORCH_NATIVE={os.environ.get('BURTORCH_NATIVE', '')}"])]
    source = revision.fingerprint if revision.dirty else revision.tree
    identity = {"recipe": RECIPE, "source": source, "models": revision.models, "isa": isa,
                "flags": flags, "cxxflags": os.environ.get("CXXFLAGS", ""), "compiler": compiler_identity(),
                "python": facts["version"]}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]
    folder = root / f"{OURS}-{source[:10]}-{isa}-py{facts['version'].split()[-1]}-{digest}"
    made = Build(spec, isa, str(folder), identity=identity)

    def finish(problem: str | None = None) -> Build:
        made.problem, made.setup_s = problem, time.perf_counter() - started
        return made

    def found() -> bool:
        record = read_record(folder)
        if not (record.get("ready") and record.get("identity") == identity and Path(record["driver"]).is_file()):
            return False
        made.python, made.driver, made.no_module, made.reused = record["python"], record["driver"], record["no_module"], True
        write_json_atomic(folder / RECORD, {**record, "last_used": time.time()})
        return True

    if found():
        return finish()
    root.mkdir(parents=True, exist_ok=True)
    with exclusive(root / f".{folder.name}.lock", f"burtbench: waiting for another process's build of {spec}"):
        if found():
            return finish()
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        work, log_path = folder / "work", folder / "build.log"
        print(f"burtbench: building {spec} ({revision.name}; {isa} build; log: {log_path})", file=sys.stderr)
        try:
            export(revision, repo, work / "src")
            configure = ["cmake", "-S", str(work / "src" / SOURCE), "-B", str(work / "cmake"),
                         "-DCMAKE_BUILD_TYPE=Release", "-DBURTORCH_BUILD_TESTS=OFF", f"-DPython_EXECUTABLE={python}",
                         *([f"-Dpybind11_DIR={facts['pybind11']}"] if facts["pybind11"] else []), *ISA_OPTIONS[isa]]
            targets = ["burtorch-bench", *(["burtorch"] if facts["pybind11"] else [])]
            with open(log_path, "a") as log:
                for cmd in (configure, ["cmake", "--build", str(work / "cmake"), "--parallel", str(jobs),
                                        "--target", *targets]):
                    if run_logged(nice(cmd), log, folder, BUILD_TIMEOUT_S, f"building {spec} (CMake)") != 0:
                        return finish(f"did not build: {last_error(log_tail(log_path))} (log: {log_path})")
            made.python, made.driver = _install(folder, work / "cmake", python, facts, work / "src" / MODELS)
            made.no_module = None if facts["pybind11"] else f"pybind11 is not installed for {python}: no Python module built"
        except subprocess.TimeoutExpired:
            return finish(f"did not build in {BUILD_TIMEOUT_S} s (log: {log_path})")
        except (OSError, ValueError) as exc:
            return finish(f"cannot build it: {exc}")
        shutil.rmtree(work, ignore_errors=True)
        now = time.time()
        write_json_atomic(folder / RECORD, {  # `burtbench envs` lists it by its commit, which HEAD or a branch is not
            "spec": f"{OURS}@{revision.short} ({isa}; any commit of this {SOURCE}/)", "python_version": facts["version"], "installer": "cmake",
            "created_at": now, "last_used": now, "ready": True, "freeze": {}, "revision": vars(revision),
            "identity": identity, "python": made.python, "driver": made.driver, "no_module": made.no_module})
    return finish()


def _checked(cmd: list[str], doing: str) -> None:
    done = children.run(cmd, doing, 300, capture_output=True)
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, cmd, done.stdout, done.stderr)


def _install(folder: Path, binary: Path, python: str, facts: dict, models: Path) -> tuple[str, str]:
    """The build's driver into the folder's bin/ and its module, with the revision's model code
    (MODELS, as the top-level module burtorch_models), into a venv's own site-packages, which comes
    before every other path on the interpreter's sys.path; this interpreter's own paths follow
    (numpy for the models), so the module found is this build's."""
    _checked([python, "-m", "venv", "--without-pip", str(folder)], f"making the venv {folder}")
    bindir = folder / ("Scripts" if sys.platform == "win32" else "bin")
    drivers = [p for p in binary.rglob("burtorch-bench*") if p.is_file() and os.access(p, os.X_OK)]
    if not drivers:
        raise ValueError(f"the build made no burtorch-bench in {binary}")
    driver = bindir / drivers[0].name
    shutil.copy2(drivers[0], driver)
    site = next(folder.glob("lib/python*/site-packages"), None) or folder / "Lib" / "site-packages"
    for module in binary.rglob("burtorch.*"):
        if module.suffix in (".so", ".pyd"):
            shutil.copy2(module, site / module.name)
    if models.is_file():
        shutil.copy2(models, site / models.name)
        # Compiled now: a counted child that compiled it would count that once, in its N-step child
        # and not its 2N (measured: the first MLP count of a run 2.8% low, 1.78M instructions a step).
        _checked([python, "-m", "py_compile", str(site / models.name)], f"compiling {models.name}")
    (site / "zz_burtbench_base.pth").write_text("\n".join(facts["path"]) + "\n")
    return str(bindir / ("python.exe" if sys.platform == "win32" else "python")), str(driver)


@dataclass
class OursEnv:
    """burtorch@REV made: its host build, and its counting build where valgrind cannot run the host's."""
    spec: str
    revision: Revision | None
    host: Build | None  # None: our installed build is timed (CHECKOUT)
    counting: Build | None = None
    problem: str | None = None
    label: str = COUNTED_LABEL

    def manifest_record(self) -> dict:
        return {"spec": self.spec, "kind": "revision", "revision": vars(self.revision) if self.revision else None,
                "name": self.revision.name if self.revision else None,
                "host": vars(self.host) if self.host else None,
                "counting": vars(self.counting) if self.counting else None,
                "counted_as": self.label if self.counting and not self.counting.problem else None,
                "problem": self.problem}

    def bind(self, engine):
        """Our engine run from this revision's host build, its instructions counted on the counting build."""
        if engine.framework != OURS:
            return engine
        bound = from_build(engine, self.host) if self.host else engine
        if self.counting is not None and not self.counting.problem:
            bound = bound.replace(counted_as=from_build(engine, self.counting).replace(note=self.label))
        return bound


def from_build(engine, made: Build):
    """Our engine (either row) run from a build: its driver, or its interpreter (which finds its module)."""
    if engine.kind == "native":
        return engine.replace(executable=made.driver)
    if made.no_module:
        return engine.replace(condition=lambda why=made.no_module: why)
    return engine.replace(python=made.python)


def check(spec: RevisionSpec, upstream: str | None) -> tuple:
    """A new run's revision exists (ours in this repository, theirs in a source the run knows), else
    UsageError; the version it names, (project, commit, ...): two spellings of one commit are one."""
    if spec.project == OURS:
        revision = resolve(spec.rev)
        return OURS, revision.commit, revision.fingerprint
    return THEIRS, find_theirs(spec.rev, upstream).commit


def make_all(plan, python: str, console, plain: bool = False) -> dict:
    """The plan's revisions, each built (ours) or found (theirs) before the first trial; and where
    valgrind cannot run the host's ISA, the counting build of this checkout for our rows run in no
    environment (`plain`: the plan has some; key CHECKOUT)."""
    made, ours = {}, {}
    counting = uncountable_isa() if plan.instructions else None
    root = Path(plan.env_dir) if plan.env_dir else default_env_dir()
    for spec in (parse(text) for text in plan.envs if is_revision(text)):
        try:  # every revision resolved before the first build: HEAD may move while one builds
            ours[spec.text] = resolve(spec.rev) if spec.project == OURS else None
            if spec.project == THEIRS:
                made[spec.text] = find_theirs(spec.rev, plan.upstream)
        except UsageError as exc:
            made[spec.text] = (OursEnv(spec.text, None, None, problem=str(exc)) if spec.project == OURS
                               else TheirsEnv(spec.text, None, "", problem=str(exc)))
    for text, env in made.items():
        if isinstance(env, TheirsEnv):
            console.print(f"environment {text}: " + (env.problem or f"their commit {env.commit[:12]} from {env.source}"),
                          highlight=False)
    for text, revision in ours.items():
        if revision is None:
            continue
        host = build(revision, text, HOST, root, python)
        env = OursEnv(text, revision, host, problem=host.problem)
        if counting and not host.problem:
            env.counting = build(revision, text, COUNTING, root, python)
        _say(console, text, revision, env.host, env.counting)
        made[text] = env
    if counting and plain:
        try:
            revision = resolve(WORKTREE)
        except UsageError as exc:  # not a git checkout: their counts read null with valgrind's reason
            console.print(f"our rows' instructions: no counting build ({exc})", highlight=False, markup=False)
            return made
        env = OursEnv(CHECKOUT, revision, None, build(revision, f"{OURS}@{WORKTREE}", COUNTING, root, python),
                      label=CHECKOUT_LABEL)
        _say(console, CHECKOUT, revision, env.counting)
        made[CHECKOUT] = env
    return made


def _say(console, text: str, revision: Revision, *builds) -> None:
    for one in filter(None, builds):
        how = "reused" if one.reused else f"built in {one.setup_s:.0f} s"
        line = f"cannot be built: {one.problem}" if one.problem else f"{how} ({one.path})"
        console.print(f"environment {text} [{revision.name}], {one.isa} build: {line}", highlight=False, markup=False)


def check_resumed(manifest: dict, made: dict) -> None:
    """A resumed run's revisions are the commits (and files) it measured: HEAD or a branch may have moved."""
    before = manifest.get("environments") or {}
    for text, env in made.items():
        then = (before.get(text) or {}).get("revision") if isinstance(before.get(text), dict) else None
        now = getattr(env, "revision", None)
        if then and now and (then.get("commit"), then.get("fingerprint")) != (now.commit, now.fingerprint):
            raise UsageError(f"--resume: {text} is now {now.name}, but the run measured "
                             f"{then.get('commit', '?')[:7]}: start a new run, or name the commit ({OURS}@"
                             f"{then.get('commit', '?')[:12]}) in one")
