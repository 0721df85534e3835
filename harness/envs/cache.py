"""The folder of environments the harness made (`burtbench envs`): where it is, what each one
recorded, and pruning the unused."""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.store.runs import check_out_dir
from harness.units import mib

RECORD = "burtbench-env.json"
# Unused this long, an environment is removed by `burtbench envs --prune` (given no other age).
PRUNE_DAYS = 30


def default_env_dir() -> Path:
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "burtbench" / "envs"


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
            console.print(f"deleted {gone.path} ({mib(gone.size_bytes)})", highlight=False)
    found = cached(folder)
    if not found:
        console.print(f"no environments in {folder}: `burtbench run --env SPEC` makes one "
                      f"(e.g. --env autograd==1.7.0) and keeps it here for later runs", highlight=False)
        return
    table = Table("SPEC", "Python", "size", "last used", "folder", title=f"burtbench environments in {folder}",
                  title_justify="left")
    table.columns[0].overflow = table.columns[-1].overflow = "fold"  # long specs and names wrap, never cut
    for c in found:
        table.add_row(c.record.get("spec") or "(unfinished)", c.record.get("python_version") or "",
                      mib(c.size_bytes), datetime.fromtimestamp(c.last_used).strftime("%Y-%m-%d %H:%M"),
                      c.path.name)
    console.print(table)
