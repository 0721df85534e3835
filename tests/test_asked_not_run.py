"""Asked for, not run, said at the end (#49): a run naming an engine that cannot run here ends with its closing
lines naming it and why, and with the documented exit status (`run --help` says it); `list` and `doctor` know
before any run whether Burn's driver could be built (cargo, and its crates vendored, cached or reachable)."""
from __future__ import annotations

import os
import socket
import stat

import pytest

from engines import burn
from harness.commands.cli import main
from harness.errors import EXIT_NOT_ALL_RUN
from harness.machine import doctor

ABSENT = "fake/absent/python/cpu"  # requires a framework that is not installed (tests/fakes/fake_engines.py)
WHY = "python module 'no_such_framework_xyz' is not installed"


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("report", [True, False])
def test_a_named_engine_that_did_not_run_is_named_at_the_end_and_in_the_exit_status(fake_engines, tmp_path, capsys,
                                                                                     report):
    argv = ["run", "--engine", f"fake/ok,{ABSENT}", "--workload", "tiny", "--profile", "smoke", "--trials", "1",
            "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path / "reports")]
    code = main(argv + ([] if report else ["--no-report"]))
    said = capsys.readouterr()
    assert code == EXIT_NOT_ALL_RUN
    end = flat(said.out)[flat(said.out).index("Asked for, not run"):]
    assert f"{ABSENT}: {WHY}" in end and f"exit status {EXIT_NOT_ALL_RUN}" in end
    assert "fake/ok" not in end


def test_run_help_documents_the_exit_status(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert f"{EXIT_NOT_ALL_RUN} when it ran, but an engine named with --engine could not run here" in \
        flat(capsys.readouterr().out)


@pytest.fixture
def cargo_without_crates(tmp_path, monkeypatch):
    """A cargo on PATH, no driver built, no vendored folder and nothing in cargo's cache."""
    monkeypatch.setattr(burn, "BUILD_ROOT", tmp_path / "build" / "burn")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cargo = bin_dir / "cargo"
    cargo.write_text("#!/bin/sh\nexit 101\n")
    cargo.chmod(cargo.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo-home"))
    monkeypatch.delenv(burn.VENDOR_ENV, raising=False)
    for name in burn.PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed once the socket is: a connection there is refused at once


def test_list_and_doctor_say_burn_cannot_build_when_its_crates_are_out_of_reach(cargo_without_crates, monkeypatch,
                                                                                  capsys):
    monkeypatch.setenv("CARGO_HTTP_PROXY", f"http://127.0.0.1:{closed_port()}")
    assert main(["list"]) == 0
    row = flat(capsys.readouterr().out.replace("│", " "))
    assert ("burn/eager/rust/cpu gpt max_pool2d mlp small tiny unavailable: "
            "Burn's crates are neither vendored nor") in row
    finding = doctor.burn_finding()
    assert finding.topic == "burn" and "registry cannot be reached (127.0.0.1:" in finding.message
    assert "--cargo-vendor DIR" in finding.message


def test_list_and_doctor_say_burn_can_build_when_the_registry_answers(cargo_without_crates, monkeypatch, capsys):
    with socket.socket() as proxy:
        proxy.bind(("127.0.0.1", 0))
        proxy.listen()
        monkeypatch.setenv("CARGO_HTTP_PROXY", f"127.0.0.1:{proxy.getsockname()[1]}")
        assert main(["list"]) == 0
        finding = doctor.burn_finding()
    row = [line for line in capsys.readouterr().out.splitlines() if "burn/eager/rust/cpu" in line]
    assert "available" in row[0] and "unavailable" not in row[0]
    assert finding.level == "ok" and "can be built on its first run" in finding.message
