import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FAKES = Path(__file__).resolve().parent / "fakes"


@pytest.fixture
def fake_engines(monkeypatch):
    """Registers the fault engines in this process and in every child the runner spawns."""
    monkeypatch.setenv("BURTBENCH_ENGINE_MODULES", "fake_engines")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKES), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(FAKES))
    return FAKES
