"""Issue 48's principle 5: one request, checked once, before any work. `burtbench run`'s arguments
become one RunAsk (harness/commands/request.py, ask_of), checked whole by one function (check) into
the RunRequest that session.py runs, cluster/submit.py submits and calibrate.py makes its own of;
nothing below the command layer reads the parsed arguments. Each case refused here was once refused
late or not at all.
"""
from __future__ import annotations

import ast
import dataclasses
import subprocess
from pathlib import Path

import pytest
from tests_support import fault_engines_env

from harness.commands.cli import build_parser, main
from harness.commands.request import ask_of, check
from harness.running.ask import RunAsk, RunRequest, SlurmAsk

ROOT = Path(__file__).resolve().parent.parent


def one_line_refusal(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("burtbench: error: "), (out, err)
    return err


# ---------------------------------------------------------------- the request's one place

def reads_parsed_arguments(path: Path) -> list[str]:
    """Where a module reads argparse's results: an argparse import, or a function reading attributes
    of a parameter named `args` that may be a Namespace (`args.engine`, `getattr(args, ...)`; the lean
    worker's `args: dict` is its own command line's)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names) or \
                isinstance(node, ast.ImportFrom) and node.module == "argparse":
            found.append(f"{path}:{node.lineno}: imports argparse")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = {a.arg: a.annotation for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
            if "args" not in params or params["args"] is not None and "Namespace" not in ast.unparse(params["args"]):
                continue
            for inner in ast.walk(node):
                attribute = isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) \
                    and inner.value.id == "args"
                fetched = isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) \
                    and inner.func.id in ("getattr", "vars") and inner.args and isinstance(inner.args[0], ast.Name) \
                    and inner.args[0].id == "args"
                if attribute or fetched:
                    found.append(f"{path}:{node.lineno}: {node.name}(args) reads args")
                    break
    return found


def test_nothing_below_the_command_layer_reads_the_parsed_arguments():
    below = [p for p in (ROOT / "harness").rglob("*.py") if p.relative_to(ROOT).parts[1] != "commands"]
    assert [line for path in below for line in reads_parsed_arguments(path)] == []


def test_the_static_check_sees_a_reader(tmp_path):
    path = tmp_path / "planning.py"
    path.write_text("def new_plan(args):\n    return getattr(args, 'engine')\n\n\n"
                    "def shard_of(plan, args):\n    return args.shard\n")
    assert reads_parsed_arguments(path) == [f"{path}:1: new_plan(args) reads args",
                                            f"{path}:5: shard_of(args) reads args"]


def run_parser():
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return sub.choices["run"]


def test_every_option_of_run_reaches_the_request_under_its_own_name():
    fields = {f.name for f in dataclasses.fields(RunAsk)} | {f"slurm.{f.name}" for f in dataclasses.fields(SlurmAsk)}
    own = {"slurm": "slurm.tasks", "wait": "slurm.wait", "partition": "slurm.partition", "account": "slurm.account",
           "constraint": "slurm.constraint", "sbatch_arg": "slurm.sbatch_arg", "no_report": "report_dir"}
    dests = {a.dest for a in run_parser()._actions if a.dest != "help"}
    assert {own.get(d, d) for d in dests} <= fields
    # ... and the options' defaults are the request's: a run given nothing asks what RunAsk() asks.
    args = build_parser().parse_args(["run", "--no-report"])
    args.argv = ["run", "--no-report"]
    assert ask_of(args) == RunAsk()


def test_a_run_walks_from_its_arguments_to_one_checked_request(fake_engines, tmp_path, capsys):
    argv = ["run", "--engine", "fake/ok", "--workload", "tiny", "--profile", "smoke", "--trials", "3", "--seed", "5",
            "--param", "a=-41", "--out", str(tmp_path / "out"), "--report-dir", str(tmp_path / "reports")]
    args = build_parser().parse_args(argv)
    args.argv = argv
    ask = ask_of(args)
    assert (ask.engine, ask.trials, ask.param, ask.report_dir) == ("fake/ok", 3, ("a=-41",), str(tmp_path / "reports"))
    req = check(ask)
    assert isinstance(req, RunRequest) and req.slurm is None and req.run_dir is None
    assert req.plan.engines == ("fake/ok/python/cpu",) and req.plan.trials == 3 and req.plan.round_seed == 5
    assert req.plan.narrow == {"a": (-41.0,)} and req.report_dir == tmp_path / "reports"
    assert not (tmp_path / "out").exists() and not (tmp_path / "reports").exists()  # checked, nothing made


# ---------------------------------------------------------------- refused now, before any work

def test_claims_refuses_a_report_folder_that_is_a_file_before_any_verdict(tmp_path, capsys):
    with fault_engines_env():
        assert main(["run", "--engine", "fake/ok", "--workload", "tiny", "--profile", "smoke", "--trials", "2",
                     "--no-report", "--out", str(tmp_path / "out")]) == 0
    (run_dir,) = (tmp_path / "out").iterdir()
    (tmp_path / "file").write_text("not a folder")
    capsys.readouterr()
    err = one_line_refusal(capsys, ["claims", str(run_dir), "--report-dir", str(tmp_path / "file")])
    assert "--report-dir" in err and "is not a folder" in err


@pytest.mark.parametrize("core", ["0", "1"])
def test_slurm_refuses_any_cpu_core_zero_included(tmp_path, capsys, core):
    err = one_line_refusal(capsys, ["run", "--slurm", "--cpu", core, "--engine", "fake/ok", "--out", str(tmp_path)])
    assert "--slurm and --cpu" in err
    assert not any(tmp_path.iterdir())


def git(*argv: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *argv], capture_output=True, text=True, check=True).stdout.strip()


def spellings() -> list[tuple[str, str]]:
    head = git("rev-parse", "HEAD")
    pairs = [("HEAD", head), (head[:12], head)]
    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    if branch != "HEAD":  # a checkout on a branch (`main`): its name and its full commit
        pairs.append((branch, head))
    return pairs


@pytest.mark.parametrize("one,other", spellings())
def test_two_spellings_of_one_revision_are_one_version(tmp_path, capsys, one, other):
    argv = ["run", "--engine", "burtorch/eager/cpp", "--workload", "tiny", "--dry-run", "--env", f"burtorch@{one}",
            "--env", f"burtorch@{other}", "--env-dir", str(tmp_path / "envs"), "--out", str(tmp_path / "out")]
    err = one_line_refusal(capsys, argv)
    assert f"burtorch@{one} and burtorch@{other}, one commit ({other[:12]}), is given twice" in err and "--aa" in err
    assert not (tmp_path / "envs").exists() and not (tmp_path / "out").exists()
    # With --aa they are one environment beside its A/A copy, named as first spelled.
    args = build_parser().parse_args([*argv, "--aa"])
    args.argv = argv
    plan = check(ask_of(args)).plan
    assert plan.envs == (f"burtorch@{one}",)
    assert plan.engines == (f"burtorch/eager/cpp/cpu@burtorch@{one}", f"burtorch/eager/cpp/cpu@burtorch@{one}#copy")


def test_a_slurm_run_asking_more_tasks_than_points_is_refused_before_any_folder(fake_engines, tmp_path, capsys,
                                                                                  monkeypatch):
    monkeypatch.setattr("harness.cluster.slurm.require_sbatch", lambda: None)
    err = one_line_refusal(capsys, ["run", "--slurm", "50", "--engine", "fake/ok", "--workload", "tiny", "--profile",
                                    "smoke", "--out", str(tmp_path)])
    assert "--slurm 50: the plan has" in err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("given", [["--adaptive"], ["--noise-threshold", "7"], ["--claims-budget", "0"],
                                   ["--no-upstream"]])
def test_resume_refuses_every_option_its_plan_already_holds(tmp_path, capsys, given):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "manifest.json").write_text("{}")
    err = one_line_refusal(capsys, ["run", "--resume", str(tmp_path / "run"), *given])
    assert f"drop {given[0]}" in err
