"""Helpers several test modules share (not a test module: pytest collects test_*.py only)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

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


def fault_engine_run(out: Path, workloads: str) -> Path:
    """A finished run of the fault engines' always-ok engine (2 smoke trials a point), under `out`."""
    from harness.commands.cli import main

    with fault_engines_env():
        assert main(["run", "--engine", "fake/ok", "--workload", workloads, "--profile", "smoke", "--trials", "2",
                     "--no-report", "--out", str(out)]) == 0
    (run_dir,) = out.iterdir()
    return run_dir


def shared_upstream():
    """The authors' BurTorch source (BURTBENCH_UPSTREAM, else ../shared/upstream beside the checkout), or a skip."""
    from engines.authors.source import open_source

    env = os.environ.get("BURTBENCH_UPSTREAM")
    for where in ([Path(env)] if env else []) + [ROOT.parent / "shared" / "upstream"]:
        if where.exists():
            return open_source(where)
    pytest.skip("the authors' source is not here: set BURTBENCH_UPSTREAM or provide ../shared/upstream")


def build_wheel(folder: Path, name: str, version: str, package: str, source: str) -> Path:
    """A pure-Python wheel of one module package (`package/__init__.py` = source), written with
    zipfile alone: the tests of managed environments install it offline from `folder`."""
    import base64
    import hashlib
    import zipfile

    stem = f"{name.replace('-', '_')}-{version}"
    files = {
        f"{package}/__init__.py": source,
        f"{stem}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{stem}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: burtbench-tests\nRoot-Is-Purelib: true\n"
                                   "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{stem}.dist-info/RECORD"] = "\n".join(record + [f"{stem}.dist-info/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def worker_argv(engine_id: str, workload: str, params: dict, *counts: str) -> list[str]:
    """The command the runner gives a Python worker for this point, then `counts` (--iterations N ...)."""
    from engines import all_engines
    from harness.running.runner import worker_command
    from workloads import load

    return [*worker_command(sys.executable, all_engines()[engine_id], load(workload), params), *counts]


def check_outcome(code: int, err: str, argv: list[str]) -> None:
    """The fuzzers' invariant: exit 0, or one `burtbench: error:` line (the last on stderr) and exit 2;
    never a traceback."""
    assert "Traceback" not in err, (argv, err)
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        errors = [line for line in err.splitlines() if line.startswith("burtbench: error:")]
        assert len(errors) == 1 and err.strip().splitlines()[-1] == errors[0], (argv, err)


CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    binary = next(filter(None, map(shutil.which, CHROMIUM_NAMES)), None)
    if binary is None:
        pytest.skip("no Chromium binary on PATH (Debian: apt-get install chromium); "
                    "the HTML check needs a real browser")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--virtual-time-budget=10000"]
    return subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=120)
