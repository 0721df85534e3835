"""A test-only framework with versions: `fakefw`, installed from wheels the test builds
(tests/tests_support.py: build_wheel), whose engine runs only in a managed environment (--env).

Its answer is the workload's own reference; its version is the installed package's, so the
trials say which environment ran them.
"""
from engines.base import EngineSpec

ENGINES = [
    EngineSpec("fakefw", "eager", "python", "cpu", workloads=("tiny", "small"), module=__name__,
               requires=("fakefw",), distribution="burtbench-fakefw"),
]


class Program:
    def __init__(self, workload, params):
        import fakefw

        self.answer = workload.reference(params)
        self.version = fakefw.__version__
        self.work = fakefw.work

    def step(self):
        self.work()

    def outputs(self):
        return dict(self.answer)


def build(spec, workload, params, inputs=None):
    return Program(workload, params)


BUILDERS = {"graph": build}
