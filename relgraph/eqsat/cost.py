"""Cost models: how expensive a term is, for choosing among equivalent terms.

A cost model sums the cost of each *distinct* compound subterm, so a subterm
used twice is paid for once (it is computed once); leaves are free.
:func:`shape_cost`, the default of :func:`relgraph.explore`, counts flops and
elements moved where shapes are known; :func:`op_cost` counts Op weights.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from relgraph.exceptions import TypeCheckError
from relgraph.ops.base import ALL_OPS
from relgraph.terms.infer import typeof
from relgraph.terms.term import Term
from relgraph.terms.traverse import subterms

__all__ = ["WEIGHTS", "op_cost", "shape_cost", "weighted", "per_node", "Cost"]

Cost = Callable[[Any], float]

# Rough relative costs per element, as each Op declares them: a dot is a reduction
# over a dimension, the transcendental functions cost several multiplies, the rest one.
WEIGHTS: dict[str, float] = {name: op.cost for name, op in ALL_OPS.items() if op.cost != 1.0}


def per_node(node_cost: Callable[[Term], float], name: str | None = None) -> Cost:
    """A cost model from the cost of one node: a term costs the sum over its distinct
    compound subterms (a subterm used twice is computed once).

    ``node_cost`` gets the node as a term; it may look at its Op and at the types of
    its operands.  The e-graph calls it on each e-node with its operands shown as
    typed placeholders, so that is all a node's cost may depend on.

    Examples
    --------
    >>> import relgraph as rg
    >>> x = rg.vector("x")
    >>> per_node(lambda node: 2.0)(rg.exp(x) + rg.exp(x))
    4.0
    """

    def cost(term: Any) -> float:
        return float(sum(node_cost(node) for node in subterms(term)))

    cost.node = node_cost  # type: ignore[attr-defined]
    cost.__name__ = name or str(getattr(node_cost, "__name__", "per_node"))
    return cost


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
    return per_node(lambda node: table.get(str(getattr(node.op, "name", "")), default), "weighted")


_DEFAULT = weighted(WEIGHTS)


def op_cost(term: Any) -> float:
    """Op weights: :data:`WEIGHTS` per distinct compound subterm, else 1.

    Examples
    --------
    >>> import relgraph as rg
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> op_cost(A @ x + A @ y), op_cost(A @ (x + y)), op_cost(rg.exp(x) + rg.exp(x))
    (21.0, 11.0, 5.0)
    """
    return _DEFAULT(term)


op_cost.node = _DEFAULT.node  # type: ignore[attr-defined]


def _node_shape_cost(node: Term) -> float:
    op = node.op
    weight = WEIGHTS.get(op.name, 1.0)
    try:
        out = typeof(node)
        ins = [typeof(a) for a in op.operands(node.args)]
    except TypeCheckError:
        return weight
    work = op.work(out, ins)
    if work is None:
        return weight
    moved = sum(t.size for t in (out, *ins) if type(t.size) is int)
    # A product's work counts its flops already; other Ops cost their weight per element.
    return float(work * (1.0 if op.name in ("dot", "matmul") else weight) + moved)


shape_cost = per_node(_node_shape_cost, "shape_cost")
shape_cost.__doc__ = """Flops and elements moved, where the symbols' shapes are known.

A node costs its work (``2*m*k*n`` for an ``(m, k) @ (k, n)`` product, the
Op's weight per element otherwise) plus the elements it reads and writes; a
node with an unknown shape costs its Op weight (:data:`WEIGHTS`), as
:func:`op_cost` does.  The default cost of :func:`relgraph.explore`.

Examples
--------
>>> import relgraph as rg
>>> A, B = rg.matrix("A", shape=(1000, 1000)), rg.matrix("B", shape=(1000, 1000))
>>> x = rg.vector("x", shape=1000)
>>> shape_cost((A @ B) @ x) > 100 * shape_cost(A @ (B @ x))
True
>>> shape_cost(rg.matrix("M") @ rg.vector("v")) == op_cost(rg.matrix("M") @ rg.vector("v"))
True
"""
