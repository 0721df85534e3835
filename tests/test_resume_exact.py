"""A resume restores exactly the plan's trials, whatever cut or damage the results file took.

One real run of 4 trials (fake engines) gives the complete file. It is then cut at every offset of its
first line and around every line's end (at every byte offset with `-m slow`), and the last line damaged
in every way below; for each, the resume's own steps run — mend the tail, find what is pending, append
those trials (their lines from the complete run stand in for running them again) — and the file must then
hold each planned trial exactly once. A few cuts are also resumed for real, through the CLI.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from tests_support import fault_engines_env

from harness.commands.cli import main
from harness.running import orchestrator
from harness.running.session import make_plan
from harness.store import results
from harness.store.run_plan import read_plan

PLAN = ["--engine", "fake/ok", "--workload", "tiny,small", "--profile", "smoke", "--trials", "2", "--no-report"]


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("complete")
    with fault_engines_env():
        assert main(["run", *PLAN, "--out", str(out)]) == 0
    (run_dir,) = out.iterdir()
    return run_dir


def plan_of(run_dir: Path) -> list:
    with fault_engines_env():
        return make_plan(read_plan(results.read_manifest(run_dir)))


def keys_of(run_dir: Path) -> list[tuple]:
    return [tuple(map(str, results.trial_key(t["engine"], t["workload"], t["params"], t["trial"])))
            for t in results.read_trials(run_dir, warn=lambda _: None)]


def simulate_resume(run_dir: Path, plan: list, lines_by_key: dict) -> None:
    results.mend_tail(run_dir)
    for planned in orchestrator.pending(plan, run_dir):
        with open(run_dir / results.TRIALS_FILE, "a", encoding="utf-8") as fh:
            fh.write(lines_by_key[tuple(map(str, planned.key()))])


def setup(complete_run: Path, tmp_path: Path):
    data = (complete_run / results.TRIALS_FILE).read_bytes()
    lines = data.decode("utf-8").splitlines(keepends=True)
    by_key = {tuple(map(str, results.trial_key(t["engine"], t["workload"], t["params"], t["trial"]))): line
              for t, line in ((json.loads(line), line) for line in lines)}
    plan = plan_of(complete_run)
    work = tmp_path / "run"
    shutil.copytree(complete_run, work)
    return data, lines, by_key, plan, work


def test_the_complete_run_has_every_planned_trial_once(complete_run):
    plan = plan_of(complete_run)
    assert len(plan) == 6  # fake/ok on tiny and small, and the floor row on small (it reports memory), 2 trials
    assert sorted(keys_of(complete_run)) == sorted(tuple(map(str, p.key())) for p in plan)


def cut_resumes_to_the_plan(complete_run, tmp_path, monkeypatch, offsets) -> None:
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # durability is not what this test is about: speed is
    data, _, by_key, plan, work = setup(complete_run, tmp_path)
    expected = sorted(tuple(map(str, p.key())) for p in plan)
    trials = work / results.TRIALS_FILE
    for offset in offsets(data):
        trials.write_bytes(data[:offset])
        simulate_resume(work, plan, by_key)
        assert sorted(keys_of(work)) == expected, f"cut at byte {offset} of {len(data)}"


def every_kind_of_cut(data: bytes) -> list[int]:
    """Every offset of the first line (the lines share one layout: a cut in each field, each key, each
    value), and two bytes either side of every line's end (a line whole, torn by a byte, the next begun)."""
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    near = {o for end in ends for o in range(end - 2, end + 3) if 0 <= o <= len(data)}
    return sorted(set(range(ends[0] + 1)) | near)


def test_every_kind_of_cut_resumes_to_exactly_the_plan(complete_run, tmp_path, monkeypatch):
    cut_resumes_to_the_plan(complete_run, tmp_path, monkeypatch, every_kind_of_cut)


# Every byte offset of the file (about 90 s here): each is one of the kinds the test above cuts.
@pytest.mark.slow
def test_every_cut_offset_resumes_to_exactly_the_plan(complete_run, tmp_path, monkeypatch):
    cut_resumes_to_the_plan(complete_run, tmp_path, monkeypatch, lambda data: range(len(data) + 1))


DAMAGES = {
    "no newline": lambda line: line.rstrip(b"\n"),
    "not JSON": lambda line: b"{oops\n",
    "a list": lambda line: b"[1, 2]\n",
    "trial as text": lambda line: line.replace(b'"trial": ', b'"trial": "x", "was": '),
    "unknown status": lambda line: line.replace(b'"status": "ok"', b'"status": "grand"'),
    "NaN time": lambda line: line.replace(b'"loop_time_s": ', b'"loop_time_s": NaN, "was": '),
    "overflow": lambda line: line.replace(b'"iterations": ', b'"iterations": 1e999, "was": '),
    "random bytes": lambda line: b"\x00\xff\xfe garbage \x80\n",
    "half": lambda line: line[: len(line) // 2],
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_any_damage_to_the_last_line_resumes_to_exactly_the_plan(complete_run, tmp_path, damage):
    data, lines, by_key, plan, work = setup(complete_run, tmp_path)
    expected = sorted(tuple(map(str, p.key())) for p in plan)
    for kept in range(1, len(lines) + 1):
        body = b"".join(line.encode() for line in lines[: kept - 1]) + DAMAGES[damage](lines[kept - 1].encode())
        (work / results.TRIALS_FILE).write_bytes(body)
        simulate_resume(work, plan, by_key)
        assert sorted(keys_of(work)) == expected, f"{damage} on line {kept}"


@pytest.mark.parametrize("cut", ["newline", "mid-line"])
def test_a_real_resume_after_a_cut_keeps_every_trial(fake_engines, complete_run, tmp_path, cut):
    _, lines, _, plan, work = setup(complete_run, tmp_path)
    body = "".join(lines)
    body = body[:-1] if cut == "newline" else body[: len(body) - len(lines[-1]) // 2]
    (work / results.TRIALS_FILE).write_text(body, encoding="utf-8")
    assert main(["run", "--resume", str(work), "--no-report"]) == 0
    keys = keys_of(work)
    assert sorted(keys) == sorted(tuple(map(str, p.key())) for p in plan) and len(set(keys)) == len(keys)
    assert results.read_manifest(work)["status"] == "complete"
