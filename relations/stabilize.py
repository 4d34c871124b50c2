"""Numerically stable forms: same value in exact arithmetic, fewer overflows and
cancellations in floating point.

>>> import relgraph as rg
>>> from kanren import run, var
>>> x = rg.vector("x")
>>> q = var()
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, log1po(rg.log(1 + x), q))]
['log1p(x)']
"""

from __future__ import annotations

from cons import cons
from etuples import etuple
from kanren import conde, eq, lall
from unification import vars as lvars

from relations.arith import commo
from relations.goals import noto, pipeo, removeo, variadico
from relgraph.ops import abs, add, exp, expm1, log, log1p, max, maximum, neg, pow, sqrt, sub, sum

__all__ = ["log1po", "expm1o", "logsumexpo", "log_add_expo", "sqrt_squareo"]


def log1po(in_lv, out_lv):
    """``log(1 + x) -> log1p(x)``: exact for small ``x``, where ``1 + x`` rounds."""
    args, rest, x = lvars(3)
    return pipeo(
        in_lv,
        eq(in_lv, etuple(log, cons(add, args))),
        removeo(1, args, rest),
        variadico(add, rest, x),
        eq(out_lv, etuple(log1p, x)),
    )


def expm1o(in_lv, out_lv):
    """``exp(x) - 1 -> expm1(x)`` (also ``exp(x) + -1``): no cancellation near 0."""
    x = lvars(1)[0]
    return lall(
        conde(
            [eq(in_lv, etuple(sub, etuple(exp, x), 1))],
            [commo(add, etuple(exp, x), -1, in_lv)],
        ),
        eq(out_lv, etuple(expm1, x)),
    )


def _shifted(x, m):
    """``x - max(x)`` as logsumexpo writes it (and recognises it)."""
    return etuple(sub, x, etuple(max, m))


def logsumexpo(in_lv, out_lv):
    """``log(sum(exp(x))) -> max(x) + log(sum(exp(x - max(x))))``: no overflow.

    Not applied again to its own result (``x - max(x)``).
    """
    x, y = lvars(2)
    return pipeo(
        in_lv,
        eq(in_lv, etuple(log, etuple(sum, etuple(exp, x)))),
        noto(eq(x, _shifted(y, y))),
        eq(
            out_lv,
            etuple(add, etuple(max, x), etuple(log, etuple(sum, etuple(exp, _shifted(x, x))))),
        ),
    )


def log_add_expo(in_lv, out_lv):
    """``log(exp(a) + exp(b)) -> maximum(a, b) + log1p(exp(-|a - b|))``: no overflow.

    For finite ``a``, ``b`` (with ``a = b = inf`` the right side is NaN).
    """
    a, b = lvars(2)
    stable = etuple(
        add,
        etuple(maximum, a, b),
        etuple(log1p, etuple(exp, etuple(neg, etuple(abs, etuple(sub, a, b))))),
    )
    return lall(
        eq(in_lv, etuple(log, etuple(add, etuple(exp, a), etuple(exp, b)))), eq(out_lv, stable)
    )


def sqrt_squareo(in_lv, out_lv):
    """``sqrt(x ** 2) -> abs(x)``: no overflow of ``x ** 2``."""
    x = lvars(1)[0]
    return lall(eq(in_lv, etuple(sqrt, etuple(pow, x, 2))), eq(out_lv, etuple(abs, x)))
