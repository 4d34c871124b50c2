"""Reverse-mode differentiation of terms: each Op's pullback (declared where the Op
is defined, :attr:`relgraph.ops.base.Op.pullback`) applied once per node of the
term's DAG, from the output back to the arguments, so that shared subterms are
differentiated once and the forward values are reused.

The cotangent of every node has that node's shape and dtype.  An elementwise Op's
operand that was broadcast gets its cotangent summed over the broadcast axes; an axis
the types leave open (``?``) is taken not to broadcast, and the gradient of an
argument checks, when it runs, that it has the argument's shape (an axis that
broadcasts at run time makes the call raise, never return a wrong gradient): give a
symbol's broadcasting axis the size 1 in its type.

:func:`relgraph.grad` (the public entry, which also rewrites both ways) is built on
:func:`vjp_terms`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from relgraph.exceptions import GradientError
from relgraph.ops.elemwise import add, array_leaves, astype, expand_as
from relgraph.ops.reductions import sum as sum_
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Symbol
from relgraph.terms.term import Term, brief
from relgraph.terms.traverse import subterms

__all__ = ["vjp_terms", "differentiable"]


def differentiable(x: Any) -> bool:
    """Whether a cotangent can flow to ``x``: its dtype is a real float."""
    return typeof(x).dtype.kind == "f"


def vjp_terms(output: Any, wrt: Sequence[Symbol], cotangent: Any) -> list[Any]:
    """The terms of ``cotangent``'s vector-Jacobian product with ``output``, one per
    symbol of ``wrt`` (each with that symbol's shape and dtype).

    ``cotangent`` has ``output``'s shape; a symbol ``output`` does not depend on gets
    zeros.  Raises :class:`GradientError` naming an Op without a derivative that the
    output depends on through ``wrt``.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> x = rg.vector("x")
    >>> (dx,) = vjp_terms(rg.sum(rg.exp(x)), [x], np.float64(1.0))
    >>> rg.pprint(dx)
    'exp(x)'
    >>> rg.evaluate(dx, {x: np.array([0.0, 1.0])}).tolist() == np.exp([0.0, 1.0]).tolist()
    True
    """
    targets = set(wrt)
    order = list(subterms(output))
    needed = _depending(order, targets)
    cotangents: dict[Any, list[Any]] = defaultdict(list)
    if output in needed or output in targets:
        cotangents[output].append(_fit(cotangent, output))
    for node in reversed(order):
        if node not in needed or node not in cotangents:
            continue
        g = _total(cotangents.pop(node))
        rule = node.op.pullback
        if rule is None:
            raise GradientError(f"{node.op.name} has no derivative (in {brief(node, 80)})")
        for a, ct in zip(node.op.operands(node.args), rule(g, node)):
            if ct is not None and (a in needed or a in targets) and differentiable(a):
                cotangents[a].append(_fit(ct, a))
    return [_gradient(cotangents.get(x), x) for x in wrt]


def _depending(order: list[Term], targets: set[Symbol]) -> set[Any]:
    """The nodes (children before parents in ``order``) that depend on ``targets``."""
    found: set[Any] = set()
    for node in order:
        if any(a in targets or a in found for a in node.op.operands(node.args)):
            found.add(node)
    return found


def _total(parts: list[Any]) -> Any:
    return parts[0] if len(parts) == 1 else add(*parts)


def _fit(ct: Any, x: Any) -> Any:
    """``ct`` summed over the axes ``x`` was broadcast along, spread over the axes
    ``ct`` lacks, in ``x``'s dtype: a cotangent of ``x``."""
    want, have = typeof(x), typeof(ct)
    lead = have.ndim - want.ndim
    if lead > 0:
        ct = sum_(ct, tuple(range(lead)))
    shape = typeof(ct).shape
    summed = tuple(
        k for k, (d, w) in enumerate(zip(shape[-want.ndim :] if want.ndim else (), want.shape))
        if w == 1 and d != 1
    )  # fmt: skip
    if summed:
        ct = sum_(ct, summed, True)
    shape = typeof(ct).shape
    if len(shape) < want.ndim or any(d == 1 and w != 1 for d, w in zip(shape, want.shape)):
        ct = expand_as(ct, x)
    if typeof(ct).dtype != want.dtype:
        ct = astype(ct, want.dtype.name)
    return ct


def _gradient(parts: list[Any] | None, x: Symbol) -> Any:
    """The gradient of ``x``: zeros where nothing flows; checked to have ``x``'s
    shape when the call runs, where the type leaves a size open."""
    want = typeof(x)
    if not parts:
        return expand_as(np.zeros((), want.dtype)[()], x)
    g = _total(parts)
    if array_leaves(g) == {x}:
        return g  # elementwise in x and scalars: x's shape
    if None in want.shape or typeof(g).shape != want.shape:
        g = expand_as(g, x)
    return g
