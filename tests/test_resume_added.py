"""No trial added after the plan is lost to a kill: every trial of a deciding round (and of --adaptive)
has a record after `run --resume`, and the rounds go on with the budget left.

A run of the fault engines whose follow-up always finds a claim undecided adds its most rounds (5) at one
point, two trials each. The run is killed at every event of it in turn: each trial (killed while it runs,
so unrecorded) and each write of a batch to added.jsonl (before it, or with the line half written). Then
`run --resume` must leave every planned and every added trial recorded exactly once, and the same rounds as
a run never killed. Trials are measured by a stand-in (no child, no timing): the kill is what is tested.
"""
from __future__ import annotations

import re
from dataclasses import replace

import pytest
from test_claims_decide import Clock, gpt_round, planned
from test_claims import BT, LINUX, PT
from test_report import write_run

from harness.commands.cli import main
from harness.planning import resume
from harness.judging import deciding
from harness.running import orchestrator, runner, session
from harness.store import added, results
from harness.store.results import params_key

PLAN = ["--engine", "fake/ok", "--workload", "tiny,small", "--profile", "quick", "--trials", "2", "--no-report"]
PLANNED = 6  # fake/ok on tiny and small, the floor row on small, 2 trials each
ROUNDS = 1  # the one batch a point takes (its design's later look), here of one round
WHY = "deciding a claim that stays undecided"


class Killed(BaseException):
    """The process's death: nothing after it runs, nothing catches it."""


class Undecided(deciding.Deciding):
    """Always one round short at the plan's point of two engines (small): its batch, then its look is spent."""

    def undecided(self, run):
        engines = tuple(dict.fromkeys(pt.engine.id for pt in self.plan if pt.workload.name == "small"))
        params = next(pt.params for pt in self.plan if pt.workload.name == "small")
        return {("small", params_key(params)): (engines, 1, WHY)}


def stand_in(pt, spawner, tsc, inputs=None, meter=None):
    trial = runner.new_trial(pt, spawner.options.cpu, spawner.options.timing)
    return replace(trial, status="ok", iterations=pt.iterations, warmup=pt.warmup, loop_time_s=0.01,
                   per_iter_s={"mean": 1e-3, "median": 1e-3, "min": 1e-3, "max": 1e-3},
                   samples_s=[1e-3, 1e-3, 1e-3], wall_time_s=0.5, init_time_s=0.5)


@pytest.fixture
def events(fake_engines, monkeypatch):
    """The run's events, in order; `events.kill_at` (index, how) makes one of them the process's death."""
    log = type("Events", (), {"seen": [], "kill_at": None})()
    write = resume.record_added

    def event(kind):
        log.seen.append(kind)
        if log.kill_at and log.kill_at[0] == len(log.seen) - 1:
            return log.kill_at[1]
        return None

    def measured(pt, *args, **kwargs):
        if event("trial"):
            raise Killed
        return stand_in(pt, *args, **kwargs)

    def recorded(run_dir, trials, spent=None):
        how = event("batch")
        if how == "torn":
            write(run_dir, trials, spent)
            data = (run_dir / added.ADDED_FILE).read_bytes()
            (run_dir / added.ADDED_FILE).write_bytes(data[: len(data) - len(data.splitlines()[-1]) // 2 - 1])
        if how:
            raise Killed
        write(run_dir, trials, spent)

    monkeypatch.setattr(orchestrator, "measure", measured)
    monkeypatch.setattr(orchestrator, "record_added", recorded)
    monkeypatch.setattr(deciding, "Deciding", Undecided)
    # The fault engines judge no claim of the paper: the session would start no deciding rounds for them.
    monkeypatch.setattr(session, "judges_any", lambda engines: True)
    return log


def keys(run_dir) -> list[tuple]:
    return [results.trial_key(t["engine"], t["workload"], t["params"], t["trial"])
            for t in results.read_trials(run_dir, warn=lambda _: None)]


def added_keys(run_dir) -> list[tuple]:
    return [results.trial_key(t["engine"], t["workload"], t["params"], t["trial"])
            for batch in added.read(run_dir) for t in batch.trials]


def only_run(out):
    (run_dir,) = out.iterdir()
    return run_dir


def test_a_run_never_killed_adds_its_rounds_and_records_them_first(events, tmp_path):
    assert main(["run", *PLAN, "--out", str(tmp_path)]) == 0
    run_dir = only_run(tmp_path)
    recorded = keys(run_dir)
    assert len(recorded) == PLANNED + 2 * ROUNDS == len(set(recorded))
    assert sorted(added_keys(run_dir)) == sorted(k for k in recorded if k[3] >= 2)
    # Each batch is kept before its first trial: a batch line, then its two trials; the rounds' end last.
    assert events.seen == ["trial"] * PLANNED + ["batch", "trial", "trial"] * ROUNDS + ["batch"]
    assert all(t["added"] == (t["trial"] >= 2) for t in results.read_trials(run_dir))
    assert added.read(run_dir)[-1].trials == ()


KILLS = [(i, "kill") for i in range(PLANNED + 3 * ROUNDS + 1)] + \
        [(PLANNED + 3 * r, "torn") for r in range(ROUNDS + 1)]


@pytest.mark.parametrize("at,how", KILLS, ids=[f"{how}@{i}" for i, how in KILLS])
def test_a_kill_at_any_point_of_a_round_then_resume_records_every_trial_once(events, tmp_path, capsys, at, how):
    events.kill_at = (at, how)
    with pytest.raises(Killed):
        main(["run", *PLAN, "--out", str(tmp_path)])
    run_dir = only_run(tmp_path)
    before, known = keys(run_dir), len(added_keys(run_dir))
    events.kill_at = None
    capsys.readouterr()
    assert main(["run", "--resume", str(run_dir), "--no-report"]) == 0
    out = capsys.readouterr().out
    after = keys(run_dir)
    # Every trial the plan and added.jsonl name has one record, and no record is of a trial neither names.
    assert len(after) == len(set(after)) == PLANNED + 2 * ROUNDS, (before, after)
    planned_keys = [k for k in after if k[3] < 2]
    assert sorted(after) == sorted(planned_keys + added_keys(run_dir))
    assert set(before) <= set(after)
    assert results.read_manifest(run_dir)["status"] == "complete"
    # The resume counted the added rounds it knew of as planned trials.
    missing, total = map(int, re.search(r"resuming: (\d+) of (\d+) trials missing", out).groups())
    assert total == PLANNED + known and total - missing == len(before)


def test_a_complete_run_resumed_adds_no_round(events, tmp_path):
    assert main(["run", *PLAN, "--out", str(tmp_path)]) == 0
    run_dir = only_run(tmp_path)
    events.seen = []
    assert main(["run", "--resume", str(run_dir), "--no-report"]) == 0
    assert events.seen == [] and len(keys(run_dir)) == PLANNED + 2 * ROUNDS


def test_adaptive_trials_killed_half_run_are_run_by_the_resume(events, tmp_path, monkeypatch):
    monkeypatch.setattr(orchestrator, "more_trials", lambda plan, run_dir, adaptive, unavailable: [
        replace(pt, trial=2, added=True) for pt in plan if pt.workload.name == "small" and pt.trial == 0
    ] if all(k[3] < 2 for k in keys(run_dir)) else [])
    events.kill_at = (PLANNED + 2, "kill")  # the second trial of the adaptive batch
    with pytest.raises(Killed):
        main(["run", *PLAN, "--adaptive", "--claims-budget", "0", "--out", str(tmp_path)])
    run_dir = only_run(tmp_path)
    assert len(keys(run_dir)) == PLANNED + 1
    events.kill_at = None
    assert main(["run", "--resume", str(run_dir), "--no-report"]) == 0
    assert sorted(keys(run_dir)) == sorted([*(k for k in keys(run_dir) if k[3] < 2), *added_keys(run_dir)])
    assert len(keys(run_dir)) == PLANNED + 2


# ----------------------------------------------------------------------------- the budget across a resume

def deciding_at(tmp_path, spent: float, budget_s: float, ended: bool = False) -> list:
    """The deciding rounds of a run whose added.jsonl says a round was added with `spent` seconds of the
    budget spent (`ended`: then the rounds ended)."""
    run_dir = write_run(tmp_path / "run", LINUX, [t for k in range(3) for t in gpt_round(k, 0.05)])
    plan = [planned(e, k) for k in range(3) for e in (BT, PT)]
    added.append(run_dir, [{"engine": BT, "workload": "gpt", "params": {"batch": 1}, "trial": 9, "why": WHY,
                            "with_init": False}], spent)
    if ended:
        added.append(run_dir, [], spent)
    return deciding.Deciding(plan, run_dir, budget_s=budget_s, clock=Clock())()


def test_a_resumed_run_decides_with_the_budget_its_rounds_left(tmp_path):
    # A round costs 6 s (its trials' own times), the batch of 5 rounds 30 s: it fits 36 s less 2 spent, not less 8.
    assert len(deciding_at(tmp_path / "a", 2.0, 36.0)) == 10
    assert deciding_at(tmp_path / "b", 8.0, 36.0) == []
    assert deciding_at(tmp_path / "c", 2.0, 600.0, ended=True) == []  # the rounds had ended: a resume adds none


DAMAGED = {
    "not JSON": b"{oops\n",
    "a list": b"[1]\n",
    "spent as text": b'{"trials": [], "deciding_spent_s": "x"}\n',
    "spent infinite": b'{"trials": [], "deciding_spent_s": Infinity}\n',
    "trials not a list": b'{"trials": 3, "deciding_spent_s": null}\n',
    "trial index negative": b'{"trials": [{"engine": "a", "workload": "b", "params": {}, "trial": -1, "why": "",'
                            b' "with_init": true}], "deciding_spent_s": null}\n',
    "no engine": b'{"trials": [{"workload": "b", "params": {}, "trial": 1, "why": "", "with_init": true}],'
                 b' "deciding_spent_s": null}\n',
}


@pytest.mark.parametrize("damage", DAMAGED, ids=list(DAMAGED))
def test_a_damaged_added_file_is_one_line_naming_it(events, tmp_path, capsys, damage):
    assert main(["run", *PLAN, "--out", str(tmp_path)]) == 0
    run_dir = only_run(tmp_path)
    with open(run_dir / added.ADDED_FILE, "ab") as fh:
        fh.write(DAMAGED[damage])
    capsys.readouterr()
    assert main(["run", "--resume", str(run_dir), "--no-report"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{added.ADDED_FILE}:{ROUNDS + 2}: damaged" in err[0], err
