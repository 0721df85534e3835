"""Engine registry. Engine modules are imported to read their ENGINES; none imports its framework then.

Extra engine modules (the tests' fault engines) are named in BURTBENCH_ENGINE_MODULES,
comma-separated; the worker child inherits the variable and so sees the same registry.
"""
from __future__ import annotations

import importlib
import os

from engines.base import BASELINE, EngineSpec

# The engines of those gauging trials: our native engine and the slowest Python one, far apart.
PROBE_ENGINES = (BASELINE, "micrograd/eager/python/cpu")

ENGINE_MODULES = (
    "engines.burtorch",
    "engines.burtorch_authors",
    "engines.torch",
    "engines.libtorch",
    "engines.burn",
    "engines.tensorflow",
    "engines.tflite",
    "engines.jax",
    "engines.autograd",
    "engines.micrograd",
    "engines.mlx",
    "engines.tinygrad",
    "engines.none",
)


def _modules() -> list[str]:
    extra = [m.strip() for m in os.environ.get("BURTBENCH_ENGINE_MODULES", "").split(",") if m.strip()]
    return [*ENGINE_MODULES, *extra]


def all_engines() -> dict[str, EngineSpec]:
    engines: dict[str, EngineSpec] = {}
    for name in _modules():
        for spec in importlib.import_module(name).ENGINES:
            engines[spec.id] = spec
    return engines
