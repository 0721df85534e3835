"""Each claim judged for two subjects (the authors' BurTorch and ours), the claims' points in the plan,
and where the authors' source comes from for a run (harness/judging/claims.py, workloads/claims.csv,
harness/planning/claim_points.py, harness/running/upstream.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from test_claims import EXACT, GPT_TIME, LINUX, MB, PT, exact_run, outputs_trial, repeated
from test_report import make_trial, write_run

from engines.base import AUTHORS, BASELINE
from harness.analysis.effect import MIN_TRIALS
from harness.planning.claim_points import SKIPPED_POINT
from harness.judging import claims
from harness.analysis.tables import build_tables
from harness.store.runs import load_run
from workloads.claims import NOT_COMPARABLE, load_claims

B64 = ("b64,PyTorch ×1.4 faster at b=64,Sec. 2.5,step_time,gpt,batch=64,torch/eager/python/cpu,max,0.7,"
       "PyTorch ×1.4 faster,windows,0.1,,,differs,another model of the same size,")
FLAT = "flat,memory flat in b,Sec. 2.5,paper_memory,gpt,batch=1;64,,flat,1,flat,windows,0.05,,,same,,"
HEADER = ("id,claim,where,metric,tables,points,engines,rule,stated,stated_text,stated_os,tolerance,requires,"
          "source_cell,authors,authors_why,note\n")


def judged(tmp_path: Path, trials: list, line: str, **manifest) -> claims.Judged:
    run = load_run(write_run(tmp_path / "run", LINUX, repeated(trials), **manifest))
    (parsed,) = claims.parse_claims(HEADER + line + "\n")
    (result,) = claims.judge(run, build_tables(run), (parsed,))
    return result


def gpt(engine: str, batch: int, seconds: float, mib: float = 20.0):
    return make_trial(engine, "gpt", {"batch": batch}, 0, seconds, peak_virtual_bytes=mib * MB)


def test_the_authors_reproduce_while_ours_does_not(tmp_path):
    # The numbers: their GPT 42 ms a step at b = 64, PyTorch eager 23.6 ms, ours ×4 faster than PyTorch.
    trials = [gpt(AUTHORS, 64, 42e-3), gpt(PT, 64, 23.6e-3), gpt(BASELINE, 64, 5.9e-3)]
    j = judged(tmp_path, trials, B64)
    assert j.authors.verdict == "reproduced" and j.authors.ours == pytest.approx(23.6 / 42)
    assert j.authors.at == f"gpt batch=64: {PT}" and j.authors.used == [f"gpt batch=64: {PT} ×0.56"]
    assert j.ours.verdict == "not reproduced" and j.ours.ours == pytest.approx(4.0)


def test_ours_reproduces_while_the_authors_do_not(tmp_path):
    trials = [gpt(AUTHORS, 64, 10e-3), gpt(PT, 64, 20e-3), gpt(BASELINE, 64, 40e-3)]
    j = judged(tmp_path, trials, B64)
    assert (j.authors.verdict, j.ours.verdict) == ("not reproduced", "reproduced")


def test_memory_flat_for_each_subject_its_own_rows(tmp_path):
    # Their program: 18.9 MiB at every batch; ours grows.
    trials = [gpt(AUTHORS, 1, 1e-3, 18.9), gpt(AUTHORS, 64, 60e-3, 18.9),
              gpt(BASELINE, 1, 1e-3, 3.8), gpt(BASELINE, 64, 9e-3, 6.5)]
    j = judged(tmp_path, trials, FLAT)
    assert j.authors.verdict == "reproduced" and j.authors.ours == pytest.approx(1.0)
    assert j.ours.verdict == "not reproduced" and j.ours.ours == pytest.approx(6.5 / 3.8)
    assert j.authors.used[0].startswith(f"gpt batch=1: {AUTHORS} 18.9")


def test_the_authors_row_missing(tmp_path):
    trials = [gpt(PT, 1, 16e-3), gpt(BASELINE, 1, 0.5e-3)]
    j = judged(tmp_path, trials, GPT_TIME + "same,,")
    assert j.authors.verdict == "not measurable here"
    assert j.authors.why == f"missing: the authors' code ({AUTHORS}) is not in this run"
    assert j.ours.verdict == "reproduced"
    why = "no --upstream, no $BURTBENCH_UPSTREAM, no earlier fetch, and fetching it failed: no network"
    gone = judged(tmp_path / "b", trials, GPT_TIME + "same,,", unavailable={AUTHORS: why})
    assert gone.authors.verdict == "not measurable here"
    assert gone.authors.why == f"the authors' code is not available ({why})"


def test_a_claim_not_comparable_for_the_authors_program(tmp_path):
    trials = exact_run() + [outputs_trial(AUTHORS, "tiny", {"a": -41.0, "b": 2.0}, {"g": 612.5})]
    line = EXACT + "not comparable,their programs print 6 digits,"
    j = judged(tmp_path, trials, line)
    assert j.authors.verdict == "not comparable" and j.authors.ours is None
    assert j.authors.why == "their program cannot answer it: their programs print 6 digits"
    # Ours is judged against the other frameworks: the authors' BurTorch is no other framework.
    assert j.ours.verdict == "reproduced"


def test_comparability_is_data_and_decided_for_every_claim():
    loaded = load_claims()
    assert all(c.authors in ("same", "differs", "not comparable") and c.authors_why for c in loaded)
    by_id = {c.id: c for c in loaded}
    assert by_id["exact-results"].authors == NOT_COMPARABLE
    assert "6 significant digits" in by_id["exact-results"].authors_why
    # Time and memory claims are answered by their program despite its differences.
    assert {by_id[i].authors for i in ("gpt-b64-pytorch-faster", "abstract-gpt-time", "table1-6e3-memory")} == {"differs"}
    assert by_id["gpt-memory-flat"].authors == "same" and by_id["gpt-memory-flat"].engines == ()


def test_memory_claims_without_their_tables_say_missing(tmp_path):
    trials = [make_trial(BASELINE, "tiny", {"a": -41.0, "b": 2.0}, 0, 1e-7)]
    run = load_run(write_run(tmp_path / "run", LINUX, trials))
    by_id = {j.claim.id: j for j in claims.judge(run, build_tables(run))}
    for cid in ("abstract-gpt-memory", "table1-6e3-memory", "table1-1e6-memory"):
        assert by_id[cid].ours.why.startswith("missing: "), by_id[cid].ours.why
        assert "no Linux table" not in by_id[cid].ours.why


# ----------------------------------------------------------------------------- the claims' points in the plan

def plan_for(*extra: str):
    from harness.commands.cli import build_parser
    from harness.commands.request import ask_of, new_plan
    from harness.running import session

    args = build_parser().parse_args(["run", "--engine", "burtorch,torch/eager", "--workload", "mlp", *extra])
    return session.make_plan(new_plan(ask_of(args), None)[0])


def test_quick_plan_holds_every_claim_s_mlp_points():
    plan = plan_for()
    keys = [(pt.engine.id, tuple(sorted(pt.params.items())), pt.trial) for pt in plan]
    assert len(keys) == len(set(keys))
    have = {(pt.engine.id, pt.params["hidden_dim"], pt.params["batch"]) for pt in plan}
    for c in load_claims():
        if "mlp" not in c.tables:
            continue
        for e in c.points.get("hidden_dim", (4, 16, 32, 64, 128, 512, 1024)):
            for engine in (BASELINE, AUTHORS, PT):
                assert (engine, e, 1) in have, (c.id, engine, e)
    added = {(pt.engine.id, pt.params["hidden_dim"]) for pt in plan if pt.why == SKIPPED_POINT}
    assert {e for _, e in added} == {16, 32, 64, 512}


def test_every_point_a_claim_reads_gets_three_trials_with_their_init_runs():
    plan = plan_for()
    trials: dict = {}
    for pt in plan:
        trials.setdefault((pt.engine.id, pt.params["hidden_dim"], pt.params["batch"]), []).append(pt)
    for e in (4, 16, 32, 64, 128, 512, 1024):
        for engine in (BASELINE, AUTHORS, PT):
            assert len(trials[(engine, e, 1)]) >= MIN_TRIALS, (engine, e)
    # Table 1's init claims read e = 4, 64, 512, 1024 at b = 1: an init run in every trial there, once elsewhere.
    assert all(pt.with_init for e in (4, 64, 512, 1024) for pt in trials[(PT, e, 1)])
    assert [pt.with_init for pt in trials[(PT, 16, 1)]] == [True, False, False]
    # A point no claim reads keeps the profile's one trial.
    assert len(trials[(PT, 128, 64)]) == 1
    # Rounds stay whole: trial k of every engine before trial k + 1 of any.
    assert [pt.trial for pt in plan] == sorted(pt.trial for pt in plan)


def test_the_users_trials_are_kept():
    plan = plan_for("--trials", "2")
    assert max(pt.trial for pt in plan) == 1


def test_a_grid_that_has_them_adds_nothing_and_param_wins():
    smoke = plan_for("--profile", "smoke")
    assert not any(pt.why for pt in smoke)
    narrowed = plan_for("--param", "hidden_dim=4")
    assert {pt.params["hidden_dim"] for pt in narrowed} == {4} and not any(pt.why == SKIPPED_POINT for pt in narrowed)
    assert sum(pt.engine.id == PT and pt.params["batch"] == 1 for pt in narrowed) == MIN_TRIALS


def test_no_upstream_leaves_the_authors_out():
    assert not any(pt.engine.id == AUTHORS for pt in plan_for("--no-upstream"))
    from harness.commands.cli import build_parser
    from harness.commands.request import ask_of, check
    from harness.errors import UsageError

    with pytest.raises(UsageError, match="give one"):
        check(ask_of(build_parser().parse_args(["run", "--no-upstream", "--upstream", ".", "--dry-run"])))


# ----------------------------------------------------------------------------- where their source comes from

@pytest.fixture
def no_source(monkeypatch, tmp_path):
    """No flag, no variable, no earlier fetch."""
    import engines.burtorch_authors as authors

    monkeypatch.delenv("BURTBENCH_UPSTREAM", raising=False)
    monkeypatch.setattr(authors, "DEFAULT_CHECKOUT", tmp_path / "checkout")
    return tmp_path / "checkout"


def authors_plan(*extra: str):
    return [pt for pt in plan_for("--param", "hidden_dim=4", "--param", "batch=1", *extra)]


def provide(fetch, *extra: str):
    from harness.running import upstream

    console = Console(record=True, width=200)
    plan, gone = upstream.provide(authors_plan(*extra), console, fetch=fetch)
    return plan, gone, console.export_text()


def refuse():
    raise AssertionError("no fetch expected")


def test_flag_then_variable_then_earlier_fetch_then_fetch(no_source, monkeypatch, tmp_path):
    import os

    plan, gone, out = provide(refuse, "--upstream", str(tmp_path))  # the flag: the plan's, on their engine
    assert gone == {} and out == "" and any(pt.engine.id == AUTHORS for pt in plan)
    assert {pt.engine.source for pt in plan if pt.engine.id == AUTHORS} == {str(tmp_path.resolve())}
    assert "BURTBENCH_UPSTREAM" not in os.environ  # nothing travels through the environment
    monkeypatch.setenv("BURTBENCH_UPSTREAM", str(tmp_path))  # the variable alone
    assert provide(refuse)[1] == {}
    monkeypatch.delenv("BURTBENCH_UPSTREAM")
    (no_source / "burt").mkdir(parents=True)
    (no_source / "burt" / "CMakeLists.txt").write_text("project(burt)\n")  # an earlier fetch
    assert provide(refuse)[1] == {}
    (no_source / "burt" / "CMakeLists.txt").unlink()
    fetched = []
    plan, gone, out = provide(lambda: fetched.append(1) or "b1a9d66aae60e7220e19bf9dada45416a731aa8e")
    assert fetched == [1] and gone == {} and "fetched the authors' BurTorch at b1a9d66aae60 (verified)" in out


def test_a_fetch_without_network_leaves_them_out_in_one_line(no_source, capsys):
    from engines.authors.source import SourceError

    def offline():
        raise SourceError("cannot fetch https://github.com/burlachenkok/burtorch.git: Could not resolve host")

    plan, gone, out = provide(offline)
    assert not any(pt.engine.id == AUTHORS for pt in plan) and plan
    assert list(gone) == [AUTHORS] and "Could not resolve host" in gone[AUTHORS]
    said = [line for line in capsys.readouterr().err.splitlines() if "authors" in line]
    assert not out.strip() and len(said) == 1  # a skip reason: one line on stderr, nothing on the console
    assert said[0].startswith("burtbench: without the authors' programs")
