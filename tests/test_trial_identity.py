"""A trial counted once: the run that measured it travels with it through `merge`, so that `claims` pools any
set of a plan's shards and their merge with each trial once, `compare` refuses two runs that share trials
and `merge` refuses a merged run with one of its shards (issue 47, item 3). And a framework's build named
whole where pooled machines differ in it (item 8)."""
from __future__ import annotations

import itertools
import json
import random
import sys
from pathlib import Path

import pytest
from test_claims import BT, LINUX, MB, PT
from test_report import make_trial, write_run

from harness.analysis.compare import compare_runs
from harness.commands.cli import main
from harness.errors import UsageError
from harness.judging import claims
from harness.judging import pooled as judging_pooled
from harness.report import pooled
from harness.store import manifest, merge, results
from harness.store.results import params_key
from harness.store.runs import run_of

B1, B64 = {"batch": 1}, {"batch": 64}
PLAN = {"profile": "quick", "engines": [BT, PT], "workloads": ["gpt"]}
ROUNDS = 4


def gpt_trials(engine: str, params: dict, per_iter: float, seed: int) -> list:
    rng = random.Random(seed)
    memory = 16 * MB if engine == BT else 1300 * MB
    return [make_trial(engine, "gpt", params, k, per_iter * rng.lognormvariate(0, 0.05), wall_time_s=1.0,
                       init_time_s=1.0, peak_virtual_bytes=memory) for k in range(ROUNDS)]


def shard_run(folder: Path, index: int, points: list[tuple], trials: list) -> Path:
    shard = {"index": index, "count": 2, "points": [[e, "gpt", params_key(p)] for e, p in points]}
    return write_run(folder, LINUX, trials, plan={**PLAN, "shard": shard}, created_at=f"2026-11-2{index}T10:00:00")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A plan of GPT b = 1 and 64 for ours and PyTorch split in two shards, and their merge. The b = 64 point
    is split across the shards: its two engines were measured in different runs."""
    root = tmp_path_factory.mktemp("identity")
    s1 = shard_run(root / "s1", 1, [(BT, B1), (PT, B1), (BT, B64)],
                   gpt_trials(BT, B1, 5e-4, 1) + gpt_trials(PT, B1, 1e-2, 2) + gpt_trials(BT, B64, 2e-2, 3))
    s2 = shard_run(root / "s2", 2, [(PT, B64)], gpt_trials(PT, B64, 1e-2, 4))
    m = merge.merge([s1, s2], root / "m", allow_mixed=False)
    return {"S1": s1, "S2": s2, "M": m}


def judge(runs: dict[str, Path], names) -> judging_pooled.Machine:
    (machine,) = judging_pooled.judge_machines([str(runs[n]) for n in names])
    return machine


def verdicts(machine: judging_pooled.Machine) -> list[dict]:
    return [{s.key: getattr(j, s.key).as_dict() for s in claims.SUBJECTS} for j in machine.judged]


def test_a_trial_records_the_run_that_measured_it_and_a_merge_keeps_it(runs):
    assert {t["measured_in"] for t in results.read_trials(runs["S1"])} == {"s1"}
    assert sorted({t["measured_in"] for t in results.read_trials(runs["M"])}) == ["s1", "s2"]


# Every combination of the shards and their merge: (S1: 3 points, S2: 1 point) × 4 rounds.
COMBINATIONS = [c for k in (1, 2, 3) for c in itertools.permutations(("S1", "S2", "M"), k)]
DISTINCT = {"S1": 12, "S2": 4, "M": 16}


@pytest.mark.parametrize("names", COMBINATIONS, ids="+".join)
def test_every_combination_pools_each_trial_once(runs, names):
    machine = judge(runs, names)
    measured = {"s1", "s2"} if "M" in names else {n.lower() for n in names}
    distinct = DISTINCT["M"] if "M" in names else sum(DISTINCT[n] for n in names)
    assert len(machine.pooled.trials) == distinct
    assert machine.pooled.manifest["measuring_runs"] == len(measured)
    text = "\n".join(pooled.lines([machine]))
    assert f"{distinct} trials measured in {len(measured)} run{'s' if len(measured) > 1 else ''}" in text
    if "M" in names and len(names) > 1:
        shard = next(n for n in names if n != "M").lower()
        shared = DISTINCT[shard.upper()]
        assert f"share {shared} trials (m was merged from {shard}): each counted once" in text
    else:
        assert "share" not in text


def test_a_merge_judged_alone_or_with_its_shards_gives_the_same_verdicts(runs):
    alone = verdicts(judge(runs, ["M"]))
    assert any(v["ours"]["low"] is not None for v in alone)  # verdicts with intervals, not only 'not measurable'
    for names in (["M", "S1"], ["S1", "M"], ["M", "S1", "S2"], ["S1", "S2"]):
        assert verdicts(judge(runs, names)) == alone, names


def test_rounds_pair_within_the_run_that_measured_them_and_never_across(runs):
    machine = judge(runs, ["M"])
    runs_of = {}
    for t in machine.pooled.trials:
        runs_of.setdefault((t["engine"], t["params"]["batch"]), set()).add(run_of(t["trial"]))
    assert runs_of[BT, 1] == runs_of[PT, 1] and len(runs_of[BT, 1]) == 1  # both measured in s1: paired
    assert runs_of[BT, 64] != runs_of[PT, 64]  # measured in s1 and s2: never paired


def test_trials_written_before_they_named_their_run_take_their_folders(runs, tmp_path):
    old = []
    for name in ("s1", "s2"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "manifest.json").write_bytes((runs[name.upper()] / "manifest.json").read_bytes())
        lines = (runs[name.upper()] / "trials.jsonl").read_text().splitlines()
        (folder / "trials.jsonl").write_text("".join(json.dumps({k: v for k, v in json.loads(line).items()
                                                                 if k != "measured_in"}) + "\n" for line in lines))
        old.append(folder)
    merged = merge.merge(old, tmp_path / "m", allow_mixed=False)
    assert sorted({t["measured_in"] for t in results.read_trials(merged)}) == ["s1", "s2"]
    assert len(judge({"M": merged, "S1": old[0]}, ["M", "S1"]).pooled.trials) == 16


def test_compare_refuses_a_run_and_its_merge_in_one_line(runs, capsys):
    with pytest.raises(UsageError, match="m and s1 share 12 trials .*not independent samples"):
        compare_runs(runs["M"], runs["S1"])
    assert main(["compare", str(runs["S1"]), str(runs["M"])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "s1 and m share 12 trials" in err


def test_merge_refuses_a_merged_run_with_one_of_its_shards_naming_both(runs, tmp_path, capsys):
    assert main(["merge", str(runs["M"]), str(runs["S2"]), "--out", str(tmp_path / "again")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "share 4 trials (m was merged from s2)" in err
    assert str(runs["M"]) in err and str(runs["S2"]) in err and not (tmp_path / "again").exists()


# ----------------------------------------------------------------------------- builds named whole (item 8)

def build_run(folder: Path, torch: str, cpu: str = "Synthetic CPU 9000") -> str:
    trials = gpt_trials(BT, B1, 5e-4, 1) + gpt_trials(PT, B1, 1e-2, 2)
    run = write_run(folder, LINUX, trials, plan=PLAN, created_at=folder.name)
    data = json.loads((run / "manifest.json").read_text())
    data["frameworks"]["torch"] = torch
    data["machine"]["cpu_model"] = cpu
    (run / "manifest.json").write_text(json.dumps(data))
    return str(run)


def holds(machines: list[judging_pooled.Machine], claim: str) -> str:
    index = next(i for i, j in enumerate(machines[0].judged) if j.claim.id == claim)
    return pooled.holds_line(next(s for s in claims.SUBJECTS if s.key == "ours"), machines, index)


def test_machines_that_differ_in_a_frameworks_build_are_named_and_noted(tmp_path):
    machines = judging_pooled.judge_machines([build_run(tmp_path / "cuda", "2.11.0+cu130"),
                                      build_run(tmp_path / "cpu", "2.11.0+cpu", cpu="AMD EPYC")])
    assert [m.name for m in machines] == ["Synthetic CPU 9000 (torch 2.11.0+cu130)", "AMD EPYC (torch 2.11.0+cpu)"]
    time, memory = holds(machines, "abstract-gpt-time"), holds(machines, "abstract-gpt-memory")
    assert time.startswith("holds on ") and "the machines differ in torch's build (2.11.0+cu130, 2.11.0+cpu)" in time
    assert "what they map" not in time
    assert "builds differ in what they map: a CUDA build maps far more virtual memory" in memory
    md = pooled.markdown(machines)
    assert "torch's build (2.11.0+cu130, 2.11.0+cpu), and builds differ in what they map" in md
    assert "| ours: Synthetic CPU 9000 (torch 2.11.0+cu130) |" in md


def test_one_build_on_every_machine_adds_no_note(tmp_path):
    machines = judging_pooled.judge_machines([build_run(tmp_path / "a", "2.11.0+cpu"),
                                      build_run(tmp_path / "b", "2.13.0+cpu", cpu="AMD EPYC")])
    assert [m.name for m in machines] == ["Synthetic CPU 9000", "AMD EPYC"]
    assert "build" not in holds(machines, "abstract-gpt-memory")


def test_a_version_keeps_the_build_its_package_names_where_the_metadata_drops_it(tmp_path):
    version_file = tmp_path / "version.py"
    version_file.write_text("from typing import Optional\n__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\n")
    assert manifest.with_build("2.11.0", str(version_file)) == "2.11.0+cu130"  # PyTorch's CUDA wheel on PyPI
    assert manifest.with_build("2.12.0", str(version_file)) == "2.12.0"  # a stale file names another release
    assert manifest.with_build("1.9.1", str(tmp_path / "absent.py")) == "1.9.1"
    assert manifest.with_build(None, None) is None


def test_another_interpreters_versions_keep_their_builds(tmp_path):
    """The workers' interpreter read in a child: the same versions as this one's, builds included."""
    other = tmp_path / "python"
    other.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    other.chmod(0o755)
    assert manifest.framework_versions(str(other)) == manifest.framework_versions()
