"""Stable forms of log-sum-exp: ``logsumexp``, ``logaddexp``, and the log of a softmax.

``log(sum(exp(x)))`` overflows where ``exp`` does; ``logsumexp`` shifts by the maximum
first, and is exact at infinities.  scipy's formula writes the shift out
(``log(sum(exp(x - m))) + m``): that form is left as written, since ``logsumexp``
would find and subtract the maximum a second time.

>>> import relgraph as rg
>>> from relations import optdb
>>> x = rg.matrix("x")
>>> fast_run = optdb.query(include=["fast_run"])
>>> rg.pprint(rg.rewrite(rg.log(rg.sum(rg.exp(x), axis=1)), fast_run))
'logsumexp(x, axis=1)'
>>> m = rg.max(x, axis=1, keepdims=True)
>>> rg.pprint(rg.rewrite(rg.log(rg.sum(rg.exp(x - m), axis=1, keepdims=True)), fast_run))
'log(sum(exp(x - max(x, axis=1, keepdims=True)), axis=1, keepdims=True))'
"""

from __future__ import annotations

import math
from functools import reduce
from typing import Any

import numpy as np
from cons import cons
from etuples import etuple
from kanren import conde, eq, lall
from unification import vars as lvars

from relations.databases import register, stabilize_db
from relations.tags import FAST_RUN, STABILIZE, UNSAFE
from relgraph import ops
from relgraph.logic.goals import computeo, has_head, ifgroundo, testo
from relgraph.ops import (
    abs,
    add,
    equal,
    exp,
    less,
    log,
    log1p,
    logaddexp,
    logsumexp,
    max as max_,
    neg,
    sub,
    sum,
    transpose,
    where,
)
from relgraph.rewriting.declarations import forward_only
from relgraph.rewriting.rules import rule
from relgraph.terms.lvars import lvar
from relgraph.terms.term import Term
from relgraph.terms.traverse import as_term

__all__ = [
    "logsumexpo", "logsumexp_shifto", "log_add_expo", "log_softmaxo", "log_softmax_allo",
    "stable_log_softmax",
]  # fmt: skip


@register(
    stabilize_db, STABILIZE, FAST_RUN, produces=(ops.logsumexp,), position=2, tracks=(ops.log,)
)
def logsumexpo(in_lv, out_lv):
    """``log(sum(exp(x), axis, keepdims)) -> logsumexp(x, axis, keepdims)``.

    ``logsumexp`` shifts by the maximum (no overflow) and is exact at infinities:
    ``[-inf, -inf]`` gives -inf, any +inf gives +inf.  Also through a transpose:
    ``log(sum(exp(x), axis=2).T) -> logsumexp(x, axis=2).T``.  Not where ``x`` is
    shifted by its maximum along the axis already (``x - max(x, axis, keepdims=True)``,
    scipy's own formula): ``exp`` cannot overflow there, and ``logsumexp`` would find
    and subtract the maximum again.
    """
    x, params, axes = lvars(3)
    summed = cons(sum, cons(etuple(exp, x), params))
    stable = cons(logsumexp, cons(x, params))
    return lall(
        conde(
            [eq(in_lv, etuple(log, summed)), eq(out_lv, stable)],
            # log of the transposed sum: log commutes with the transpose
            [
                eq(in_lv, etuple(log, cons(transpose, cons(summed, axes)))),
                eq(out_lv, cons(transpose, cons(stable, axes))),
            ],
        ),
        testo(_not_shifted, x, params),
    )


def _not_shifted(x: Any, params: Any) -> bool:
    """Whether ``x`` is not ``u - max(u, axis, True)`` along the summed axis: shifted
    by its maximum, ``exp`` cannot overflow, and ``logsumexp`` would shift again."""
    params = tuple(params)
    return not params or _max_shift(as_term(x), (params[0], True)) is None


def _lse_parts(t: Any) -> tuple | None:
    """``(u, params)`` of ``logsumexp(u, *params)`` or ``log(sum(exp(u), *params))``."""
    if has_head(t, logsumexp):
        return t._tuple[1], t._tuple[2:]
    if has_head(t, log) and has_head(t._tuple[1], sum) and has_head(t._tuple[1]._tuple[1], exp):
        summed = t._tuple[1]
        return summed._tuple[1]._tuple[1], summed._tuple[2:]
    return None


def _shift_of(t: Any) -> Any:
    """``m`` if ``t`` is ``logsumexp(x - m, axis, True)`` (or its ``log(sum(exp(...)))``)
    with ``m = max(x, axis, True)``."""
    parts = _lse_parts(t)
    if parts is None or len(parts[1]) != 2 or parts[1][1] is not True:
        return None
    found = _max_shift(*parts)
    return None if found is None else found[1]


def _max_shift(inner: Any, params: tuple) -> tuple | None:
    """``(x, m)`` if ``inner`` is ``x - m`` (or ``x + -m``) with ``m = max(x, *params)``."""
    if has_head(inner, sub):
        x, m = inner._tuple[1], inner._tuple[2]
    elif has_head(inner, add) and len(inner._tuple) == 3:  # x + -m, as canonicalize has it
        first, second = inner._tuple[1:]
        if has_head(second, neg):
            x, m = first, second._tuple[1]
        elif has_head(first, neg):
            x, m = second, first._tuple[1]
        else:
            return None
    else:
        return None
    return (x, m) if m == Term((max_, x, *params)) else None


def _unshifted(t: Any) -> Any:
    """``t`` with a shifted logsumexp and its shift (added, or subtracted after it)
    replaced by the logsumexp of the unshifted values; None if there is none."""
    if has_head(t, sub):  # (y - logsumexp(x - m)) - m
        first, m = t._tuple[1], t._tuple[2]
        if has_head(first, sub) and _shift_of(first._tuple[2]) == m and m is not None:
            shifted = first._tuple[2]
            return Term((sub, first._tuple[1], _stable(shifted)))
        return None
    if not has_head(t, add):
        return None
    args = list(t._tuple[1:])
    for i, arg in enumerate(args):
        negated = has_head(arg, neg)
        shift = _shift_of(arg._tuple[1] if negated else arg)
        if shift is None:
            continue
        shift = Term((neg, shift)) if negated else shift  # -lse(x - m) - m: both negated
        rest = args[:i] + args[i + 1 :]
        if shift in rest:
            rest.remove(shift)
            stable = _stable(arg._tuple[1] if negated else arg)
            stable = Term((neg, stable)) if negated else stable
            return Term((add, stable, *rest)) if rest else stable
    return None


def _stable(shifted: Any) -> Term:
    inner, params = _lse_parts(shifted)  # type: ignore[misc]  # _shift_of found it
    x, _ = _max_shift(inner, params)  # type: ignore[misc]
    return Term((logsumexp, x, *params))


@register(
    stabilize_db, STABILIZE, UNSAFE, produces=(ops.logsumexp,), position=17, tracks=(ops.add,)
)
def logsumexp_shifto(in_lv, out_lv):
    """``logsumexp(x - m, axis, keepdims=True) + m -> logsumexp(x, axis, keepdims=True)``
    where ``m = max(x, axis, keepdims=True)``; also ``(y - logsumexp(x - m, ...)) - m
    -> y - logsumexp(x, ...)``.

    The shift by the maximum that scipy's formula writes out is the one ``logsumexp``
    makes itself: the same operations where the maximum is finite.  Unsafe: where it
    is infinite (a row of ``-inf``, or one ``+inf``) the written-out form is NaN
    (``inf - inf``) and ``logsumexp`` gives ``-inf`` or ``inf``, the value scipy's
    own ``logsumexp`` returns.
    """
    x, axis = lvars(2)
    m = etuple(max_, x, axis, True)
    backward = lall(
        eq(out_lv, etuple(logsumexp, x, axis, True)),
        eq(in_lv, etuple(add, etuple(logsumexp, etuple(sub, x, m), axis, True), m)),
    )
    return ifgroundo(in_lv, computeo(_unshifted, [in_lv], out_lv), backward)


def _exp_args(t: Any) -> list | None:
    """The ``u``s of a sum of two or more ``exp(u)``, or None."""
    if not has_head(t, add):
        return None
    args = t._tuple[1:]
    if all(has_head(a, exp) for a in args):
        return [a._tuple[1] for a in args]
    return None


def _log_add_exp(t: Any) -> Any:
    inner = _exp_args(t._tuple[1]) if has_head(t, log) else None
    if inner is None:
        return None
    return reduce(lambda a, b: Term((logaddexp, a, b)), inner)


@register(
    stabilize_db, STABILIZE, FAST_RUN, produces=(ops.logaddexp,), position=3, tracks=(ops.log,)
)
def log_add_expo(in_lv, out_lv):
    """``log(exp(a) + exp(b) + ...) -> logaddexp(logaddexp(a, b), ...)``.

    numpy's ``logaddexp`` never overflows and is exact at infinities
    (``logaddexp(-inf, -inf)`` is -inf, ``logaddexp(inf, inf)`` is inf).
    """
    a, b = lvars(2)
    backward = lall(
        eq(out_lv, etuple(logaddexp, a, b)),
        eq(in_lv, etuple(log, etuple(add, etuple(exp, a), etuple(exp, b)))),
    )
    return ifgroundo(in_lv, computeo(_log_add_exp, [in_lv], out_lv), backward)


# The log of a softmax, as written from its definition.
def stable_log_softmax(z: Any, *params: Any) -> Term:
    """``z - logsumexp(z)`` without its cancellation: with ``m = max(z)``, ``d = z - m``,
    ``d - log1p(r)``, where ``r`` sums ``exp(d)`` over all but one of the maxima
    (no ``1 + r`` rounded before the log, and ``d`` and ``-log1p(r)`` never cancel).
    Where ``m`` is infinite or NaN it is ``d``: ``-inf`` below a ``+inf``, NaN otherwise,
    as the quotient gives."""
    m = Term((max_, z, *params))
    d = Term((sub, z, m))
    e, top = Term((exp, d)), Term((equal, z, m))
    others = Term((sum, Term((where, top, 0, e)), *params))
    ties = Term((sub, Term((sum, Term((where, top, e, 0)), *params)), 1))
    finite = Term((less, Term((abs, m)), math.inf))
    return Term((where, finite, Term((sub, d, Term((log1p, Term((add, others, ties)))))), d))


_z, _axis = lvar("z", dtype=np.floating), lvar("axis")
log_softmaxo = forward_only(
    rule(
        log(exp(_z) / sum(exp(_z), axis=_axis, keepdims=True)),
        stable_log_softmax(_z, _axis, True),
        name="log_softmaxo",
    )
)
log_softmaxo.__doc__ = """``log(exp(z) / sum(exp(z), axis, keepdims=True))``, the log of a softmax,
``-> (z - m) - log1p(r)``: ``m = max(z, axis, keepdims=True)`` and ``r`` the sum of
``exp(z - m)`` over all but one maximum.  No overflow, and exact to a few ulps where
``z - logsumexp(z)`` cancels (``[36, 0]``: -2.3e-16, not 0).  Forward only: where
``exp`` overflows the quotient is NaN and the stable form is not."""
log_softmax_allo = forward_only(
    rule(log(exp(_z) / sum(exp(_z))), stable_log_softmax(_z), name="log_softmax_allo")
)
log_softmax_allo.__doc__ = """``log(exp(z) / sum(exp(z)))`` over all axes, as
:data:`log_softmaxo`."""
for _rule, _position in ((log_softmaxo, 1.5), (log_softmax_allo, 1.6)):
    register(stabilize_db, STABILIZE, FAST_RUN, produces=(ops.where,), position=_position,
             tracks=(ops.log,))(_rule)  # fmt: skip
