"""The authors' programs as engines of the harness, built from the shared archive (or
$BURTBENCH_UPSTREAM): a smoke run of tiny and small through `burtbench run`, its trials, manifest
and report. Skipped where the archive is absent. GPT and makemore runs are `slow`."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from engines.authors.source import ENV_VAR
from harness.commands.cli import main
from harness.store import results

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "upstream" / "burtorch-b1a9d66.tar.gz"
AUTHORS = "burtorch-authors/eager/cpp/cpu"
MiB = 2**20


def upstream() -> str:
    env = os.environ.get(ENV_VAR, "").strip()
    if env and Path(env).exists():
        return env
    if SHARED.is_file():
        return str(SHARED)
    pytest.skip(f"the authors' source is not here: set {ENV_VAR} or provide {SHARED}")


pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")


def run(tmp_path: Path, monkeypatch, workloads: str, *extra: str) -> tuple[Path, list[dict], dict]:
    source = upstream()
    monkeypatch.setenv(ENV_VAR, "")  # the run sets it; this puts it back afterwards
    out = tmp_path / "results"
    code = main(["run", "--engine", "burtorch-authors", "--workload", workloads, "--profile", "smoke",
                 "--upstream", source, "--out", str(out), *extra])
    assert code == 0
    (run_dir,) = list(out.iterdir())
    return run_dir, results.read_trials(run_dir), results.read_manifest(run_dir)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    try:
        yield run(tmp_path_factory.mktemp("authors_smoke"), mp, "tiny,small")
    finally:
        mp.undo()


def test_tiny_and_small_run_as_trials_with_their_own_memory(smoke):
    _, trials, _ = smoke
    by = {t["workload"]: t for t in trials if t["engine"] == AUTHORS}
    assert set(by) == {"tiny", "small"}
    for workload, iterations in (("tiny", 200), ("small", 100)):
        t = by[workload]
        assert t["status"] == "ok", t["reason"]
        assert t["iterations"] == iterations and t["per_iter_s"]["mean"] > 0 and t["loop_time_s"] > 0
        assert t["init_time_s"] > 0 and t["wall_time_s"] > 0 and t["cpu_time_s"] is not None
        # Their process's own peaks (a few MiB), not the spawner's (pytest: tens of MiB).
        assert 1 * MiB < t["peak_resident_bytes"] < 16 * MiB, t["peak_resident_bytes"]
        assert t["peak_virtual_bytes"] >= t["peak_resident_bytes"] and "VmHWM" in t["peak_resident_source"]
        assert t["extra"]["ran_on_cpu"] == t["cpu"]
        assert t["extra"]["timer"]["line"] and "gettimeofday" in t["extra"]["timer"]["clock"]
        (change,) = t["extra"]["changes"]
        assert change["symbol"] == "kIterations" and change["new_value"] == str(iterations)
        assert change["old"].strip().startswith("constexpr size_t kIterations = ")


def test_the_checks_say_what_their_output_warrants(smoke):
    _, trials, _ = smoke
    by = {t["workload"]: t["check"] for t in trials if t["engine"] == AUTHORS}
    # tiny: right as far as 6 printed digits go, which cannot decide 1e-12.
    assert by["tiny"]["ok"] is None and by["tiny"]["status"] == "agrees_to_printed_digits"
    # small: their ReLU backward multiplies by relu's output, so two gradients are wrong.
    small = by["small"]
    assert small["ok"] is False and small["status"] == "mismatch"
    assert small["per_output"] == {"g": "agrees_to_printed_digits", "dg_da": "mismatch", "dg_db": "mismatch"}
    assert small["printed"] == {"g": "24.7041", "dg_da": "104.125", "dg_db": "680.286"}
    assert small["expected"]["dg_da"] == pytest.approx(47620 / 343, rel=1e-15)


def test_the_manifest_records_their_source_and_every_change(smoke):
    _, _, manifest = smoke
    assert manifest["plan"]["upstream"]
    record = manifest["engine_builds"][AUTHORS]
    assert record["source"]["commit"] == "b1a9d66aae60e7220e19bf9dada45416a731aa8e"
    variants = {b["variant"] for b in record["builds"]}
    assert variants == {"bin_tiny_example.kIterations=200", "bin_tiny_example.kIterations=1",
                        "bin_small_example.kIterations=100", "bin_small_example.kIterations=1"}
    for build in record["builds"]:
        assert build["ok"] and build["compiler"].get("cxx_flags")
        (change,) = build["changes"]
        assert {"file", "line", "old", "new"} <= set(change)


def test_the_report_shows_their_rows_and_page(smoke, tmp_path):
    run_dir, _, _ = smoke
    assert main(["report", str(run_dir), "--report-dir", str(tmp_path)]) == 0
    folder = tmp_path / run_dir.name
    small = (folder / "tables" / "small.md").read_text()
    assert "BurTorch (authors' code): burtorch-authors/eager/cpp/cpu" in small
    assert "✗ FAILED" in next(line for line in small.splitlines() if "authors' code" in line)
    page = (folder / "authors.md").read_text()
    assert "| small | 1 | FAILED |" in page and "dg_da = 104.125" in page


@pytest.mark.slow
def test_gpt_and_makemore_variants_run_and_record_their_losses(tmp_path, monkeypatch):
    _, trials, manifest = run(tmp_path, monkeypatch, "gpt,mlp", "--param", "batch=1", "--param", "hidden_dim=4")
    by = {t["workload"]: t for t in trials if t["engine"] == AUTHORS}
    for workload, params in (("gpt", 46289), ("mlp", 1755 + 1052 * 4)):
        t = by[workload]
        assert t["status"] == "ok", t["reason"]
        assert t["check"]["ok"] is None and t["check"]["status"] == "not comparable"
        assert len(t["check"]["got"]["losses"]) >= 1 and t["iterations"] == 4
        assert t["extra"]["param_count"] == params
        # They pin themselves to core 1, whatever the runner chose.
        assert t["extra"]["pinned_itself_to"] == 1 and t["extra"]["ran_on_cpu"] == 1
        assert t["per_iter_s"]["mean"] > 0 and t["peak_resident_bytes"] < 256 * MiB
    assert json.dumps(manifest["engine_builds"][AUTHORS]).count("k_batch_size") >= 1
