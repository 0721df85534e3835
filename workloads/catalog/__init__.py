"""One module per workload; each defines WORKLOAD (workloads/base.py). Adding a module here adds a workload."""
