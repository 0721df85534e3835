"""File-system errors during a run, injected at every call that touches the results folder, one call at
a time: the run stops with one line and a non-zero exit (or finishes, where only the lock's removal
failed, saying so), keeps every trial already written, leaves a manifest that does not say
`running`, and releases the lock (or says it could not)."""
from __future__ import annotations

import builtins
import errno
import io
import json
import os
from pathlib import Path

import pytest

from harness.commands.cli import main
from harness.store import results

ERRNOS = (errno.ENOSPC, errno.EROFS, errno.EIO, errno.EACCES)
RUN = ["run", "--engine", "fake/ok", "--workload", "tiny,small", "--profile", "smoke", "--no-report"]


class Injector:
    """Counts the calls that touch `root` (by path, or by a descriptor open on a file there) and fails the n-th."""

    def __init__(self, root: Path, fail_at: int | None):
        self.root, self.fail_at, self.calls, self.failed = str(root), fail_at, 0, None
        self.sites: list[str] = []

    def touches(self, target) -> bool:
        if isinstance(target, int):  # a descriptor: where it points now (numbers are reused)
            try:
                target = os.readlink(f"/proc/self/fd/{target}")
            except OSError:
                return False
        return os.fspath(target).startswith(self.root) if isinstance(target, (str, os.PathLike)) else False

    def gate(self, name: str, target) -> None:
        if not self.touches(target):
            return
        self.calls += 1
        self.sites.append(f"{name} {target if not isinstance(target, int) else 'fd'}")
        if self.calls == self.fail_at:
            code = ERRNOS[self.calls % len(ERRNOS)]
            self.failed = f"{name} #{self.calls} ({errno.errorcode[code]})"
            raise OSError(code, os.strerror(code), os.fspath(target) if not isinstance(target, int) else None)

    def install(self, monkeypatch) -> None:
        real = {name: getattr(os, name) for name in ("open", "fsync", "replace", "unlink", "mkdir", "truncate",
                                                     "ftruncate", "rename")}
        real_open = builtins.open

        def wrap(name):
            def call(target, *args, **kwargs):
                self.gate(name, target)
                return real[name](target, *args, **kwargs)
            return call

        def opener(target, *args, **kwargs):
            self.gate("open()", target)
            return real_open(target, *args, **kwargs)

        for name in real:
            monkeypatch.setattr(os, name, wrap(name))
        monkeypatch.setattr(builtins, "open", opener)
        monkeypatch.setattr(io, "open", opener)


def run_with(monkeypatch, out: Path, fail_at: int | None) -> tuple[int, Injector]:
    injector = Injector(out, fail_at)
    with monkeypatch.context() as patch:
        injector.install(patch)
        code = main([*RUN, "--out", str(out)])
    return code, injector


def test_every_results_call_site_failing_keeps_trials_and_says_what_happened(fake_engines, monkeypatch, tmp_path,
                                                                              capfd):
    code, clean = run_with(monkeypatch, tmp_path / "clean", None)
    assert code == 0 and clean.calls >= 10, clean.sites
    capfd.readouterr()
    for n in range(1, clean.calls + 1):
        out = tmp_path / f"fail-{n}"
        code, injector = run_with(monkeypatch, out, n)
        err = capfd.readouterr().err
        where = f"failure at {injector.failed}: {injector.sites[n - 1] if n <= len(injector.sites) else None}"
        assert "Traceback" not in err, where
        run_dirs = [p for p in out.iterdir() if p.is_dir()] if out.exists() else []
        if code == 0:  # only the lock's removal, or reading the finished run back for its closing lines, may fail
            assert "could not remove the lock" in err or "going on without it" in err, where
            continue
        errors = [line for line in err.splitlines() if line.startswith("burtbench: error:")]
        assert code in (1, 2) and len(errors) == 1, (where, err)
        for run_dir in run_dirs:
            trials = results.read_trials(run_dir, warn=lambda _: None)
            keys = [results.trial_key(t["engine"], t["workload"], t["params"], t["trial"]) for t in trials]
            # The plan: fake/ok on tiny and small, and the harness's floor row (small reports memory).
            assert len(keys) == len(set(keys)) <= 3, where
            manifest = run_dir / results.MANIFEST_FILE
            if manifest.exists():
                assert json.loads(manifest.read_text())["status"] != "running", where
            lock = run_dir / ".lock"
            holder = (lock.read_text().split() or [""])[0] if lock.exists() else ""  # the lock names "pid host"
            assert holder != str(os.getpid()) or "could not remove the lock" in err, where


@pytest.mark.parametrize("broken", ["missing", "not JSON", "wrong types"])
def test_a_damaged_manifest_stops_a_resume_with_one_line(fake_engines, tmp_path, capsys, broken):
    assert main([*RUN, "--out", str(tmp_path)]) == 0
    (run_dir,) = tmp_path.iterdir()
    manifest = run_dir / results.MANIFEST_FILE
    if broken == "missing":
        manifest.unlink()
    elif broken == "not JSON":
        manifest.write_text("{")
    else:
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "plan": {"profile": 7}}))
    capsys.readouterr()
    assert main(["run", "--resume", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("burtbench: error:")
