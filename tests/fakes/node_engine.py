"""Test-only engines for a cluster of several nodes: the measured run of a trial waits while the file
$BURTBENCH_FAKE_HOLD/<this node's host name> exists, so that a test holds each node's trials apart
and loses or freezes a node mid-trial without guessing how long a trial takes. On reaching the wait
it writes $BURTBENCH_FAKE_HOLD/<host name>.held: which node holds a trial, and of which array task."""
import os
import socket
import time
from pathlib import Path

from engines.base import EngineSpec

ENGINES = [EngineSpec("fake", name, "python", "cpu", workloads=("tiny", "small"), module="node_engine")
           for name in ("node", "node2")]


class Program:
    def __init__(self, workload, params):
        self.answer, self.steps, self.version = workload.reference(params), 0, "fake 1.0"

    def step(self):
        self.steps += 1
        hold = Path(os.environ.get("BURTBENCH_FAKE_HOLD", "/nonexistent"), socket.gethostname())
        if self.steps == 3 and hold.exists():  # the measured run; the init run has one step
            hold.with_suffix(".held").write_text(os.environ.get("SLURM_ARRAY_TASK_ID", "none"))
            while hold.exists():
                time.sleep(0.05)

    def outputs(self):
        return dict(self.answer)


BUILDERS = {"graph": lambda spec, workload, params, inputs=None: Program(workload, params)}
