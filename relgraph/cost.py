"""Cost models: how expensive a term is, for choosing among equivalent terms.

The default, :func:`op_cost`, is an op-weighted node count: each *distinct*
compound subterm costs the weight of its Op, so a subterm used twice is paid
for once (it is computed once).  Leaves are free.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from relgraph.traverse import subterms

__all__ = ["WEIGHTS", "op_cost", "weighted", "Cost"]

Cost = Callable[[Any], float]

# Rough relative costs per element: a dot is a reduction over a dimension, the
# transcendental functions cost several multiplies, the rest one flop.
WEIGHTS: dict[str, float] = {
    "dot": 10.0,
    "exp": 4.0,
    "log": 4.0,
    "log1p": 4.0,
    "expm1": 4.0,
    "pow": 4.0,
    "sqrt": 2.0,
    "true_div": 2.0,
    "sum": 2.0,
    "max": 2.0,
}


def weighted(weights: Mapping[str, float], default: float = 1.0) -> Cost:
    """A cost model from weights by Op name (``default`` for unlisted Ops).

    Examples
    --------
    >>> import relgraph as rg
    >>> x, y = rg.vector("x"), rg.vector("y")
    >>> weighted({"exp": 10})(rg.exp(x) + rg.exp(x) * y)
    12.0
    """
    table = dict(weights)

    def cost(term: Any) -> float:
        return float(
            sum(table.get(getattr(node.op, "name", None), default) for node in subterms(term))
        )

    cost.__name__ = "weighted"
    return cost


_DEFAULT = weighted(WEIGHTS)


def op_cost(term: Any) -> float:
    """The default cost: :data:`WEIGHTS` per distinct compound subterm, else 1.

    Examples
    --------
    >>> import relgraph as rg
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> op_cost(A @ x + A @ y), op_cost(A @ (x + y)), op_cost(rg.exp(x) + rg.exp(x))
    (21.0, 11.0, 5.0)
    """
    return _DEFAULT(term)
