"""A newcomer's first hour (#58): the README's versions example plans the trials an interval needs and
says which option decides; every versions answer states B/A, its interval and its floor; compare leads
with what it decided; a claim's terminal line gives the paper's own number, the number it is held to, the
boundary its tolerance sets and which way a ✗ missed; a prefix's unavailable engine fails nothing."""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.analysis import change, effect
from harness.analysis.compare_view import rest_line
from harness.report import claim_files
from harness.judging.verdicts import BETTER, NOT_REPRODUCED, WORSE, Verdict, direction
from harness.planning.preview import INTERVAL
from harness.report import epilogue, versions
from harness.running.session import make_plan
from harness.store.run_plan import RunPlan
from workloads.claims import load_claims

FAKE = "fake/ok/python/cpu"


def test_a_versions_run_plans_the_trials_an_interval_needs_at_every_point(fake_engines):
    """Measured: the README's autograd example planned 2 trials a side at tiny and answered nothing."""
    engines = (FAKE, f"{FAKE}@#copy")
    plan = make_plan(RunPlan(profile="quick", engines=engines, workloads=("tiny", "small")))
    per_point = Counter(pt.point_key() for pt in plan)
    assert set(per_point.values()) == {effect.MIN_TRIALS}
    assert {pt.why for pt in plan if pt.trial >= 2} == {INTERVAL} and not any(pt.why for pt in plan if pt.trial < 2)
    assert [pt.trial for pt in plan] == sorted(pt.trial for pt in plan)  # round by round, as ever
    # --trials N is the user's count, and a run without versions keeps the profile's.
    assert len(make_plan(RunPlan(profile="quick", engines=engines, workloads=("tiny",), trials=2))) == 4
    assert Counter(pt.point_key() for pt in make_plan(RunPlan(profile="quick", engines=(FAKE,),
                                                              workloads=("tiny",)))).most_common(1)[0][1] == 2


def test_a_floor_wider_than_the_change_says_the_trials_that_narrow_it():
    """Measured: an A/A floor of ×/÷1.42 at tiny left "undecided" with no option named."""
    floor = change.Floor(1.42, "autograd==1.9.1", spread=0.06, n=3)
    rounds = floor.rounds_for(0.05)
    assert rounds is not None and rounds > 3
    narrowed = change.Floor(1.0, "x", spread=0.06, n=rounds)
    assert narrowed.rounds_for(0.05) == rounds  # at that many rounds its interval would sit inside ×/÷1.05
    e = effect.Effect(1.04, 0.9, 1.2, 3, 3, True, 0.05)
    answer = change.change_answer(e, floor, 0.05)
    assert answer.kind == "undecided" and answer.trials == rounds
    assert answer.text == (f"undecided: B/A 1.040 [0.900, 1.200]; the floor ×/÷1.42 (A/A of autograd==1.9.1) is "
                           f"wider than the 5.0% change asked about: --trials {rounds} would narrow it")
    # Every kind of answer states B/A, its interval and the floor it was held to.
    same = change.change_answer(effect.Effect(1.002, 0.99, 1.01, 8, 8, True, 0.01), change.Floor(1.03, "x"), 0.05)
    assert same.text == "same within the floor ×/÷1.03 (A/A of x): B/A 1.002 [0.990, 1.010]"
    far = change.Floor(3.0, "x", spread=2.0, n=3)
    assert far.rounds_for(0.05) is None
    assert "more than 100 more rounds" in change.change_answer(e, far, 0.05).text


def row(answer: str, decide_with: int | None, instr: float | None) -> dict:
    return {"answer": answer, "decide_with": decide_with, "instr_ratio": instr}


def test_the_closing_lines_say_which_option_decides():
    assert versions.deciding_line([row("faster", None, None)]) == ""
    both = versions.deciding_line([row("undecided", 14, None), row("undecided", 6, None)])
    assert both == ("2 answers undecided: rerun with --trials 14 (rounds narrow the interval and the floor) or "
                    "--instructions (counts repeat where time is noisy) to decide")
    counted = versions.deciding_line([row("undecided", 9, 1.0)])
    assert "--trials 9" in counted and "--instructions" not in counted
    assert "neither" in versions.deciding_line([row("undecided", None, 1.0)])


def test_compare_leads_with_its_decided_answers_and_counts_the_rest():
    rows = [{"answer": "slower", "decide_with": None}, *[{"answer": "undecided", "decide_with": 3}] * 5,
            {"answer": "undecided", "decide_with": 12}, {"answer": "not measured", "decide_with": None}]
    line = rest_line({"rows": rows, "paired": False})
    assert line.startswith("1 of 8 rows decided, shown above; the rest: 6 undecided, 1 not measured")
    assert "rerun both runs with --trials 3: 5 of them need that many or fewer" in line
    assert rest_line({"rows": rows[:1], "paired": False}) == ""


def claim(name: str):
    return next(c for c in load_claims() if c.id == name)


def judged(name: str, paper: float | None = None, verdict: str = "reproduced", ours: float = 2.0):
    c = claim(name)
    v = Verdict(c, verdict, ours=ours, paper=c.stated if paper is None else paper, low=ours * 0.9, high=ours * 1.1,
                trials=(3, 3))
    return SimpleNamespace(claim=c, ours=v, authors=replace(v, subject="authors"), verdicts=lambda: [v, v])


def test_a_claim_line_gives_the_papers_own_number_the_one_it_is_held_to_and_the_tolerance():
    """Measured: the terminal said ×409 where the paper says ×80, and no tolerance anywhere."""
    assert epilogue.paper_number(judged("abstract-gpt-memory", paper=408.6)) == \
        "paper up to ×80, held to ×409 (✓ where the interval reaches ×368: 10% short of it)"
    assert epilogue.paper_number(judged("gpt-b64-pytorch-faster")) == \
        "paper PyTorch ×1.4 faster (✓ where the interval reaches ×0.78: 10% short of it)"
    assert epilogue.paper_number(judged("mlp-b1-always-faster")) == "paper faster at every d"


def test_a_cross_says_which_way_it_missed():
    """Measured: ✗ read the same for BurTorch ×4 ahead of the paper and for memory growing where it says flat."""
    ahead = judged("gpt-b64-pytorch-faster", verdict=NOT_REPRODUCED, ours=3.74)
    behind = judged("table1-6e5-compute", verdict=NOT_REPRODUCED, ours=0.15)
    grows = judged("gpt-memory-flat", verdict=NOT_REPRODUCED, ours=2.83)
    assert (direction(ahead.ours), direction(behind.ours), direction(grows.ours)) == (BETTER, WORSE, WORSE)
    assert direction(judged("table1-6e5-compute").ours) == ""  # only a ✗ has a way
    head, _ = epilogue.subject_text(ahead.ours)
    assert head == f"✗ {BETTER}"
    lines = epilogue.claim_lines([behind], SimpleNamespace(plan=SimpleNamespace(profile="quick"), trials=[]),
                                 Path("report"), 100)
    text = " ".join(" ".join(lines).split())
    assert f"[red]✗ {WORSE}[/] ×0.15" in text
    assert "95%: an interval made this way holds the factor another run of the plan on this machine would give" in text
    assert claim_files.cell(ahead.ours).startswith(f"✗ **not reproduced** ({BETTER}): ×3.74"), "claims.md says it too"


@pytest.mark.parametrize("argv, unavailable, asked", [
    (["burtbench", "run", "--engine", "torch/eager"], {"torch/eager/python/gpu"}, False),  # the prefix ran its CPU row
    (["burtbench", "run", "--engine=torch/eager/python/gpu"], {"torch/eager/python/gpu"}, True),  # named by its id
    (["burtbench", "run", "--engine", "torch/eager"], {"torch/eager/python/gpu", "torch/eager/python/cpu"}, True),
    (None, {"torch/eager/python/gpu"}, True),  # a run that recorded no command line: as before
])
def test_an_unavailable_engine_matched_only_by_a_prefix_fails_nothing(argv, unavailable, asked):
    """Measured: `--engine torch/eager` without a GPU exited 3 for the GPU row nobody named."""
    run = SimpleNamespace(manifest={"argv": argv},
                          plan=SimpleNamespace(engines=("torch/eager/python/cpu", "torch/eager/python/gpu")))
    assert epilogue._asked("torch/eager/python/gpu", run, {e: "no GPU" for e in unavailable}) is asked


def test_output_that_is_no_terminal_counts_each_trial_with_its_eta(fake_engines, tmp_path, capsys):
    """Measured: `make bench-linux | tee log` gave 367 trial lines and no count, no ETA."""
    from harness.commands.cli import main

    assert main(["run", "--engine", FAKE, "--workload", "tiny", "--profile", "smoke", "--trials", "3", "--no-report",
                 "--out", str(tmp_path / "runs")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"ok {FAKE}")]
    assert [line.split("; ")[-1].split(",")[0] for line in lines] == ["trial 1 of 3", "trial 2 of 3", "trial 3 of 3"]
    assert all(", ETA " in line for line in lines)


def test_resuming_a_complete_run_says_so_and_renders_nothing(fake_engines, tmp_path, capsys):
    """Measured: --resume of a complete run re-rendered its whole report."""
    from harness.commands.cli import main

    assert main(["run", "--engine", FAKE, "--workload", "tiny", "--profile", "smoke", "--trials", "1",
                 "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path / "reports")]) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    capsys.readouterr()
    assert main(["run", "--resume", str(run_dir), "--report-dir", str(tmp_path / "again")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"nothing to resume: {run_dir} is complete" in out
    assert not (tmp_path / "again").exists()


@pytest.mark.parametrize("status, code", [("complete", 3), ("interrupted", 130), ("incomplete: 2 of 4 planned trials "
                                                                                 "not run (x: not run)", 1)])
def test_the_exit_block_states_the_process_own_exit_status(status, code):
    """Measured: after Ctrl-C the block said "exit status 3" while the process exited 130."""
    run = SimpleNamespace(manifest={"status": status, "unavailable": {FAKE: "gone"}, "argv": None},
                          plan=SimpleNamespace(engines=(FAKE,), explicit_engines=True))
    assert f"exit status {code})" in " ".join(epilogue.not_run_lines(run))


def test_a_copy_of_a_clone_runs_its_own_code_or_says_why(tmp_path):
    """Measured: a copied clone's .venv ran (and rebuilt) the original clone's code."""
    from harness.commands.options import check_own_code
    from harness.errors import UsageError

    for clone in ("first", "copy"):
        (tmp_path / clone / ".venv").mkdir(parents=True)
        (tmp_path / clone / "harness").mkdir()
        (tmp_path / clone / "pyproject.toml").write_text("")
    check_own_code(str(tmp_path / "first" / ".venv"), str(tmp_path / "first" / "harness" / "__init__.py"))
    with pytest.raises(UsageError, match=r"runs the code of .*first, not of this checkout \(.*copy\).*make setup"):
        check_own_code(str(tmp_path / "copy" / ".venv"), str(tmp_path / "first" / "harness" / "__init__.py"))
    check_own_code(str(tmp_path / "elsewhere"), str(tmp_path / "first" / "harness" / "__init__.py"))  # no checkout's


def test_compare_asks_about_the_change_given_and_its_help_states_the_default(capsys):
    from harness.commands.cli import main

    assert change.asked(None) == change.ASKED_CHANGE and change.asked(2) == 0.02
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert f"(default {change.ASKED_CHANGE * 100:g}, as a run's)" in " ".join(capsys.readouterr().out.split())


def test_the_eta_counts_libtorch_s_first_use_build(monkeypatch, tmp_path):
    """Measured: a dry run predicted 4 min for a run that took 7 min 46 s: LibTorch's first build was left out."""
    from engines import libtorch
    from harness.planning import estimate

    monkeypatch.setattr(libtorch, "build_blocker", lambda: None)
    monkeypatch.setattr(libtorch, "EXECUTABLE", tmp_path / "libtorch-bench")
    plan = make_plan(RunPlan(profile="smoke", engines=("libtorch/eager/cpp/cpu",), workloads=("tiny",), trials=1))
    assert [b.kind for b in estimate.engine_builds(plan)] == [estimate.LIBTORCH_BUILD]
    monkeypatch.setattr(libtorch, "read_state", lambda: {"configured": {
        "torch": libtorch.torch_version(), "prefix": str(libtorch.torch_cmake_prefix())}})
    (tmp_path / "libtorch-bench").write_text("")
    assert estimate.engine_builds(plan) == [], "a driver built for this torch costs nothing"
