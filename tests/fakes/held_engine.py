"""A test-only engine whose measured run waits while the file $BURTBENCH_FAKE_HOLD exists, so that a
test can kill a task of a SLURM array mid-trial without guessing how long a trial takes. On
reaching the wait it writes $BURTBENCH_FAKE_HOLD.<array task id>: which task holds a trial."""
import os
import time
from pathlib import Path

from engines.base import EngineSpec

ENGINES = [EngineSpec("fake", "held", "python", "cpu", workloads=("tiny", "small"), module="held_engine")]


class Program:
    def __init__(self, workload, params):
        self.answer, self.steps, self.version = workload.reference(params), 0, "fake 1.0"

    def step(self):
        self.steps += 1
        hold = os.environ.get("BURTBENCH_FAKE_HOLD")
        if self.steps == 3 and hold and Path(hold).exists():  # the measured run; the init run has one step
            Path(f"{hold}.{os.environ.get('SLURM_ARRAY_TASK_ID', 'none')}").touch()
            while Path(hold).exists():
                time.sleep(0.05)

    def outputs(self):
        return dict(self.answer)


BUILDERS = {"graph": lambda spec, workload, params, inputs=None: Program(workload, params)}
