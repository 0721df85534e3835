"""The Program the scalar-graph engines share."""
from __future__ import annotations


class GradientProgram:
    """A Program whose step is `compute() -> (g, dg/da, dg/db)` in the framework's own types.

    The last triple is kept as is and turned into Python floats only by outputs(), after the
    timed loop, so no conversion (and no device round trip) is timed that the engine does not need.
    `version`: a string, or a callable the worker calls once the peak memory is read.

    `paper_compute`, where given, is the same computation timed as the authors' script for the
    paper's row times it (workloads/timed_regions.csv): the worker steps with it under
    `--timing paper`, and with `compute` under `--timing lean` (and where there is none).
    """

    def __init__(self, compute, version, sync=None, extra: dict | None = None, paper_compute=None):
        self._compute = compute
        self._paper_compute = paper_compute
        if paper_compute is None:
            self.paper_step = None
        self._last: tuple | None = None
        self.version = version
        self.sync = sync
        self.extra = extra or {}

    def step(self) -> None:
        self._last = self._compute()

    def paper_step(self) -> None:
        self._last = self._paper_compute()

    def outputs(self) -> dict[str, float]:
        g, dg_da, dg_db = self._last
        return {"g": float(g), "dg_da": float(dg_da), "dg_db": float(dg_db)}


def distribution_version(name: str) -> str:
    """A package's version from its metadata: importlib.metadata costs ~2.6 MiB, so engines pass
    this as a callable that the worker calls after reading the peak memory."""
    from importlib.metadata import version

    return version(name)
