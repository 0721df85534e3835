"""Making, or reusing, one managed environment: a venv in the cache folder holding the SPEC and
what the worker needs, and a record of what it holds (a freeze) and when it was last used.

An environment is found again by its SPEC and its Python version (the folder's name carries both,
and a hash of them). It counts as made only once its record says ready: an install cut short is
begun again. `uv` installs where it is on PATH (much faster), else this interpreter's pip.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

from engines import children
from engines.base import split_id
from harness.envs import revisions
from harness.envs.cache import RECORD, hold, read_record
from harness.envs.specs import EnvSpec, original_env, parse_spec
from harness.store.results import write_json_atomic
from harness.text import clean
from workloads.base import WORKER_NEEDS

INSTALL_TIMEOUT_S = 1800
REASON_CHARS = 300


@dataclass
class Environment:
    spec: str
    path: str
    python: str
    python_version: str
    installer: str
    reused: bool
    setup_s: float
    freeze: dict  # distribution -> version, as the environment's own interpreter sees them
    problem: str | None = None  # the installer's one-line reason where it could not be made

    def manifest_record(self) -> dict:
        return asdict(self)


class InstallFailed(Exception):
    """The installer refused (no such version, no wheel for this Python, no network): one line."""

def python_version(python: str) -> str:
    """'CPython 3.11.7' of an interpreter (part of an environment's key)."""
    code = "import platform; print(platform.python_implementation(), platform.python_version())"
    try:
        done = children.run([python, "-c", code], f"asking {python} its version", 60, capture_output=True,
                            text=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InstallFailed(f"cannot run {python}: {exc}") from None
    if done.returncode != 0:
        raise InstallFailed(f"cannot run {python}: exit code {done.returncode}")
    return done.stdout.strip()


def folder_name(spec: EnvSpec, version: str) -> str:
    digest = hashlib.sha256(f"{spec.text}\n{version}".encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", spec.text).strip("-")[:48]
    return f"{slug}-py{version.split()[-1]}-{digest}"


def interpreter(folder: Path) -> Path:
    return folder / "Scripts" / "python.exe" if sys.platform == "win32" else folder / "bin" / "python"


def uv() -> str | None:
    return shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))


def ensure(spec: EnvSpec, base_python: str, root: Path, needs: tuple[str, ...], pip_args: list[str],
           held: ExitStack | None = None) -> Environment:
    """The environment of `spec` under `root`, made with `base_python` where it is not there yet;
    what it lacks of `needs` (the worker's own requirements) is added to it. Its lock (envs/cache.py)
    is held shared until `held` closes (the run's end): no prune deletes it, no other run makes it
    again meanwhile; making it takes the lock exclusively, after the runs using it have ended."""
    start = time.perf_counter()
    tool = uv()
    try:
        version = python_version(base_python)
    except InstallFailed as exc:
        return Environment(spec.text, "", "", "", "", False, 0.0, {}, str(exc))
    folder = root / folder_name(spec, version)
    with ExitStack() as own:
        lock = hold(folder, held if held is not None else own)
        try:
            return _ensure(spec, base_python, folder, version, needs, pip_args, tool, lock, start)
        finally:
            lock.take(exclusive=False)


def ready(folder: Path) -> tuple[dict, bool]:
    """(the environment's record, whether it is made and would be reused)."""
    record = read_record(folder)
    return record, bool(record.get("ready")) and interpreter(folder).exists()


def _ensure(spec, base_python, folder, version, needs, pip_args, tool, lock, start) -> Environment:
    record, reused = ready(folder)
    if not reused:
        if not lock.take(exclusive=True, wait=False):
            print(f"burtbench: waiting for the runs using environment {clean(spec.text)} to end, to make it again",
                  file=sys.stderr)
            lock.take(exclusive=True)
        record, reused = ready(folder)  # made meanwhile by the process that held it
    python = str(interpreter(folder))
    try:
        if not reused:
            shutil.rmtree(folder, ignore_errors=True)
            _create(base_python, folder, tool)
            _install(python, [*spec.requirements, *needs], pip_args, tool)
        freeze = installed(python)
        absent = sorted(spec.names - set(freeze))
        if absent:  # a marker false here, or an installer that ignored the requirement: nothing to measure
            raise InstallFailed(f"the environment holds no {', '.join(absent)} after installing {spec.text} "
                                f"(is its marker false on this machine?)")
        missing = [n for n in needs if _canonical(n) not in freeze]
        if missing:
            _install(python, missing, pip_args, tool)
            freeze = installed(python)
    except InstallFailed as exc:
        if not reused:
            shutil.rmtree(folder, ignore_errors=True)
        return Environment(spec.text, str(folder), "", version, _name(tool), reused,
                           time.perf_counter() - start, {}, str(exc))
    env = Environment(spec.text, str(folder), python, version, record.get("installer") or _name(tool), reused,
                      time.perf_counter() - start, freeze)
    now = time.time()
    _write(folder, {"spec": spec.text, "python_version": version, "base_python": base_python,
                    "installer": env.installer, "created_at": record.get("created_at") if reused else now,
                    "last_used": now, "freeze": freeze, "ready": True})
    return env


def installed(python: str) -> dict:
    code = ("import json, importlib.metadata as m\n"
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions() if d.metadata['Name']}))")
    out = _call([python, "-c", code], "reading the installed versions")
    try:
        return dict(sorted((_canonical(k), v) for k, v in json.loads(out.splitlines()[-1]).items()))
    except (ValueError, IndexError):
        raise InstallFailed(f"reading the installed versions: unreadable output {out[-200:]!r}") from None


def _create(base_python: str, folder: Path, tool: str | None) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    if tool:
        _call([tool, "venv", "--quiet", "--python", base_python, str(folder)], "making the venv")
    else:
        # No pip of its own: this interpreter's pip installs into it (pip --python), which saves
        # the venv's ensurepip, most of the time a venv takes to make.
        _call([base_python, "-m", "venv", "--without-pip", str(folder)], "making the venv")


def _install(python: str, requirements: list[str], pip_args: list[str], tool: str | None) -> None:
    if tool:
        cmd = [tool, "pip", "install", "--python", python, *requirements, *pip_args]
    else:
        cmd = [sys.executable, "-m", "pip", "--python", python, "install", "--disable-pip-version-check", "--no-input",
               *requirements, *pip_args]
    _call(cmd, f"installing {' '.join(requirements)}")


def _call(cmd: list[str], doing: str) -> str:
    try:
        done = children.run(cmd, doing, INSTALL_TIMEOUT_S, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallFailed(f"{doing}: {exc}") from None
    if done.returncode != 0:
        raise InstallFailed(installer_reason(done.stdout + "\n" + done.stderr) or f"{doing}: exit code {done.returncode}")
    return done.stdout


def installer_reason(output: str) -> str:
    """The installer's reason on one line: pip's last ERROR line, else uv's message from its ×
    (or error:) line on."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    if errors:
        text = errors[-1][len("ERROR:"):]
    else:
        first = next((i for i, line in enumerate(lines) if line.startswith(("×", "error:"))), max(len(lines) - 3, 0))
        text = " ".join(re.sub(r"^[×╰─▶│|\s]+", "", line) for line in lines[first:])
    text = " ".join(text.replace("error:", "").split())
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1] + "…"


def _canonical(name: str) -> str:
    from packaging.utils import canonicalize_name

    return canonicalize_name(name)


def _name(tool: str | None) -> str:
    return "uv" if tool else "pip"


def _write(folder: Path, record: dict) -> None:
    write_json_atomic(folder / RECORD, record)


def to_install(plan, python: str) -> list[str]:
    """The SPECs of `plan` that make_all would install with `python`, not made in the plan's folder yet (a revision
    is built, by revisions.py): the dry run's ETA counts them (planning/estimate.py)."""
    texts = [text for text in plan.envs if not revisions.is_revision(text)]
    if not texts:
        return []
    try:
        version = python_version(python)
    except InstallFailed:  # no environment can be made with it: nothing is installed
        return []
    return [text for text in texts if not ready(Path(plan.env_dir) / folder_name(parse_spec(text), version))[1]]


def make_all(plan, python: str, workloads: list, console, held: ExitStack | None = None) -> dict:
    """The plan's environments, each made or reused before the first trial, with what the worker
    needs for the planned workloads; each one's lock held until `held` closes."""

    needs = tuple(sorted({n for w in workloads for n in WORKER_NEEDS[w.kind]}))
    ours = any(split_id(eid)[0].split("/")[0] == revisions.OURS and not original_env(split_id(eid)[1])
               for eid in plan.engines)  # our rows in no environment
    made = revisions.make_all(plan, python, console, plain=ours)
    for text in (t for t in plan.envs if t not in made):
        with console.status(f"environment {text}: making or reusing it"):
            env = ensure(parse_spec(text), python, Path(plan.env_dir), needs, list(plan.pip_args), held)
        how = "reused" if env.reused else f"made with {env.installer}"
        if env.problem:
            print(f"burtbench: environment {clean(text)} cannot be made: {clean(env.problem)} "
                  f"(its engines are skipped)", file=sys.stderr)
        else:
            console.print(clean(f"environment {text}: {how} in {env.setup_s:.1f} s ({env.python_version}, {env.path})"),
                          highlight=False, markup=False)
        made[text] = env
    return made
