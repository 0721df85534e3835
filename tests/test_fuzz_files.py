"""Property-based fuzzing of a run's files: whatever trials.jsonl and manifest.json hold, `report`,
`compare` and `run --resume` exit 0, or print one line on stderr and exit 2 — never a traceback —
and a resume that goes ahead ends with exactly the plan's trials.

A finished run of the fault engines is copied, then damaged the ways a disk, an editor or another
tool damages files: a field of a line or of the manifest set to another type, NaN, inf, an
overflow-sized number or random text; lines cut, dropped, repeated or replaced by random bytes.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests_support import check_outcome, fault_engine_run, fault_engines_env

from harness.commands.cli import main
from harness.running.session import make_plan
from harness.store import results
from harness.store.run_plan import read_plan

REPORT_EXAMPLES, RESUME_EXAMPLES = 25, 30  # a report renders its figures: ~3 s each
FUZZ = settings(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))

ODD_VALUES = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "null", "true", "[]", "{}", '""', "-1",
                     "0", "1e300", '"x"', '"complete"', '"running"', '"grand"', "[1, 2]", '{"a": 1}']),
    st.integers(-10**30, 10**30).map(str),
    st.text(max_size=8).map(json.dumps),
)



@pytest.fixture(autouse=True)
def elsewhere(tmp_path, monkeypatch):
    """Generated relative paths (an --out of random text) land in a temporary folder, not in the checkout."""
    monkeypatch.chdir(tmp_path)

@pytest.fixture(scope="module")
def a_run(tmp_path_factory) -> Path:
    return fault_engine_run(tmp_path_factory.mktemp("runs"), "tiny,small")


def set_field(text: str, data) -> str:
    """`text` (one JSON object) with one of its fields, at any depth, set to an odd value (raw JSON text)."""
    obj = json.loads(text)
    paths = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                paths.append(path + [key])
                walk(value, path + [key])

    walk(obj, [])
    *parents, last = data.draw(st.sampled_from(paths))
    marker = "\u0000odd\u0000"
    node = obj
    for key in parents:
        node = node[key]
    node[last] = marker
    return json.dumps(obj).replace(json.dumps(marker), data.draw(ODD_VALUES))


def damage_trials(body: str, data) -> str:
    lines = body.splitlines(keepends=True)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(lines) - 1))
        how = data.draw(st.sampled_from(["field", "cut", "drop", "repeat", "bytes"]))
        if how == "field" and lines[at].startswith("{") and lines[at].endswith("}\n"):
            lines[at] = set_field(lines[at], data) + "\n"
        elif how == "cut":
            lines[at] = lines[at][: data.draw(st.integers(0, len(lines[at])))]
        elif how == "drop" and len(lines) > 1:
            del lines[at]
        elif how == "repeat":
            lines.insert(at, lines[at])
        elif how == "bytes":
            lines[at] = data.draw(st.text(max_size=30)) + "\n"
    return "".join(lines)


def damaged_copy(a_run: Path, tmp: Path, data) -> Path:
    work = tmp / "run"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(a_run, work)
    target = data.draw(st.sampled_from(["trials", "manifest", "both"]))
    if target in ("trials", "both"):
        path = work / results.TRIALS_FILE
        path.write_text(damage_trials(path.read_text(encoding="utf-8"), data), encoding="utf-8")
    if target in ("manifest", "both"):
        path = work / results.MANIFEST_FILE
        text = path.read_text(encoding="utf-8")
        mangled = set_field(text, data) if data.draw(st.booleans()) else text[: data.draw(st.integers(0, len(text)))]
        path.write_text(mangled, encoding="utf-8")
    return work


def planned_keys(run_dir: Path) -> list[tuple]:  # (the fault engines registered by the caller)
    return sorted(tuple(map(str, p.key())) for p in make_plan(read_plan(results.read_manifest(run_dir))))


def trial_keys(run_dir: Path) -> list[tuple]:
    return sorted(tuple(map(str, results.trial_key(t["engine"], t["workload"], t["params"], t["trial"])))
                  for t in results.read_trials(run_dir, warn=lambda _: None))


@settings(FUZZ, max_examples=REPORT_EXAMPLES)
@given(data=st.data())
def test_report_and_compare_never_crash_on_damaged_files(a_run, tmp_path_factory, capfd, monkeypatch, data):
    monkeypatch.setenv("BURTBENCH_DEBUG", "1")
    work = damaged_copy(a_run, tmp_path_factory.mktemp("fuzz"), data)
    for argv in (["report", str(work), "--report-dir", str(work.parent / "reports")],
                 ["compare", str(a_run), str(work), "--format", data.draw(st.sampled_from(["table", "json"]))]):
        capfd.readouterr()
        code = main(argv)
        out = capfd.readouterr()
        check_outcome(code, out.err, argv)
        if code == 0 and "json" in argv:
            json.loads(out.out)  # strict: NaN or Infinity would not parse back as JSON's null


@settings(FUZZ, max_examples=RESUME_EXAMPLES)
@given(data=st.data())
def test_resume_of_damaged_files_is_exact_or_refused(a_run, tmp_path_factory, capfd, monkeypatch, data):
    monkeypatch.setenv("BURTBENCH_DEBUG", "1")
    work = damaged_copy(a_run, tmp_path_factory.mktemp("fuzz"), data)
    argv = ["run", "--resume", str(work), "--no-report"]
    capfd.readouterr()
    with fault_engines_env():
        code = main(argv)
        check_outcome(code, capfd.readouterr().err, argv)
        if code == 0:
            keys = trial_keys(work)
            assert keys == planned_keys(work), "a resume that went ahead must end with exactly the plan's trials"


@pytest.mark.parametrize("odd", ["x", [1], {"max": "fast"}, {"max": [1]}, {"max": True}, {"current": float("inf")}])
def test_machine_facts_of_the_wrong_type_give_the_report_no_clock_rather_than_a_crash(odd):
    from harness.analysis.notes import clock_of

    assert clock_of({"machine": {"cpu_mhz": odd}, "tsc": odd}) == (None, "no CPU frequency in the manifest")


@pytest.mark.parametrize("odd", ["x", True, -1, 0, float("nan"), [1]])
def test_a_noise_threshold_of_the_wrong_kind_is_refused_never_read_as_the_default(odd):
    from harness.errors import UsageError
    from harness.store.run_plan import DEFAULT_NOISE_THRESHOLD, read_plan

    plan = {"profile": "quick", "engines": [], "workloads": []}
    with pytest.raises(UsageError, match="damaged fields: noise_threshold"):
        read_plan({"plan": {**plan, "noise_threshold": odd}})
    assert read_plan({"plan": {**plan, "noise_threshold": None}}).noise_threshold == DEFAULT_NOISE_THRESHOLD
    assert read_plan({"plan": {**plan, "noise_threshold": 0.5}}).noise_threshold == 0.5
