"""Workload registry: name -> Workload. Importing this imports no framework."""
from workloads import energy, gpt, mlp, save_load, small, tiny

WORKLOADS = {w.name: w for w in (tiny.WORKLOAD, small.WORKLOAD, save_load.WORKLOAD, mlp.WORKLOAD, gpt.WORKLOAD,
                                 energy.WORKLOAD)}
