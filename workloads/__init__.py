"""Workload registry: name -> Workload. Importing this imports no framework.

A worker loads only its own workload (`load(name)`): the MLP and GPT modules import numpy,
which would otherwise add tens of MiB to every graph trial's measured memory.
"""
import importlib

NAMES = ("tiny", "small", "save_load", "mlp", "gpt", "energy")


def load(name: str):
    return importlib.import_module(f"workloads.{name}").WORKLOAD


def __getattr__(attr: str):
    if attr == "WORKLOADS":
        return {name: load(name) for name in NAMES}
    raise AttributeError(f"module 'workloads' has no attribute {attr!r}")
