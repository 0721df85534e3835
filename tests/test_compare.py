"""`burtbench compare` on synthetic runs: a planted 2x slowdown is found, an unchanged engine is not flagged."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from harness.analysis.compare import compare_runs, format_comparison
from harness.analysis.gate import exit_status, regression_lines, regressions
from harness.store.results import MANIFEST_FILE, Trial, append_trial

MB = 2**20


def noisy_trials(engine: str, workload: str, per_iter: float, seed: int, *, memory: int = 100 * MB,
                 trials: int = 3, blocks: int = 50) -> list[Trial]:
    """Trials whose blocks scatter 3% around a per-trial level that itself drifts 2% between processes."""
    rng = random.Random(seed)
    out = []
    for index in range(trials):
        level = per_iter * rng.gauss(1, 0.02)
        samples = [level * rng.gauss(1, 0.03) for _ in range(blocks)]
        mean = sum(samples) / blocks
        framework, mode, language, device = engine.split("/")
        out.append(Trial(engine=engine, framework=framework, mode=mode, language=language, device=device,
                         workload=workload, params={"a": -41.0, "b": 2.0}, trial=index, iterations=blocks * 10,
                         samples_s=samples, loop_time_s=mean * blocks * 10,
                         per_iter_s={"mean": mean, "std": 0.0, "min": min(samples), "median": mean, "n": blocks},
                         peak_resident_bytes=memory + rng.randrange(0, 4096)))
    return out


def write_run(folder: Path, trials: list[Trial], *, cpu_model: str = "Synthetic CPU", profile: str = "quick") -> Path:
    folder.mkdir(parents=True)
    manifest = {"run_id": folder.name, "profile": profile, "status": "complete",
                "machine": {"cpu_model": cpu_model, "governor": "performance"}}
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest), encoding="utf-8")
    for trial in trials:
        append_trial(folder, trial)
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("compare")
    a = write_run(root / "run-a", [
        *noisy_trials("burtorch/eager/cpp/cpu", "tiny", 1e-7, seed=1),
        *noisy_trials("torch/eager/python/cpu", "tiny", 1.5e-4, seed=2),
        *noisy_trials("burtorch/eager/cpp/cpu", "small", 4e-7, seed=3),
        *noisy_trials("jax/jit/python/cpu", "tiny", 1e-4, seed=4),
    ])
    timed_out = Trial(engine="mlx/eager/python/cpu", framework="mlx", mode="eager", language="python", device="cpu",
                      workload="tiny", params={"a": -41.0, "b": 2.0}, trial=0, status="timeout", reason="300 s")
    b = write_run(root / "run-b", [
        *noisy_trials("burtorch/eager/cpp/cpu", "tiny", 1e-7, seed=11),  # unchanged
        *noisy_trials("torch/eager/python/cpu", "tiny", 3e-4, seed=12, memory=150 * MB),  # planted 2x slowdown
        *noisy_trials("burtorch/eager/cpp/cpu", "small", 4e-7, seed=13),  # unchanged
        *noisy_trials("micrograd/eager/python/cpu", "tiny", 2.5e-5, seed=14),  # only in B
        timed_out,
    ], cpu_model="Other CPU", profile="paper")
    return a, b


def row(result: dict, workload: str, engine: str) -> dict:
    return next(r for r in result["rows"] if r["workload"] == workload and r["engine"] == engine)


def test_planted_slowdown_is_found(runs):
    result = compare_runs(*runs)
    torch = row(result, "tiny", "torch/eager/python/cpu")
    assert torch["answer"] == "slower" and torch["decided_by"] == "time"
    assert torch["answer_text"].startswith("slower by 9") and torch["time_verdict"] == torch["answer_text"]
    assert torch["time_ratio"] == pytest.approx(2.0, rel=0.05)
    assert 1.8 < torch["time_ci"][0] < torch["time_ratio"] < torch["time_ci"][1] < 2.2
    assert torch["mem_verdict"].startswith("larger by 5")
    assert torch["mem_ratio"] == pytest.approx(1.5, rel=0.01)


def test_unchanged_engines_are_never_faster_or_slower(runs):
    result = compare_runs(*runs)
    for workload in ("tiny", "small"):
        burtorch = row(result, workload, "burtorch/eager/cpp/cpu")
        assert burtorch["answer"] in ("same", "undecided")
        assert burtorch["time_ci"][0] < 1 < burtorch["time_ci"][1]
        assert burtorch["mem_verdict"] == "same within 1%"
    assert not result["geomean"]["small"]["answer_text"].startswith(("faster", "slower"))


def test_geometric_mean_per_workload(runs):
    tiny = compare_runs(*runs)["geomean"]["tiny"]
    assert tiny["n"] == 2
    assert tiny["ratio"] == pytest.approx(2 ** 0.5, rel=0.05)
    assert tiny["answer_text"].startswith("slower by")


def test_engines_in_one_run_only_and_unmeasured(runs):
    result = compare_runs(*runs)
    assert {(g["workload"], g["engine"]) for g in result["only_in_a"]} == {("tiny", "jax/jit/python/cpu")}
    assert {(g["workload"], g["engine"]) for g in result["only_in_b"]} == {
        ("tiny", "micrograd/eager/python/cpu"), ("tiny", "mlx/eager/python/cpu")}


def test_manifest_differences_are_warned(runs):
    warnings = compare_runs(*runs)["warnings"]
    assert any("CPU model" in w and "Other CPU" in w for w in warnings)
    assert any("profile" in w for w in warnings)
    assert not any("governor" in w for w in warnings)


def test_comparison_is_deterministic_and_a_run_equals_itself(runs):
    a, _ = runs
    assert json.dumps(compare_runs(*runs)) == json.dumps(compare_runs(*runs))
    same = compare_runs(a, a)
    assert {r["answer"] for r in same["rows"]} == {"same"}
    assert same["warnings"] == []
    assert exit_status(same, 0) == 0


def test_fail_if_slower_gate(runs):
    result = compare_runs(*runs)
    assert [(r["workload"], r["engine"]) for r in regressions(result, 10)] == [("tiny", "torch/eager/python/cpu")]
    assert exit_status(result, 10) == 1
    assert exit_status(result, 150) == 0  # 2x is a 100% slowdown, under the 150% limit
    assert exit_status(result, None) == 0


def test_output_formats(runs, monkeypatch):
    monkeypatch.setenv("COLUMNS", "220")  # the terminal table wraps to the terminal's width
    result = compare_runs(*runs)
    assert json.loads(format_comparison(result, "json")) == json.loads(json.dumps(result))
    md = format_comparison(result, "md")
    assert "| Point | Engine |" in md
    # Engine ids without the parts every row shares (the legend says them once).
    assert "- Engines: mode eager, device cpu (every row)." in md
    torch_lines = [line for line in md.splitlines() if line.startswith("| tiny | torch/python |")]
    assert len(torch_lines) == 1 and "| slower by 9" in torch_lines[0]
    table = format_comparison(result, "table")
    assert "WARNING: CPU model differs" in table
    assert "geo. mean of 2" in table and "slower" in table
    with pytest.raises(ValueError):
        format_comparison(result, "xml")


def test_single_trials_give_a_ratio_and_no_verdict(tmp_path):
    # The timing blocks inside one process are not independent trials: no interval, undecided, and the
    # gate fails on a row it cannot judge, saying why.
    a = write_run(tmp_path / "a", noisy_trials("burtorch/eager/cpp/cpu", "tiny", 1e-7, seed=21, trials=1))
    b = write_run(tmp_path / "b", noisy_trials("burtorch/eager/cpp/cpu", "tiny", 1.5e-7, seed=22, trials=1))
    result = compare_runs(a, b)
    only = result["rows"][0]
    assert only["time_ci"] is None and only["answer"] == "undecided"
    # Undecided, the ratio is still stated in the answer.
    said = (f"undecided: B/A {only['time_ratio']:.3g}, 1 trial a side (3 give an interval) "
            "(no A/A floor: two separate runs)")
    assert only["answer_text"] == said
    assert only["time_ratio"] == pytest.approx(only["time_b"] / only["time_a"])
    assert f"| {said} |" in format_comparison(result, "md")
    # The terminal leads with the decided answers: none here, and it counts the rest with what decides them.
    table = format_comparison(result, "table")
    assert "no row decided" in table and said not in table
    assert ("0 of 1 rows decided; the rest: 1 undecided; rerun both runs with --trials 3: 1 of them need that many "
            "or fewer") in table
    assert exit_status(result, 1) == 1
    assert regression_lines(result, 1) == ["cannot judge 1 of 1 rows: fewer than 3 trials a side give no interval "
                                           "(rerun with --trials 3 or more)"]
    assert exit_status(result, None) == 0  # no gate asked: the table alone


def test_a_gate_that_cannot_judge_does_not_pass_silently(tmp_path, capsys):
    from harness.commands.cli import main

    a = write_run(tmp_path / "a", noisy_trials("burtorch/eager/cpp/cpu", "tiny", 1e-7, seed=21, trials=1))
    b = write_run(tmp_path / "b", noisy_trials("burtorch/eager/cpp/cpu", "tiny", 2e-7, seed=22, trials=1))
    assert main(["compare", str(a), str(b), "--fail-if-slower", "5"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("burtbench compare: cannot judge 1 of 1 rows")
    assert "--trials 3 or more" in err[0]


def test_a_failing_gate_says_which_rows_and_why_on_stderr(runs, capsys):
    from harness.commands.cli import main

    assert main(["compare", str(runs[0]), str(runs[1]), "--fail-if-slower", "10", "--allow-mixed"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "slower by more than 10%: tiny torch/eager/python/cpu" in err[0] and "slower by 9" in err[0]
    # Two CPU models: the gate would compare machines, not code, and is refused unless asked for.
    assert main(["compare", str(runs[0]), str(runs[1]), "--fail-if-slower", "10"]) == 2
    assert "different CPU models (Synthetic CPU and Other CPU)" in capsys.readouterr().err


def test_geometric_means_leave_out_the_floor_row_and_keep_the_star(tmp_path):
    floor = "none/empty/python/cpu"
    a = write_run(tmp_path / "a", [*noisy_trials("burtorch/eager/cpp/cpu", "small", 1e-7, seed=31),
                                   *noisy_trials("torch/eager/python/cpu", "small", 1e-4, seed=32, trials=1),
                                   *noisy_trials(floor, "small", 1e-8, seed=33)])
    b = write_run(tmp_path / "b", [*noisy_trials("burtorch/eager/cpp/cpu", "small", 1e-7, seed=34),
                                   *noisy_trials("torch/eager/python/cpu", "small", 1e-4, seed=35, trials=1),
                                   *noisy_trials(floor, "small", 5e-8, seed=36)])  # a 5x floor change
    result = compare_runs(a, b)
    mean = result["geomean"]["small"]
    assert mean["n"] == 2  # the floor row is out
    assert mean["ratio"] == pytest.approx(1.0, rel=0.1)
    assert "Only in" not in format_comparison(result, "md")


def test_only_in_one_run_is_a_count_and_a_short_list(tmp_path):
    a = write_run(tmp_path / "a", noisy_trials("burtorch/eager/cpp/cpu", "tiny", 1e-7, seed=41))
    many = [t for i in range(9) for t in noisy_trials(f"fw{i}/eager/python/cpu", "tiny", 1e-5, seed=50 + i)]
    b = write_run(tmp_path / "b", noisy_trials("burtorch/eager/cpp/cpu", "tiny", 1e-7, seed=42) + many)
    line = next(x for x in format_comparison(compare_runs(a, b), "md").splitlines() if "Only in B" in x)
    assert line.startswith("- Only in B: 9 points (engines: fw0/eager/python/cpu, ") and "and 3 more" in line
    assert line.count("tiny") == 1


def test_no_point_in_common_is_one_line_and_exit_2(tmp_path, capsys):
    from harness.commands.cli import main

    a = write_run(tmp_path / "a", noisy_trials("burtorch/eager/cpp/cpu", "tiny", 1e-7, seed=61))
    b = write_run(tmp_path / "b", noisy_trials("burtorch/eager/cpp/cpu", "small", 1e-7, seed=62))
    assert main(["compare", str(a), str(b)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no (engine, workload, point) in common" in err[0]


def test_the_gate_never_judges_the_floor_row(tmp_path):
    floor = "none/empty/python/cpu"
    a = write_run(tmp_path / "a", noisy_trials(floor, "small", 1e-8, seed=71))
    b = write_run(tmp_path / "b", noisy_trials(floor, "small", 5e-8, seed=72))
    result = compare_runs(a, b)
    assert result["rows"][0]["answer"] == "slower" and exit_status(result, 10) == 0


def test_one_name_for_the_report_folder_and_options_that_need_another(tmp_path, capsys):
    from harness.commands.cli import main

    run = write_run(tmp_path / "a", noisy_trials("burtorch/eager/cpp/cpu", "tiny", 1e-7, seed=81))
    assert main(["report", str(run), "--out", str(tmp_path / "r")]) == 2
    assert "--out: did you mean --report-dir?" in capsys.readouterr().err
    assert main(["doctor", "--cpus", "0"]) == 2
    assert "--cpus: only with --interference" in capsys.readouterr().err
