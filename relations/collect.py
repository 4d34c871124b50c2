"""Collecting like terms and powers: a sum of multiples of one term, a product of
powers of one base, each group at once.

``collect_termso`` takes a whole sum (``2 * x + y + 3 * x -> 5 * x + y``) and
``pow_mulo`` a whole product (``x * x ** 2 * x -> x ** 4``), rather than pairs of
neighbours: one application per sum, and no new sum for every pair.  Run backward
they split one term off (``2 * x`` from ``x + x``).  In floating point, where a sum
folds from the left and every other grouping rounds and overflows differently, only
the leading group is collected (``(2 * x + 3 * x) + y -> 5 * x + y``), unless the
query regroups floats (``reassociate``).

>>> import relgraph as rg
>>> from kanren import run, var
>>> x, y = rg.vector("x"), rg.vector("y")
>>> i, j = rg.vector("i", "int64"), rg.vector("j", "int64")
>>> q = var()
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, collect_termso(rg.add(2 * i, j, 3 * i), q))]
['((5 * i) + j)']
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, collect_termso(rg.add(2 * x, 3 * x, y), q))]
['((5 * x) + y)']
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, collect_termso(rg.add(2 * x, y, 3 * x), q))]
[]
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, pow_mulo(rg.mul(x, x**2, x), q))]
['(x ** 4)']
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import partial, reduce
from typing import Any

import numpy as np
from etuples import etuple
from kanren import eq, lall
from unification import vars as lvars

from relations.databases import canonicalize_db, register, specialize_db
from relations.order import combinable, sorted_args
from relations.tags import CANONICALIZE, FAST_RUN, SPECIALIZE, UNSAFE
from relgraph import ops
from relgraph.logic.goals import computeo, has_head, ifgroundo, is_constant, is_number, testo
from relgraph.ops import add, mul, neg, pow
from relgraph.rewriting.declarations import forward_only, reads
from relgraph.rewriting.promotion import regroups
from relgraph.terms.term import Term

__all__ = ["collect_termso", "add_zero_termo", "mul_selfo", "pow_mulo", "pow_powo"]


def _coefficient(t: Any) -> tuple[Any, tuple]:
    """``2 * x * y`` is ``(2, (x, y))``; ``-x`` is ``(-1, (x,))``; ``x`` is ``(1, (x,))``."""
    if type(t) is Term:
        head, args = t._tuple[0], t._tuple[1:]
        if head is neg:
            c, rest = _coefficient(args[0])
            return -c, rest
        if head is mul and len(args) > 1:
            if not is_number(args[0]):
                return 1, args
            if len(args) == 2 and has_head(args[1], mul):  # c * (x * y)
                return args[0], args[1]._tuple[1:]
            return args[0], args[1:]
    return 1, (t,)


def _scaled(c: Any, rest: tuple) -> Any:
    """``c`` times the product of ``rest``, written ``x``, ``-x`` or ``c * x``
    (``c * (x * y)``: the product is computed first, as in ``x * y + x * y``)."""
    product = rest[0] if len(rest) == 1 else Term((mul, *rest))
    if c == 1:
        return product
    return Term((neg, product)) if c == -1 else Term((mul, c, product))


def _collected(op: Any, split: Callable, join: Callable, t: Any) -> Any:
    """``t`` (an ``op`` term) with each group of arguments of one key joined, or None.

    ``split(arg)`` is ``(key, part)`` (``key`` None: the argument stays alone);
    ``join(key, parts)`` is the one argument a group becomes.  In floating point only
    the leading group is joined, a part of the left fold: ``(x + x) + y -> 2 * x + y``,
    but ``(y + x) + x`` stays (``2 * x`` overflows where ``y + x`` may not); and only
    parts of one sign (``x + -2 * x`` is NaN at inf where ``-x`` is not, ``x - x`` is
    0.0 where ``0 * x`` is -0.0, which turns a quotient's inf around).
    """
    if type(t) is not Term or t._tuple[0] is not op:
        return None
    if not regroups(t):
        key, first = split(t._tuple[1])
        like, rest = combinable(t, lambda a: key is not None and _alike(split(a), key, first))
        if len(like) < 2:
            return None
        joined = join(key, [split(a)[1] for a in like])
        return Term((op, joined, *rest)) if rest else joined
    groups: dict[Any, list] = {}
    for arg in t._tuple[1:]:
        key, part = split(arg)
        groups.setdefault(object() if key is None else key, []).append((arg, part))
    if len(groups) == len(t._tuple) - 1:
        return None
    args = [
        group[0][0] if len(group) == 1 else join(key, [part for _, part in group])
        for key, group in groups.items()
    ]
    return args[0] if len(args) == 1 else Term((op, *args))


def _alike(part: tuple, key: Any, first: Any) -> bool:
    """Whether ``part`` (a ``split`` result) has ``key`` and a number of ``first``'s
    sign, not 0."""
    k, c = part
    return k == key and is_number(c) and np.sign(c) == np.sign(first) != 0


def _like_term(arg: Any) -> tuple[Any, Any]:
    c, rest = _coefficient(arg)
    return (None if is_constant(arg) else rest), c


def _sum_of_like(rest: tuple, coefficients: list) -> Any:
    return _scaled(reduce(operator.add, coefficients), rest)


@register(
    canonicalize_db,
    CANONICALIZE,
    FAST_RUN,
    produces=(ops.add, ops.mul),
    position=14,
    tracks=(ops.add,),
    whole=True,
)
@reads({ops.add: {ops.mul: {}, ops.neg: {}}})  # multiples: c * x, -x, x
def collect_termso(in_lv, out_lv):
    """Like terms: ``c1 * x + c2 * x -> (c1 + c2) * x``; so ``x + x -> 2 * x``, ``x - x -> 0 * x``.

    ``c1``, ``c2`` are numbers (``-x`` has -1, ``x`` has 1); ``x`` stands for
    the rest of the product.  Every group of like terms of a sum is collected
    at once.  Backward, ``c * x`` comes from ``(c - 1) * x + x`` (``x + x`` for ``2 * x``).
    """
    forward = computeo(partial(_collected, add, _like_term, _sum_of_like), [in_lv], out_lv)
    return ifgroundo(in_lv, forward, computeo(_split_like, [out_lv], in_lv))


def _split_like(t: Any) -> Any:
    """``c * x`` as ``(c - 1) * x + x``; in floating point with both parts of ``c``'s
    sign: ``-2 * x`` as ``-x + -x``, and ``-x`` not at all (``x + -2 * x`` is NaN at
    inf)."""
    c, rest = _coefficient(t)
    if c == 1 or is_constant(t) or not is_number(c):
        return None
    if regroups(t) or c > 1:
        one = 1
    elif c < -1:
        one = -1
    else:
        return None
    plain = _scaled(one, rest)
    return Term((add, *sorted_args(add, [_scaled(c - one, rest), plain])))


def _is_zero_term(x: Any) -> bool:
    return type(x) is Term and x._tuple[0] is mul and is_number(x._tuple[1]) and x._tuple[1] == 0


def _without_zero_terms(t: Any) -> Any:
    """The sum ``t`` without its ``0 * x`` terms (one stays if all are), or None."""
    if type(t) is not Term or t._tuple[0] is not add:
        return None
    args = t._tuple[1:]
    kept = [a for a in args if not _is_zero_term(a)] or [args[0]]
    if len(kept) == len(args):
        return None
    return kept[0] if len(kept) == 1 else Term((add, *kept))


@register(canonicalize_db, CANONICALIZE, UNSAFE, position=32, tracks=(ops.add,), whole=True)
@forward_only
@reads({ops.add: {ops.mul: {}}})  # the 0 * x terms
def add_zero_termo(in_lv, out_lv):
    """``0 * x + y -> y`` (every such term of a sum at once).  Unsafe: ``0 * inf`` is NaN."""
    return computeo(_without_zero_terms, [in_lv], out_lv)


@register(
    specialize_db,
    SPECIALIZE,
    FAST_RUN,
    name="pow_twoo",
    produces=(ops.mul,),
    position=5,
    tracks=(ops.pow,),
    reverse=True,
)
def mul_selfo(in_lv, out_lv):
    """``x * x <-> x ** 2``."""
    x = lvars(1)[0]
    return lall(eq(in_lv, etuple(mul, x, x)), eq(out_lv, etuple(pow, x, 2)))


def _non_negative(*cs: Any) -> bool:
    return all(is_number(c) and c >= 0 for c in cs)


def _power(arg: Any) -> tuple[Any, Any]:
    """``(base, exponent)`` of a factor; a constant, or a negative power, stays alone."""
    base, e = arg, 1
    if type(arg) is Term and arg._tuple[0] is pow and is_number(arg._tuple[2]):
        base, e = arg._tuple[1], arg._tuple[2]
    return (None if is_constant(base) or not _non_negative(e) else base), e


def _product_of_powers(base: Any, exponents: list) -> Term:
    return Term((pow, base, reduce(operator.add, exponents)))


@register(
    canonicalize_db,
    CANONICALIZE,
    FAST_RUN,
    produces=(ops.pow, ops.mul),
    position=15,
    tracks=(ops.mul,),
    whole=True,
)
@reads({ops.mul: {ops.pow: {}}})  # powers: x ** c, x
def pow_mulo(in_lv, out_lv):
    """``x ** a * x ** b * x -> x ** (a + b + 1)``, numbers ``a, b >= 0``; so ``x * x -> x ** 2``.

    Every group of powers of one base in a product is collected at once.  Backward,
    ``x ** n`` comes from ``x ** (n - 1) * x`` (``x * x`` for ``x ** 2``).
    """
    forward = computeo(partial(_collected, mul, _power, _product_of_powers), [in_lv], out_lv)
    return ifgroundo(in_lv, forward, computeo(_split_power, [out_lv], in_lv))


def _split_power(t: Any) -> Any:
    if not has_head(t, pow) or not is_number(t._tuple[2]):
        return None
    base, n = t._tuple[1], t._tuple[2]
    if n < 2 or is_constant(base):
        return None
    lower = base if n == 2 else Term((pow, base, n - 1))
    return Term((mul, *sorted_args(mul, [lower, base])))


@register(canonicalize_db, CANONICALIZE, UNSAFE, position=35, tracks=(ops.pow,))
@forward_only
def pow_powo(in_lv, out_lv):
    """``(x ** a) ** b -> x ** (a * b)``.  Unsafe: ``((-1) ** 2) ** 0.5`` is 1, not -1."""
    x, a, b, c = lvars(4)
    return lall(
        eq(in_lv, etuple(pow, etuple(pow, x, a), b)),
        testo(lambda u, v: is_number(u) and is_number(v), a, b),
        computeo(operator.mul, [a, b], c),
        eq(out_lv, etuple(pow, x, c)),
    )
