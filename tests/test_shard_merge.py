"""--shard K/N splits a plan by point, exactly; burtbench merge joins the shards into the unsharded
run, and refuses what would put incomparable numbers in one table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests_support import fault_engines_env

from engines import all_engines
from harness.analysis.compare import compare_runs
from harness.commands.cli import main
from harness.planning import shard
from harness.planning.estimate import Estimator
from harness.planning.plan import make_plan
from harness.report.run import status_notes
from harness.running.session import make_plan as plan_of_spec
from harness.store import results
from harness.store.run_plan import read_plan
from harness.store.runs import load_run
from workloads import all_workloads

PLAN = ["--engine", "fake/ok,fake/wrong", "--workload", "tiny,small", "--profile", "smoke", "--trials", "2",
        "--no-report"]


def the_paper_plan():
    """The whole paper profile over every engine: hundreds of points of very different costs."""
    return make_plan(list(all_engines().values()), list(all_workloads().values()), "paper")


@pytest.mark.parametrize("count", range(1, 8))
def test_shards_cover_every_trial_exactly_once_and_keep_points_whole(count):
    plan = the_paper_plan()
    estimator = Estimator(None)
    parts = shard.split(plan, count, estimator.trial_s)
    assert parts == shard.split(plan, count, estimator.trial_s), "the split is not deterministic"
    trials = [pt.key() for points in parts for pt in shard.only(plan, points)]
    assert sorted(trials) == sorted(pt.key() for pt in plan) and len(set(trials)) == len(plan)
    owners = {}
    for index, points in enumerate(parts):
        for pt in shard.only(plan, points):
            assert owners.setdefault(pt.point_key(), index) == index, "a point was split across shards"
    # Largest first to the least loaded: no shard exceeds another by more than the largest point.
    loads = [sum(estimator.trial_s(pt) for pt in shard.only(plan, points)) for points in parts]
    point_cost = {}
    for pt in plan:
        point_cost[pt.point_key()] = point_cost.get(pt.point_key(), 0.0) + estimator.trial_s(pt)
    assert max(loads) - min(loads) <= max(point_cost.values()) + 1e-9


def test_a_shard_keeps_the_plan_interleaved():
    plan = the_paper_plan()
    (points, _) = shard.split(plan, 2, Estimator(None).trial_s)
    mine = shard.only(plan, points)
    assert [plan.index(pt) for pt in mine] == sorted(plan.index(pt) for pt in mine)


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp("shards")
    with fault_engines_env():
        for k in (1, 2, 3):
            assert main(["run", *PLAN, "--shard", f"{k}/3", "--out", str(out / str(k))]) == 0
    return [next((out / str(k)).iterdir()) for k in (1, 2, 3)]


def keys(run_dir: Path) -> list[tuple]:
    return sorted(tuple(map(str, results.trial_key(t["engine"], t["workload"], t["params"], t["trial"])))
                  for t in results.read_trials(run_dir))


def test_merged_shards_are_the_unsharded_plan(shards, tmp_path):
    with fault_engines_env():
        assert main(["merge", *map(str, shards), "--out", str(tmp_path / "merged")]) == 0
        merged = tmp_path / "merged"
        manifest = results.read_manifest(merged)
        assert manifest["status"] == "complete" and manifest["plan"]["shard"] is None
        planned = sorted(tuple(map(str, pt.key())) for pt in plan_of_spec(read_plan(manifest)))
        assert keys(merged) == planned
        assert sum(len(keys(s)) for s in shards) == len(planned)
        assert main(["run", *PLAN, "--out", str(tmp_path / "whole")]) == 0
        assert keys(merged) == keys(next((tmp_path / "whole").iterdir()))
        assert compare_runs(next((tmp_path / "whole").iterdir()), merged)["rows"]
        assert main(["report", str(merged), "--report-dir", str(tmp_path / "reports")]) == 0
    notes = status_notes(load_run(merged))
    assert any("Merged from 3 runs" in n for n in notes) and not any("Mixed" in n for n in notes)


def test_a_missing_shard_is_refused_naming_its_points_unless_partial_is_allowed(shards, tmp_path, capsys):
    with fault_engines_env():
        assert main(["merge", str(shards[0]), str(shards[2]), "--out", str(tmp_path / "m")]) == 2
        err = capsys.readouterr().err
        lacking = {(e, w) for e, w, _, _ in set(map(tuple, keys(shards[1])))}
        assert "shards 2 of 3 not merged" in err and "--allow-partial" in err and not (tmp_path / "m").exists()
        assert all(f"{e} · {w}" in err for e, w in lacking), err
        assert main(["merge", str(shards[0]), str(shards[2]), "--out", str(tmp_path / "m"), "--allow-partial"]) == 0
    status = results.read_manifest(tmp_path / "m")["status"]
    assert status.startswith("partial: shards 2 of 3 not merged; ") and "planned trials missing" in status


def copy_run(run_dir: Path, to: Path, change) -> Path:
    to.mkdir()
    (to / results.TRIALS_FILE).write_bytes((run_dir / results.TRIALS_FILE).read_bytes())
    manifest = json.loads((run_dir / results.MANIFEST_FILE).read_text())
    change(manifest)
    (to / results.MANIFEST_FILE).write_text(json.dumps(manifest))
    return to


@pytest.mark.parametrize("change, what", [
    (lambda m: m["machine"].update(cpu_model="Another CPU 9000"), "CPU model"),
    (lambda m: m["frameworks"].update(torch="0.0.1"), "framework versions"),
])
def test_merge_refuses_mixed_manifests_unless_allowed(shards, tmp_path, capsys, change, what):
    other = copy_run(shards[1], tmp_path / "other", change)
    assert main(["merge", str(shards[0]), str(other), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("burtbench: error: merge:") and what in err and err.count("\n") == 1
    assert not (tmp_path / "m").exists()
    assert main(["merge", str(shards[0]), str(other), "--allow-mixed", "--allow-partial",  # shard 3 left out
                 "--out", str(tmp_path / "m")]) == 0
    assert any(n.startswith("Mixed run") and what in n for n in status_notes(load_run(tmp_path / "m")))


def test_merge_refuses_another_plan_and_a_trial_twice(shards, tmp_path, capsys):
    other = copy_run(shards[1], tmp_path / "other", lambda m: m["plan"].update(trials=3))
    assert main(["merge", str(shards[0]), str(other), "--out", str(tmp_path / "a")]) == 2
    assert "different plans" in capsys.readouterr().err
    twice = copy_run(shards[0], tmp_path / "twice", lambda m: m["plan"]["shard"].update(index=2))
    assert main(["merge", str(shards[0]), str(twice), "--out", str(tmp_path / "b")]) == 2
    assert "is in both" in capsys.readouterr().err
    assert main(["merge", str(shards[0]), str(shards[0]), "--out", str(tmp_path / "c")]) == 2


def test_a_shard_resumes_its_own_points(shards, tmp_path):
    run_dir = copy_run(shards[0], tmp_path / "cut", lambda m: None)
    lines = (run_dir / results.TRIALS_FILE).read_text().splitlines(keepends=True)
    (run_dir / results.TRIALS_FILE).write_text("".join(lines[:1]))
    with fault_engines_env():
        assert main(["run", "--resume", str(run_dir), "--no-report"]) == 0
    assert keys(run_dir) == keys(shards[0])


@pytest.mark.parametrize("text", ["0/3", "4/3", "1", "a/b", "1/0"])
def test_a_bad_shard_is_one_usage_line(text, capsys):
    assert main(["run", "--shard", text, "--dry-run"]) == 2
    assert capsys.readouterr().err.startswith(f"burtbench: error: --shard {text}")
