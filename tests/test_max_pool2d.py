"""The max_pool2d workload at Burn 0.20's release shape (workloads/catalog/max_pool2d.py), its engines, and the
release's claims judged beside the paper's (workloads/claims_burn.csv, harness/report/release_claims.py)."""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
from test_claims import LINUX, repeated
from test_doctor import by_topic, run_doctor
from test_report import make_trial, write_run

from engines import all_engines, burn
from harness.judging import release
from harness.report import claim_files, release_claims
from harness.analysis.tables import build_tables
from harness.store.runs import load_run
from workloads import inputs as shared
from workloads import load
from workloads.catalog import max_pool2d
from workloads.claims import load_release_claims, load_release_times

WORKLOAD = load("max_pool2d")
# A point small enough for a brute-force pooling, with every part of the window at work.
SMALL = {"batch": 2, "channels": 3, "size": 9, "kernel": 3, "stride": 2, "padding": 1}
CUBECL, LIBTORCH, NDARRAY, TORCH = ("burn/cubecl/rust/cpu", "libtorch/eager/cpp/cpu", "burn/eager/rust/cpu",
                                    "torch/eager/python/cpu")
RELEASE = WORKLOAD.points()[0]


def test_the_point_is_the_releases_shape_and_burn_benchs_window():
    assert WORKLOAD.points() == [{"batch": 2, "channels": 32, "size": 512, "kernel": 5, "stride": 1, "padding": 2}]
    assert (WORKLOAD.kind, WORKLOAD.precision) == ("pool", "fp32")
    assert max_pool2d.output_side(RELEASE) == 512  # "same" pooling: the release's output is its input's size


@pytest.fixture(scope="module")
def small_inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pool-inputs")
    WORKLOAD.prepare(SMALL, 1, folder, None)
    return folder


def brute_force(x_nhwc: np.ndarray, p: dict) -> np.ndarray:
    n, h, w, c = x_nhwc.shape
    side = max_pool2d.output_side(p)
    out = np.empty((n, c, side, side), dtype=np.float32)
    for i, ch, oy, ox in np.ndindex(out.shape):
        window = [x_nhwc[i, y, x, ch] for y in range(oy * p["stride"] - p["padding"], oy * p["stride"] - p["padding"]
                                                     + p["kernel"]) for x in range(ox * p["stride"] - p["padding"],
                                                                                    ox * p["stride"] - p["padding"]
                                                                                    + p["kernel"])
                  if 0 <= y < h and 0 <= x < w]
        out[i, ch, oy, ox] = max(window)
    return out


def test_the_reference_is_the_pooling_of_the_prepared_input(small_inputs):
    x = shared.read_array(small_inputs / max_pool2d.INPUT)
    assert x.shape == (2, 9, 9, 3) and x.dtype == np.float32 and -1 <= x.min() < x.max() <= 1
    expected = max_pool2d.checksums(brute_force(x, SMALL))
    assert WORKLOAD.reference(SMALL, small_inputs) == pytest.approx(expected, rel=1e-15)
    assert WORKLOAD.check(SMALL, expected, "fp32", small_inputs).ok


def test_the_check_fails_an_output_in_the_wrong_layout(small_inputs):
    out = brute_force(shared.read_array(small_inputs / max_pool2d.INPUT), SMALL)
    transposed = max_pool2d.checksums(out.transpose(0, 1, 3, 2))  # the same values, H and W swapped
    check = WORKLOAD.check(SMALL, transposed, "fp32", small_inputs)
    assert not check.ok and "relative error" in check.reason


def test_pytorch_eager_matches_the_reference(small_inputs):
    from engines import torch as torch_engine

    spec = all_engines()[TORCH]
    program = torch_engine.BUILDERS["pool"](spec, WORKLOAD, SMALL, small_inputs)
    program.step()
    assert WORKLOAD.check(SMALL, program.outputs(), "fp32", small_inputs).ok


def test_the_libtorch_driver_matches_the_reference(small_inputs):
    spec = all_engines()[LIBTORCH]
    assert spec.prepare() is None
    params = [a for k, v in SMALL.items() for a in ("--param", f"{k}={v}")]
    done = subprocess.run([spec.executable, "max_pool2d", "--iterations", "3", "--inputs", str(small_inputs), *params],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["precision"] == "fp32"
    assert WORKLOAD.check(SMALL, result["outputs"], "fp32", small_inputs).ok
    missing = subprocess.run([spec.executable, "max_pool2d", "--iterations", "3", "--inputs", str(small_inputs)],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1 and "max_pool2d needs --param batch=N" in missing.stderr


def test_burns_backends_say_why_they_cannot_run_here():
    engines = all_engines()
    assert engines[NDARRAY].runs(WORKLOAD) and engines[CUBECL].runs(WORKLOAD)
    assert engines[CUBECL].unavailable_reason() == burn.CUBECL_CPU_MISSING
    assert "MLIR/LLVM" in burn.CUBECL_CPU_MISSING
    pool_rs = (burn.SOURCE_DIR / "src" / "pool.rs").read_text()
    # burn-bench's call: 5×5 window, dilation 1, floor rounding (Burn 0.20's six-argument max_pool2d).
    assert "max_pool2d(self.x.clone(), [k, k], [s, s], [p, p], [1, 1], false)" in pool_rs
    assert '"max_pool2d" =>' in (burn.SOURCE_DIR / "src" / "main.rs").read_text()


def test_doctor_says_why_cubecl_has_no_engine(tmp_path):
    finding = by_topic(run_doctor(tmp_path, "sys_vm", "proc_vm", cpu=1))["burn-cubecl"]
    assert finding.level == "info" and finding.message.endswith(burn.CUBECL_CPU_MISSING)


# ----------------------------------------------------------------------------- the release's claims

def judged(tmp_path, times_s: dict, **manifest):
    trials = [make_trial(engine, "max_pool2d", RELEASE, 0, seconds, iterations=20)
              for engine, seconds in times_s.items()]
    run = load_run(write_run(tmp_path / "run", LINUX, repeated(trials), **manifest))
    tables = build_tables(run)
    return tables, {v.claim.id: v for v in release.judge(run, tables)}


def test_the_release_claims_are_read_with_their_source_and_subject():
    claims = {c.id: c for c in load_release_claims()}
    c = claims["burn020-cubecl-vs-libtorch"]
    # Each factor is derived from the release's times, declared once (workloads/release_times.csv).
    assert (c.source, c.subject, c.engines) == ("release", CUBECL, (LIBTORCH,))
    assert c.stated == pytest.approx(3.64, abs=0.005) and c.stated_text == "×3.64 (16.96 / 4.66 ms)"
    assert claims["burn020-libtorch-vs-ndarray"].stated == pytest.approx(851.3 / 16.96)
    assert claims["burn020-cubecl-vs-ndarray"].stated == pytest.approx(851.3 / 4.66)
    assert load_release_times()[CUBECL] == ("CubeCL CPU", 4.66)


def test_the_releases_own_times_reproduce_its_ratios(tmp_path):
    _, v = judged(tmp_path, {CUBECL: 4.66e-3, LIBTORCH: 16.96e-3, NDARRAY: 851.3e-3})
    assert {k: x.verdict for k, x in v.items()} == dict.fromkeys(v, "reproduced")
    first = v["burn020-cubecl-vs-libtorch"]
    assert first.ours == pytest.approx(3.64, rel=0.01) and first.low < 3.64 < first.high
    assert first.at == f"max_pool2d: {LIBTORCH}" and "the release's ×3.64" in first.why


def test_a_slower_cubecl_is_not_reproduced_and_says_which_is_faster(tmp_path):
    _, v = judged(tmp_path, {CUBECL: 30e-3, LIBTORCH: 15e-3, NDARRAY: 600e-3})
    assert v["burn020-cubecl-vs-libtorch"].verdict == "not reproduced"
    assert "the other engine better" in v["burn020-cubecl-vs-libtorch"].why
    assert v["burn020-libtorch-vs-ndarray"].verdict == "partly"  # ×40 against the release's ×50.2


def test_a_backend_that_cannot_be_built_is_not_measurable_with_its_reason(tmp_path):
    why = "Burn's crates are neither vendored nor in cargo's cache"
    tables, v = judged(tmp_path, {LIBTORCH: 200e-3, TORCH: 210e-3},
                       unavailable={CUBECL: burn.CUBECL_CPU_MISSING, NDARRAY: why})
    assert {x.verdict for x in v.values()} == {"not measurable here"}
    assert v["burn020-libtorch-vs-ndarray"].why == f"ndarray is not available ({why})"
    assert v["burn020-cubecl-vs-libtorch"].why == f"CubeCL CPU is not available ({burn.CUBECL_CPU_MISSING})"
    page = "\n".join(release_claims.markdown(tables, list(v.values())))
    assert f"– **not measurable here**: ndarray is not available ({why})" in page
    assert "| libtorch/eager/cpp/cpu | LibTorch | 16.96 | 200.0 |" in page
    assert "| torch/eager/python/cpu | PyTorch eager | not in the release | 210.0 |" in page


def test_a_run_without_the_workload_has_no_release_section(tmp_path):
    trials = [make_trial(TORCH, "tiny", {"a": -41.0, "b": 2.0}, 0, 1e-4)]
    run = load_run(write_run(tmp_path / "run", LINUX, trials))
    tables = build_tables(run)
    assert release.judge(run, tables) == []
    claim_files.write(tmp_path, run, [], [], release=(tables, []))
    assert "release" not in (tmp_path / "claims.md").read_text()
