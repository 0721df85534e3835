"""tinygrad's rows: unavailable with the reason where clang is missing, and both rows train the MLP and
the GPT like the FP64 reference (their graph rows are checked in tests/test_engines.py).

tinygrad compiles each kernel with clang in a row's first step: seconds for the MLP, 15 s to a minute
for the GPT on 2 shared cores, so the GPT cases are slow ones.
"""
from __future__ import annotations

import pytest

from engines import all_engines
from engines import tinygrad as tinygrad_engines
from tests.test_mlp_gpt import trains_like_the_reference
from workloads import load

ROWS = ("tinygrad/eager/python/cpu", "tinygrad/jit/python/cpu")
POINTS = (("mlp", {"hidden_dim": 4, "batch": 1}), pytest.param("gpt", {"batch": 2}, marks=pytest.mark.slow))


def test_without_clang_the_rows_are_unavailable_and_say_why(monkeypatch):
    monkeypatch.setattr(tinygrad_engines.shutil, "which", lambda name: None)
    for row in ROWS:
        reason = all_engines()[row].condition()
        assert "clang" in reason and "make clang" in reason, reason


def test_the_c_compiler_of_the_build_is_not_tinygrads(monkeypatch):
    # CC=gcc (for our C++ build) would make tinygrad call gcc, which cannot build its kernels.
    monkeypatch.setenv("CC", "gcc")
    monkeypatch.setattr(tinygrad_engines.shutil, "which", lambda name: "/usr/bin/gcc" if name == "gcc" else None)
    assert "clang" in all_engines()[ROWS[0]].condition()


def test_both_rows_run_every_workload_of_the_issue():
    engines = all_engines()
    for row in ROWS:
        assert all(engines[row].runs(load(w)) for w in ("tiny", "small", "mlp", "gpt")), row


@pytest.mark.parametrize("workload,params", POINTS, ids=["mlp", "gpt"])
@pytest.mark.parametrize("engine_id", ROWS)
def test_row_trains_like_the_fp64_reference(engine_id, workload, params, tmp_path):
    # Three losses, each its own step's (TinyJit's replays), from the start the builder's two steps set back.
    w = load(workload)
    w.prepare(params, w.warmup["smoke"] + w.iterations["smoke"], tmp_path, None)
    trains_like_the_reference(engine_id, workload, params, tmp_path)
