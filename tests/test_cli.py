"""Bad input: one line on stderr, exit code 2, no traceback, nothing run."""
import subprocess
import sys
from pathlib import Path

import pytest

from harness.commands.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _a_file(tmp_path):
    f = tmp_path / "plain-file"
    f.write_text("x")
    return f


BAD_INPUTS = [
    (["runn"], "no command 'runn'; did you mean 'run'?"),
    (["compar", "a", "b"], "did you mean 'compare'?"),
    (["run", "--engine", "pytorch"], "unknown engine 'pytorch'"),
    (["run", "--engine", "torch/eagr"], "did you mean 'torch/eager'"),
    (["run", "--engine", "burtorch,"], "empty name"),
    (["run", "--workload", "tiyn"], "did you mean 'tiny'"),
    (["run", "--workload", "resnet"], "unknown workload 'resnet'"),
    (["run", "--profile", "fast"], "unknown profile 'fast'"),
    (["run", "--profile", "papr"], "did you mean 'paper'"),
    (["run", "--cpu", "999"], "--cpu 999"),
    (["run", "--cpu", "-1"], "--cpu -1"),
    (["run", "--cpu", "one"], "invalid int value"),
    (["run", "--trials", "0"], "whole number"),
    (["run", "--trials", "2.5"], "whole number"),
    (["run", "--timeout", "-3"], "a number > 0"),
    (["run", "--timeout", "soon"], "a number > 0"),
    (["run", "--mem-limit", "lots"], "size like"),
    (["run", "--workload", "tiny", "--param", "hidden_dim=4"], "no selected workload"),
    (["run", "--workload", "tiny", "--param", "a=7"], "not in the workload's grid"),
    (["run", "--param", "a"], "NAME=V1,V2"),
    (["run", "--python", "/nonexistent/python"], "not an executable"),
    (["run", "--resume", "/nonexistent/run"], "not a burtbench run folder"),
    (["run", "--out", "{file}/sub"], "cannot create the results folder"),
    (["run", "--workload", "mlp", "--data-dir", "/nonexistent/data"], "lacks names.txt"),
    (["run", "--workload", "mlp", "--param", "hidden_dim=5"], "not in the workload's grid"),
    (["run", "--workload", "gpt", "--param", "hidden_dim=4"], "no selected workload"),
    (["report"], "required: RUN_DIR"),
    (["report", "/nonexistent/run"], "not a burtbench run folder"),
    (["compare", "/nonexistent/a", "/nonexistent/b"], "not a burtbench run folder"),
    (["compare", "a", "b", "--format", "xml"], "invalid choice"),
    (["compare", "a", "b", "--fail-if-slower", "x"], "a number > 0"),
    (["frobnicate"], "no command 'frobnicate' (commands: list, run,"),
    (["--debug"], "required"),
    (["run", "--engnie", "burtorch"], "did you mean '--engine'? (see 'burtbench run --help')"),
    (["envs", "--prune", "0"], "expected a number of days > 0, or 'all'"),
    (["envs", "--prune", "abc"], "expected a number of days > 0, or 'all'"),
]


@pytest.mark.parametrize("argv,message", BAD_INPUTS, ids=[" ".join(a) or "(none)" for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(argv, message, tmp_path, capsys):
    argv = [a.replace("{file}", str(_a_file(tmp_path))) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("burtbench: error:")
    assert message in err


def test_resume_refuses_a_new_plan_and_names_the_option_given(tmp_path, capsys):
    (tmp_path / "manifest.json").write_text("{}")
    assert main(["run", "--resume", str(tmp_path), "--engine", "torch"]) == 2
    err = capsys.readouterr().err
    assert "own plan; drop --engine\n" in err and "--workload" not in err


def test_bad_input_from_the_shell_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "harness.commands.cli", "run", "--engine", "nope"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_list_shows_every_engine_and_why_one_is_unavailable(fake_engines, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for engine in ("burtorch/eager/cpp/cpu", "torch/eager/python/cpu", "micrograd/eager/python/cpu",
                   "fake/absent/python/cpu"):
        assert engine in out
    assert "no_such_framework_xyz" in out


def test_help_teaches_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for word in ("list", "run", "doctor", "examples"):
        assert word in out
