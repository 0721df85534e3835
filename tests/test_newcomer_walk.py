"""What a newcomer walking the README read wrong, each as the reader meets it (test_newcomer.py holds the first
walk's)."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from harness.analysis.compare_view import rest_line
from harness.judging.verdicts import BETTER, NOT_MEASURABLE, NOT_REPRODUCED, WORSE, Verdict
from harness.report import claim_files, epilogue, pooled
from workloads.claims import load_claims


def claim(name: str):
    return next(c for c in load_claims() if c.id == name)


def verdict(name: str, kind: str = NOT_REPRODUCED, ours: float | None = 3.6, low: float | None = 3.08,
            high: float | None = 4.21, trials=(6, 6), **more) -> Verdict:
    c = claim(name)
    return Verdict(c, kind, ours=ours, paper=more.pop("paper", c.stated), paper_basis=more.pop("basis", "as stated"),
                   low=low, high=high, trials=trials, method="Welch t on logs, 6 and 6 trials, a 95% interval", **more)


def judged(v: Verdict):
    return SimpleNamespace(claim=v.claim, ours=v, authors=replace(v, subject="authors"), verdicts=lambda: [v, v])


def test_compare_counts_a_failed_check_apart_from_the_decided_rows():
    """Measured: '4 of 186 rows decided, shown above', two of the four 'no answer: check FAILED in A and B'."""
    rows = [{"answer": "faster"}, {"answer": "slower"}, {"answer": "failed"}, {"answer": "failed"},
            *[{"answer": "undecided", "decide_with": None}] * 182]
    line = rest_line({"rows": rows, "paired": True})
    assert line.startswith("2 of 186 rows decided, 2 with a failed check, shown above; the rest: 182 undecided")


def test_pooled_crosses_say_which_way_and_the_head_line_gives_the_boundary():
    """Measured: '✗ ×3.6 [3.08, 4.21]' and '✗ ×0.76 [0.67, 0.87]' read alike, and no tolerance was shown."""
    ahead = verdict("gpt-b64-pytorch-faster")
    behind = verdict("table1-6e5-compute", ours=0.76, low=0.67, high=0.87)
    assert pooled.verdict_text(ahead).startswith(f"✗ {BETTER} ×3.6 [3.08, 4.21] 6/6")
    assert pooled.verdict_text(behind).startswith(f"✗ {WORSE} ×0.76 [0.67, 0.87] 6/6")
    machines = [SimpleNamespace(judged=[judged(behind)])] * 2
    assert pooled.claim_head(machines, 0) == (
        "table1-6e5-compute: d ≈ 600,000: an SGD step ×1.5 faster than PyTorch; paper ×1.5 (✓ where the interval "
        "reaches ×1.35: 10% short of it)")


def test_pooled_exact_results_is_held_to_no_number():
    """Measured: 'exact-results … ≈ max rel. diff 3.5e-08 …, held to ×0'."""
    close = verdict("exact-results", kind="partly", ours=3.5e-8, low=None, high=None, trials=None, paper=0.0,
                    basis="as stated: exactly the same")
    assert pooled.verdict_text(close) == "≈ max rel. diff 3.5e-08"


def test_a_flat_claim_says_its_trials_are_its_own_two_rows_and_no_time():
    """Measured: gpt-memory-flat's '5/3' read as the subject's and the other engine's trials, and its method line
    said what a trial's time is, on a memory claim."""
    grows = verdict("gpt-memory-flat", ours=2.829, low=2.827, high=2.831, trials=(5, 3))
    head, value = epilogue.subject_text(grows)
    assert value == " ×2.83 [2.83, 2.83] 5/3 at its smallest/largest row", "one precision for factor and interval"
    assert claim_files.cell(grows).endswith("×2.83 [2.83, 2.83] (5 / 3 trials at its smallest / largest row)")
    line = claim_files.trials_line(grows, "ours", "linux")
    assert line.startswith("From 5 trials at its smallest row and 3 at its largest (Welch")
    assert "a trial's time" not in line
    timed = claim_files.trials_line(verdict("table1-6e5-compute", trials=(1, 3)), "authors", "linux")
    assert timed.startswith("From 1 trial of authors and 3 of the other engine") and "a trial's time" in timed


def test_a_factor_with_no_interval_says_so_on_the_terminal_and_in_claims_md():
    """Measured: the terminal said 'authors – not measurable here' where claims.md had '×158,283 (1 trial, no
    interval)', and the method line said 'a 96% interval' where there is none."""
    lone = verdict("abstract-small-time", kind=NOT_MEASURABLE, ours=158283.0, low=None, high=None, trials=(1, 1))
    head, value = epilogue.subject_text(lone)
    assert (head, value) == ("– not measurable here", " ×158,283 (1 trial, no interval) on the rows this run has")
    head, value = epilogue.subject_text(replace(lone, verdict="undecided"))
    assert value == " ×158,283 (1 trial, no interval)", "its trials said once"
    assert claim_files.cell(lone) == "– **not measurable here**: ×158,283 (1 trial, no interval) on the rows this " \
                                     "run has"
    assert "95%" not in claim_files.trials_line(lone, "authors", "linux")
    assert "(no interval; a trial's time" in claim_files.trials_line(lone, "authors", "linux")


def test_at_80_columns_the_summary_keeps_instructions_asked_for_and_whole_words():
    """Measured: at 80 columns the run's table dropped 'instr./iter (proxy)' that --instructions asked for while
    keeping CV and peak RSS, and calibrate's cut the check 'not comparable' to 'not'."""
    from rich.console import Console

    from harness.analysis.summary import COLUMNS, Fitted

    rows = [["small", "authors", "3/3", "1.23 µs", "1.2%", "12.34k", "1.00", "0.00123", "not comparable", "12.3 MiB"],
            ["tiny", "torch", "3/3", "45.6 ms", "10.2%", "1.234M", "123", "0.5", "ok", "300.1 MiB"]]
    console = Console(width=80, record=True)
    console.print(Fitted(rows, list(range(len(COLUMNS)))))
    text = console.export_text()
    assert "instr./iter (proxy)" in text.split("left out")[0] and "12.34k" in text
    assert "left out at 80 columns: CV," in " ".join(text.split())
    narrow = Console(width=50, record=True)
    narrow.print(Fitted(rows, list(range(len(COLUMNS)))))
    assert "comparable" in narrow.export_text(), "a word of the check wraps whole, never folded"


@pytest.mark.parametrize("argv, said, unsaid", [
    (["--bogus"], "unknown option --bogus (see 'burtbench --help')", "required"),
    (["--bogus", "list"], "unknown option --bogus (see 'burtbench --help')", "list --help"),
    (["run", "--bogus"], "unrecognized argument: --bogus (see 'burtbench run --help')", "did you mean"),
    (["run", "--engnie", "burtorch"], "did you mean '--engine'?", "unknown option"),
    (["--debg", "list"], "unknown option --debg; did you mean '--debug'?", "list --help"),
])
def test_an_unknown_option_is_named_where_it_was_given(argv, said, unsaid, capsys):
    """Measured: 'burtbench --bogus' said a command was required, '--bogus list' sent to list's help, and
    'run --bogus' guessed '--out'."""
    from harness.commands.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and unsaid not in err


def test_the_versions_table_shows_the_point_its_notes_name():
    """Measured: 'Point —' in the table, 'a=-41 b=2' in its notes."""
    from harness.report import versions

    assert versions.point_text({"a": -41.0, "b": 2.0}) == "a=-41 b=2"
    assert versions.point_text({}) == "—"


def test_a_dry_run_counts_points_once_and_wraps_what_it_would_skip():
    """Measured: 'tiny │ 4 │ 4 │ 20' for one point, and a skip line of 349 characters on an 80-column terminal."""
    from harness.planning import preview
    from harness.analysis.points import PointKey

    def trial(engine: str):
        return SimpleNamespace(workload=SimpleNamespace(name="tiny"),
                               point_key=lambda: PointKey(engine, "tiny", '{"a": -4.0}'))

    assert preview.points([trial(e) for e in ("a", "b", "c", "d") for _ in range(5)]) == 1
    why = ("cargo not found: install Rust (https://rustup.rs) or give --cargo-vendor /opt/vendor/burn-crates-0.20 "
           "so that --pip-arg=--index-url=https://example.org/simple can be used ") * 3
    lines = preview.skip_line("burn/eager/rust/cpu", why, 80).splitlines()
    assert len(lines) > 1 and all(line.startswith("  ") for line in lines[1:])
    assert all(len(line) <= 80 or " " not in line.strip() for line in lines)
    assert "--pip-arg=--index-url=https://example.org/simple" in preview.skip_line("e", why, 80)
    assert preview.skip_line("e", why, None).count("\n") == 0, "no terminal: one line a skip, for grep"


def test_the_closing_speed_lines_wrap_under_their_engine(tmp_path):
    """Measured: at 80 columns a 'Fastest and slowest' line ran on at column 0."""
    from test_report import make_trial, write_run

    from harness.store.runs import load_run

    trials = [make_trial(engine, "tiny", {"a": -4.0, "b": 2.0}, k, per_iter)
              for engine, per_iter in (("burtorch/eager/cpp/cpu", 1e-6), ("micrograd/eager/python/cpu", 4e-4))
              for k in range(3)]
    (entry,) = epilogue.speed_lines(load_run(write_run(tmp_path / "run", "Linux", trials)), 50)
    first, *rest = entry.split("\n")
    assert "[bold]" in first and rest and all(line.startswith(" " * 31) for line in rest)


def test_markdown_code_in_the_html_page_is_code():
    """Measured: index.html showed "claims.csv's `authors` column" and "`--claims-budget`" with their backticks."""
    from harness.report import html
    from harness.text import inline_html

    assert inline_html("see `burtbench claims` and `<b>` & co") == \
        "see <code>burtbench claims</code> and <code>&lt;b&gt;</code> &amp; co"
    section = html.claims_section([judged(verdict("gpt-b64-pytorch-faster"))], ["at most `--claims-budget`"])
    assert "<code>authors</code> column" in section and "<code>--claims-budget</code>" in section
    assert "`" not in section


def test_the_html_page_says_what_claims_md_says_of_a_factor_without_an_interval():
    from harness.report import html

    lone = verdict("abstract-small-time", kind=NOT_MEASURABLE, ours=158283.0, low=None, high=None, trials=(1, 1))
    assert "×158,283 (1 trial, no interval) on the rows this run has" in html._subject_cell(lone)
    grows = verdict("gpt-memory-flat", kind="undecided", ours=1.2, low=None, high=None, trials=(1, 1))
    assert "(1 / 1 trials at its smallest / largest row, no interval)" in html._subject_cell(grows)
    assert "95%" not in html._subject_cell(grows)
