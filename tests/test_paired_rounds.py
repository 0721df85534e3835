"""Paired rounds, A/A copies and instruction counts, through the CLI (fake engines, a fake valgrind)."""
from __future__ import annotations

import json
import os
import stat
from collections import Counter

import pytest

from engines import all_engines
from harness.commands.cli import main
from harness.envs import specs as envs
from harness.machine.valgrind import counted_iterations
from harness.planning.plan import make_plan
from harness.running import instructions
from harness.running.session import make_plan as plan_of_spec
from harness.store import results
from harness.store.run_plan import RunPlan
from workloads import load

ENGINES = ["micrograd/eager/python/cpu", "autograd/eager/python/cpu", "burtorch/eager/cpp/cpu",
           "torch/eager/python/cpu"]


def rounds(plan) -> dict:
    """{(trial, workload, params): [engine ids in the order they run]}."""
    found: dict = {}
    for pt in plan:
        found.setdefault((pt.trial, pt.workload.name, json.dumps(pt.params, sort_keys=True)), []).append(pt.engine.id)
    return found


def test_rounds_run_every_variant_once_in_a_seeded_random_order():
    registry = all_engines()
    engines = [registry[e] for e in ENGINES]
    plan = make_plan(engines, [load("tiny")], "quick", trials=12, seed=7)
    orders = rounds(plan)
    assert len(orders) == 12
    assert all(sorted(order) == sorted(ENGINES) for order in orders.values())  # each once per round
    assert len({tuple(order) for order in orders.values()}) > 3  # the order changes from round to round
    first = Counter(order[0] for order in orders.values())
    assert len(first) > 1  # no engine always goes first
    again = make_plan(engines, [load("tiny")], "quick", trials=12, seed=7)
    assert [pt.key() for pt in again] == [pt.key() for pt in plan]  # seeded: the same plan again
    other = make_plan(engines, [load("tiny")], "quick", trials=12, seed=8)
    assert [pt.key() for pt in other] != [pt.key() for pt in plan]
    fixed = make_plan(engines, [load("tiny")], "quick", trials=2)  # no seed (older runs): as given
    assert all(order == ENGINES for order in rounds(fixed).values())


def test_the_seed_is_recorded_and_a_resumed_run_replans_the_same_order(fake_engines, tmp_path):
    argv = ["run", "--engine", "fake/ok", "--workload", "tiny", "--profile", "smoke", "--trials", "3", "--aa",
            "--no-report", "--out", str(tmp_path)]
    assert main(argv) == 0
    (run_dir,) = tmp_path.iterdir()
    plan = results.read_manifest(run_dir)["plan"]
    assert isinstance(plan["round_seed"], int) and plan["aa"] is True
    assert plan["engines"] == ["fake/ok/python/cpu", "fake/ok/python/cpu@#copy"]
    trials = results.read_trials(run_dir)
    expected = [pt.key() for pt in plan_of_spec(RunPlan.from_record(plan))]
    assert [results.trial_key(t["engine"], t["workload"], t["params"], t["trial"]) for t in trials] == expected
    # A cut run resumes with the manifest's seed: the missing trials, in the planned order.
    (run_dir / results.TRIALS_FILE).write_text("".join(
        line + "\n" for line in (run_dir / results.TRIALS_FILE).read_text().splitlines()[:3]))
    assert main(["run", "--resume", str(run_dir), "--no-report"]) == 0
    again = results.read_trials(run_dir)
    assert [results.trial_key(t["engine"], t["workload"], t["params"], t["trial"]) for t in again] == expected
    assert plan_of_spec(RunPlan.from_record(json.loads(json.dumps(plan))))[0].key() == expected[0]


def test_a_given_seed_gives_the_same_plan(fake_engines, tmp_path, capsys):
    argv = ["run", "--engine", "fake/ok,fake/wrong", "--workload", "tiny", "--profile", "smoke", "--trials", "4",
            "--seed", "11", "--dry-run", "--out", str(tmp_path)]
    assert main(argv) == 0
    from harness.commands.cli import build_parser
    from harness.commands.request import ask_of, new_plan

    plan, _ = new_plan(ask_of(build_parser().parse_args(argv[:-3] + ["--out", str(tmp_path)])), None)
    assert plan.round_seed == 11
    again = RunPlan.from_record(plan.to_record())
    assert [pt.key() for pt in plan_of_spec(plan)] == [pt.key() for pt in plan_of_spec(again)]


def test_the_same_env_twice_needs_the_aa_flag(capsys):
    argv = ["run", "--engine", "autograd", "--workload", "tiny", "--env", "autograd==1.9.1", "--env",
            "autograd==1.9.1", "--dry-run"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "given twice" in err and "--aa" in err and len(err.strip().splitlines()) == 1


def test_the_same_env_twice_with_aa_is_one_variant_and_its_copy(tmp_path):
    from harness.commands.cli import build_parser
    from harness.commands.request import ask_of, new_plan

    plan, _ = new_plan(ask_of(build_parser().parse_args(
        ["run", "--engine", "autograd", "--workload", "tiny", "--env", "autograd==1.9.1", "--env", "autograd==1.9.1",
         "--aa", "--env-dir", str(tmp_path)])), None)
    assert plan.envs == ("autograd==1.9.1",)
    assert list(plan.engines) == ["autograd/eager/python/cpu@autograd==1.9.1", "autograd/eager/python/cpu@autograd==1.9.1#copy"]


def test_aa_copies_run_in_the_original_environment():
    registry = all_engines()
    spec = envs.parse_spec("autograd==1.9.1")
    (variant,) = envs.variants([registry["autograd/eager/python/cpu"]], [spec], True)
    original, copy = envs.aa_copies([variant])
    assert copy.id == "autograd/eager/python/cpu@autograd==1.9.1#copy"
    assert copy.base_id == original.base_id and copy.env == original.env + "#copy"

    class Made:
        problem, python = None, "/envs/autograd-1.9.1/bin/python"
    bound = envs.bind({e.id: e for e in (original, copy)}, {spec.text: Made()})
    assert {e.python for e in bound.values()} == {Made.python}
    assert envs.aa_copies([registry["none/empty/python/cpu"]]) == [registry["none/empty/python/cpu"]]


def test_instructions_are_refused_without_valgrind(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no valgrind anywhere
    assert main(["run", "--engine", "micrograd", "--workload", "tiny", "--instructions", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--instructions: valgrind is not installed" in err and "apt-get install valgrind" in err


def test_doctor_says_when_valgrind_is_missing(monkeypatch, tmp_path):
    from harness.machine.doctor import valgrind_finding

    monkeypatch.setenv("PATH", str(tmp_path))
    finding = valgrind_finding()
    assert finding.level == "info" and "not installed" in finding.message and "apt-get install valgrind" in finding.fix


FAKE_VALGRIND = """#!/usr/bin/env python3
# Stands in for valgrind: logs its command line, reports 1000 + 250 * --iterations instructions
# ($FAKE_PER_ITER instead of 250).
import os, sys
with open(os.environ["FAKE_VALGRIND_LOG"], "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
if os.environ.get("FAKE_VALGRIND_SIGILL"):
    sys.stderr.write("vex amd64->IR: unhandled instruction bytes: 0x62 0xF1\\n")
    sys.exit(132)
n = int(sys.argv[sys.argv.index("--iterations") + 1])
sys.stderr.write("==42== I   refs:      {:,}\\n".format(1000 + int(os.environ.get("FAKE_PER_ITER", 250)) * n))
"""


@pytest.fixture
def fake_valgrind(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "valgrind"
    script.write_text(FAKE_VALGRIND)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "valgrind.log"
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_VALGRIND_LOG", str(log))
    return log


def test_instructions_per_iteration_through_a_fake_valgrind(fake_engines, fake_valgrind, tmp_path):
    out = tmp_path / "out"
    argv = ["run", "--engine", "fake/ok", "--workload", "tiny", "--profile", "smoke", "--trials", "2",
            "--instructions", "--no-report", "--out", str(out)]
    assert main(argv) == 0
    (run_dir,) = out.iterdir()
    trials = results.read_trials(run_dir)
    assert [t["instructions_per_iter"] for t in trials] == [250.0, 250.0]  # (I(2N) - I(N)) / N
    assert all(t["instructions_reason"] is None and t["instructions_cost_s"] > 0 for t in trials)
    calls = fake_valgrind.read_text().splitlines()
    n, warmup = counted_iterations(load("tiny"))  # the smoke profile's, fixed
    assert (n, warmup) == (200, 5)
    # Per trial N and 2N, then, as 200 x 250 instructions is too short a loop to repeat, 10N and 20N.
    assert len(calls) == 8
    for call, iterations in zip(calls, [n, 2 * n, 10 * n, 20 * n] * 2):
        assert call.startswith(" ".join(instructions.TOOL_ARGS))
        assert f"--iterations {iterations} --warmup" in call and "worker.py --engine fake/ok/python/cpu" in call
        assert call.endswith("--blocks 1")  # no block's time printed per iteration into the count


def test_a_loop_long_enough_is_counted_once(fake_engines, fake_valgrind, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PER_ITER", str(instructions.SHORT_LOOP // 200))
    argv = ["run", "--engine", "fake/ok", "--workload", "tiny", "--profile", "smoke", "--trials", "1",
            "--instructions", "--no-report", "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    assert len(fake_valgrind.read_text().splitlines()) == 2


def test_an_engine_valgrind_cannot_run_is_null_with_the_reason_once(fake_engines, fake_valgrind, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setenv("FAKE_VALGRIND_SIGILL", "1")
    out = tmp_path / "out"
    assert main(["run", "--engine", "fake/ok", "--workload", "tiny", "--profile", "smoke", "--trials", "3",
                 "--instructions", "--no-report", "--out", str(out)]) == 0
    (run_dir,) = out.iterdir()
    trials = results.read_trials(run_dir)
    assert [t["status"] for t in trials] == ["ok"] * 3 and all(t["instructions_per_iter"] is None for t in trials)
    assert "valgrind does not emulate an instruction" in trials[0]["instructions_reason"]
    assert all("not tried again" in t["instructions_reason"] for t in trials[1:])
    assert len(fake_valgrind.read_text().splitlines()) == 1  # one try, not one per trial


def test_parsing_valgrind_summaries():
    assert instructions.parse_refs("==1== Events\n==12== I   refs:      1,234,567\n") == 1234567
    assert instructions.parse_refs("==1== I   refs: 10\n==2== I   refs: 5\n") == 15  # children followed
    assert instructions.parse_refs("no summary") is None
    assert instructions.per_iteration(1000, 3500, 10) == 250
    assert instructions.per_iteration(1000, 1000, 10) is None
    assert "valgrind does not emulate" in instructions.why_not("vex amd64->IR: unhandled instruction bytes", "x")
    assert instructions.why_not("", "killed", timed_out=True).startswith("too slow under valgrind")


def test_the_native_engine_under_the_real_valgrind(tmp_path):
    """One real count of our native driver; skipped with the reason where it cannot be had."""
    from harness.machine.valgrind import missing_valgrind
    from harness.running.runner import count_instructions
    from harness.running.spawn import ChildSpawner, RunOptions

    if missing_valgrind():
        pytest.skip(missing_valgrind())
    engine = all_engines()["burtorch/eager/cpp/cpu"]
    if engine.unavailable_reason():
        pytest.skip(engine.unavailable_reason())
    (pt,) = make_plan([engine], [load("tiny")], "smoke", trials=1)
    count = count_instructions(pt, ChildSpawner(RunOptions(cpu=0)), None)
    if count.per_iter is None and "does not emulate" in (count.reason or ""):
        pytest.skip(count.reason)  # a -march=native build with AVX-512 on this machine
    assert count.per_iter and count.per_iter > 0, count.reason


def test_the_dry_run_eta_includes_counting(fake_valgrind, capsys):
    from harness.planning.estimate import Estimator

    registry = all_engines()
    (pt,) = make_plan([registry["autograd/eager/python/cpu"]], [load("tiny")], "quick", trials=1)
    plain, counted = Estimator(None).trial_s(pt), Estimator(None, instructions=True).trial_s(pt)
    assert counted > 5 * plain  # two children under valgrind, each ~20x its start-up
    assert main(["run", "--engine", "autograd", "--workload", "tiny", "--instructions", "--dry-run"]) == 0
    assert "--instructions included:" in capsys.readouterr().out
