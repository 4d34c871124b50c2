"""Type inference: the :class:`TensorType` of a term, from its Ops, cached on each node."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from unification.variable import Var

from relgraph.exceptions import TypeCheckError
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.operators import register_operator
from relgraph.terms.term import Term, brief
from relgraph.terms.types import TensorType

__all__ = ["typeof"]


@register_operator("typeof")
def typeof(term: Any) -> TensorType:
    """The :class:`TensorType` of a term, inferred from its Ops and cached.

    Raises :class:`TypeCheckError` naming the offending subterm.

    Examples
    --------
    >>> import relgraph as rg
    >>> A, x = rg.matrix("A", shape=(3, 4)), rg.vector("x")
    >>> typeof(A @ x)
    TensorType(float64, shape=(3,))
    >>> typeof(2 * x.T)
    TensorType(float64, shape=(?,))
    """
    if type(term) is not Term:
        return _leaf_type(term)
    if term._type is None:
        # Only the untyped part is walked, so typing a new node over typed
        # children is O(arity).
        stack: list[tuple[Term, bool]] = [(term, False)]
        while stack:
            node, expanded = stack.pop()
            if node._type is not None:
                continue
            if expanded:
                node._type = _infer_node(node)
                continue
            stack.append((node, True))
            stack.extend((a, False) for a in node._tuple if type(a) is Term and a._type is None)
    return term._type


def _leaf_type(x: Any) -> TensorType:
    if isinstance(x, (Symbol, Constant)):
        return x.type
    if isinstance(x, (bool, int, float, complex, np.generic)):
        if type(x) is int:  # numpy's default integer, unless it does not hold x
            return _scalar_type(_INT if _INT_MIN <= x <= _INT_MAX else np.asarray(x).dtype)
        kind: Any = type(x)  # a Python or numpy scalar type names its dtype
        return _scalar_type(kind)
    if isinstance(x, Var):
        raise TypeCheckError(f"cannot type a logic variable {x}: the term is a pattern")
    raise TypeCheckError(f"{x!r} of type {type(x).__name__} is not a term")


_INT = np.asarray(0).dtype
_INT_MIN, _INT_MAX = int(np.iinfo(_INT).min), int(np.iinfo(_INT).max)


@functools.lru_cache(maxsize=64)
def _scalar_type(kind: Any) -> TensorType:
    """The 0-d type of a Python or numpy scalar type (of an int's dtype: its size
    decides it), made once."""
    return TensorType(np.dtype(kind), 0, ())


def _infer_node(node: Term) -> TensorType:
    op = node._tuple[0]
    infer = getattr(op, "infer_type", None)
    if infer is None:
        raise TypeCheckError(f"head {op!r} of {node} is not an Op")
    args = node._tuple[1:]
    # Parameters (an axis) follow the operands and have no type: None in their place.
    operands = len(op.operands(args))
    types = [a._type if type(a) is Term else _leaf_type(a) for a in args[:operands]]
    types += [None] * (len(args) - operands)
    try:
        return infer(types, args)
    except TypeCheckError as exc:
        raise TypeCheckError(f"ill-typed term {brief(node)}: {exc}") from None
