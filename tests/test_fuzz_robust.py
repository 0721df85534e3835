"""Issue 37's principles, each broken from outside: damaged numbers (hypothesis), damaged plans fed to
every command, hostile text through a whole report (hypothesis), a hung valgrind, inputs that mean
nothing. The prune-during-a-run case is tests/test_prune_during_run.py.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
import time
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests_support import check_outcome, fault_engine_run, fault_engines_env

from harness.commands.cli import main
from harness.store import readings, results
from harness.text import clean

FUZZ = settings(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
HOSTILE = st.lists(st.sampled_from(["\x1b[31m", "\x1b]0;pwned\x07", "\x9b2J", "\u202e", "\x00", "\r", "\x08",
                                    "a", "é", "|", "<b>", "&", "%", "_"]), min_size=1, max_size=6).map("".join)


@pytest.fixture(scope="module")
def a_run(tmp_path_factory) -> Path:
    return fault_engine_run(tmp_path_factory.mktemp("runs"), "tiny")


def copy(run_dir: Path, where: Path) -> Path:
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(run_dir, where)
    return where


def edit_lines(run_dir: Path, edit) -> None:
    path = run_dir / results.TRIALS_FILE
    lines = [edit(i, line) for i, line in enumerate(path.read_text().splitlines())]
    path.write_text("".join(line + "\n" for line in lines))


def with_field(line: str, name: str, raw: str) -> str:
    """A trial line with one field's value replaced by raw JSON text (NaN and 1e400 included)."""
    record = json.loads(line)
    record[name] = "@@"
    return json.dumps(record).replace('"@@"', raw)


# ---------------------------------------------------------------- 5. every number plausible or refused

NUMERIC = sorted(readings.RANGES) + ["per_iter_s", "samples_s"]
ODD = ["NaN", "Infinity", "-Infinity", "-1", "-1e-9", "1e400", "5e27", "1e31", '"lots"', "true", "[1]", '{"mean": -1}',
       '{"median": NaN}', "[0.1, -2]"]


@settings(FUZZ, max_examples=60)
@given(name=st.sampled_from(NUMERIC), raw=st.sampled_from(ODD))
def test_a_bad_field_drops_the_field_with_file_and_line_never_the_trial(a_run, tmp_path_factory, name, raw):
    run_dir = copy(a_run, tmp_path_factory.mktemp("numbers") / "run")
    edit_lines(run_dir, lambda i, line: with_field(line, name, raw) if i == 1 else line)
    said = []
    trials = results.read_trials(run_dir, said.append)
    assert len(trials) == 2, said  # the trial is kept
    value = trials[1][name]
    if value is None:  # dropped: said once, with the file, the line and the field
        assert len(said) == 1 and said[0].startswith(f"{run_dir / results.TRIALS_FILE}:2: dropping the field {name}")
        assert trials[1]["status"] == "ok" and (name == "per_iter_s" or trials[1]["per_iter_s"]["n"] > 0)
    else:  # kept: a number in its range
        assert not said and readings.problems(trials[1]) == []


def test_instructions_per_iteration_are_held_to_the_time_they_took(a_run, tmp_path):
    run_dir = copy(a_run, tmp_path / "run")
    seconds = results.read_trials(run_dir)[0]["per_iter_s"]["median"]
    possible = seconds * 1e9  # 1 GHz, 1 per cycle
    edit_lines(run_dir, lambda i, line: with_field(line, "instructions_per_iter", str([5e27, possible][i])))
    said = []
    trials = results.read_trials(run_dir, said.append)
    assert trials[0]["instructions_per_iter"] is None and "cannot run in" in said[0]
    assert trials[1]["instructions_per_iter"] == pytest.approx(possible)


def test_merge_keeps_a_trial_whose_one_field_is_bad(a_run, tmp_path, capsys):
    # Two "shards" of one plan: each holds one of the two trials; one has a NaN memory reading.
    first, second = copy(a_run, tmp_path / "a"), copy(a_run, tmp_path / "b")
    edit_lines(first, lambda i, line: with_field(line, "peak_resident_bytes", "NaN") if i == 0 else "")
    edit_lines(second, lambda i, line: line if i == 1 else "")
    assert main(["merge", str(first), str(second), "--out", str(tmp_path / "merged")]) == 0
    merged = results.read_trials(tmp_path / "merged")
    assert len(merged) == 2 and merged[0]["peak_resident_bytes"] is None and merged[0]["per_iter_s"]["n"] > 0
    assert "dropping the field peak_resident_bytes" in capsys.readouterr().err


# ---------------------------------------------------------------- 4. every check before the work, alike

DAMAGED_PLANS = [("aa", "yes"), ("engines", "fake/ok"), ("trials", "3"), ("instructions", 1), ("timing", "fast"),
                 ("workloads", [1]), ("trials", 0), ("timeout_s", -5), ("profile", "grand"), ("noise_threshold", 99)]


@pytest.mark.parametrize("command", ["report", "compare", "merge", "resume"])
@pytest.mark.parametrize("field,value", DAMAGED_PLANS)
def test_every_command_refuses_a_damaged_plan_before_writing(a_run, tmp_path, capfd, command, field, value):
    run_dir = copy(a_run, tmp_path / "run")
    manifest = json.loads((run_dir / results.MANIFEST_FILE).read_text())
    manifest["plan"][field] = value
    (run_dir / results.MANIFEST_FILE).write_text(json.dumps(manifest))
    before = (run_dir / results.TRIALS_FILE).read_bytes()
    argv = {"report": ["report", str(run_dir), "--report-dir", str(tmp_path / "reports")],
            "compare": ["compare", str(a_run), str(run_dir)],
            "merge": ["merge", str(a_run), str(run_dir), "--out", str(tmp_path / "merged")],
            "resume": ["run", "--resume", str(run_dir), "--no-report"]}[command]
    capfd.readouterr()
    with fault_engines_env():
        assert main(argv) == 2
    err = capfd.readouterr().err
    check_outcome(2, err, argv)
    assert "damaged" in err and field in err
    assert not (tmp_path / "reports").exists() and not (tmp_path / "merged").exists()
    assert (run_dir / results.TRIALS_FILE).read_bytes() == before


def test_a_report_dir_under_a_file_is_found_before_the_first_trial(fake_engines, tmp_path, capfd):
    plain = tmp_path / "a-file"
    plain.write_text("x")
    argv = ["run", "--engine", "fake/ok", "--workload", "tiny", "--profile", "smoke", "--out", str(tmp_path / "out"),
            "--report-dir", str(plain / "reports")]
    assert main(argv) == 2
    check_outcome(2, capfd.readouterr().err, argv)
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- 7. nothing from outside shown raw

@given(text=st.text())
def test_clean_leaves_no_control_character(text):
    assert not RAW_CONTROL.search(clean(text)) and "\n" not in clean(text)
    assert not RAW_CONTROL.search(clean(text, newlines=True)) and clean(text, newlines=True).count("\n") == text.count("\n")
    if not RAW_CONTROL.search(text) and "\n" not in text:
        assert clean(text) == text


@settings(FUZZ, max_examples=4)
@given(hostile=HOSTILE)
def test_hostile_text_reaches_no_report_format_raw(a_run, tmp_path_factory, capfd, hostile):
    run_dir = copy(a_run, tmp_path_factory.mktemp("hostile") / "run")
    manifest = json.loads((run_dir / results.MANIFEST_FILE).read_text())
    manifest["machine"]["cpu_model"] = f"CPU {hostile}"
    manifest["frameworks"] = {"fake": hostile}
    (run_dir / results.MANIFEST_FILE).write_text(json.dumps(manifest))

    def hostile_line(i, line):
        record = {**json.loads(line), "framework_version": hostile, "extra": {"note": hostile}}
        if i == 0:
            record.update(status="failed", reason=f"{hostile}\nsecond line", stderr_tail=hostile)
        return json.dumps(record)

    edit_lines(run_dir, hostile_line)
    out = tmp_path_factory.mktemp("reports")
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught, fault_engines_env():
        warnings.simplefilter("always")
        assert main(["report", str(run_dir), "--report-dir", str(out)]) == 0
    assert not [w for w in caught if "Glyph" in str(w.message)]
    said = capfd.readouterr()
    assert not RAW_CONTROL.search(said.out + said.err)
    for path in out.rglob("*"):
        if path.suffix in (".md", ".csv", ".tex", ".html", ".json", ".txt"):
            assert not RAW_CONTROL.search(path.read_text(errors="replace")), path


def test_an_error_line_escapes_what_it_quotes(tmp_path, capfd):
    assert main(["report", str(tmp_path / "no\x1b]0;title\x07run")]) == 2
    err = capfd.readouterr().err
    assert "\x1b" not in err and "\\x1b]0;title\\x07" in err


# ---------------------------------------------------------------- 3. every limit holds for every child

def test_a_hung_valgrind_is_killed_at_the_users_timeout(fake_engines, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    valgrind = bin_dir / "valgrind"
    valgrind.write_text("#!/bin/sh\nexec sleep 600\n")
    valgrind.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    start = time.monotonic()
    assert main(["run", "--engine", "fake/ok", "--workload", "tiny", "--profile", "smoke", "--trials", "1",
                 "--instructions", "--timeout", "3", "--no-report", "--out", str(tmp_path / "out")]) == 0
    assert time.monotonic() - start < 120  # not the fixed 600 s
    (run_dir,) = (tmp_path / "out").iterdir()
    (trial,) = results.read_trials(run_dir)
    assert trial["status"] == "ok" and trial["instructions_per_iter"] is None
    assert "ran past 3 s (--timeout)" in trial["instructions_reason"]


def test_the_speed_probe_runs_where_the_user_pinned_the_run(monkeypatch):
    from harness.running import probe

    seen = []

    class Spawner:
        def __init__(self, options):
            seen.append(options)

    monkeypatch.setattr(probe, "ChildSpawner", Spawner)
    monkeypatch.setattr(probe, "run_child", lambda *a, **k: type("C", (), {"returncode": 0, "wall_s": 1.0})())
    earlier = {"workload": "tiny", "params": {}, "iterations": 10, "warmup": 0, "cpu": 1}  # an earlier run's core
    assert probe.probe_floor(earlier, cpu=0, mem_limit_bytes=1 << 30) == 1.0
    assert seen[0].cpu == 0 and seen[0].mem_limit_bytes == 1 << 30


def test_a_dry_run_probes_the_speed_on_the_users_core_not_the_earlier_runs(a_run, tmp_path, monkeypatch, capfd):
    from engines.none import FLOOR
    from harness.measure import affinity
    from harness.running import probe

    earlier_run = copy(a_run, tmp_path / "earlier")
    floor = {**results.read_trials(a_run)[0], "engine": FLOOR, "framework": "none", "mode": "empty"}
    with open(earlier_run / results.TRIALS_FILE, "a") as fh:  # the floor trial the probe runs again
        fh.write(json.dumps(floor) + "\n")
    earlier = {t["cpu"] for t in results.read_trials(earlier_run)}
    mine = next((c for c in affinity.allowed_cpus() if c not in earlier), None)
    if mine is None:
        pytest.skip("one allowed core: the earlier run's is the only one")
    seen = []

    class Spawner:
        def __init__(self, options):
            seen.append(options.cpu)

    monkeypatch.setattr(probe, "ChildSpawner", Spawner)
    monkeypatch.setattr(probe, "run_child", lambda *a, **k: type("C", (), {"returncode": 0, "wall_s": 0.1})())
    with fault_engines_env():
        assert main(["run", "--engine", "fake/ok", "--workload", "tiny", "--profile", "smoke", "--cpu", str(mine),
                     "--dry-run", "--estimate-from", str(earlier_run)]) == 0
    assert seen == [mine]
    assert "no trial of the plan was run" in capfd.readouterr().out


# ---------------------------------------------------------------- 6, 8. one stream; inputs that mean nothing

@pytest.mark.parametrize("extra,message", [
    (["--upstream", ""], "an empty path names nothing"),
    (["--out", ""], "an empty path names nothing"),
    (["--report-dir", " "], "an empty path names nothing"),
    (["--max-trials", "5"], "--max-trials only applies with --adaptive"),
    (["--env", 'burtbench-fakefw==1.0; sys_platform == "nowhere"'], "is false on this machine"),
    (["--env", "burtbench-fakefw==1.0", "--env", "burtbench-fakefw==1.0.0"], "given twice"),
    (["--env", "burtbench-fakefw==1.0; python_version == '\x1b]0;x\x07'"], "holds a control character"),
])
def test_inputs_that_mean_nothing_are_refused_in_one_line(monkeypatch, tmp_path, capfd, extra, message):
    monkeypatch.setenv("BURTBENCH_ENGINE_MODULES", "tests.fakes.fake_versions")
    argv = ["run", "--engine", "fakefw", "--workload", "tiny", "--out", str(tmp_path / "out"), *extra]
    assert main(argv) == 2
    err = capfd.readouterr().err
    check_outcome(2, err, argv)
    assert message in err and "\x1b" not in err
    assert not (tmp_path / "out").exists()


def test_an_environment_that_installs_no_package_of_its_framework_is_not_made(monkeypatch, tmp_path):
    from harness.envs import install
    from harness.envs.specs import parse_spec

    monkeypatch.setattr(install, "_create", lambda *a: None)
    monkeypatch.setattr(install, "_install", lambda *a: None)  # an installer that installs nothing
    monkeypatch.setattr(install, "installed", lambda python: {"pip": "24.0"})
    env = install.ensure(parse_spec("burtbench-fakefw==1.0"), sys.executable, tmp_path, (), [])
    assert env.problem and "holds no burtbench-fakefw" in env.problem


def test_a_dry_run_says_what_the_run_would_skip(tmp_path, capfd):
    not_theirs = tmp_path / "not-burtorch"
    not_theirs.mkdir()
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"\x1f\x8b not really")
    for source, why in ((not_theirs, "holds no burt/CMakeLists.txt"), (garbage, "is not a tar archive")):
        argv = ["run", "--engine", "burtorch", "--workload", "tiny", "--upstream", str(source), "--dry-run"]
        code = main(argv)
        out, err = capfd.readouterr()
        lines = [line for line in err.splitlines() if "burtorch-authors" in line]
        assert code == 0 and len(lines) == 1 and lines[0].startswith("burtbench: would skip") and why in lines[0]
        assert why not in out


def test_failed_trials_say_why_on_stderr_one_line_each(fake_engines, tmp_path, capfd):
    from harness.running.orchestrator import one_line

    main(["run", "--engine", "fake/ok,fake/crash,fake/garbage,fake/missing", "--workload", "tiny", "--profile", "smoke",
          "--trials", "1", "--no-report", "--out", str(tmp_path)])
    out, err = capfd.readouterr()
    # Each failure is one line on stderr as it happens; stdout names them again only in its closing block of
    # engines asked for and not run, one line each.
    trials, _, closing = out.partition("Asked for, not run")
    assert "SIGKILL" not in trials and "unparseable" not in trials and "no_such_framework" not in trials
    assert all(len([line for line in closing.splitlines() if word in line]) <= 1
               for word in ("SIGKILL", "unparseable", "no_such_framework"))
    assert all(line.startswith("burtbench: ") for line in err.splitlines()) and "Traceback" not in err
    numpy_like = "Error importing numpy: you should not\n\nIMPORTANT: READ THIS\n    * advice\n\nOriginal error was: x"
    assert one_line(numpy_like) == "Original error was: x (the whole message: the trial's reason in trials.jsonl)"


@settings(FUZZ, max_examples=200)
@given(text=st.one_of(st.text(max_size=40), HOSTILE.map(lambda h: f"autograd==1.7; python_version == '{h}'"),
                      st.from_regex(r"[a-z]{1,8}(==|>=|<)[0-9]{1,2}(\.[0-9]{1,2}){0,2}", fullmatch=True)))
def test_a_spec_is_parsed_clean_or_refused_in_one_clean_line(text):
    from harness.envs.specs import parse_spec
    from harness.errors import UsageError

    try:
        spec = parse_spec(text)
    except UsageError as exc:
        assert "\n" not in str(exc) and not RAW_CONTROL.search(str(exc))
    else:
        assert not RAW_CONTROL.search(spec.text) and "\n" not in spec.text


@given(version=st.from_regex(r"[1-9][0-9]?(\.[0-9]{1,2}){0,2}", fullmatch=True), zeros=st.integers(1, 3))
def test_two_spellings_of_one_version_are_one_environment(version, zeros):
    from harness.envs.specs import parse_spec

    assert parse_spec(f"autograd=={version}").key == parse_spec(f"autograd=={version}{'.0' * zeros}").key
    assert parse_spec(f"autograd=={version}").key != parse_spec(f"autograd=={version}.1").key


def test_resume_refuses_to_count_instructions_without_valgrind_as_a_new_run_does(a_run, tmp_path, monkeypatch, capfd):
    run_dir = copy(a_run, tmp_path / "run")
    manifest = json.loads((run_dir / results.MANIFEST_FILE).read_text())
    manifest["plan"]["instructions"] = True
    (run_dir / results.MANIFEST_FILE).write_text(json.dumps(manifest))
    edit_lines(run_dir, lambda i, line: line if i == 0 else "")  # one trial left to run
    (tmp_path / "no-tools").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # no valgrind on it
    capfd.readouterr()
    with fault_engines_env():
        new = main(["run", "--engine", "fake/ok", "--workload", "tiny", "--instructions", "--out", str(tmp_path / "o")])
        new_err = capfd.readouterr().err
        resumed = main(["run", "--resume", str(run_dir), "--no-report"])
        resumed_err = capfd.readouterr().err
    assert new == resumed == 2
    assert "valgrind is not installed" in new_err and "valgrind is not installed" in resumed_err
    assert len(results.read_trials(run_dir)) == 1  # nothing recorded with silent nulls
