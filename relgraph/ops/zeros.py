"""Which values are never -0.0: an analysis of terms, and of e-classes.

IEEE floats have two zeros, which numpy's ``==`` takes as equal and ``1 / z`` does not.
A rewrite that keeps the sign of every zero needs to know where a value cannot be
-0.0: ``x + 0`` is ``x`` there, and ``log(1 + x)`` is ``log1p(x)`` (``log1p(-0.0)`` is
-0.0, ``log(1 + -0.0)`` 0.0).  In round-to-nearest arithmetic a sum is -0.0 only where
every term is; numpy's sums start from 0.0; the Ops below are positive or 0.0; an
integer has no -0.  Anything else may be -0.0 (the analysis is conservative).

The e-graph keeps the same fact per e-class (:mod:`relgraph.eqsat.egraph`) and shows
it on the holes of a view, as their ``never_minus_zero`` attribute.

>>> import relgraph as rg
>>> x, i = rg.vector("x"), rg.vector("i", "int64")
>>> never_minus_zero(rg.exp(x) + x), never_minus_zero(x + x), never_minus_zero(i)
(True, False, True)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from relgraph.ops.elemwise import abs, add, exp, exp2, sigmoid, sign, softplus, square
from relgraph.ops.reductions import logsumexp, mean, sum
from relgraph.ops.trig import cosh
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term

__all__ = ["never_minus_zero", "node_never_minus_zero", "leaf_never_minus_zero"]

#: Ops whose result is never -0.0: numpy's sums start from 0.0, the others are
#: positive or 0.0 wherever they are defined (``sign(-0.0)`` is 0.0).
NEVER_MINUS_ZERO = frozenset({exp, exp2, abs, sigmoid, softplus, cosh, sum, mean, square, sign,
                              logsumexp})  # fmt: skip


def node_never_minus_zero(op: Any, operands: Iterable[bool]) -> bool:
    """Whether ``op`` applied to operands of which ``operands`` says whether each is
    never -0.0 gives a value that is never -0.0."""
    return op in NEVER_MINUS_ZERO or (op is add and any(operands))


def leaf_never_minus_zero(value: Any) -> bool:
    """Whether a number, a constant or a symbol is never -0.0: no -0.0 among its
    values, an integer or bool dtype, or a hole of an e-class known to be."""
    if isinstance(value, Symbol):
        kind = value.type.dtype.kind
        return kind not in "fc" or bool(getattr(value, "never_minus_zero", False))
    v = np.asarray(value.value if type(value) is Constant else value)
    if v.dtype.kind not in "fc":
        return True
    return not bool(np.any((v == 0) & np.signbit(v.real)))


def never_minus_zero(t: Any) -> bool:
    """Whether the term ``t`` is never -0.0, for any input."""
    if type(t) is not Term:
        try:
            return leaf_never_minus_zero(t)
        except (TypeError, ValueError, AttributeError):  # a pattern variable
            return False
    try:
        if typeof(t).dtype.kind not in "fc":
            return True
    except Exception:  # a term with pattern variables: what its Ops say
        pass
    op = t._tuple[0]
    return node_never_minus_zero(op, (never_minus_zero(a) for a in op.operands(t._tuple[1:])))
