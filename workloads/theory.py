"""The paper's "In theory, registers only" rows (Tables 2 and 3): a lower bound, not a measurement.

If every value lived in a register and every scalar operation took one clock cycle, one
iteration of a graph (forward and backward) would take as many cycles as it has operations,
and no engine could do it in less time than operations / clock rate. The operations are
counted by running the workload's own graph (workloads/graphs.py) on a counting scalar:

- forward: one operation per +, -, *, /, unary minus and ReLU; x**n is n - 1 multiplications;
- backward, per operand that is a node: its local derivative times the incoming gradient.
  That costs nothing for + (derivative 1), one negation for the right side of - and for unary
  minus, one multiplication for * and for / by a constant, one select for ReLU, two for x**n
  (n times the x**(n-1) the forward left in a register, times the gradient), and three for
  c / x (-(c / x) / x times the gradient). Adding into a gradient that already holds a
  contribution is one more addition; the first contribution is just the value.
- constants are folded: they have no gradient and cost nothing to make.

The paper gives no counting rule; these give 19 operations for the tiny graph, consistent with
its Table 2 bound (Ω(0.0004) s for 100,000 iterations at 4.48 GHz, about 18 cycles each), and
56 for the small graph, where its Table 3 prints 76 cycles.
"""
from __future__ import annotations

from dataclasses import dataclass

from workloads.base import Workload


class _Tape:
    def __init__(self):
        self.forward_ops = 0
        self.nodes: list[_Counted] = []


class _Counted:
    """A scalar that records the operations made from it; `edges` are (operand, backward cost)."""

    def __init__(self, tape: _Tape, value: float, edges: list, forward_cost: int):
        self.tape, self.value = tape, value
        self.edges = [(node, cost) for node, cost in edges if isinstance(node, _Counted)]
        tape.forward_ops += forward_cost
        tape.nodes.append(self)

    def _make(self, value: float, edges: list, forward_cost: int = 1) -> _Counted:
        return _Counted(self.tape, value, edges, forward_cost)

    def __add__(self, other):
        return self._make(self.value + _value(other), [(self, 0), (other, 0)])

    __radd__ = __add__

    def __sub__(self, other):
        return self._make(self.value - _value(other), [(self, 0), (other, 1)])

    def __rsub__(self, other):
        return self._make(_value(other) - self.value, [(self, 1)])

    def __neg__(self):
        return self._make(-self.value, [(self, 1)])

    def __mul__(self, other):
        return self._make(self.value * _value(other), [(self, 1), (other, 1)])

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, _Counted):
            raise NotImplementedError("division by a node: the graphs divide by constants only")
        return self._make(self.value / other, [(self, 1)])

    def __rtruediv__(self, other):
        return self._make(other / self.value, [(self, 3)])

    def __pow__(self, n):
        if not (isinstance(n, int) and n >= 2):
            raise NotImplementedError("x**n is counted for whole n >= 2 only")
        return self._make(self.value**n, [(self, 2)], forward_cost=n - 1)


def _value(x) -> float:
    return x.value if isinstance(x, _Counted) else x


def _relu(x: _Counted) -> _Counted:
    return x._make(max(x.value, 0.0), [(x, 1)])


def op_counts(workload: Workload) -> tuple[int, int, float]:
    """(forward operations, backward operations, g) of one iteration of a graph workload at its point."""
    point = workload.points()[0]
    tape = _Tape()
    g = workload.graph(_Counted(tape, point["a"], [], 0), _Counted(tape, point["b"], [], 0), _relu)
    has_gradient: set[int] = set()
    backward_ops = 0
    for node in reversed(tape.nodes):  # the tape is in topological order
        for operand, cost in node.edges:
            backward_ops += cost + (id(operand) in has_gradient)
            has_gradient.add(id(operand))
    return tape.forward_ops, backward_ops, g.value


@dataclass(frozen=True)
class Bound:
    """The lower bound for one iteration of a graph: operations at one per cycle, at `clock_hz`."""
    forward_ops: int
    backward_ops: int
    clock_hz: float | None
    clock_source: str

    @property
    def cycles(self) -> int:
        return self.forward_ops + self.backward_ops

    @property
    def seconds(self) -> float | None:
        return None if self.clock_hz is None else self.cycles / self.clock_hz


def bound(workload: Workload, clock_hz: float | None, clock_source: str) -> Bound:
    forward, backward, _ = op_counts(workload)
    return Bound(forward, backward, clock_hz, clock_source)
