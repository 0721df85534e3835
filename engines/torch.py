"""PyTorch: eager, TorchScript (traced), torch.compile, and eager on CUDA.

Scalar graphs: every mode rebuilds the autograd graph each step and runs backward(); the traced
and compiled modes only change how the forward is executed. FP64 leaves, one thread.
Training (CPU modes): FP32 SGD, the models in engines/torch_models.py. Save/load of the small
graph's activations (eager, TorchScript, and the NumPy bytes path as mode "numpy"): engines/save_load.py.
max_pool2d (eager): engines/torch_pool.py.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from engines.base import EngineSpec
from engines.programs import GradientProgram

# The workloads engines/torch_models.py has a model for.
TRAINING = ("mlp", "gpt")


def nvidia_driver_missing() -> str | None:
    """Why CUDA cannot be there, judged without importing torch: no NVIDIA driver in sight."""
    if os.path.exists("/proc/driver/nvidia/version") or shutil.which("nvidia-smi"):
        return None
    return "no NVIDIA driver visible (no /proc/driver/nvidia/version, no nvidia-smi)"


def _spec(mode: str, kinds: tuple, workloads: tuple = (), device: str = "cpu", condition=None, paper_row=None,
          paper_variant=None) -> EngineSpec:
    return EngineSpec("torch", mode, "python", device, kinds=kinds, workloads=workloads, module=__name__,
                      requires=("torch",), condition=condition, paper_row=paper_row, paper_variant=paper_variant)


ENGINES = [
    _spec("eager", ("graph", "save_load", "pool"), TRAINING, paper_row=("pytorch", "eager", "python", "cpu")),
    _spec("torchscript", ("graph", "save_load"), TRAINING, paper_row=("pytorch", "graph", "torchscript", "cpu")),
    _spec("compile", ("graph",), TRAINING),
    _spec("eager", ("graph",), device="gpu", condition=nvidia_driver_missing,
          paper_row=("pytorch", "eager", "python", "gpu")),
    # The paper's "PyTorch -> NumPy -> Bytes" row of Table 4: save/load only.
    _spec("numpy", ("save_load",), paper_row=("pytorch", "eager", "python", "cpu"),
          paper_variant="PyTorch -> NumPy -> Bytes"),
]


def _import_single_threaded():
    import torch

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # settable once per process, before any inter-op work: already 1 or too late to change
    return torch


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


def graph_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None) -> GradientProgram:
    torch = _import_single_threaded()
    device = _device(torch, spec)
    a = torch.tensor(params["a"], dtype=torch.float64, device=device, requires_grad=True)
    b = torch.tensor(params["b"], dtype=torch.float64, device=device, requires_grad=True)
    forward = _forward(torch, spec.mode, workload.graph, a, b)

    def compute():
        a.grad = None
        b.grad = None
        g = forward(a, b)
        g.backward()
        return g.detach(), a.grad, b.grad

    def paper_compute():
        # The authors' scripts make both leaves inside the timed loop (on the device: a copy there).
        a = torch.tensor(params["a"], dtype=torch.float64, device=device, requires_grad=True)
        b = torch.tensor(params["b"], dtype=torch.float64, device=device, requires_grad=True)
        g = forward(a, b)
        g.backward()
        return g.detach(), a.grad, b.grad

    sync = torch.cuda.synchronize if device == "cuda" else None
    return GradientProgram(compute, torch.__version__, sync, paper_compute=paper_compute)


def training_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None):
    _import_single_threaded()
    from engines import torch_models  # the models (and numpy) only for training: graph trials stay lean

    return torch_models.build(spec.mode, workload, inputs)


def save_load_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None):
    from engines import save_load  # save/load trials only: the others' memory stays lean

    return save_load.torch_program(_import_single_threaded(), spec.mode, workload, params)


def pool_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None):
    from engines import torch_pool

    return torch_pool.PoolProgram(_import_single_threaded(), params, inputs)


BUILDERS = {"graph": graph_program, "training": training_program, "save_load": save_load_program,
            "pool": pool_program}
