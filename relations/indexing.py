"""Indexing before elementwise code: compute only the elements that are read.

``take_along_axis(f(a, b), idx, axis)`` reads one element of ``f(a, b)`` per index;
where ``a`` has the shape of ``f(a, b)`` and ``b`` has size 1 along ``axis`` (a
reduction of ``a`` with ``keepdims``, a scalar, or a shape known to be so), it is
``f(take_along_axis(a, idx, axis), b)``: the same elements, computed from the same
values, at the same indices (an index out of bounds for ``f(a, b)`` is out of bounds
for ``a``).  Softmax cross-entropy, ``log_softmax(z)[np.arange(n), labels]``, then
computes one logit minus the row's log-sum-exp per row instead of a whole matrix.

>>> import relgraph as rg
>>> Z, labels = rg.matrix("Z"), rg.matrix("labels", "int64")
>>> logp = Z - rg.logsumexp(Z, axis=1, keepdims=True)
>>> rg.pprint(next(rg.rewrites(rg.take_along_axis(logp, labels, axis=1), take_elementwiseo)))
'(take_along_axis(Z, labels, axis=1) - logsumexp(Z, axis=1, keepdims=True))'
"""

from __future__ import annotations

from typing import Any

from relations.databases import register, specialize_db
from relations.tags import FAST_RUN, SPECIALIZE
from relgraph import ops
from relgraph.logic.goals import computeo, has_head, is_number
from relgraph.ops.reductions import Reduce
from relgraph.rewriting.declarations import forward_only
from relgraph.terms.infer import typeof
from relgraph.terms.term import Term

__all__ = ["take_elementwiseo"]


def _kept_along(b: Any, a: Any, axis: int) -> bool:
    """Whether ``b`` beside ``a`` has size 1 along ``axis`` and ``a``'s size or 1
    along every other axis (then ``a op b`` has ``a``'s shape): a number, a
    reduction of ``a`` along ``axis`` with ``keepdims``, elementwise code of those,
    or known shapes."""
    if is_number(b) or typeof(b).ndim == 0:
        return True
    if type(b) is Term and b.op.elementwise:  # -logsumexp(a, axis, keepdims=True)
        return all(_kept_along(c, a, axis) for c in b.op.operands(b.args))
    if type(b) is Term and isinstance(b.op, Reduce):
        p = b.op.param_values(b.args)
        same = b.args[0] is a or b.args[0] == a
        return same and p["keepdims"] and b.op.axes(p["axis"], typeof(a).ndim) == {axis}
    dims_a, dims_b = typeof(a).shape, typeof(b).shape
    if len(dims_b) > len(dims_a) or None in dims_a or None in dims_b:
        return False
    offset = len(dims_a) - len(dims_b)
    return all(
        d == 1 or (k + offset != axis and d == dims_a[k + offset]) for k, d in enumerate(dims_b)
    )


def _taken_first(t: Any) -> Any:
    """``take_along_axis(f(a, b), idx, axis)`` as ``f(take_along_axis(a, idx, axis), b)``
    (``f`` of any number of operands, one of them ``a``, the others of size 1 along
    ``axis``) for an elementwise ``f`` that never raises; None where it does not hold."""
    if not has_head(t, ops.take_along_axis):
        return None
    x, idx = t.args[0], t.args[1]
    if type(x) is not Term or not x.op.elementwise or x.op is ops.pow:
        return None  # pow raises on a negative integer exponent anywhere in the array
    if len(x.op.operands(x.args)) != len(x.args):
        return None  # an Op with parameters
    ndim = typeof(x).ndim
    axis = t.op.param_values(t.args)["axis"] % ndim
    taken = [i for i, a in enumerate(x.args) if typeof(a).ndim == ndim]
    for i in taken:
        a = x.args[i]
        if all(j == i or _kept_along(b, a, axis) for j, b in enumerate(x.args)):
            args = list(x.args)
            args[i] = Term((ops.take_along_axis, a, idx, *t.args[2:]))
            return Term((x.op, *args))
    return None


@register(specialize_db, SPECIALIZE, FAST_RUN, position=30, tracks=(ops.take_along_axis,))
@forward_only
def take_elementwiseo(in_lv, out_lv):
    """``take_along_axis(a - b, idx, axis) -> take_along_axis(a, idx, axis) - b`` for
    any elementwise Op but ``pow``, where ``a`` has the shape of ``a - b`` and ``b``
    size 1 along ``axis``: the elements that are read, and only those, computed.

    Forward only: backward it would compute every element to read a few.

    >>> import relgraph as rg
    >>> X, idx = rg.matrix("X"), rg.matrix("idx", "int64")
    >>> rg.pprint(next(rg.rewrites(rg.take_along_axis(rg.exp(X), idx, axis=0),
    ...                           take_elementwiseo)))
    'exp(take_along_axis(X, idx, axis=0))'
    >>> list(rg.rewrites(rg.take_along_axis(X - rg.matrix("Y"), idx, axis=1),
    ...                  take_elementwiseo))  # Y's shape is unknown: it could be X's
    []
    """
    return computeo(_taken_first, [in_lv], out_lv)
