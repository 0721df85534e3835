"""The tiny and small graphs, written once over operator overloading.

Every framework here overloads +, -, *, /, ** and unary minus on its scalar type (Python numbers
on either side), so one definition serves all of them; only ReLU is spelled differently, and is
passed in. `x = x + y` rather than `x += y`: a new node each time, as in micrograd and the paper.
"""
from __future__ import annotations


def tiny(a, b, relu):
    c = a + b
    d = a * b + b**3
    e = c - d
    f = e**2
    return f / 2


def small_activations(a, b, relu) -> tuple:
    """micrograd's example, returning the final values of its intermediate nodes c, d, e, f and g."""
    c = a + b
    d = a * b + b**3
    c = c + (c + 1)
    c = c + (1 + c + (-a))
    d = d + (d * 2 + relu(b + a))
    d = d + (3 * d + relu(b - a))
    e = c - d
    f = e**2
    g = f / 2.0
    g = g + 10.0 / f
    return c, d, e, f, g


def small(a, b, relu):
    return small_activations(a, b, relu)[-1]
