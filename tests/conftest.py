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


@pytest.fixture(autouse=True)
def reports_elsewhere(monkeypatch, tmp_path_factory):
    """`burtbench run` ends by rendering reports/<run-id>/ in the working directory: in tests (and
    their children), a temporary folder instead of the checkout's reports/."""
    monkeypatch.setenv("BURTBENCH_REPORTS", str(tmp_path_factory.mktemp("reports")))
