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
def no_width_from_the_workers(monkeypatch):
    """pytest-xdist tells its workers COLUMNS=80: a test reads the width its output would have when piped,
    as in one process (a test that needs a width sets its own)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(autouse=True)
def reports_elsewhere(monkeypatch, tmp_path_factory):
    """`burtbench run` ends by rendering reports/<run-id>/ in the working directory: in tests (and
    their children), a temporary folder instead of the checkout's reports/."""
    monkeypatch.setenv("BURTBENCH_REPORTS", str(tmp_path_factory.mktemp("reports")))


@pytest.fixture(autouse=True, scope="session")
def machine_caches_elsewhere(tmp_path_factory):
    """The machine caches (bandwidth.json, ceiling.json: harness/records/machine.cache_dir) of this session and
    of every child it starts: a temporary folder, never the user's ~/.cache/burtbench."""
    where = tmp_path_factory.mktemp("machine-cache")
    before = os.environ.get("BURTBENCH_CACHE")
    os.environ["BURTBENCH_CACHE"] = str(where)
    yield where
    if before is None:
        os.environ.pop("BURTBENCH_CACHE", None)
    else:
        os.environ["BURTBENCH_CACHE"] = before


@pytest.fixture(autouse=True)
def idle_cores(monkeypatch):
    """How busy a core is before a probe (harness/machine/host.core_busy) reads as idle in this process: the
    suite's own load must not decide what a test sees cached."""
    from harness.machine import host

    monkeypatch.setattr(host, "core_busy", lambda cpu: 0.0)


@pytest.fixture(autouse=True)
def no_wait_watching_the_pinned_core(monkeypatch):
    """Every run's manifest watches its core for half a second (harness/machine/doctor.pinned_core_findings):
    in tests, which read the suite's own load there, without the wait (a caller's own `sleep` is kept)."""
    import time

    from harness.machine import doctor

    watch = doctor.pinned_core_findings

    def unwaited(cpu, proc_root, watch_s, sleep):
        return watch(cpu, proc_root, watch_s, (lambda s: None) if sleep is time.sleep else sleep)

    monkeypatch.setattr(doctor, "pinned_core_findings", unwaited)
