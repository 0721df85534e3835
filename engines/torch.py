"""PyTorch: eager, TorchScript (traced), torch.compile, and eager on CUDA.

Tiny and small graphs: every mode rebuilds the autograd graph each step and runs backward();
the traced and compiled modes only change how the forward is executed. FP64 leaves, one thread.
MLP and GPT (CPU modes): FP32 SGD training, in engines/models_torch.py. Save/load of the small
graph's activations (eager, TorchScript, and the NumPy bytes path as mode "numpy"): engines/save_load.py.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from engines.base import EngineSpec
from engines.graphs import GRAPHS, GradientProgram


def nvidia_driver_missing() -> str | None:
    """Why CUDA cannot be there, judged without importing torch: no NVIDIA driver in sight."""
    if os.path.exists("/proc/driver/nvidia/version") or shutil.which("nvidia-smi"):
        return None
    return "no NVIDIA driver visible (no /proc/driver/nvidia/version, no nvidia-smi)"


GRAPHS_AND_TRAINING = ("tiny", "small", "energy", "mlp", "gpt")


def _spec(mode: str, device: str = "cpu", condition=None, workloads=GRAPHS_AND_TRAINING) -> EngineSpec:
    return EngineSpec("torch", mode, "python", device, workloads=workloads, module="engines.torch",
                      requires=("torch",), condition=condition)


ENGINES = [
    _spec("eager", workloads=(*GRAPHS_AND_TRAINING, "save_load")),
    _spec("torchscript", workloads=(*GRAPHS_AND_TRAINING, "save_load")),
    _spec("compile"),
    _spec("eager", "gpu", nvidia_driver_missing, workloads=("tiny", "small", "energy")),
    # The paper's "PyTorch -> NumPy -> Bytes" row of Table 4 (engines/save_load.py): save/load only.
    _spec("numpy", workloads=("save_load",)),
]


def _single_thread(torch) -> None:
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # settable once per process, before any inter-op work: already 1 or too late to change


def _device(torch, spec: EngineSpec) -> str:
    if spec.device == "cpu":
        return "cpu"
    if not torch.cuda.is_available():
        raise ImportError(f"torch {torch.__version__} sees no CUDA device")
    return "cuda"


def _forward(torch, mode: str, fn, a, b):
    def g_of(a, b):
        return fn(a, b, torch.relu)

    if mode == "eager":
        return g_of
    if mode == "torchscript":
        return torch.jit.trace(g_of, (a, b))
    if mode == "compile":
        return torch.compile(g_of, fullgraph=True)
    raise ValueError(f"unknown torch mode {mode!r}")


def build(spec: EngineSpec, workload: str, params: dict, inputs: Path | None = None):
    import torch

    _single_thread(torch)
    if workload in ("mlp", "gpt"):
        from engines import models_torch

        return models_torch.build(spec.mode, workload, inputs)
    if workload == "save_load":
        from engines import save_load

        return save_load.torch_program(torch, spec.mode, params)
    device = _device(torch, spec)
    fn = GRAPHS[workload]
    a = torch.tensor(params["a"], dtype=torch.float64, device=device, requires_grad=True)
    b = torch.tensor(params["b"], dtype=torch.float64, device=device, requires_grad=True)
    forward = _forward(torch, spec.mode, fn, a, b)

    def compute():
        a.grad = None
        b.grad = None
        g = forward(a, b)
        g.backward()
        return g.detach(), a.grad, b.grad

    sync = torch.cuda.synchronize if device == "cuda" else None
    return GradientProgram(compute, torch.__version__, sync)
