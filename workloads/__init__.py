"""The workload registry: every module of workloads/catalog/ is a workload, and so is every module
named in BURTBENCH_WORKLOAD_MODULES (comma-separated import paths: plug-ins outside this tree; the
worker child inherits the variable and so sees the same registry). A workload's name is its
module's last name.

Naming workloads imports none of them. A worker loads only its own (`load(name)`): the MLP and GPT
modules import numpy, which would add tens of MiB to every graph trial's measured memory.
"""
from __future__ import annotations

import importlib
import os

# The short graphs whose trials gauge a machine (`burtbench doctor --interference`): seconds each.
PROBE_WORKLOADS = ("tiny", "small")


def module_paths() -> dict[str, str]:
    """name -> import path of every workload, by name."""
    # Imported here: the worker child imports this package (for workloads.graphs) and pkgutil
    # brings typing with it.
    import pkgutil

    from workloads import catalog

    paths = {info.name: f"{catalog.__name__}.{info.name}" for info in pkgutil.iter_modules(catalog.__path__)}
    for path in os.environ.get("BURTBENCH_WORKLOAD_MODULES", "").split(","):
        if path.strip():
            paths[path.strip().rsplit(".", 1)[-1]] = path.strip()
    return dict(sorted(paths.items()))


def names() -> list[str]:
    return list(module_paths())


def load(name: str):
    paths = module_paths()
    if name not in paths:
        raise KeyError(f"unknown workload {name!r}")
    return importlib.import_module(paths[name]).WORKLOAD


def all_workloads() -> dict:
    return {name: load(name) for name in names()}
