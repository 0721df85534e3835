"""Test-only fault engines, registered through BURTBENCH_ENGINE_MODULES=fake_engines.

Each misbehaves in one way a real framework can: a wrong answer, a crash mid-trial, a hang,
a failed import, runaway memory, garbage on stdout.
"""
import os
import signal
from pathlib import Path

from engines.base import EngineSpec

HERE = Path(__file__).resolve().parent
BOTH = ("tiny", "small")

ENGINES = [
    EngineSpec("fake", "ok", "python", "cpu", workloads=BOTH, module="fake_engines"),
    EngineSpec("fake", "wrong", "python", "cpu", workloads=BOTH, module="fake_engines"),
    EngineSpec("fake", "crash", "python", "cpu", workloads=BOTH, module="fake_engines"),
    EngineSpec("fake", "hang", "python", "cpu", workloads=BOTH, module="fake_engines"),
    EngineSpec("fake", "missing", "python", "cpu", workloads=BOTH, module="fake_engines"),
    EngineSpec("fake", "hog", "python", "cpu", workloads=BOTH, module="fake_engines"),
    EngineSpec("fake", "garbage", "native", "cpu", workloads=BOTH, kind="native",
               executable=str(HERE / "garbage_driver.sh")),
    EngineSpec("fake", "unstartable", "native", "cpu", workloads=BOTH, kind="native",
               executable=str(HERE / "unstartable_driver.sh")),
    EngineSpec("fake", "absent", "python", "cpu", workloads=BOTH, module="fake_engines",
               requires=("no_such_framework_xyz",)),
]


class Program:
    """Answers from the workload's own reference (the right numbers), then misbehaves as told."""

    def __init__(self, mode, workload, params):
        self.mode, self.steps = mode, 0
        self.answer = workload.reference(params)
        if mode == "wrong":
            self.answer = {k: v * (1 + 1e-9) for k, v in self.answer.items()}
        self.version = "fake 1.0"

    def step(self):
        self.steps += 1
        # The 1-iteration init run passes; the measured run misbehaves mid-trial.
        if self.steps < 3:
            return
        if self.mode == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        if self.mode == "hang":
            while True:
                pass
        if self.mode == "hog":
            self.ballast = bytearray(8 * 2**30)

    def outputs(self):
        return dict(self.answer)


def build(spec, workload, params, inputs=None):
    if spec.mode == "missing":
        import no_such_framework_xyz  # noqa: F401  (the import failure is the point)
    return Program(spec.mode, workload, params)


BUILDERS = {"graph": build}
