"""Measures a child takes of itself just before it exits, and the parent's view of the child.

One module per concern (timer, memory, clocks, energy, affinity), OS branches inside each.
"""
