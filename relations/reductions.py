"""Reductions of reductions, and choices between equal values.

>>> import relgraph as rg
>>> from kanren import run, var
>>> X = rg.matrix("X")
>>> q = var()
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, sum_sumo(rg.sum(rg.sum(X, axis=0)), q))]
['sum(X)']
"""

from __future__ import annotations

from typing import Any

from etuples import etuple
from kanren import conde, eq, lall
from unification import var

from relations.databases import REDUCTIONS, canonicalize_db, register
from relations.tags import CANONICALIZE, FAST_RUN, REASSOCIATE
from relations.zeros import plus_zero
from relgraph import ops
from relgraph.logic.goals import computeo, eacho, has_head, ifgroundo
from relgraph.ops import maximum, minimum, sum, where
from relgraph.ops.reductions import Reduce
from relgraph.rewriting.declarations import forward_only
from relgraph.rewriting.rules import rule
from relgraph.terms.infer import typeof
from relgraph.terms.lvars import lvar
from relgraph.terms.term import Term

__all__ = ["sum_sumo", "same_choiceo", "reduce_scalaro", "reshape_keepdimso", "sum_addo"]


def _merged_sum(t: Any) -> Any:
    """``sum(sum(x, a), b)`` as one ``sum`` over both sets of axes (no keepdims)."""
    if not has_head(t, sum):
        return None
    inner = t._tuple[1]
    if not has_head(inner, sum):
        return None
    outer_p, inner_p = sum.param_values(t._tuple[1:]), sum.param_values(inner._tuple[1:])
    if outer_p["keepdims"] or inner_p["keepdims"]:
        return None
    x = inner._tuple[1]
    ndim = typeof(x).ndim
    first = sorted(sum.axes(inner_p["axis"], ndim))
    left = [d for d in range(ndim) if d not in first]
    second = [left[a] for a in sorted(sum.axes(outer_p["axis"], len(left)))]
    axes = tuple(sorted(first + second))
    axis = None if len(axes) == ndim else axes[0] if len(axes) == 1 else axes
    return Term((sum, *sum.bind((x,), {"axis": axis})))


@register(
    canonicalize_db, CANONICALIZE, FAST_RUN, produces=(ops.sum,), position=23, tracks=(ops.sum,)
)
def sum_sumo(in_lv, out_lv):
    """``sum(sum(x, axis=a), axis=b) -> sum(x, axis=a and b)``: one reduction.

    It adds the same numbers in another order (as numpy's pairwise sum does).
    Backward, a sum over several axes splits off each one in turn.
    """
    return ifgroundo(
        in_lv, computeo(_merged_sum, [in_lv], out_lv), eacho(_split_sums, out_lv, in_lv)
    )


def _split_sums(t: Any) -> list:
    """``sum(x, axis=(0, 1))`` as ``sum(sum(x, axis=0), axis=0)`` and
    ``sum(sum(x, axis=1), axis=0)``."""
    if not has_head(t, sum):
        return []
    p, x = sum.param_values(t._tuple[1:]), t._tuple[1]
    ndim = typeof(x).ndim
    axes = sorted(sum.axes(p["axis"], ndim))
    if p["keepdims"] or len(axes) < 2:
        return []
    out = []
    for first in axes:
        left = [d for d in range(ndim) if d != first]
        rest = [left.index(a) for a in axes if a != first]
        axis = None if len(rest) == len(left) else rest[0] if len(rest) == 1 else tuple(rest)
        inner = Term((sum, *sum.bind((x,), {"axis": first})))
        out.append(Term((sum, *sum.bind((inner,), {"axis": axis}))))
    return out


@register(
    canonicalize_db,
    CANONICALIZE,
    FAST_RUN,
    position=25,
    tracks=(ops.maximum, ops.minimum, ops.where),
)
def same_choiceo(in_lv, out_lv):
    """``maximum(x, x) -> x``, ``minimum(x, x) -> x``, ``where(c, x, x) -> x``.

    Exact for NaN too; the driver keeps it only where ``x`` has the result's type
    (a ``where`` that broadcasts ``x`` against ``c`` stays).
    """
    x, c = var(), var()
    return lall(
        conde(
            [eq(in_lv, etuple(maximum, x, x))],
            [eq(in_lv, etuple(minimum, x, x))],
            [eq(in_lv, etuple(where, c, x, x))],
        ),
        eq(out_lv, x),
    )


def _scalar_reduced(t: Any) -> Any:
    if type(t) is Term and isinstance(t._tuple[0], Reduce) and t._tuple[0].name != "logsumexp":
        x = t._tuple[1]
        if typeof(x).ndim != 0:
            return None
        return plus_zero(x) if t._tuple[0] in (ops.sum, ops.mean) else x  # 0.0 + -0.0
    return None


@register(canonicalize_db, CANONICALIZE, FAST_RUN, position=26, tracks=REDUCTIONS)
@forward_only
def reduce_scalaro(in_lv, out_lv):
    """``sum(s) -> s`` for a 0-d ``s`` (also ``max``, ``min``, ``prod``, ``mean``).

    numpy's sum starts from 0.0, so ``sum(s)`` of a float ``s`` that may be -0.0 is
    ``0 + s``.

    The driver keeps it only where the type stays: the ``sum`` of an int8 scalar is
    int64, and stays a ``sum``.  Forward only: backward, every scalar would be the
    reduction of itself.
    """
    return computeo(_scalar_reduced, [in_lv], out_lv)


_FULL = (None, None, None)  # a whole axis, as getitem stores ``:``


def _kept(t: Any) -> Any:
    """``r(x, axis)`` reshaped (or indexed with ``None``, or expanded) to what
    ``keepdims`` gives, as ``r(x, axis, keepdims=True)``; None otherwise."""
    head = t._tuple[0] if type(t) is Term else None
    if head not in (ops.reshape, ops.getitem, ops.expand_dims):
        return None
    inner = t._tuple[1]
    if type(inner) is not Term or not isinstance(inner.op, Reduce):
        return None
    p = inner.op.param_values(inner._tuple[1:])
    x, dims = inner._tuple[1], typeof(inner._tuple[1]).shape
    reduced = set(inner.op.axes(p["axis"], len(dims)))
    if p["keepdims"] or not _as_kept(head, head.param_values(t._tuple[1:]), dims, reduced):
        return None
    return Term((inner.op, *inner.op.bind((x,), {**p, "keepdims": True})))


def _as_kept(head: Any, p: dict, dims: tuple, reduced: set) -> bool:
    """Whether ``head`` with params ``p`` makes a reduction of an array of shape
    ``dims`` over ``reduced`` what ``keepdims`` gives: 1 at each reduced axis; a
    reshape gives each other axis its known length (or -1, where it is the only one:
    numpy could refuse a -1 beside a zero-length axis)."""
    if head is ops.getitem:  # trailing whole axes may be left out, as in numpy
        want = [None if k in reduced else _FULL for k in range(len(dims))]
        key = list(p["key"])
        while want and want[-1] == _FULL and len(want) > len(key):
            want.pop()
        return tuple(key) == tuple(want)
    if head is ops.expand_dims:
        return ops.expand_dims.new_axes(len(dims) - len(reduced), p["axis"]) == reduced
    shape = p["shape"]
    if len(shape) != len(dims) or (-1 in shape and len(dims) - len(reduced) > 1):
        return False
    return all(
        want == 1 if k in reduced else want in (known, -1)
        for k, (want, known) in enumerate(zip(shape, dims))
    )


@register(
    canonicalize_db, CANONICALIZE, FAST_RUN, position=26.5,
    tracks=(ops.reshape, ops.getitem, ops.expand_dims),
)  # fmt: skip
@forward_only
def reshape_keepdimso(in_lv, out_lv):
    """``reshape(max(X, axis=1), (-1, 1)) -> max(X, axis=1, keepdims=True)``, and the
    same for ``max(X, axis=1)[:, None]`` and ``expand_dims(max(X, axis=1), 1)``: a
    reduction given the shape ``keepdims`` gives (scikit-learn's softmax and
    logistic loss write it so) is that reduction with ``keepdims``, the same values,
    which the compiler fuses with the code that reads it.  Forward only.

    >>> import relgraph as rg
    >>> X = rg.matrix("X")
    >>> rg.pprint(next(rg.rewrites(rg.reshape(rg.max(X, axis=1), (-1, 1)), reshape_keepdimso)))
    'max(X, axis=1, keepdims=True)'
    >>> rg.pprint(next(rg.rewrites(rg.sum(X, axis=0)[None, :], reshape_keepdimso)))
    'sum(X, axis=0, keepdims=True)'
    >>> list(rg.rewrites(rg.reshape(rg.max(X, axis=1), (1, -1)), reshape_keepdimso))
    []
    """
    return computeo(_kept, [in_lv], out_lv)


def _same_known_shape(a: Any, b: Any) -> bool:
    """Both shapes known and equal: ``x + y`` then adds element by element (no
    broadcasting, which would count an element of the smaller one several times)."""
    ta, tb = typeof(a), typeof(b)
    return ta.shape == tb.shape and None not in ta.shape


_x, _y = lvar("x", dtype="floating"), lvar("y", dtype="floating")
sum_addo = rule(
    sum(_x) + sum(_y), sum(_x + _y), name="sum_addo", when=lambda x, y: _same_known_shape(x, y)
)
register(canonicalize_db, CANONICALIZE, REASSOCIATE, position=24, tracks=(ops.add,))(sum_addo)
sum_addo.__doc__ = """``sum(x) + sum(y) <-> sum(x + y)`` for float arrays of one known shape.

It adds the same numbers in another order, as a reassociated sum does, so it is
opt-in with ``reassociate``: with ``x = y = [1e308, -1e308]`` the sums are 0 and
``x + y`` is ``[inf, -inf]``, whose sum is NaN.  With shapes unknown ``x + y`` could
broadcast, so the rule waits for them.

>>> import relgraph as rg
>>> x, y = rg.vector("x", shape=3), rg.vector("y", shape=3)
>>> rg.pprint(next(rg.rewrites(rg.sum(x) + rg.sum(y), sum_addo)))
'sum(x + y)'
>>> len(list(rg.rewrites(rg.sum(rg.vector("u")) + rg.sum(rg.vector("v")), sum_addo)))
0
"""
