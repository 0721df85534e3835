"""The folder of environments the harness made (`burtbench envs`): where it is, what each one
recorded, the lock that keeps one in use from being pruned or made again under a run, and pruning
the unused.

Each environment has a lock file beside it (`<folder>.lock`): a run holds it shared from making or
reusing the environment to its last trial; making it again and pruning it take it exclusively, and
prune never waits: an environment in use is kept, and it says so. Prune deletes the lock file with
the folder, so a lock taken is checked to be on the file still there (else taken again on the new one). POSIX only (fcntl's shared locks): on Windows the OS itself refuses
to delete the files of a running interpreter, and prune says it could not delete it.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from harness.records.base import Damaged, load
from harness.records.envs import EnvRecord
from harness.records.machine import cache_dir
from harness.store.runs import check_out_dir
from harness.text import clean
from harness.units import mib

RECORD = "burtbench-env.json"  # declared in harness/records/envs.py
# Unused this long, an environment is removed by `burtbench envs --prune` (given no other age).
PRUNE_DAYS = 30


def default_env_dir() -> Path:
    return cache_dir() / "envs"


def env_dir(option: str | None) -> Path:
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
    """An environment's RECORD; empty where it was never finished, or holds what no writer writes (made again)."""
    try:
        found, data = load(folder / RECORD, EnvRecord)
    except OSError:
        return {}
    return {} if isinstance(found, Damaged) else data


def cached(folder: Path) -> list[Cached]:
    found = []
    for path in sorted(p for p in Path(folder).glob("*") if p.is_dir()):
        record = read_record(path)
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
        found.append(Cached(path, record, size, float(record.get("last_used") or path.stat().st_mtime)))
    return found


class EnvLock:
    """The lock of one environment's folder, held shared by each run using it, exclusively by who
    makes or deletes it."""

    def __init__(self, folder: Path):
        self.path = Path(folder).with_name(Path(folder).name + ".lock")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.path, "a+b")  # noqa: SIM115 (held past this call: released by close())

    def take(self, exclusive: bool, wait: bool = True) -> bool:
        """Lock (or convert the lock held) shared or exclusive; False where `wait` is off and another holds it."""
        if os.name == "nt":
            return True
        import fcntl

        mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | (0 if wait else fcntl.LOCK_NB)
        while True:
            try:
                fcntl.flock(self.handle, mode)
            except BlockingIOError:
                return False
            if self._on_current_file():
                return True
            self.handle.close()  # a prune deleted the file meanwhile: lock the one there now
            self.handle = open(self.path, "a+b")  # noqa: SIM115

    def _on_current_file(self) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(self.handle.fileno()).st_ino
        except FileNotFoundError:
            return False

    def delete(self) -> None:
        """Delete the lock file, while holding it exclusively (the folder it guards is gone)."""
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        self.handle.close()  # closing the file releases its lock


def hold(folder: Path, stack: ExitStack) -> EnvLock:
    """The environment's lock, held shared until `stack` closes."""
    lock = EnvLock(folder)
    stack.callback(lock.close)
    if not lock.take(exclusive=False, wait=False):
        print(f"burtbench: waiting for another process making or deleting {folder}", file=sys.stderr)
        lock.take(exclusive=False)
    return lock


def prune(folder: Path, days: float) -> tuple[list[Cached], list[tuple[Cached, str]]]:
    """Remove the environments unused for `days` (an unfinished one counts from when it was begun);
    those a run is using, or that cannot be deleted, are kept, each with why."""
    gone, kept = [], []
    for c in cached(folder):
        if time.time() - c.last_used <= days * 86400:
            continue
        lock = EnvLock(c.path)
        try:
            if not lock.take(exclusive=True, wait=False):
                kept.append((c, "in use by a run"))
                continue
            try:
                shutil.rmtree(c.path)
            except OSError as exc:
                kept.append((c, f"cannot delete it ({exc.strerror or exc})"))
                continue
            lock.delete()
            gone.append(c)
        finally:
            lock.close()
    for orphan in Path(folder).glob("*.lock"):  # an environment that could not be made leaves its lock
        if not orphan.with_suffix("").exists():
            lock = EnvLock(orphan.with_suffix(""))
            if lock.take(exclusive=True, wait=False):
                lock.delete()
            lock.close()
    return gone, kept


def show(folder: Path, prune_days: float | None, console) -> None:
    """`burtbench envs [--prune DAYS]`: what the cache holds, after deleting what was unused that long."""
    from datetime import datetime

    from rich.table import Table

    if prune_days is not None:
        gone, kept = prune(folder, prune_days)
        for c in gone:
            console.print(clean(f"deleted {c.path} ({mib(c.size_bytes)})"), highlight=False, markup=False)
        for c, why in kept:
            print(clean(f"burtbench: kept {c.path}: {why}; prune it again once that run has ended"), file=sys.stderr)
    found = cached(folder)
    if not found:
        console.print(f"no environments in {folder}: `burtbench run --env SPEC` makes one "
                      f"(e.g. --env autograd==1.7.0) and keeps it here for later runs", highlight=False)
        return
    table = Table("SPEC", "Python", "size", "last used", "folder", title=f"burtbench environments in {folder}",
                  title_justify="left")
    table.columns[0].overflow = table.columns[-1].overflow = "fold"  # long specs and names wrap, never cut
    for c in found:
        table.add_row(clean(str(c.record.get("spec") or "(unfinished)")), clean(str(c.record.get("python_version") or "")),
                      mib(c.size_bytes), datetime.fromtimestamp(c.last_used).strftime("%Y-%m-%d %H:%M"),
                      clean(c.path.name))
    console.print(table)
