"""The README and --help say what the tool does: the README's table of run options is the parser's,
every command's --help teaches (a description and examples), and --dry-run exits as the run would."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.commands.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def readme_run_options() -> set[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = re.search(r"\n\| option \| meaning \|\n\|---\|---\|\n((?:\|.*\n)+)", readme)
    assert table, "README.md lost its table of run options"
    return {option for row in table.group(1).splitlines() for option in re.findall(r"`(--[a-z-]+)", row.split(" | ")[0])}


def parser_options(command: str) -> set[str]:
    sub = build_parser().commands[command]
    return {o for action in sub._actions for o in action.option_strings if o.startswith("--") and o != "--help"}


def test_the_readme_table_of_run_options_is_the_parsers():
    documented, parsed = readme_run_options(), parser_options("run")
    assert parsed - documented == set(), "options of `burtbench run` missing from README.md's table"
    assert documented - parsed == set(), "README.md's table names options `burtbench run` does not have"
    assert {"--env", "--env-dir", "--pip-arg", "--upstream", "--out", "--report-dir"} <= documented


def test_the_readme_states_no_eta_of_its_own():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert not re.search(r"≈ ?[\d.]+ ?h\b", readme), "an ETA belongs to `run --dry-run`, with its machine"


@pytest.mark.parametrize("command", sorted(build_parser().commands))
def test_every_command_help_has_a_description_and_examples(command, capsys):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "\nexamples:\n" in out and f"burtbench {command}" in out.split("examples:")[1]
    description = out.split("\n\n")[1]
    assert len(description.split()) >= 8, description


def test_burtbench_alone_prints_the_help(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "usage: burtbench" in out and "examples:" in out


def test_version_names_the_commit(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert re.match(r"burtbench \S+ \(git commit ([0-9a-f]{40}|unknown)", capsys.readouterr().out)


def test_dry_run_exits_as_the_run_would(tmp_path, monkeypatch, capsys):
    """Every selected engine unavailable (the authors' programs, no upstream): both exit 2, same reason."""
    monkeypatch.setenv("BURTBENCH_UPSTREAM", str(tmp_path / "no-upstream"))
    argv = ["run", "--engine", "burtorch-authors", "--workload", "tiny", "--profile", "smoke",
            "--out", str(tmp_path / "results"), "--no-report"]
    assert main([*argv, "--dry-run"]) == 2
    dry = capsys.readouterr().err.splitlines()[-1]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines()[-1] == dry and "nothing to run" in dry
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_a_workload_an_engine_cannot_run_is_named(tmp_path, capsys):
    assert main(["run", "--engine", "micrograd", "--workload", "tiny,mlp", "--profile", "smoke", "--dry-run",
                 "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "micrograd/eager/python/cpu does not run mlp" in err
