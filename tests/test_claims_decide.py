"""Rounds for undecided claims within --claims-budget (harness/judging/deciding.py), and claims pooled
across runs and machines (harness/judging/pooled.py, `burtbench claims`)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_claims import LINUX, MB, PT, BT
from test_report import make_trial, write_run

from engines import all_engines
from harness.planning.plan import PlannedTrial
from harness.judging import pooled as judging_pooled
from harness.report import pooled
from harness.judging.deciding import Deciding
from harness.store.runs import load_run
from workloads import load

ROOT = Path(__file__).resolve().parents[1]


def gpt_round(k: int, spread: float, cpu: str = "Synthetic CPU 9000") -> list:
    """One round at GPT b = 1: ours 0.5 ms, PyTorch ×20 ± spread, each trial 4 s end to end."""
    jitter = 1 + spread * (1 if k % 2 else -1)
    return [make_trial(BT, "gpt", {"batch": 1}, k, 5e-4, wall_time_s=1.0, init_time_s=1.0, peak_virtual_bytes=16 * MB),
            make_trial(PT, "gpt", {"batch": 1}, k, 1e-2 * jitter, wall_time_s=2.0, init_time_s=2.0,
                       peak_virtual_bytes=1300 * MB)]


def planned(engine: str, trial: int) -> PlannedTrial:
    gpt = load("gpt")
    return PlannedTrial(engine=all_engines()[engine], workload=gpt, params={"batch": 1}, trial=trial,
                        iterations=20, warmup=2, timeout_s=60.0)


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def undecided_run(tmp_path) -> Path:
    trials = [t for k in range(3) for t in gpt_round(k, 0.05)]
    return write_run(tmp_path / "run", LINUX, trials)


def test_a_round_for_an_undecided_claim_pairs_both_engines_in_a_new_round(undecided_run):
    plan = [planned(e, k) for k in range(3) for e in (BT, PT)]
    added = Deciding(plan, undecided_run, budget_s=60.0, clock=Clock())()
    # One batch, sized to decide 4 times in 5 at the level it is judged at (99%): 5 rounds of both engines.
    assert sorted((pt.engine.id, pt.trial) for pt in added) == [(e, k) for e in (BT, PT) for k in range(3, 8)]
    assert all(pt.why == "deciding abstract-gpt-time (ours)" for pt in added)
    assert "deciding abstract-gpt-time" in added[0].label()


def test_the_budget_holds_on_a_fake_clock(undecided_run):
    plan = [planned(e, k) for k in range(3) for e in (BT, PT)]
    clock = Clock()
    deciding = Deciding(plan, undecided_run, budget_s=32.0, clock=clock)
    assert len(deciding()) == 10  # a round costs 6 s (its trials' own times): the batch of 5 fits 32 s
    clock.now += 5.0  # 5 s of the budget spent: the 30 s batch would pass it
    assert deciding() == []
    assert Deciding(plan, undecided_run, budget_s=25.0, clock=Clock())() == []  # the batch is over budget


def test_both_subjects_undecided_beside_one_engine_share_one_batch_of_rounds(tmp_path):
    """Ours and the authors' each undecided against PyTorch at one point: the point gets one batch, the larger
    of the two asked for, in which all three engines run the same rounds (each subject's rounds pair with
    PyTorch's), where two batches would have numbered PyTorch's rounds twice and dropped the second."""
    authors = "burtorch-authors/eager/cpp/cpu"
    trials = [t for k in range(3) for t in gpt_round(k, 0.05)]
    trials += [make_trial(authors, "gpt", {"batch": 1}, k, 5e-4 * (1 + 0.1 * (1 if k % 2 else -1)),
                          wall_time_s=1.0, init_time_s=1.0) for k in range(3)]
    plan = [planned(e, k) for k in range(3) for e in (BT, PT, authors)]
    added = Deciding(plan, write_run(tmp_path / "run", LINUX, trials), budget_s=600.0, clock=Clock())()
    rounds = {e: sorted(pt.trial for pt in added if pt.engine.id == e) for e in (BT, PT, authors)}
    assert rounds[BT] == rounds[PT] == rounds[authors] and rounds[PT][0] == 3 and len(rounds[PT]) == 5
    assert {pt.why for pt in added} == {"deciding abstract-gpt-time (authors), abstract-gpt-time (ours)"}


def test_decided_claims_add_nothing(tmp_path):
    trials = [t for k in range(3) for t in gpt_round(k, 0.0)]
    plan = [planned(e, k) for k in range(3) for e in (BT, PT)]
    assert Deciding(plan, write_run(tmp_path / "run", LINUX, trials), budget_s=600.0, clock=Clock())() == []


# ----------------------------------------------------------------------------- pooled across runs and machines

def gpt_run(folder: Path, first_round: int, spread: float, cpu: str = "Synthetic CPU 9000", **manifest) -> Path:
    trials = [t for k in range(first_round, first_round + 3) for t in gpt_round(k, spread)]
    run = write_run(folder, LINUX, trials, **manifest)
    data = json.loads((run / "manifest.json").read_text())
    data["machine"]["cpu_model"] = cpu
    (run / "manifest.json").write_text(json.dumps(data))
    return run


def ours(machine: judging_pooled.Machine, claim: str):
    return next(j.ours for j in machine.judged if j.claim.id == claim)


def test_runs_of_one_machine_pool_into_a_narrower_interval(tmp_path):
    runs = [str(gpt_run(tmp_path / f"r{i}", 0, 0.1, created_at=f"2026-11-2{i}")) for i in range(3)]
    (one,) = judging_pooled.judge_machines(runs[:1])
    (three,) = judging_pooled.judge_machines(runs)
    single, pool = ours(one, "abstract-gpt-time"), ours(three, "abstract-gpt-time")
    assert pool.trials == (9, 9) and single.trials == (3, 3)
    assert (pool.high / pool.low) ** 2 < single.high / single.low  # in log terms, at least twice as narrow
    # Each run's rounds stay its own: no trial index repeats in the pool.
    keys = [(t["engine"], t["trial"]) for t in three.pooled.trials]
    assert len(keys) == len(set(keys))


def test_runs_of_two_machines_make_two_columns_and_a_holds_line(tmp_path):
    intel = gpt_run(tmp_path / "intel", 0, 0.01, cpu="Intel(R) Xeon(R) Processor", created_at="a")
    amd = gpt_run(tmp_path / "amd", 0, 0.01, cpu="AMD EPYC", created_at="b")
    machines = judging_pooled.judge_machines([str(intel), str(amd)])
    assert [m.name for m in machines] == ["Intel Xeon Processor", "AMD EPYC"]
    text = "\n".join(pooled.lines(machines))
    assert "ours: holds on 2 of 2 machines (Intel Xeon Processor ✓ ×19.9 [19.3, 20.6] 3/3 at gpt batch=1: torch/eager/python/cpu; AMD EPYC ✓ ×19.9" in text
    md = pooled.markdown(machines)
    assert "| ours: Intel Xeon Processor | ours: AMD EPYC |" in md.replace("authors: AMD EPYC | ", "")


def test_mixed_timings_and_a_run_given_twice_are_refused_in_one_line(tmp_path):
    lean = gpt_run(tmp_path / "lean", 0, 0.01, created_at="a")
    data = json.loads((lean / "manifest.json").read_text())
    trials = [json.loads(line) for line in (lean / "trials.jsonl").read_text().splitlines()]
    (lean / "trials.jsonl").write_text("".join(json.dumps({**t, "timing": "lean"}) + "\n" for t in trials))
    paper = gpt_run(tmp_path / "paper", 0, 0.01, created_at="b")
    for runs, message in (([lean, paper], "differ in --timing"), ([paper, paper], "again; give each run once")):
        proc = subprocess.run([sys.executable, "-m", "harness.commands.cli", "claims", *map(str, runs)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert data  # the manifest stayed readable


def test_reruns_of_one_machine_say_how_far_they_moved_and_which_intervals_miss(tmp_path):
    """Two runs of one plan, the second with every time ×1.5 on our side: the pooled page says which factors'
    intervals do not overlap from one run to the next, and that runs count as a level."""
    first = gpt_run(tmp_path / "r1", 0, 0.01, created_at="a")
    second = gpt_run(tmp_path / "r2", 0, 0.01, created_at="b")
    trials = [json.loads(line) for line in (second / "trials.jsonl").read_text().splitlines()]
    slower = [{**t, "per_iter_s": {k: v * 1.5 for k, v in t["per_iter_s"].items()}}
              if t["engine"] == "burtorch/eager/cpp/cpu" and t.get("per_iter_s") else t for t in trials]
    (second / "trials.jsonl").write_text("".join(json.dumps(t) + "\n" for t in slower))
    (machine,) = judging_pooled.judge_machines([str(first), str(second)])
    assert machine.reruns.pairs == [("r1", "r2")]
    assert "abstract-gpt-time (ours)" in machine.reruns.apart
    assert max(machine.reruns.moves) == pytest.approx(1.5, rel=0.01)
    text = "\n".join(pooled.lines([machine]))
    apart = len(machine.reruns.apart)
    assert f"{apart} {'has an interval that does' if apart == 1 else 'have intervals that do'} not overlap (" \
           "abstract-gpt-time (ours)" in text and "a run counts once" in text
    assert "wrong by chance" in pooled.markdown([machine])


def test_a_verdict_the_plan_decided_stands_when_rounds_added_for_another_claim_widen_its_interval(tmp_path):
    """Measured: rounds added to decide one claim at a point shared with another made that other's decided
    '✓ reproduced' read '? undecided' at its later look. A decision taken at the first look stands."""
    from dataclasses import replace

    from harness.analysis.tables import build_tables
    from harness.judging import claims

    trials = [t for k in range(3) for t in gpt_round(k, 0.01)]
    trials += [replace(t, added=True) for t in gpt_round(3, 0.9)]  # one wild added round
    run = load_run(write_run(tmp_path / "run", LINUX, trials))
    later = {j.claim.id: j.ours for j in claims._judged(run, build_tables(run), claims.load_claims())}
    assert later["abstract-gpt-time"].verdict == claims.UNDECIDED, "the later look alone no longer decides"
    first = next(j.ours for j in claims.judge(run, build_tables(run)) if j.claim.id == "abstract-gpt-time")
    assert first.verdict in claims.DECIDED and first.trials == (3, 3)


def test_pooled_runs_decide_a_claim_whose_other_engine_only_one_run_could_run(tmp_path):
    """Measured: TensorFlow's rows ran in one of two runs (the other could not import it), and the claims that
    each run decided pooled to 'undecided' and 'not measurable here'. The one run's rows keep their intervals."""
    first = gpt_run(tmp_path / "r1", 0, 0.01, created_at="a")
    second = gpt_run(tmp_path / "r2", 0, 0.01, created_at="b")
    trials = [json.loads(line) for line in (second / "trials.jsonl").read_text().splitlines()]
    (second / "trials.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trials if t["engine"] != PT))
    (alone,) = judging_pooled.judge_machines([str(first)])
    (machine,) = judging_pooled.judge_machines([str(first), str(second)])
    verdict = ours(machine, "abstract-gpt-time")
    assert verdict.verdict == ours(alone, "abstract-gpt-time").verdict == "reproduced"
    assert (verdict.low, verdict.high) == pytest.approx((ours(alone, "abstract-gpt-time").low,
                                                        ours(alone, "abstract-gpt-time").high))


def test_an_undecided_claim_whose_rows_give_no_bounded_interval_says_so_instead_of_an_empty_span():
    """Measured: 'ours ×111,729 (6 trials, no interval) at small: jax/eager/python/cpu spans ;': the largest of
    the rows had its interval, another row held with it had none."""
    from math import inf

    from harness.judging import claims, rules

    claim = next(c for c in claims.load_claims() if c.id == "abstract-small-time")
    verdict = claims.Verdict(claim, claims.UNDECIDED, ours=111_729.0, at="small: jax/eager/python/cpu", trials=(6, 6))
    why = rules._undecided_why(verdict, BT, (2000.0,), 88_000.0, inf)
    assert "spans ;" not in why and "no interval that bounds it: a row it is held with gives none" in why


def test_a_memory_factor_across_engines_carries_the_run_to_run_component_of_a_reading(tmp_path):
    """Every trial of a run reads the same peak memory, but a framework's reading moves from run to run: the
    factor's interval says so rather than standing as an exact measurement another run contradicts."""
    (machine,) = judging_pooled.judge_machines([str(gpt_run(tmp_path / "r1", 0, 0.01, created_at="a"))])
    verdict = ours(machine, "abstract-gpt-memory")
    assert not verdict.measurement and verdict.low < 1300 / 16 < verdict.high
    assert verdict.high / verdict.low > 1.15 and "run-to-run component of ×/÷1.043 (1 sd), assumed" in verdict.method
