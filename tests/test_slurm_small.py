"""`run --slurm` without a cluster: a machine whose SLURM is not configured said so (a fake sbatch on
PATH), `--slurm --dry-run` showing the shards and submitting nothing, and one elapsed time for
`slurm status` and `--wait` (a synthetic slurm.json), and the run folder's lock across nodes."""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from harness.cluster import follow, slurm
from harness.cluster import record as rec
from harness.commands.cli import main
from harness.store import lock

PLAN = ["--engine", "fake/ok,fake/wrong", "--workload", "tiny,small", "--profile", "smoke", "--trials", "2"]
UNREACHABLE = "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)"
NO_CONF = ('sbatch: error: s_p_parse_file: unable to read "/etc/slurm/slurm.conf": No such file or directory\n'
           "sbatch: fatal: Unable to process configuration file")
REFUSED = "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified"


def fake_sbatch(folder: Path, said: str) -> None:
    """An sbatch that answers every submission with `said` on stderr and fails, as a client does."""
    folder.mkdir()
    script = folder / "sbatch"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' {json.dumps(said)} >&2\nexit 1\n")
    script.chmod(0o755)


@pytest.mark.parametrize("said, expected", [(UNREACHABLE, "not configured"), (NO_CONF, "not configured"),
                                            (REFUSED, "refused a job with these options"),
                                            (UNREACHABLE + "\x1b[31m", "not configured")])
def test_a_cluster_not_configured_is_said_so_in_one_line(fake_engines, tmp_path, capsys, monkeypatch, said,
                                                         expected):
    fake_sbatch(tmp_path / "bin", said)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "results"
    assert main(["run", *PLAN, "--slurm", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("burtbench: error: --slurm:"), err
    assert expected in err[0] and "\x1b" not in err[0]
    assert ("refused" in err[0]) == (said == REFUSED)
    assert said.splitlines()[-1].split(": ", 1)[1].replace("\x1b[31m", "") in err[0]  # what sbatch said
    assert not out.exists() or not any(out.iterdir())


def test_slurm_dry_run_shows_the_shards_and_submits_nothing(fake_engines, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(slurm, "call", lambda *a, **k: pytest.fail("a dry run asked the cluster"))
    out = tmp_path / "results"
    assert main(["run", *PLAN, "--slurm", "2", "--dry-run", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 shards" in printed and "nothing submitted" in printed
    shards = printed.split("\nshard ")[1:]
    assert [s.split(":")[0] for s in shards] == ["1", "2"]
    for s in shards:
        assert "point" in s and "min)" in s and "about " in s
    listed = [line.strip() for line in printed.splitlines() if line.startswith("  ")]
    assert len(listed) == sum(int(s.split(": ")[1].split(" point")[0]) for s in shards)
    assert all(" · tiny" in line or " · small" in line for line in listed)
    assert not out.exists()


def synthetic_run(folder: Path, submitted_at: float, outcome: dict | None) -> Path:
    run = folder / "run-1"
    run.mkdir()
    rec.write(run, {"run": run.name, "submitted_at": submitted_at, "chdir": str(folder), "sbatch": [],
                    "report_dir": None, "shards": [{"index": 1, "points": 1, "trials": 2, "estimate_s": 60.0}],
                    "jobs": [{"id": "7", "kind": "shards", "shards": [1]},
                             {"id": "8", "kind": "finish", "after": "7"}], "outcome": outcome})
    return run


@pytest.mark.parametrize("outcome", [None, {"status": "partial", "failed": None, "reason": "shard 1 has no trials"}])
def test_status_and_wait_say_the_same_elapsed_time(tmp_path, monkeypatch, outcome):
    now = 1_700_000_000.0
    run = synthetic_run(tmp_path, now - 125.4, outcome)
    monkeypatch.setattr(slurm, "states", lambda ids: {})  # every job ended
    monkeypatch.setattr(slurm, "nodes_left", lambda partition: 1)
    monkeypatch.setattr(follow.time, "time", lambda: now)
    said = {}
    for name, command in (("status", follow.status), ("wait", follow.follow)):
        console = Console(record=True, width=200)
        command(run, console)
        said[name] = console.export_text().splitlines()
    assert said["status"][0] == said["wait"][0]
    assert said["status"][0].startswith("0:02:05 after submission · shards: 0 done")
    if outcome:
        assert said["status"][-1] == said["wait"][-1] == "not merged: shard 1 has no trials (0:02:05 after submission)"


def test_a_lock_taken_on_another_node_holds_while_it_beats_and_is_taken_over_once_it_stands_still(
        tmp_path, monkeypatch, capsys):
    """Another node's process cannot be asked whether it lives: its lock's heartbeat says so."""
    monkeypatch.setattr(lock, "STALE_S", 0.6)
    monkeypatch.setattr(lock, "HEARTBEAT_S", 0.1)
    held = tmp_path / lock.LOCK_FILE
    held.write_text("1 another-node\n")  # pid 1 lives here, and means nothing for another node
    beats = threading.Event()

    def beat():  # the other node's holder: beats for 1 s, then lets go
        for _ in range(10):
            os.utime(held)
            time.sleep(0.1)
        held.unlink()
        beats.set()

    threading.Thread(target=beat, daemon=True).start()
    with lock.RunLock(tmp_path):
        assert beats.is_set(), "taken while the other node's lock still beat"
        assert held.read_text().split() == [str(os.getpid()), socket.gethostname()]
    assert "locked by pid 1 on another-node: waiting" in capsys.readouterr().err
    held.write_text("1 lost-node\n")  # a lost node's lock: it never beats again
    started = time.monotonic()
    with lock.RunLock(tmp_path):
        assert time.monotonic() - started >= 0.6
    assert not held.exists()
    held.write_text("1\n")  # a lock of this host (older burtbench: no host) whose pid lives
    with pytest.raises(lock.RunLocked, match="pid 1"):
        lock.RunLock(tmp_path).acquire()
