"""Where the project is, and how a worker under another interpreter finds its code."""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worker_env(python: str) -> dict:
    """What a worker's environment variables gain: another interpreter (--python's, an environment's)
    reaches the harness's code (and the user's plug-in engines) through PYTHONPATH, while its packages
    stay its own; this interpreter already finds them."""
    if python == sys.executable:
        return {}
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}


def reports_root() -> Path:
    """Where reports go unless --report-dir says: $BURTBENCH_REPORTS, else reports/ in
    the working directory (the tests point the variable at a temporary folder)."""
    return Path(os.environ.get("BURTBENCH_REPORTS") or "reports")
