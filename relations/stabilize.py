"""Numerically stable forms: the same value in exact arithmetic, and at least as
accurate in floating point everywhere, infinities and NaN included.  Those of
log-sum-exp are in :mod:`relations.logsumexp`.

Each relation names its Ops as they stand after ``canonicalize`` (``1 - u`` is
``1 + -u`` there), and most run backward too: ``rel(q, term)`` gives the unstable
forms a stable term comes from.

>>> import relgraph as rg
>>> from kanren import run, var
>>> x = rg.vector("x")
>>> q = var()
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, log1po(rg.log(1 + x), q))]  # 0.0 at -0.0
['log1p(0 + x)']
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, log1mexpo(q, rg.log1mexp(x)))]
['log1p(-exp(x))']
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, log1mexpo(q, 0 + rg.log1mexp(x)))]
['log(-expm1(x))', 'log(1 + -exp(x))']
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
from etuples import etuple
from kanren import conde, eq
from unification import var, vars as lvars

from relations.arith import commo, nego
from relations.databases import register, stabilize_db
from relations.tags import FAST_RUN, STABILIZE, UNSAFE
from relations.zeros import plus_zero, without_plus_zero
from relgraph import ops
from relgraph.logic.goals import (
    computeo,
    eacho,
    has_head,
    ifgroundo,
    is_number,
    pipeo,
    testo,
)
from relgraph.ops import (
    abs,
    add,
    equal,
    exp,
    expm1,
    less,
    log,
    log1mexp,
    log1p,
    log_ndtr,
    ndtr,
    neg,
    reciprocal,
    sigmoid,
    softplus,
    sqrt,
    sub,
    true_div,
    where,
)
from relgraph.rewriting.declarations import ANY_CONSTANT, forward_only, needs_operand
from relgraph.rewriting.promotion import regroups
from relgraph.rewriting.rules import rule
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.lvars import lvar
from relgraph.terms.term import Term
from relgraph.terms.traverse import as_term

__all__ = [
    "log1po", "expm1o", "log_diff_expo", "log1mexpo", "softpluso", "log_sigmoido",
    "log1m_sigmoido", "sigmoido", "one_minus_sigmoido", "log1p_expm1o", "sqrt_squareo",
    "log_divo", "sigmoid_quotiento", "one_minus_ndtro", "log_ndtro", "log_deto",
]  # fmt: skip


@register(stabilize_db, STABILIZE, FAST_RUN, produces=(ops.log1p,), position=7, tracks=(ops.log,))
def log1po(in_lv, out_lv):
    """``log(1 + x) -> log1p(x)``: exact for small ``x``, where ``1 + x`` rounds.

    ``log1p(0 + x)`` where ``x`` may be -0.0: ``log(1 + -0.0)`` is 0.0, ``log1p(-0.0)``
    is -0.0.

    In a longer integer sum the 1 may be anywhere (``log(i + 1 + j) -> log1p(i + j)``);
    a float sum ``(1 + a) + b`` is no ``1 + x`` (``1 + (a + b)`` rounds otherwise).
    """
    return ifgroundo(
        in_lv, computeo(_log1p_of, [in_lv], out_lv), computeo(_log_of, [out_lv], in_lv)
    )


def _log1p_of(t: Any) -> Any:
    if not (has_head(t, log) and has_head(t._tuple[1], add)):
        return None
    total = t._tuple[1]
    args = list(total._tuple[1:])
    if len(args) > 2 and not regroups(total):
        return None
    one = next((i for i, a in enumerate(args) if is_number(a) and a == 1), None)
    if one is None:
        return None
    rest = args[:one] + args[one + 1 :]
    return Term((log1p, plus_zero(rest[0] if len(rest) == 1 else Term((add, *rest)))))


def _log_of(t: Any) -> Any:
    t = as_term(t)  # built by a goal when run backward
    if not has_head(t, log1p):
        return None
    x = without_plus_zero(t._tuple[1])
    return None if x is None else Term((log, Term((add, 1, x))))


def _is_all(value: int, c: Any) -> bool:
    """``c`` is the number ``value``, or an array of it."""
    kind = type(c)
    if kind is Constant:
        return bool((c.value == value).all())
    return kind is not Term and kind is not Symbol and is_number(c) and c == value


def _expm1_in_sum(t: Any) -> Any:
    """``exp(u) - 1``, or a sum with an ``exp(u)`` and a -1 (a number, or an array of
    -1s), with the two merged into ``expm1(u)``; None if it has none."""
    if has_head(t, sub) and has_head(t._tuple[1], exp) and _is_all(1, t._tuple[2]):
        return Term((expm1, plus_zero(t._tuple[1]._tuple[1])))
    if not has_head(t, add):
        return None
    args = t._tuple[1:]
    # The -1 first: most sums have none, and the test costs less than regroups.
    one = next((i for i, a in enumerate(args) if _is_all(-1, a)), None)
    if one is None:
        return None
    if not regroups(t):  # floats: the two lead the sum, a part of its fold
        args = args[:2]
    if one >= len(args):
        return None
    e = next((i for i, a in enumerate(args) if has_head(a, exp)), None)
    if e is None:
        return None
    merged = Term((expm1, plus_zero(args[e]._tuple[1])))  # exp(-0.0) - 1 is 0.0
    rest = [a for i, a in enumerate(t._tuple[1:]) if i not in (one, e)]
    return merged if not rest else Term((add, merged, *rest))


@register(
    stabilize_db,
    STABILIZE,
    FAST_RUN,
    produces=(ops.expm1, ops.add),
    position=13,
    tracks=(ops.sub, ops.add),
    whole=True,
)
@needs_operand(ops.exp)
@needs_operand(ANY_CONSTANT)  # the 1, or -1 in a sum
def expm1o(in_lv, out_lv):
    """``exp(u) - 1 -> expm1(u)`` (in a sum, as ``exp(u) + -1``; also with an array of
    ones when it does not broadcast ``u``): no cancellation near 0.

    ``expm1(0 + u)`` where ``u`` may be -0.0: ``exp(-0.0) - 1`` is 0.0.
    """
    return ifgroundo(
        in_lv, computeo(_expm1_in_sum, [in_lv], out_lv), eacho(_exp_minus_one, out_lv, in_lv)
    )


def _exp_minus_one(t: Any) -> list:
    """``exp(u) - 1`` and ``exp(u) + -1`` for ``expm1(0 + u)``, or ``expm1(u)`` where
    ``u`` is never -0.0."""
    t = as_term(t)
    if not has_head(t, expm1):
        return []
    u = without_plus_zero(t._tuple[1])
    if u is None:
        return []
    return [Term((sub, Term((exp, u)), 1)), Term((add, Term((exp, u)), -1))]


_a, _b = lvar("a"), lvar("b")
log_diff_expo = rule(
    log(exp(_a) + -exp(_b)),
    0 + where(equal(_b, float("-inf")), _a, _a + log1mexp(_b - _a)),
    name="log_diff_expo",
)
log_diff_expo.__doc__ = """``log(exp(a) - exp(b))``
``-> 0 + where(b == -inf, a, a + log1mexp(b - a))``.

No overflow and no cancellation; the guard keeps ``a = b = -inf`` at -inf
(``b - a`` is NaN there), and the ``0 +`` gives 0.0 where ``log(1.0)`` does."""
register(stabilize_db, STABILIZE, FAST_RUN, produces=(ops.where, ops.add), position=4,
         tracks=(ops.log,))(log_diff_expo)  # fmt: skip


@register(
    stabilize_db,
    STABILIZE,
    FAST_RUN,
    produces=(ops.log1mexp, ops.add),
    position=5,
    tracks=(ops.log, ops.log1p),
)
def log1mexpo(in_lv, out_lv):
    """``log1p(-exp(x)) -> log1mexp(x)``; ``log(1 - exp(x))``, ``log(-expm1(x))
    -> 0 + log1mexp(x)``.

    A ``log`` of 1 is 0.0 where ``log1mexp(-inf)`` is -0.0 (``log1p(-0.0)``).
    """
    x = var()
    plain, zeroed = etuple(log1mexp, x), etuple(add, 0, etuple(log1mexp, x))
    return conde(
        [eq(in_lv, etuple(log1p, etuple(neg, etuple(exp, x)))), eq(out_lv, plain)],
        [eq(in_lv, etuple(log, etuple(neg, etuple(expm1, x)))), eq(out_lv, zeroed)],
        [eq(in_lv, etuple(log, etuple(add, 1, etuple(neg, etuple(exp, x))))), eq(out_lv, zeroed)],
    )


_v = lvar("x")
softpluso = rule(log1p(exp(_v)), softplus(_v), name="softpluso")
softpluso.__doc__ = """``log1p(exp(x)) -> softplus(x)``: no overflow for large ``x``."""
register(stabilize_db, STABILIZE, FAST_RUN, produces=(ops.softplus,), position=8,
         tracks=(ops.log1p,))(softpluso)  # fmt: skip


@register(
    stabilize_db, STABILIZE, FAST_RUN, produces=(ops.neg, ops.add), position=6, tracks=(ops.log,)
)
def log_sigmoido(in_lv, out_lv):
    """``log(sigmoid(x)) -> 0 - softplus(-x)``: no underflow to ``log(0)`` for ``x << 0``.

    The ``0 -`` gives 0.0 where ``sigmoid(x)`` rounds to 1, as ``log(1.0)`` does
    (``-softplus(-x)`` is -0.0 there).
    """
    x, minus_x = lvars(2)
    return pipeo(
        in_lv,
        eq(in_lv, etuple(log, etuple(sigmoid, x))),
        nego(x, minus_x),
        eq(out_lv, etuple(add, 0, etuple(neg, etuple(softplus, minus_x)))),
    )


log1m_sigmoido = rule(log1p(-sigmoid(_v)), -softplus(_v), name="log1m_sigmoido")
log1m_sigmoido.__doc__ = """``log(1 - sigmoid(x))`` (``log1p(-sigmoid(x))``)
``-> -softplus(x)``."""
register(stabilize_db, STABILIZE, FAST_RUN, produces=(ops.neg,), position=9,
         tracks=(ops.log1p,))(log1m_sigmoido)  # fmt: skip


@register(
    stabilize_db,
    STABILIZE,
    FAST_RUN,
    produces=(ops.sigmoid,),
    position=11,
    tracks=(ops.true_div, ops.reciprocal),
)
def sigmoido(in_lv, out_lv):
    """``1 / (1 + exp(u)) -> sigmoid(-u)`` (so ``1 / (1 + exp(-x)) -> sigmoid(x)``)."""
    u, minus_u, one_plus = lvars(3)
    return pipeo(
        in_lv,
        conde(
            [eq(in_lv, etuple(true_div, 1, one_plus))], [eq(in_lv, etuple(reciprocal, one_plus))]
        ),
        commo(add, 1, etuple(exp, u), one_plus),
        nego(u, minus_u),
        eq(out_lv, etuple(sigmoid, minus_u)),
    )


@register(
    stabilize_db,
    STABILIZE,
    FAST_RUN,
    produces=(ops.sigmoid, ops.add),
    position=12,
    tracks=(ops.add,),
)
@needs_operand(ops.neg)
@needs_operand(ANY_CONSTANT)  # the 1
def one_minus_sigmoido(in_lv, out_lv):
    """``1 - sigmoid(x) -> sigmoid(-x)`` (``1 + -sigmoid(x)`` after canonicalize)."""
    return _reflected(sigmoid, in_lv, out_lv)


def _has_negated(f: Any, t: Any) -> bool:
    """Whether ``t`` is a sum with a term ``-f(x)``."""
    t = as_term(t)  # built by a goal when run backward
    return has_head(t, add) and any(has_head(a, neg) and has_head(a._tuple[1], f)
                                    for a in t._tuple[1:])  # fmt: skip


def _reflected(f: Any, in_lv: Any, out_lv: Any) -> Any:
    """``1 - f(x) -> f(-x)``, for ``f`` with ``f(x) + f(-x) = 1``."""
    x, minus_x = lvars(2)
    return pipeo(
        in_lv,
        testo(partial(_has_negated, f), in_lv),  # a cheap test first
        commo(add, 1, etuple(neg, etuple(f, x)), in_lv),
        nego(x, minus_x),
        eq(out_lv, etuple(f, minus_x)),
    )


@register(stabilize_db, STABILIZE, FAST_RUN, produces=(ops.ndtr,), position=6.5,
          tracks=(ops.add,))  # fmt: skip
@needs_operand(ops.neg)
@needs_operand(ANY_CONSTANT)  # the 1
def one_minus_ndtro(in_lv, out_lv):
    """``1 - ndtr(x) -> ndtr(-x)``: the normal survival function, with no cancellation
    (``1 - ndtr(9)`` is 0, ``ndtr(-9)`` is 1.1e-19)."""
    return _reflected(ndtr, in_lv, out_lv)


log1p_expm1o = rule(log1p(expm1(_v)), _v, name="log1p_expm1o")
log1p_expm1o.__doc__ = """``log1p(expm1(x)) -> x`` (of the same dtype): exact where ``expm1``
overflows."""
register(stabilize_db, STABILIZE, FAST_RUN, position=10, tracks=(ops.log1p,))(log1p_expm1o)


sqrt_squareo = rule(sqrt(_v**2), abs(_v), name="sqrt_squareo")
sqrt_squareo.__doc__ = """``sqrt(x ** 2) -> abs(x)``: no overflow of ``x ** 2``."""
register(stabilize_db, STABILIZE, FAST_RUN, produces=(ops.abs,), position=14,
         tracks=(ops.sqrt,))(sqrt_squareo)  # fmt: skip


def _log_of_quotient(t: Any) -> Any:
    """``log(c / x) -> log(c) - log(x)``, ``log(x / c) -> log(x) - log(c)`` for c > 0."""
    if not has_head(t, log):
        return None
    q = t._tuple[1]
    if not has_head(q, true_div):
        return None
    num, den = q._tuple[1], q._tuple[2]
    if is_number(num) and num > 0:
        return (
            Term((neg, Term((log, den))))
            if num == 1
            else Term((sub, math.log(num), Term((log, den))))
        )
    if is_number(den) and den > 0:
        return Term((sub, Term((log, num)), math.log(den)))
    return None


@register(stabilize_db, STABILIZE, UNSAFE, position=16, tracks=(ops.log,))
@forward_only
def log_divo(in_lv, out_lv):
    """``log(c / x) -> log(c) - log(x)`` (``log(1 / x) -> -log(x)``) and
    ``log(x / c) -> log(x) - log(c)``, ``c`` a positive number.

    Unsafe: at ``x = -0.0`` and ``-inf`` ``log(1 / x)`` is NaN and ``-log(x)`` is not,
    and near ``x = c`` the difference of two logs cancels where ``log(x / c)`` does not.
    """
    return computeo(_log_of_quotient, [in_lv], out_lv)


# Forms that differentiating writes out (``d/dz softplus(z)``, the softmax of a
# log-likelihood's gradient), written out by hand as often as not.
_u = lvar("u")
sigmoid_quotiento = rule(
    exp(_u) / (1 + exp(_u)),
    where(_u < math.inf, sigmoid(_u), _u - _u),
    name="sigmoid_quotiento",
)
sigmoid_quotiento.__doc__ = """``exp(u) / (1 + exp(u)) -> sigmoid(u)``, and NaN (``u - u``) at
``u = inf`` where the quotient is ``inf / inf``: no ``inf / inf`` for ``709 < u < inf``."""
register(stabilize_db, STABILIZE, FAST_RUN, produces=(ops.where,), position=11.5,
         tracks=(ops.true_div,))(sigmoid_quotiento)  # fmt: skip


_x = lvar("x", dtype=np.floating)
log_ndtro = rule(log(ndtr(_x)), 0 + log_ndtr(_x), name="log_ndtro")
log_ndtro.__doc__ = """``log(ndtr(x)) -> 0 + log_ndtr(x)``: finite where ``ndtr`` underflows
(``log(ndtr(-40))`` is -inf, ``log_ndtr(-40)`` is -804.6).

The ``0 +`` gives 0.0 where ``ndtr`` rounds to 1, as ``log(1.0)`` does (scipy's
``log_ndtr(inf)`` is -0.0)."""
register(stabilize_db, STABILIZE, FAST_RUN, produces=(ops.log_ndtr, ops.add), position=6.6,
         tracks=(ops.log,))(log_ndtro)  # fmt: skip

_A = lvar("A", dtype=np.floating)
log_deto = rule(
    log(ops.det(_A)),
    where(less(ops.det_sign(_A), 0), math.nan, ops.logabsdet(_A)),
    name="log_deto",
)
log_deto.__doc__ = """``log(det(A)) -> logabsdet(A)`` (NaN where the determinant is negative,
as the log of it is): no overflow of the determinant (``det`` of ``10 * I`` of size 400
is inf, its log 921.0)."""
register(stabilize_db, STABILIZE, FAST_RUN, produces=(ops.where,), position=6.7,
         tracks=(ops.log,))(log_deto)  # fmt: skip
