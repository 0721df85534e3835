"""Property-based fuzzing of the command line: whatever the options, `run`, `report`, `compare` and
`fetch-data` exit 0, or print one line on stderr and exit 2 — never a traceback.

Unexpected exceptions are raised here (BURTBENCH_DEBUG=1), so the fuzzer sees every one. Options
are drawn from values that are legal, illegal, legal to the parser but not to the machine, and
arbitrary text; runs use the fault engines' `fake/ok`, so a legal run takes about a second.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests_support import check_outcome, fault_engines_env

from harness.commands.cli import main

RUN_EXAMPLES, REPORT_EXAMPLES, COMPARE_EXAMPLES, FETCH_EXAMPLES = 50, 40, 50, 30
FUZZ = settings(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)


def option(name: str, values: list, free_text: bool = True):
    choices = st.sampled_from(values)
    return st.one_of(st.just([]), st.tuples(st.just(name), st.one_of(choices, TEXT) if free_text else choices).map(list))



@pytest.fixture(autouse=True)
def elsewhere(tmp_path, monkeypatch):
    """Generated relative paths (an --out of random text) land in a temporary folder, not in the checkout."""
    monkeypatch.chdir(tmp_path)

@pytest.fixture
def places(tmp_path, fake_engines):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    data = tmp_path / "data"
    data.mkdir()
    (data / "names.txt").write_text("emma\nolivia\nava\n")
    (data / "input.txt").write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n")
    bad = tmp_path / "bad-data"
    bad.mkdir()
    (bad / "names.txt").write_text("Zoë\n")
    (bad / "input.txt").write_text("short")
    return {"tmp": tmp_path, "file": a_file, "data": data, "bad": bad}


def run_argv(places, data) -> list[str]:
    tmp = places["tmp"]
    paths = [str(tmp / "out"), str(places["file"]), str(places["file"] / "sub"), "/proc/burtbench", "/dev/null/x",
             str(tmp / "deep" / "er" / "out")]
    argv = ["run"]
    # (not "fake": its hang engine would wait out each drawn --timeout)
    argv += data.draw(option("--engine", ["fake/ok", "fake/ok,fake/wrong", "fake/crash,fake/garbage", "fake/ok,",
                                          "fake/ok/python/cpu", "nope"]))
    argv += data.draw(option("--workload", ["tiny", "small", "tiny,small", "all", "mlp", "tiyn", ",", "tiny,tiny"]))
    argv += data.draw(option("--profile", ["smoke", "smokey", "PAPER", ""]))
    for _ in range(data.draw(st.integers(0, 2))):
        argv += data.draw(option("--param", ["a=-41", "a=-41,-41", "b=2.0", "a=7", "a", "=3", "a=", "hidden_dim=4",
                                             "batch=1", "b=2,2,2"]))
    argv += data.draw(option("--trials", ["1", "2", "0", "-1", "2.5", "100001", "1e3", "99999999999"]))
    argv += data.draw(option("--cpu", ["0", "1", "99", "-1", "one"]))
    argv += data.draw(option("--timeout", ["60", "0", "-1", "nan", "inf", "1e300", "1e-300"]))
    argv += data.draw(option("--mem-limit", ["4G", "1G", "16M", "0", "1T", "99999999T", "lots", "1e3M"]))
    argv += data.draw(option("--python", [sys.executable, "/bin/sh", "/nonexistent/python", str(places["file"])]))
    argv += data.draw(option("--data-dir", [str(places["data"]), str(places["bad"]), str(tmp / "none")]))
    argv += data.draw(option("--noise-threshold", ["5", "0", "1000", "-2"]))
    argv += data.draw(option("--max-trials", ["3", "0", "5000"]))
    argv += data.draw(st.sampled_from([[], ["--adaptive"]]))
    argv += data.draw(option("--energy", ["none", "auto", "rapl", "sun"]))
    argv += data.draw(option("--idle-seconds", ["0.1", "0", "1e9"]))
    argv += data.draw(option("--resume", [str(tmp), str(places["file"]), "/nonexistent"]))
    argv += ["--out", data.draw(st.sampled_from(paths)), "--no-report"]  # the report has a fuzzer of its own
    if "--engine" not in argv:  # every engine of this installation would start their frameworks: too slow here
        argv += ["--engine", "fake/ok"]
    return argv


@settings(FUZZ, max_examples=RUN_EXAMPLES)
@given(data=st.data())
def test_run_options_never_end_in_a_traceback(places, capfd, monkeypatch, data):
    monkeypatch.setenv("BURTBENCH_DEBUG", "1")
    argv = run_argv(places, data)
    capfd.readouterr()
    code = main(argv)
    check_outcome(code, capfd.readouterr().err, argv)


@pytest.fixture(scope="module")
def a_run(tmp_path_factory) -> Path:
    """A finished run of the fault engines to report on and compare."""
    out = tmp_path_factory.mktemp("runs")
    with fault_engines_env():
        assert main(["run", "--engine", "fake/ok,fake/wrong", "--workload", "tiny,small", "--profile", "smoke",
                     "--no-report", "--out", str(out)]) == 0
    (run_dir,) = out.iterdir()
    return run_dir


@settings(FUZZ, max_examples=REPORT_EXAMPLES)
@given(data=st.data())
def test_report_options_never_end_in_a_traceback(places, a_run, capfd, monkeypatch, data):
    monkeypatch.setenv("BURTBENCH_DEBUG", "1")
    tmp = places["tmp"]
    argv = ["report", data.draw(st.sampled_from([str(a_run), str(tmp), str(places["file"]), "/nonexistent", ""]))]
    argv += data.draw(option("--report-dir", [str(tmp / "reports"), str(places["file"]), "/proc/reports", "/dev/null/x"]))
    capfd.readouterr()
    check_outcome(main(argv), capfd.readouterr().err, argv)


@settings(FUZZ, max_examples=COMPARE_EXAMPLES)
@given(data=st.data())
def test_compare_options_never_end_in_a_traceback(places, a_run, capfd, monkeypatch, data):
    monkeypatch.setenv("BURTBENCH_DEBUG", "1")
    runs = [str(a_run), str(places["tmp"]), str(places["file"]), "/nonexistent"]
    argv = ["compare", data.draw(st.sampled_from(runs)), data.draw(st.sampled_from(runs))]
    argv += data.draw(option("--format", ["table", "md", "json", "xml"]))
    argv += data.draw(option("--fail-if-slower", ["10", "0", "-5", "nan", "1e400"]))
    capfd.readouterr()
    code = main(argv)
    out = capfd.readouterr()
    if code == 1 and "--fail-if-slower" in argv:
        code = 0  # the regression gate's own verdict
    check_outcome(code, out.err, argv)


@settings(FUZZ, max_examples=FETCH_EXAMPLES)
@given(data=st.data())
def test_fetch_data_options_never_end_in_a_traceback(places, capfd, monkeypatch, data):
    from workloads import data as datasets

    monkeypatch.setenv("BURTBENCH_DEBUG", "1")
    unreachable = {name: datasets.Source(f"http://127.0.0.1:9/{name}", "0" * 64) for name in datasets.SOURCES}
    monkeypatch.setattr(datasets, "SOURCES", unreachable)
    tmp = places["tmp"]
    argv = ["fetch-data"] + data.draw(option("--data-dir", [str(tmp / "fetched"), str(places["file"]), "/proc/x", ""]))
    capfd.readouterr()
    code = main(argv)
    err = capfd.readouterr().err
    assert "Traceback" not in err and code in (0, 2), (argv, err)
    assert code == 0 or len([line for line in err.splitlines() if line.startswith("burtbench: error:")]) == 1, err
