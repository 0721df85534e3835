"""Managed environments (`burtbench run --env SPEC`): which engines a SPEC runs, and the cache of
environments the harness made (`burtbench envs`).

A SPEC is a requirement set ("jax==0.4.38", "jax==0.5.0,jaxlib==0.5.0"). The engines of a
framework the SPEC names run in that environment as engines of their own, `<engine id>@<SPEC>`,
planned and interleaved like any other. Making an environment is harness/envs/install.py.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
RECORD = "burtbench-env.json"
# Unused this long, an environment is removed by `burtbench envs --prune` (given no other age).
PRUNE_DAYS = 30


@dataclass(frozen=True)
class EnvSpec:
    text: str  # the requirements, normalized, joined by ","
    requirements: tuple[str, ...]  # each as the installer takes it
    names: frozenset[str]  # the distributions it names, normalized (PEP 503)


def parse_spec(text: str, option: str = "--env") -> EnvSpec:
    """A SPEC, checked: requirements joined by commas, where a piece starting with an operator
    continues the previous requirement ("jax>=0.4,<0.5")."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    pieces: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if piece and re.match(r"[<>=!~]", piece) and pieces:
            pieces[-1] += "," + piece
        else:
            pieces.append(piece)
    requirements = []
    for piece in pieces:
        try:
            if not piece:
                raise InvalidRequirement("empty requirement")
            requirements.append(Requirement(piece))
        except InvalidRequirement as exc:
            raise UsageError(f"{option} {text!r}: not a requirement set like 'jax==0.4.38' or "
                             f"'jax==0.5.0,jaxlib==0.5.0' ({piece!r}: {str(exc).splitlines()[0]})") from None
    names = [canonicalize_name(r.name) for r in requirements]
    if len(set(names)) < len(names):
        raise UsageError(f"{option} {text!r}: names a distribution twice")
    shown = [f"{canonicalize_name(r.name)}{'[' + ','.join(sorted(r.extras)) + ']' if r.extras else ''}"
             + (f" @ {r.url}" if r.url else str(r.specifier)) + (f"; {r.marker}" if r.marker else "")
             for r in requirements]
    return EnvSpec(",".join(shown), tuple(shown), frozenset(names))


def plan_options(args) -> dict:
    """--env, --env-dir and --pip-arg as the plan records them (a resumed run makes the same environments)."""
    texts = args.env
    if not texts:
        given = [o for o, v in (("--env-dir", args.env_dir), ("--pip-arg", args.pip_arg)) if v]
        if given:
            raise UsageError(f"{'/'.join(given)} only apply with --env SPEC")
        return {"envs": [], "env_dir": None, "pip_args": []}
    specs = [parse_spec(text).text for text in texts]
    twice = sorted({s for s in specs if specs.count(s) > 1})
    if twice:
        raise UsageError(f"--env {twice[0]} is given twice")
    return {"envs": specs, "env_dir": str(env_dir(args.env_dir)), "pip_args": list(args.pip_arg)}


def make_all(plan: dict, python: str, workloads: list, console) -> dict:
    """The plan's environments, each made or reused before the first trial, with what the worker
    needs for the planned workloads."""
    from harness.envs import install as env_install
    from workloads.base import WORKER_NEEDS

    needs = tuple(sorted({n for w in workloads for n in WORKER_NEEDS[w.kind]}))
    made = {}
    for text in plan.get("envs") or []:
        with console.status(f"environment {text}: making or reusing it"):
            env = env_install.ensure(parse_spec(text), python, Path(plan["env_dir"]), needs, plan.get("pip_args") or [])
        how = "reused" if env.reused else f"made with {env.installer}"
        if env.problem:
            console.print(f"[yellow]environment {text}[/]: cannot be made: {env.problem}", highlight=False)
        else:
            console.print(f"environment {text}: {how} in {env.setup_s:.1f} s ({env.python_version}, {env.path})",
                          highlight=False)
        made[text] = env
    return made


def provides(spec: EnvSpec, engine) -> bool:
    from packaging.utils import canonicalize_name

    return engine.kind == "python" and canonicalize_name(engine.dist_name) in spec.names


def variants(engines: list, specs: list[EnvSpec], explicit: bool) -> list:
    """The selected engines as run in the environments: one per (engine, SPEC naming its framework).
    Engines the user named must each have a SPEC; with --engine all, the SPECs choose."""
    chosen = []
    for engine in engines:
        mine = [spec for spec in specs if provides(spec, engine)]
        if not mine and explicit:
            raise UsageError(f"--engine {engine.id}: no --env SPEC installs its framework "
                             f"(it needs '{engine.dist_name}'" + ("" if engine.kind == "python" else
                                                                  ", and only Python engines run in an environment")
                             + ")")
        chosen += [engine.replace(env=spec.text) for spec in mine]
    for spec in specs:
        if not any(v.env == spec.text for v in chosen):
            raise UsageError(f"--env {spec.text}: installs no framework of a selected engine "
                             f"(name the framework's distribution, e.g. 'autograd==1.7.0')")
    return chosen


def bind(engines: dict, environments: dict) -> dict:
    """The run's engines with the interpreter of their environment; an environment that could not
    be made leaves its engines unavailable, with the installer's reason."""
    bound = {}
    for eid, engine in engines.items():
        env = environments.get(engine.env) if engine.env else None
        if env is not None and env.problem:
            reason = f"environment {engine.env} could not be made: {env.problem}"
            engine = engine.replace(condition=lambda reason=reason: reason)
        elif env is not None:
            engine = engine.replace(python=env.python)
        bound[eid] = engine
    return bound


def run_side(text: str, what: str) -> tuple[Path, str | None]:
    """RUN, or RUN@SPEC: the trials of one environment (--env SPEC) of a run."""
    from harness.store import results
    from harness.running.session import existing_run

    if results.is_run_dir(Path(text)) or "@" not in text:
        return existing_run(text, what), None
    folder, _, spec = text.partition("@")
    run_dir, env = existing_run(folder, what), parse_spec(spec, f"{what} {folder}@").text
    known = (results.read_manifest(run_dir).get("plan") or {}).get("envs") or []
    if env not in known:
        raise UsageError(f"{what} {text}: the run has no environment {env} (it has: {', '.join(known) or 'none'})")
    return run_dir, env


def split_id(engine_id: str) -> tuple[str, str]:
    """(engine id without its environment, the environment's SPEC or '')."""
    base, _, env = engine_id.partition("@")
    return base, env


def harness_path() -> dict:
    """Another interpreter (--python's, an environment's) reaches the harness's code (and the user's
    plug-in engines) through PYTHONPATH; its packages are its own."""
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}


def worker_env(engine) -> dict | None:
    """What a child of `engine` adds to the run's environment variables: an environment's engine, the harness's path."""
    return harness_path() if engine.env else None


# ----------------------------------------------------------------------------- the cache folder

def default_env_dir() -> Path:
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "burtbench" / "envs"


def env_dir(option: str | None) -> Path:
    from harness.planning.selection import check_out_dir

    folder = Path(option).expanduser() if option else default_env_dir()
    check_out_dir(folder, "environments folder", "--env-dir")
    return folder.absolute()


@dataclass(frozen=True)
class Cached:
    path: Path
    record: dict  # RECORD's content; empty where the environment was never finished
    size_bytes: int
    last_used: float


def read_record(folder: Path) -> dict:
    """An environment's RECORD; empty where it was never finished (or is unreadable)."""
    try:
        return json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return {}


def cached(folder: Path) -> list[Cached]:
    found = []
    for path in sorted(p for p in Path(folder).glob("*") if p.is_dir()):
        record = read_record(path)
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
        found.append(Cached(path, record, size, float(record.get("last_used") or path.stat().st_mtime)))
    return found


def prune(folder: Path, days: float) -> list[Cached]:
    """Remove the environments unused for `days` (an unfinished one counts from when it was begun)."""
    gone = [c for c in cached(folder) if time.time() - c.last_used > days * 86400]
    for c in gone:
        shutil.rmtree(c.path)
    return gone


def show(folder: Path, prune_days: float | None, console) -> None:
    """`burtbench envs [--prune DAYS]`: what the cache holds, after deleting what was unused that long."""
    from datetime import datetime

    from rich.table import Table

    if prune_days is not None:
        for gone in prune(folder, prune_days):
            console.print(f"deleted {gone.path} ({gone.size_bytes / 2**20:.1f} MB)", highlight=False)
    table = Table("SPEC", "Python", "size", "last used", "folder", title=f"burtbench environments in {folder}",
                  title_justify="left")
    for c in cached(folder):
        table.add_row(c.record.get("spec") or "(unfinished)", c.record.get("python_version") or "",
                      f"{c.size_bytes / 2**20:.1f} MB", datetime.fromtimestamp(c.last_used).strftime("%Y-%m-%d %H:%M"),
                      c.path.name)
    console.print(table)
