"""Where a run lives: its folder found and checked, an output folder checked before anything is
written, and a run read back (manifest and trials) for the report and compare."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UsageError
from harness.store import results
from harness.store.results import read_trials, sane_manifest
from harness.store.run_plan import DEFAULT_TIMING, RunPlan, read_plan
from harness.text import clean_data

# Kernel file systems that take no results (a run there would fail at its first write).
PSEUDO_FILE_SYSTEMS = {"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "securityfs", "debugfs",
                       "tracefs", "configfs", "pstore", "bpf", "mqueue", "fusectl", "binfmt_misc", "autofs"}
MIN_FREE_BYTES = 1 << 20


def existing_run(path: str, what: str) -> Path:
    run_dir = Path(path)
    if not results.is_run_dir(run_dir):
        raise UsageError(f"{what} {path}: not a burtbench run folder (no manifest.json)")
    return run_dir


def check_out_dir(path: Path, what: str = "results folder", option: str = "--out") -> None:
    """The folder can be made (or is there) and written, on a file system that keeps files; nothing is created."""
    path = Path(path).absolute()
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise UsageError(f"{option} {path}: cannot create the {what} ({existing} is not a folder)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot create the {what} ({existing} is not writable)")
    fs = file_system_type(existing)
    if fs in PSEUDO_FILE_SYSTEMS:
        raise UsageError(f"{option} {path}: {existing} is on the kernel's {fs} file system, which keeps no files")
    if shutil.disk_usage(existing).free < MIN_FREE_BYTES:
        raise UsageError(f"{option} {path}: the disk holding {existing} is full")


def file_system_type(path: Path, mounts: str = "/proc/self/mounts") -> str | None:
    """The type of the file system `path` is on (Linux), or None where the mount table cannot be read."""
    try:
        table = Path(mounts).read_text()
    except OSError:
        return None
    best, kind = "", None
    for line in table.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            point = fields[1].replace("\\040", " ")
            if (str(path) == point or str(path).startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
                best, kind = point, fields[2]
    return kind


# Runs pooled into one (`burtbench claims`, harness/report/pooled.py) keep their rounds apart: a trial's
# round becomes its measuring run's place * ROUND_STRIDE + its round, so trials pair only within their run.
ROUND_STRIDE = 100_000  # far above any run's rounds


def run_of(round_index: int) -> int:
    """The place among the pooled runs of the run a round belongs to (0 in a run of its own)."""
    return round_index // ROUND_STRIDE


@dataclass
class Run:
    run_id: str
    manifest: dict
    trials: list[dict]
    os: str  # 'linux', 'windows' or 'macos'
    plan: RunPlan

    @property
    def timing(self) -> str:
        return self.plan.timing


def load_run(run_dir: Path, warn=None) -> Run:
    run_dir = Path(run_dir)
    manifest = sane_manifest(run_dir, warn)
    trials = read_trials(run_dir, warn)
    timings = sorted({t.get("timing") or DEFAULT_TIMING for t in trials})
    if len(timings) > 1:
        raise UsageError(f"{run_dir}: its trials mix --timing {' and '.join(timings)}: a table of one would "
                         "compare timed regions that differ")
    plan = read_plan(manifest, str(run_dir))
    # Every string a report or compare shows from here on came from a file: escaped once, here.
    return Run(run_id=run_dir.name, manifest=clean_data(manifest), trials=clean_data(trials), os=run_os(manifest),
               plan=plan)


def run_os(manifest: dict) -> str:
    """'linux', 'windows' or 'macos' from the manifest; linux when it does not say."""
    machine = manifest.get("machine") or {}
    text = " ".join(str(v) for v in (machine.get("os"), machine.get("platform"), manifest.get("platform")) if v)
    text = text.lower()
    if "darwin" in text or "macos" in text or "mac os" in text:
        return "macos"
    if "windows" in text or "win32" in text:
        return "windows"
    return "linux"
