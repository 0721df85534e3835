"""Experiment behind DIFFERENCES["gpt-backward"]: does one backward per token loss, as their GPT program
calls it (main_gpt.cpp:1128-1131), give the gradient of the summed (or mean) loss?

A tiny graph with the GPT's shape of sharing: a node h0 feeds the first loss and, through h1, the
second, as an early position's attention keys and values feed every later token's loss.

    w, x0, x1 leaves;  h0 = w*x0;  h1 = w*x1 + h0;  L0 = h0^2;  L1 = h1^2
    d(L0 + L1)/dw = 2 h0 x0 + 2 h1 (x1 + x0)

The program (ours) calls their backwardWithScratchStorage<..., true, true, false> once per loss, as
the GPT program does, and once on L0 + L1; it is compiled with the flags and libraries of their
built bin_tiny_example (build.compile_against).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests_support import shared_upstream

from engines.authors import build as builder

EXPERIMENT = r"""
// burtbench experiment: losses sharing a node, one backward per loss vs one backward of their sum
#include "burtcore/include/burtorch.h"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
    const double wv = atof(argv[1]), x0v = atof(argv[2]), x1v = atof(argv[3]);
    Value<double>::deactiveUnusedNodes();
    auto chk = Value<double>::checkpointForNeurons();
    burt::MutableData order, leaves, stack;
    {
        Value<double> w(wv), x0(x0v), x1(x1v);
        Value<double> h0 = w * x0;
        Value<double> h1 = w * x1 + h0;
        Value<double> L0 = sqr(h0);
        Value<double> L1 = sqr(h1);
        backwardWithScratchStorage<decltype(L0), true, true, false>(L0, order, leaves, stack);
        backwardWithScratchStorage<decltype(L1), true, true, false>(L1, order, leaves, stack);
        printf("per_loss %.17g\n", w.gradCopy());
    }
    Value<double>::restoreCheckpoint(chk);
    {
        Value<double> w(wv), x0(x0v), x1(x1v);
        Value<double> h0 = w * x0;
        Value<double> h1 = w * x1 + h0;
        Value<double> S = sqr(h0) + sqr(h1);
        backwardWithScratchStorage<decltype(S), true, true, false>(S, order, leaves, stack);
        printf("summed %.17g\n", w.gradCopy());
        printf("loss %.17g\n", S.dataCopy());
    }
    Value<double>::restoreCheckpoint(chk);
    Value<double>::cleanFull();
    Value<float>::cleanFull();
    return 0;
}
"""


@pytest.fixture(scope="module")
def experiment(tmp_path_factory) -> Path:
    tree = shared_upstream()
    base = builder.build(tree, "bin_tiny_example")
    assert base.ok, base.reason
    folder = tmp_path_factory.mktemp("gpt_backward")
    (folder / "experiment.cpp").write_text(EXPERIMENT)
    exe = folder / "experiment"
    why = builder.compile_against(base, folder / "experiment.cpp", exe)
    assert why is None, why
    return exe


def run(exe: Path, w: float, x0: float, x1: float) -> dict[str, float]:
    out = subprocess.run([str(exe), repr(w), repr(x0), repr(x1)], capture_output=True, text=True, check=True,
                         stdin=subprocess.DEVNULL, timeout=60).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def loss(w: float, x0: float, x1: float) -> float:
    h0 = w * x0
    h1 = w * x1 + h0
    return h0 * h0 + h1 * h1


@pytest.mark.parametrize("w,x0,x1", [(0.75, 1.5, -0.5), (-1.25, 0.5, 2.0), (2.0, -3.0, 0.25)])
def test_one_backward_per_loss_drops_the_later_losses_gradient_through_shared_nodes(experiment, w, x0, x1):
    got = run(experiment, w, x0, x1)
    h0, h1 = w * x0, w * x1 + w * x0
    exact = 2 * h0 * x0 + 2 * h1 * (x1 + x0)
    # A central finite difference of the summed loss agrees with the analytic gradient...
    eps = 1e-6
    fd = (loss(w + eps, x0, x1) - loss(w - eps, x0, x1)) / (2 * eps)
    assert fd == pytest.approx(exact, rel=1e-7)
    # ...and so does their library when asked for the gradient of the sum in one backward.
    assert got["summed"] == pytest.approx(exact, rel=1e-12)
    assert got["loss"] == pytest.approx(loss(w, x0, x1), rel=1e-12)
    # One backward per loss, as their GPT program does: L1's backward skips h0, which L0's backward
    # already visited (both roots are fresh, so both backward passes mark with visit number 1), and
    # L1's contribution through h0, 2 h1 x0, never reaches w.
    assert got["per_loss"] == pytest.approx(2 * h0 * x0 + 2 * h1 * x1, rel=1e-12)
    assert got["per_loss"] != pytest.approx(exact, rel=1e-3)
    assert got["per_loss"] - exact == pytest.approx(-2 * h1 * x0, rel=1e-9)
