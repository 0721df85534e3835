"""manifest.json: what a run was (its plan and options) and where it ran (machine, versions, commit).

Framework versions come from package metadata and the packages' version files, so capturing them
imports no framework.
"""
from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from dataclasses import asdict
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from engines import children
from engines.base import find_executable
from harness import __version__
from harness.machine import bandwidth, ceiling, doctor
from harness.machine import host as machine
from harness.machine import peak
from harness.measure import tsc
from harness.paths import ROOT, worker_env
from harness.records.base import parse
from harness.records.run import Manifest
from harness.store.results import MANIFEST_FILE, write_json_atomic
from harness.store.run_plan import RunPlan
from workloads import all_workloads

FRAMEWORK_DISTRIBUTIONS = ("torch", "tensorflow", "jax", "jaxlib", "autograd", "micrograd", "mlx",
                           "ai-edge-litert", "numpy", "pybind11", "burtbench")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def framework_versions(python: str = sys.executable) -> dict:
    """Versions as seen by the interpreter that runs the workers (it may be another venv's), each with its
    build (2.11.0+cu130)."""
    if Path(python).resolve() == Path(sys.executable).resolve():
        return {name: with_build(*_version(name)) for name in FRAMEWORK_DISTRIBUTIONS}
    code = ("import json,importlib.metadata as m\n"
            "def v(n):\n try: d = m.distribution(n); return [d.version, str(d.locate_file(n + '/version.py'))]\n"
            " except Exception: return [None, None]\n"
            f"print(json.dumps({{n: v(n) for n in {list(FRAMEWORK_DISTRIBUTIONS)!r}}}))")
    try:
        out = children.run([python, "-c", code], "reading the workers' framework versions", timeout=60,
                           capture_output=True, text=True)
        if out.returncode != 0:
            raise ValueError(out.stderr)
        return {name: with_build(*found) for name, found in parse(out.stdout).items()}
    except (OSError, subprocess.SubprocessError, ValueError, TypeError, AttributeError):
        return {name: None for name in FRAMEWORK_DISTRIBUTIONS}


def _version(name: str) -> tuple[str | None, str | None]:
    """The distribution's version and where its package's version file would be."""
    try:
        found = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None, None
    return found.version, str(found.locate_file(f"{name}/version.py"))


def with_build(version: str | None, version_file: str | None) -> str | None:
    """The version with its build (its local part, 2.11.0+cu130): a wheel's metadata may lack it (PyTorch's
    CUDA wheels on PyPI say 2.11.0), while the package's own version file, read here unimported, keeps it."""
    try:
        text = Path(version_file).read_text(encoding="utf-8") if version and version_file else ""
    except (OSError, UnicodeDecodeError):
        return version
    found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return found.group(1) if found and found.group(1).startswith(f"{version}+") else version


def git_commit() -> str | None:
    try:
        out = children.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], "reading the checkout's commit (git)",
                           timeout=10, capture_output=True, text=True)
        dirty = children.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                             "reading the checkout's state (git)", timeout=10, capture_output=True, text=True)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def native_build_info(cpu: int, workloads: tuple[str, ...], python: str = sys.executable) -> dict | None:
    """Compiler and flags the native driver reports about itself, if it is installed, and where the
    plan trains a model of matrix products, the measured core's peak FP32 rate (machine/peak.py) and its
    memory bandwidth at each level (machine/bandwidth.py): the point's roofs (machine/roofs.py).
    Beside it, the Python module's own account (burtorch.build_info() under the workers' interpreter)
    and whether it names the driver's build: the same kernels, ISA, block products and compiler."""

    exe = find_executable(peak.DRIVER)
    if exe is None:
        return None
    try:
        out = children.run([exe, "--version"], f"asking {exe} its version", timeout=10, capture_output=True, text=True)
    except (OSError, subprocess.SubprocessError):
        return None
    info = {"executable": exe, "version": out.stdout.strip() or out.stderr.strip()}
    info["module"], info["module_source"] = module_build_info(python)
    if info["module"] is not None:
        described = re.search(r"\((.*)\)", info["version"])
        info["module_same_build"] = bool(described) and described.group(1) == info["module"]["description"]
    known = all_workloads()
    if any(known[name].step_flops for name in workloads if name in known):
        info["peak_provenance"] = peak.provenance(cpu)
        info["peak_gflops_fp32"], info["peak_source"] = peak.fp32_peak(cpu)
    if any(known[name].step_bytes for name in workloads if name in known):
        info["bandwidth"] = bandwidth.measure(cpu)
    return info


def module_build_info(python: str) -> tuple[dict | None, str]:
    """burtorch.build_info() as the workers' interpreter imports it, and where it came from (or why not)."""
    code = "import json, burtorch\nprint(json.dumps(burtorch.build_info()))"
    try:
        out = children.run([python, "-c", code], "asking the Python module its build", timeout=30, capture_output=True,
                           text=True, env={**os.environ, **worker_env(python)})
        info = parse(out.stdout)
        if not isinstance(info, dict):
            raise ValueError("not an object")
        return info, f"burtorch.build_info() under {python}"
    except (OSError, subprocess.SubprocessError, ValueError):
        return None, f"burtorch.build_info() failed under {python}: is the module built (make setup)?"


def step_ceilings(plan: RunPlan, cpu: int) -> list[dict] | None:
    """The best library SGEMM at each planned training point's products, on the run's core
    (machine/ceiling.py); None where the plan trains no model of matrix products."""
    known = all_workloads()
    points = [(known[name], params) for name in plan.workloads if name in known and known[name].step_products
              for params in known[name].points(plan.narrow, plan.profile)]
    return ceiling.measure(points, cpu) if points else None


def build(run_id: str, plan: RunPlan, cpu: int, python: str, argv: list[str]) -> dict:
    findings = doctor.diagnose(cpu)
    return {
        "schema": Manifest.SCHEMA,
        "run_id": run_id,
        "created_at": now(),
        "finished_at": None,
        "status": "running",
        "burtbench_version": __version__,
        "argv": argv,
        "plan": plan.to_record(),
        "cpu": cpu,
        "machine": machine.describe(),
        "python": {"executable": python, "runner_version": platform.python_version()},
        "frameworks": framework_versions(python),
        "native": native_build_info(cpu, tuple(plan.workloads), python),
        "ceiling": step_ceilings(plan, cpu),
        "git_commit": git_commit(),
        "doctor": [asdict(f) for f in findings],
        "tsc": dict(zip(("hz", "source"), tsc.tsc_rate_hz())),
        "unavailable": {},
    }


def save(run_dir: Path, manifest: dict) -> None:
    write_json_atomic(Path(run_dir) / MANIFEST_FILE, manifest)
