"""The README and docs/ say what the tool does: docs/running.md's table of run options is the parser's,
every link between the pages holds, the README stays a front page, every command's --help teaches (a
description and examples), and --dry-run exits as the run would. (Every command the pages show is run
by tests/test_doc_commands.py.)"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from harness.commands.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
OPTIONS_PAGE = ROOT / "docs" / "running.md"


def documented_run_options() -> set[str]:
    page = OPTIONS_PAGE.read_text(encoding="utf-8")
    table = re.search(r"\n\| option \| meaning \|\n\|---\|---\|\n((?:\|.*\n)+)", page)
    assert table, "docs/running.md lost its table of run options"
    return {option for row in table.group(1).splitlines() for option in re.findall(r"`(--[a-z-]+)", row.split(" | ")[0])}


def parser_options(command: str) -> set[str]:
    sub = build_parser().commands[command]
    return {o for action in sub._actions for o in action.option_strings if o.startswith("--") and o != "--help"}


def test_the_table_of_run_options_is_the_parsers():
    documented, parsed = documented_run_options(), parser_options("run")
    assert parsed - documented == set(), "options of `burtbench run` missing from docs/running.md's table"
    assert documented - parsed == set(), "docs/running.md's table names options `burtbench run` does not have"
    assert {"--env", "--env-dir", "--pip-arg", "--upstream", "--out", "--report-dir"} <= documented


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_states_an_eta_of_its_own(page):
    assert not re.search(r"≈ ?[\d.]+ ?h\b", page.read_text(encoding="utf-8")), \
        "an ETA belongs to `run --dry-run`, with its machine"


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (m := re.match(r"#{1,6} (.+)", line)):
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_between_the_pages_holds(page):
    for target in links(page):
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        assert where.exists(), f"{page.name}: {target}: no such file"
        if anchor:
            assert where.suffix == ".md" and anchor in anchors(where), f"{page.name}: {target}: no such heading"


def test_the_readme_is_a_front_page_that_reaches_every_page():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: a topic belongs in docs/"
    first = [line for line in lines if line.strip()][:4]
    assert first[1] == "```sh" and first[2].startswith("make bench-linux ") and first[3].startswith("make test "), first
    linked = {(README.parent / target.partition("#")[0]).resolve() for target in links(README)}
    assert set(PAGES[1:]) <= linked, "a page of docs/ the README does not name"
    assert "docs/platforms.md" in text, "what was and was not run for real, reachable from the front page"


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
