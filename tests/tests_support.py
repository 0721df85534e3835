"""Helpers several test modules share (not a test module: pytest collects test_*.py only)."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAKES = Path(__file__).resolve().parent / "fakes"


@contextmanager
def fault_engines_env():
    """The fault engines registered in this process and its children, for a module-scoped fixture
    (the function-scoped `fake_engines` fixture of conftest.py does the same with monkeypatch)."""
    saved = {k: os.environ.get(k) for k in ("BURTBENCH_ENGINE_MODULES", "PYTHONPATH")}
    os.environ["BURTBENCH_ENGINE_MODULES"] = "fake_engines"
    os.environ["PYTHONPATH"] = os.pathsep.join([str(FAKES), str(ROOT), saved["PYTHONPATH"] or ""])
    sys.path.insert(0, str(FAKES))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        sys.path.remove(str(FAKES))


def worker_argv(engine_id: str, workload: str, params: dict, *counts: str) -> list[str]:
    """The command the runner gives a Python worker for this point, then `counts` (--iterations N ...)."""
    from engines import all_engines
    from harness.runner import worker_command
    from workloads import load

    return [*worker_command(sys.executable, all_engines()[engine_id], load(workload), params), *counts]
