"""Measures a child takes of itself just before it exits, and the parent's view of the child.

One module per concern, OS branches inside each: timer, clocks, tsc (cycles from CPU time where no
counter reads them), memory, energy and energy_sources, affinity (pinning), limits (the memory cap).
"""
