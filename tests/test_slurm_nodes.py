"""burtbench run --slurm on a real three-node SLURM cluster (tests/slurm_cluster.py: three slurmd on this
machine, each in namespaces of its own, with its own host name and core): a shard on each node; a node
lost mid-trial, its shard requeued to a live node and resumed; a node the controller lost while its
trial runs on, whose lock keeps the requeued shard out of the shared folder until it lets go; every
node lost; and a folder no node sees. The first and the last are in the default suite (about a minute)."""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from rich.console import Console
from slurm_cluster import local_cluster, unavailable
from test_slurm import exactly_the_plan, the_run, wait_for
from tests_support import FAKES, ROOT

from harness.cluster import follow, slurm
from harness.cluster import record as rec
from harness.commands.cli import main
from harness.store import results

PLAN = ["--engine", "fake/node,fake/node2", "--workload", "tiny,small", "--profile", "smoke", "--trials", "2"]
PLANNED = 10  # 5 points (the harness's floor row among them) of 2 trials: 3 shards, each with a trial held
NODES = 3


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with pytest.MonkeyPatch.context() as mp, local_cluster(tmp_path_factory.mktemp("slurm3"), NODES) as started:
        mp.setenv("SLURM_CONF", str(started.conf))
        # The jobs inherit this environment (sbatch --export=ALL), the held engines included.
        mp.setenv("BURTBENCH_ENGINE_MODULES", "fake_engines,node_engine")
        mp.setenv("PYTHONPATH", os.pathsep.join([str(FAKES), str(ROOT)]))
        mp.syspath_prepend(str(FAKES))
        yield started


@pytest.fixture
def cluster(nodes, tmp_path, monkeypatch):
    """The three nodes, each holding its trials until the test lets it go; every node is up again after."""
    hold = tmp_path / "hold"
    hold.mkdir()
    for name in nodes.nodes:
        (hold / name).touch()
    monkeypatch.setenv("BURTBENCH_FAKE_HOLD", str(hold))
    yield nodes
    for name in nodes.nodes:
        (hold / name).unlink(missing_ok=True)
    nodes.restore()


def held(hold: Path, count: int) -> dict[str, int]:
    """node → the array task it holds mid-trial, once `count` nodes hold one."""
    found = wait_for(lambda: len(list(hold.glob("*.held"))) >= count and list(hold.glob("*.held")),
                     f"{count} nodes holding a trial")
    return {marker.stem: int(marker.read_text()) for marker in found}


def ran_on(run: Path, job: dict, index: int) -> list[tuple[str, int]]:
    """(node, core) of each start of shard `index` under `job` (a requeued task appends to its log)."""
    text = rec.log_of(run, job, index).read_text(errors="replace")
    return [(node, int(core)) for node, core in re.findall(rf"^shard {index} on node (\S+), core (\d+)", text, re.M)]


def requeued_now(run: Path, index: int) -> None:
    """Once the controller has requeued shard `index`'s task (its node lost), it may start at once:
    SLURM holds a requeued job back two minutes (its BeginTime), which a cluster can afford and a test not."""
    task = rec.task_id(rec.attempts(rec.read(run), index)[0], index)
    wait_for(lambda: slurm.states([task]).get(task) == "PENDING", f"task {task} requeued", within_s=90)
    slurm.call(["scontrol", "update", f"JobId={task}", "StartTime=now"])


def report(run: Path, printed: str, lost: str, index: int) -> str:
    record = rec.read(run)
    lines = [printed.rstrip()]
    for s in record["shards"]:
        starts = [start for job in rec.attempts(record, s["index"]) for start in ran_on(run, job, s["index"])]
        lines.append(f"shard {s['index']}: " + " then ".join(f"{node} (core {core})" for node, core in starts))
    lines.append(f"node lost: {lost}, mid-trial in shard {index}; jobs: "
                 + "; ".join(f"{j['id']} {j['kind']}" for j in record["jobs"]))
    log = rec.log_of(run, rec.attempts(record, index)[0], index).read_text(errors="replace").splitlines()
    lines += [f"  log of shard {index}: {line}" for line in log if re.match(r"shard \d on node|.*(waiting|→)", line)]
    return "\n".join(lines)


def test_a_shard_on_each_node_and_a_node_lost_mid_trial_is_resumed_on_a_live_one(cluster, tmp_path, capsys):
    hold = tmp_path / "hold"
    started = time.monotonic()
    assert main(["run", *PLAN, "--slurm", "3", "--out", str(tmp_path / "results")]) == 0
    run = the_run(tmp_path / "results")
    holding = held(hold, NODES)
    assert sorted(holding.values()) == [1, 2, 3], "a shard on each node"
    lost = next(node for node, task in holding.items() if task == 2)
    killed = time.monotonic()
    cluster.kill_node(lost)  # its slurmd, the task's slurmstepd, the runner and the trial it was in
    for name in cluster.nodes:
        (hold / name).unlink(missing_ok=True)
    requeued_now(run, 2)
    requeued = time.monotonic()
    assert follow.follow(run, Console(width=1000)) == 0
    printed = report(run, capsys.readouterr().out, lost, 2) + (
        f"\nsubmitted, 3 nodes holding a trial after {killed - started:.1f} s; {lost} killed; its shard requeued "
        f"{requeued - killed:.1f} s later; merged {time.monotonic() - started:.1f} s after submission")
    print(printed)
    record = rec.read(run)
    cores = {name: k % os.cpu_count() for k, name in enumerate(sorted(cluster.nodes))}
    for index, node in ((task, name) for name, task in holding.items()):
        first = ran_on(run, rec.attempts(record, index)[0], index)[0]
        assert first == (node, cores[node]), "each node pins its trials to its own core"
        if index != 2:
            assert results.read_manifest(rec.shard_run(run, index))["cpus"] == [cores[node]]
    starts = [start for job in rec.attempts(record, 2) for start in ran_on(run, job, 2)]
    assert starts[0][0] == lost and len(starts) == 2 and starts[1][0] != lost, "resumed once, on a live node"
    assert exactly_the_plan(run) == PLANNED
    assert all(len(rec.attempts(record, k)) == 1 for k in (1, 3))


@pytest.mark.slow  # about 35 s; the lock across nodes without a cluster: tests/test_slurm_small.py
def test_a_node_lost_by_the_controller_while_its_trial_runs_on_keeps_the_shard_until_it_lets_go(
        cluster, tmp_path, capsys):
    """Its slurmd frozen: the controller calls it down and requeues its shard to a live node, while the
    node's runner goes on writing to the shared folder. The requeued task waits on the folder's lock
    (its holder's heartbeat still moves) and resumes once the late node's task has let go."""
    hold = tmp_path / "hold"
    assert main(["run", *PLAN, "--slurm", "3", "--out", str(tmp_path / "results")]) == 0
    run = the_run(tmp_path / "results")
    late = next(node for node, task in held(hold, NODES).items() if task == 2)
    cluster.freeze_node(late, True)
    for name in set(cluster.nodes) - {late}:
        (hold / name).unlink()
    job = rec.attempts(rec.read(run), 2)[0]
    requeued_now(run, 2)
    waiting = wait_for(lambda: "waiting for it to let go" in rec.log_of(run, job, 2).read_text(errors="replace"),
                       "requeued task waiting on the lock")
    assert waiting and cluster.states()[late].startswith("down")
    shard = rec.shard_run(run, 2)
    before = results.read_trials(shard)
    time.sleep(1.0)  # the requeued task has the folder open: it writes nothing while the lock is held
    assert results.read_trials(shard) == before
    (hold / late).unlink()  # the late node's trial ends; its runner records the rest and lets go
    assert follow.follow(run, Console(width=1000)) == 0
    cluster.freeze_node(late, False)
    print(report(run, capsys.readouterr().out, late + " (slurmd frozen)", 2))
    starts = ran_on(run, job, 2)
    assert [node for node, _ in starts][:1] == [late] and starts[-1][0] != late
    assert exactly_the_plan(run) == PLANNED


@pytest.mark.slow  # about 30 s
def test_every_node_lost_names_the_shards_missing_and_how_to_finish_them(cluster, tmp_path, capsys):
    hold = tmp_path / "hold"
    assert main(["run", *PLAN, "--slurm", "3", "--out", str(tmp_path / "results")]) == 0
    run = the_run(tmp_path / "results")
    held(hold, NODES)
    for name in cluster.nodes:
        cluster.kill_node(name)
    assert follow.follow(run, Console(width=1000)) == 1
    printed = capsys.readouterr().out
    assert "every node of the cluster is lost" in printed
    assert re.search(r"shards not done: 1 \(\d+ of 4 trials recorded\), 2 \(\d+ of 2 trials recorded\), 3 ", printed)
    assert f"burtbench slurm finish {run} --allow-partial" in printed
    assert main(["slurm", "cancel", str(run)]) == 0
    assert main(["slurm", "finish", str(run), "--allow-partial"]) == 0
    merged = run / "merged" / run.name
    assert results.read_manifest(merged)["status"].startswith("partial")
    recorded = len(results.read_trials(merged))
    assert recorded == sum(rec.recorded_trials(run, k) for k in (1, 2, 3)) < PLANNED
    assert [job["kind"] for job in rec.read(run)["jobs"]] == ["shards", "finish"], "nothing resubmitted"
    finished = capsys.readouterr().out
    print(printed, finished, f"merged {recorded} trials recorded of {PLANNED} planned", sep="")
    assert "shard 2 not done after 1 attempt;" in finished


def test_a_folder_no_node_sees_is_refused_before_any_job_of_the_run(cluster, capsys):
    assert main(["run", *PLAN, "--slurm", "3", "--out", str(cluster.hidden / "results")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nodes cannot see" in err[0], err
    assert not (cluster.hidden / "results").exists() or not any((cluster.hidden / "results").iterdir())
