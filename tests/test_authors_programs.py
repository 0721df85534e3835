"""The authors' example programs, built from their source (the shared archive or $BURTBENCH_UPSTREAM)
with their CMake and run as trials: outputs parsed, times positive, the process's own memory a few
MiB, and the numerical checks exactly as their printed output warrants."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests_support import shared_upstream

from engines import all_engines
from engines.authors import build as builder
from engines.authors import programs
from engines.authors.programs import PROGRAMS
from engines.authors.source import ENV_VAR, PINNED_COMMIT, SourceTree
from engines.base import AUTHORS
from harness.measure import affinity
from harness.measure.tsc import tsc_rate_hz
from harness.planning.plan import PlannedTrial
from harness.running.runner import measure, prepare_inputs
from harness.running.spawn import ChildSpawner, RunOptions
from workloads import load

ROOT = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def upstream() -> SourceTree:
    tree = shared_upstream()
    assert tree.commit == PINNED_COMMIT
    with pytest.MonkeyPatch.context() as patch:  # the engine finds their source as a user's run would
        patch.setenv(ENV_VAR, tree.origin)
        yield tree


def run_program(workload: str, iterations: int, workdir: Path, params: dict | None = None, cpu: int | None = None) -> dict:
    """Their program run as a trial runs it: the burtorch-authors engine builds it for `iterations` and
    the runner's own spawner runs it pinned (timeout, wait4 CPU time); the trial, as a dict."""
    engine, declared = all_engines()[AUTHORS], load(workload)
    point = next(p for p in declared.points(profile="paper") if p.items() >= (params or {}).items())
    pt = PlannedTrial(engine, declared, point, 0, iterations, 0, 600, with_init=False)
    assert engine.prepare([pt]) is None
    spawner = ChildSpawner(RunOptions(cpu=affinity.default_cpu() if cpu is None else cpu))
    trial = measure(pt, spawner, tsc_rate_hz(), prepare_inputs(pt, workdir, None))
    return {**trial.extra, **{k: v for k, v in trial.__dict__.items() if k != "extra"}}


def assert_own_memory(result: dict) -> None:
    # Their graph programs need about 3-4 MiB; the pytest process that spawns them is far larger.
    assert 1 * MiB < result["peak_resident_bytes"] < 16 * MiB
    assert result["peak_virtual_bytes"] >= result["peak_resident_bytes"]
    assert "VmHWM" in result["peak_resident_source"]


def test_tiny(upstream, tmp_path):
    result = run_program("tiny", 100_000, tmp_path)
    assert result["status"] == "ok", result.get("reason")
    assert result["iterations"] == 100_000
    assert 0 < result["per_iter_s"]["mean"] < 1e-4
    assert result["loop_time_s"] == pytest.approx(result["per_iter_s"]["mean"] * 100_000)
    assert set(result["timers_s"]) == {"without pre-allocated buffers", "with pre-allocated buffers",
                                       "with precalculated topo-sort"}
    assert all(v > 0 for v in result["timers_s"].values())
    assert_own_memory(result)
    # Their only record of the values is test.txt, printed to 6 significant digits: they agree with
    # 612.5 / -35 / 1050, but a 1e-12 agreement cannot be read from them.
    check = result["check"]
    assert result["check"]["got"] == {"g": 612.5, "dg_da": -35.0, "dg_db": 1050.0}
    assert check["status"] == "agrees_to_printed_digits" and check["ok"] is None
    assert check["max_rel_err"] == 0.0


def test_small_prints_the_gradients_of_a_relu_whose_backward_multiplies_by_its_output(upstream, tmp_path):
    result = run_program("small", 20_000, tmp_path)
    assert result["status"] == "ok", result.get("reason")
    assert result["iterations"] == 20_000 and 0 < result["per_iter_s"]["mean"] < 1e-3
    assert_own_memory(result)
    check = result["check"]
    assert result["printed"] == {"g": "24.7041", "dg_da": "104.125", "dg_db": "680.286"}
    assert check["ok"] is False and check["status"] == "mismatch"
    assert check["per_output"] == {"g": "agrees_to_printed_digits", "dg_da": "mismatch", "dg_db": "mismatch"}
    # Exactly what micrograd's graph gives when relu'(x) is taken as relu(x) (their eRelu backward).
    assert result["check"]["got"]["dg_da"] == pytest.approx(104.12536443148689, abs=5e-4)
    assert result["check"]["got"]["dg_db"] == pytest.approx(680.2857142857143, abs=5e-4)


def test_a_variant_runs_the_changed_iteration_count(upstream, tmp_path):
    step = PROGRAMS["small"].steps[0]
    changes = builder.plan_changes(upstream, step, {"iterations": 100})
    result = builder.build(upstream, step.target, changes)
    assert result.ok, result.reason
    assert result.variant == "bin_small_example.kIterations=100"
    assert [c.as_record() for c in result.changes] == [c.as_record() for c in changes]
    run = run_program("small", 100, tmp_path)
    assert run["status"] == "ok" and run["iterations"] == 100
    assert builder.build(upstream, step.target, changes).cached


def test_energy(upstream, tmp_path):
    result = run_program("energy", 200_000, tmp_path)
    assert result["status"] == "ok", result.get("reason")
    assert result["iterations"] == 200_000 and result["per_iter_s"]["mean"] > 0
    assert result["check"]["status"] == "mismatch"   # the same program as small
    assert_own_memory(result)


def test_save_load(upstream, tmp_path):
    result = run_program("save_load", 5000, tmp_path)
    assert result["status"] == "ok", result.get("reason")
    assert result["iterations"] == 5000 and result["save_s"] > 0 and result["load_s"] > 0
    assert result["per_iter_s"]["mean"] == pytest.approx((result["save_s"] + result["load_s"]) / 5000)
    assert result["file_size_bytes"] == 56
    check = result["check"]
    assert check["ok"] is True, check["reason"]
    assert check["got"] == check["expected"]
    assert len(result["program"]) == 2  # their save program, then their load program
    assert_own_memory(result)


def test_a_missing_saved_file_is_a_failed_check(tmp_path):
    measures = programs.merge_measures("save_load", [
        {"iterations": 2, "save_s": 1.0, "save_per_iter_s": 0.5, "timer": {}},
        {"iterations": 2, "load_s": 1.0, "load_per_iter_s": 0.5, "timer": {}}])
    check = PROGRAMS["save_load"].check(measures)
    assert check["ok"] is False and check["status"] == "missing"


# ---------------------------------------------------------------------------- parsers on known text

MAKEMORE_TAIL = """ ~ batch: 1
 ~ hidden dim: 4

 ~ train set size: 228146
  ->Train: [2/4]  | Loss: 3.5 | Grad l2 norm sqr: -1 | Avg Time: 0.25 msec.
 | Std.dev for time: 0.05 msec.
 | Params: 5963
  ->Train: [4/4]  | Loss: 3.25 | Grad l2 norm sqr: -1 | Avg Time: 0.2 msec.
 | Std.dev for time: 0.04 msec.
 | Params: 5963

Total computate and parse time: 100 msec.
"""

GPT_TAIL = """BATCH SZ: 2
  ->Train: [3/3]  | Loss: 4.5 | Grad l2 norm sqr: -1
 | Batch Time: 1.5 msec.
 | Avg Time: 2 msec.
 | Std.dev for time: 0.5 msec.
 | Params: 46289
"""


def test_parse_makemore_and_gpt_output(tmp_path):
    mlp = programs.parse_makemore(MAKEMORE_TAIL, tmp_path)
    assert mlp["iterations"] == 4 and mlp["per_iter_s"]["mean"] == pytest.approx(0.2e-3)
    assert mlp["per_iter_s"]["std"] == pytest.approx(0.04e-3)
    assert mlp["outputs"] == {"losses": [3.5, 3.25], "loss_steps": [2, 4]}
    assert mlp["param_count"] == 5963 and mlp["printed"]["batch"] == 1 and mlp["printed"]["hidden_dim"] == 4
    gpt = programs.parse_gpt(GPT_TAIL, tmp_path)
    assert gpt["iterations"] == 3 and gpt["per_iter_s"]["mean"] == pytest.approx(2e-3)
    assert gpt["records"][0]["batch_time_ms"] == 1.5 and gpt["param_count"] == 46289 and gpt["printed"]["batch"] == 2
    assert programs.check_training(gpt)["status"] == "not comparable"
    with pytest.raises(programs.ParseError):
        programs.parse_gpt("BATCH SZ: 2\n", tmp_path)


def test_printed_precision_decides_the_check():
    exact = {"outputs": {"g": 0.1}, "printed": {"g": "0.10000000000000001"}}
    assert programs.check_printed(exact, {"g": 0.1})["status"] == "ok"
    six = {"outputs": {"g": 24.7041}, "printed": {"g": "24.7041"}}
    assert programs.check_printed(six, {"g": 2421 / 98})["status"] == "agrees_to_printed_digits"
    off = {"outputs": {"g": 24.7042}, "printed": {"g": "24.7042"}}
    assert programs.check_printed(off, {"g": 2421 / 98})["status"] == "mismatch"
    nan = {"outputs": {"g": float("nan")}, "printed": {"g": "nan"}}
    assert programs.check_printed(nan, {"g": 1.0})["ok"] is False


def test_differences_cite_their_code_and_experiments():
    ids = [d.id for d in programs.DIFFERENCES]
    assert len(ids) == len(set(ids))
    for difference in programs.DIFFERENCES:
        assert difference.evidence and difference.status in ("differs", "same")
        assert set(difference.workloads) <= set(PROGRAMS)
        if difference.experiment:
            assert (ROOT / difference.experiment).is_file()
    assert {"gpt-backward", "relu-backward", "gpt-params", "mlp-output"} <= set(ids)


def test_differences_cite_lines_that_exist(upstream):
    import re
    for difference in programs.DIFFERENCES:
        for item in difference.evidence:
            m = re.match(r"((?:bin_|burtcore/|burt/)[\w./]+):([\d,\-]+)", item)
            if not m:
                continue
            path = upstream.burt_dir / m.group(1)
            assert path.is_file(), item
            count = len(path.read_text(errors="replace").splitlines())
            for number in re.findall(r"\d+", m.group(2)):
                assert 1 <= int(number) <= count, item


# ---------------------------------------------------------------------------- long programs

@pytest.mark.slow
def test_gpt_variant_runs_pinned_to_core_1(upstream, tmp_path):
    result = run_program("gpt", 4, tmp_path, {"batch": 1}, cpu=0)
    assert result["status"] == "ok", result.get("reason")
    assert result["iterations"] == 4 and result["printed"]["batch"] == 1 and result["param_count"] == 46289
    assert result["per_iter_s"]["mean"] > 0 and len(result["check"]["got"]["losses"]) == 1
    assert result["check"]["status"] == "not comparable" and result["check"]["ok"] is None
    if len(os.sched_getaffinity(0)) > 1:
        assert result["ran_on_cpu"] == 1 and result["cpus_allowed"] == ["1"]


@pytest.mark.slow
def test_makemore_variant(upstream, tmp_path):
    result = run_program("mlp", 4, tmp_path, {"batch": 1, "hidden_dim": 4}, cpu=0)
    assert result["status"] == "ok", result.get("reason")
    assert result["iterations"] == 4 and result["param_count"] == 1755 + 1052 * 4
    assert result["printed"]["batch"] == 1 and result["printed"]["hidden_dim"] == 4
    assert result["check"]["status"] == "not comparable"
    if len(os.sched_getaffinity(0)) > 1:
        assert result["ran_on_cpu"] == 1
