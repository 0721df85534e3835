"""Workload registry: name -> Workload. Importing this imports no framework."""
from workloads import gpt, mlp, small, tiny

WORKLOADS = {w.name: w for w in (tiny.WORKLOAD, small.WORKLOAD, mlp.WORKLOAD, gpt.WORKLOAD)}
