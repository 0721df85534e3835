"""The harness's own floor: the Python worker running an empty step, with no framework imported.

Every run that reports memory includes it (harness/planning/selection.py), so that a memory table shows
what part of each Python row is the worker itself and what part is the framework.
"""
from engines.base import EngineSpec

FLOOR = "none/empty/python/cpu"
# Metric ids (harness/analysis/metrics.py) that report a peak memory: a workload whose paper table
# shows one gets the floor row.
MEMORY_METRICS = ("paper_memory", "peak_private", "peak_resident", "peak_virtual")


class FloorEngine(EngineSpec):
    def runs(self, workload) -> bool:
        return workload.paper is not None and any(m in MEMORY_METRICS for m in workload.paper.metrics)


ENGINES = [FloorEngine("none", "empty", "python", "cpu", module=__name__,
                       label="the harness's floor (its worker, no framework)",
                       note="an empty step in the Python worker: the memory of a row without its framework")]


class EmptyProgram:
    """Computes nothing: its outputs cannot be checked, which its check says."""

    version = "none"
    extra = {"check": {"ok": None, "status": "not comparable", "max_rel_err": None, "expected": {}, "got": {},
                       "reason": "the floor computes nothing"}}

    def step(self) -> None:
        pass

    def outputs(self) -> dict:
        return {}


def empty_program(spec, workload, params, inputs=None) -> EmptyProgram:
    return EmptyProgram()


BUILDERS = {kind: empty_program for kind in ("graph", "training", "save_load")}
