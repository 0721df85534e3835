"""Issue 57's fuzzer, generated from the declarations (harness/records/): for every record type and every field
a declaration names, the value is spoiled each way a disk, an upgrade or another tool spoils it (wrong type,
NaN, ±inf, negative, zero, huge, missing, an extra field, the wrong shape), and the file is cut short; then
the commands that read that record run on it, in this process. None may trace back (exit 0, or one
`burtbench: error:` line and exit 2), and no spoiled number may reach a page or a roof.

The default suite runs a fixed sample of the cases; `-m slow` runs them all.
"""
from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path
from typing import get_args, get_origin

import pytest
from tests_support import check_outcome, fault_engine_run, fault_engines_env

from harness.cluster import slurm
from harness.commands.cli import main
from harness.machine import bandwidth, ceiling, roofs
from harness.records.base import _inner
from harness.records.cluster import SlurmRecord
from harness.records.envs import EnvRecord
from harness.records.machine import BandwidthCache, CeilingCache
from harness.records.run import BYTES_PER_S, PEAK_GFLOPS, AddedBatch, Manifest, Plan
from harness.records.trials import TrialLine
from harness.store import results
from workloads import load

# Spoiled values a page must never show: each distinctive, so that finding it on a page is proof.
NEGATIVE, HUGE = -7777.25, 9.87e299
SPOILED = {"wrong type": "zzq", "NaN": float("nan"), "+inf": float("inf"), "-inf": float("-inf"),
           "negative": NEGATIVE, "zero": 0, "huge": HUGE, "huge int": 10**400}
HOW = [*SPOILED, "missing", "extra", "wrong shape"]
ON_A_PAGE = re.compile(r"\bnan\b|\binf(inity)?\b|7777|9\.87e\+?299|1e\+?400", re.IGNORECASE)

LEVELS = [{"level": "L1", "size_bytes": 48 * 1024, "working_set_bytes": 24 * 1024, "read_bytes_per_s": 2e11,
           "rmw_bytes_per_s": 1e11},
          {"level": "DRAM", "size_bytes": None, "working_set_bytes": 1 << 26, "read_bytes_per_s": 1e10,
           "rmw_bytes_per_s": 5e9}]
NATIVE = {"executable": "burtorch-bench", "version": "burtorch-bench 0.1", "peak_gflops_fp32": 100.0,
          "peak_source": "burtorch-bench --peak on core 1",
          "peak_provenance": {"measured_at": "2026-01-01T00:00:00+00:00", "cpu": 1, "busy": 0.0},
          "bandwidth": {"levels": LEVELS, "sizes_source": "sysfs", "source": "burtorch-bench --bandwidth on core 1"}}
SLURM = {"run": "r", "submitted_at": 1767225600.0, "chdir": "/home/u", "sbatch": ["--partition=debug"],
         "report_dir": None, "shards": [{"index": 1, "points": 3, "trials": 12, "estimate_s": 40.5}],
         "jobs": [{"id": "101", "kind": "shards", "shards": [1]}, {"id": "102", "kind": "finish", "after": "101"}],
         "outcome": {"status": "complete", "trials": 12, "merged": "/runs/x", "failed": {}, "report": None}}
ENV = {"spec": "autograd==1.7.0", "python_version": "3.11", "installer": "pip", "created_at": 1.0, "last_used": 2.0,
       "freeze": {"autograd": "1.7.0"}, "ready": True}


def paths(model, prefix=()) -> list[tuple]:
    """Every field the declaration names, at any depth: a list's first item, a map's first entry ('*')."""
    found = []
    for name, info in model.model_fields.items():
        here = (*prefix, info.alias or name)
        found.append(here)
        inner = _inner(info.annotation)
        if inner is None:
            continue
        step = ()
        for arg in (info.annotation, *get_args(info.annotation)):
            origin = get_origin(arg)
            if origin is list:
                step = (0,)
            elif origin is dict:
                step = ("*",) * _depth(arg)
        found += paths(inner, (*here, *step))
    return found


def _depth(annotation) -> int:
    """How many map levels lie between a field and the record it holds (the caches nest by model and core)."""
    depth = 0
    while get_origin(annotation) is dict:
        annotation, depth = get_args(annotation)[1], depth + 1
    return depth


FAMILIES = {"trials": TrialLine, "manifest": Manifest, "plan": Plan, "added": AddedBatch, "bandwidth": BandwidthCache,
            "ceiling": CeilingCache, "slurm": SlurmRecord, "env": EnvRecord}
CASES = [(family, path, how) for family, model in FAMILIES.items() for path in paths(model) for how in HOW] + \
        [(family, (), "cut short") for family in FAMILIES]
SAMPLE = random.Random(57).sample(CASES, 70)
# The cases whose spoiled run is rendered whole as well (with --slow): numbers spoiled where a report reads them.
RENDERED = set(random.Random(56).sample([c for c in CASES if c[0] in ("trials", "manifest") and c[2] in
                                         ("NaN", "+inf", "negative", "zero", "huge", "wrong type")], 60))


def spoil(data, path: tuple, how: str):
    """`data` with the field at `path` spoiled `how`; None where the data holds no such place."""
    if how == "cut short":
        return data
    *parents, last = path
    node = data
    for part in parents:
        if part == "*":
            if not isinstance(node, dict) or not node:
                return None
            part = next(iter(node))
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    if last == "*" or not isinstance(node, dict):
        return None
    if how == "missing":
        node.pop(last, None)
    elif how == "extra":
        node["zz_extra"] = NEGATIVE
    elif how == "wrong shape":
        node[last] = [node.get(last)] if not isinstance(node.get(last), list) else {"0": node[last]}
    else:
        node[last] = SPOILED[how]
    return data


def text_of(data, how: str) -> str:
    text = json.dumps(data)
    return text[: len(text) // 2] if how == "cut short" else text


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> Path:
    run = fault_engine_run(tmp_path_factory.mktemp("runs"), "tiny")
    manifest = json.loads((run / results.MANIFEST_FILE).read_text())
    manifest.update(native=NATIVE, ceiling=[{"workload": "tiny", "params": {}, "gflops": 50.0, "library": "numpy"}])
    (run / results.MANIFEST_FILE).write_text(json.dumps(manifest))
    point = json.loads((run / results.TRIALS_FILE).read_text().splitlines()[0])
    (run / "added.jsonl").write_text(json.dumps({"trials": [{"engine": point["engine"], "workload": "tiny",
                                                             "params": point["params"], "trial": 2, "why": "adaptive",
                                                             "with_init": False}], "deciding_spent_s": None}) + "\n")
    return run


@pytest.fixture(autouse=True)
def elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(slurm, "states", lambda ids: {})  # no squeue here: every job has ended


def run_command(argv: list[str], capfd) -> str:
    """The command's stdout, having checked it ended as the fuzzers' invariant says."""
    capfd.readouterr()
    with fault_engines_env():
        code = main(argv)
    out, err = capfd.readouterr()
    check_outcome(code, err, argv)
    assert not ON_A_PAGE.search(out), (argv, out)
    return out


EMBEDDED = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")  # a figure's bytes: its digits are no number


def pages_clean(folder: Path) -> None:
    for page in folder.rglob("*"):
        if page.suffix in (".md", ".json", ".csv", ".html", ".tex"):
            found = ON_A_PAGE.search(EMBEDDED.sub("", page.read_text(errors="replace")))
            assert not found, (page, found)


def roofs_in_bounds(run: Path) -> None:
    """What a report's roofline reads from the manifest: no roof at all, or roofs within the declared bounds."""
    machine, why = roofs.roofs(results.sane_manifest(run, warn=lambda _: None).get("native"))
    if machine is None:
        assert why and not ON_A_PAGE.search(why)
        return
    assert PEAK_GFLOPS[0] <= machine.peak_gflops <= PEAK_GFLOPS[1]
    for level in machine.levels:
        assert all(BYTES_PER_S[0] <= level[k] <= BYTES_PER_S[1] for k in ("read_bytes_per_s", "rmw_bytes_per_s"))


def run_family(family: str, path: tuple, how: str, base_run: Path, tmp: Path, capfd, full: bool) -> int:
    """Spoils the record, runs its readers; returns how many commands ran."""
    run = tmp / "run"
    shutil.copytree(base_run, run)
    if family in ("trials", "added"):
        name = results.TRIALS_FILE if family == "trials" else "added.jsonl"
        lines = (run / name).read_text().splitlines()
        spoiled = spoil(json.loads(lines[-1]), path, how)
        if spoiled is None:
            return 0
        lines[-1] = text_of(spoiled, how)
        (run / name).write_text("\n".join(lines) + ("\n" if how != "cut short" else ""))
    else:
        manifest = json.loads((run / results.MANIFEST_FILE).read_text())
        spoiled = spoil(manifest if family == "manifest" else manifest["plan"], path, how)
        if spoiled is None:
            return 0
        (run / results.MANIFEST_FILE).write_text(text_of(manifest, how))
    if family == "added":
        from harness.planning import resume
        from harness.running.session import make_plan

        with fault_engines_env():
            try:
                resume.with_added(make_plan(resume.resumable_manifest(run)[1]), run)
            except Exception as exc:  # noqa: BLE001 (what it raised is the finding)
                assert type(exc).__name__ == "UsageError", repr(exc)
        return 1
    other = tmp / "other"
    shutil.copytree(base_run, other)
    run_command(["claims", str(run), "--report-dir", str(tmp / "pages")], capfd)
    run_command(["compare", str(other), str(run), "--format", "md"], capfd)
    pages_clean(tmp / "pages")
    roofs_in_bounds(run)
    ran = 3
    if full:
        run_command(["merge", str(run), "--out", str(tmp / "merged"), "--allow-partial", "--allow-mixed"], capfd)
        ran += 1
    if (family, path, how) in RENDERED:  # a report renders its figures: seconds a case
        run_command(["report", str(run), "--report-dir", str(tmp / "report")], capfd)
        pages_clean(tmp / "report")
        ran += 1
    return ran


def fake_probe(sizes, cpu, driver=None):
    return {"read": [1e10] * len(sizes), "rmw": [5e9] * len(sizes)}, f"burtorch-bench --bandwidth on core {cpu}"


def cache_family(family: str, path: tuple, how: str, tmp: Path, monkeypatch) -> int:
    """A spoiled machine cache: said once naming the file, measured again, and the roofs in bounds."""
    monkeypatch.setattr(bandwidth, "probe", fake_probe)
    monkeypatch.setattr(ceiling, "time_library", lambda name, code, shapes, cpu, python=None:
                        (f"{name} 1.0", [1e-3] * len(shapes)))
    monkeypatch.setattr(ceiling, "time_ours", lambda shapes, cpu: (None, "not timed"))
    monkeypatch.setattr(ceiling, "_installed", lambda name: "1.0")
    cache = tmp / f"{family}.json"
    points = [(load("mlp"), {"hidden_dim": 64, "batch": 8})]
    measure = (lambda: bandwidth.measure(1, tmp, cache)) if family == "bandwidth" else \
        (lambda: ceiling.measure(points, 1, {"numpy": ""}, cache))
    measure()
    spoiled = spoil(json.loads(cache.read_text()), path, how)
    if spoiled is None:
        return 0
    cache.write_text(text_of(spoiled, how))
    said = []
    monkeypatch.setattr("harness.records.base._stderr", said.append)
    record = measure()
    assert len(said) <= 1 and all(str(cache) in line for line in said), said
    numbers = [lv[k] for lv in record["levels"] for k in ("read_bytes_per_s", "rmw_bytes_per_s")] \
        if family == "bandwidth" else [row["gflops"] for row in record]
    assert all(isinstance(n, float) and 0 < n < 1e14 for n in numbers), numbers
    return 1


def record_family(family: str, path: tuple, how: str, tmp: Path, capfd) -> int:
    base = SLURM if family == "slurm" else ENV
    spoiled = spoil(json.loads(json.dumps(base)), path, how)
    if spoiled is None:
        return 0
    if family == "slurm":
        run = tmp / "r"
        run.mkdir()
        (run / "slurm.json").write_text(text_of(spoiled, how))
        run_command(["slurm", "status", str(run)], capfd)
    else:
        (tmp / "envs" / "one").mkdir(parents=True)
        (tmp / "envs" / "one" / "burtbench-env.json").write_text(text_of(spoiled, how))
        run_command(["envs", "--env-dir", str(tmp / "envs")], capfd)
    return 1


RAN = {"cases": 0, "commands": 0}


def fuzz(case, base_run, tmp_path, capfd, monkeypatch, full=False) -> None:
    RAN["cases"] += 1
    RAN["commands"] += _fuzz(case, base_run, tmp_path, capfd, monkeypatch, full)


def _fuzz(case, base_run, tmp_path, capfd, monkeypatch, full) -> int:
    family, path, how = case
    if family in ("bandwidth", "ceiling"):
        return cache_family(family, path, how, tmp_path, monkeypatch)
    if family in ("slurm", "env"):
        return record_family(family, path, how, tmp_path, capfd)
    return run_family(family, path, how, base_run, tmp_path, capfd, full)


def test_the_fuzzer_reaches_every_record_and_every_field_it_declares():
    assert {family for family, _, _ in CASES} == set(FAMILIES)
    assert len(CASES) > 1000 and {how for _, _, how in SAMPLE} >= set(HOW) - {"huge int"}


@pytest.mark.parametrize("case", SAMPLE, ids=lambda c: f"{c[0]}:{'.'.join(map(str, c[1]))}:{c[2]}")
def test_a_sample_of_spoiled_records_never_traces_back_nor_reaches_a_page(case, base_run, tmp_path, capfd,
                                                                        monkeypatch):
    fuzz(case, base_run, tmp_path, capfd, monkeypatch)


@pytest.fixture(scope="module", autouse=True)
def counts():
    """The fuzzer's counts, said at the end of the module (pytest -s shows them)."""
    yield
    print(f"\nfuzzed {RAN['cases']} cases, {RAN['commands']} commands run")


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}:{'.'.join(map(str, c[1]))}:{c[2]}")
def test_every_spoiled_record_never_traces_back_nor_reaches_a_page(case, base_run, tmp_path, capfd, monkeypatch):
    fuzz(case, base_run, tmp_path, capfd, monkeypatch, full=True)
