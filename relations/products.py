"""Products and quotients: signs, absolute values, constants, exponentials, cancellation.

Every relation here computes its result from a whole product (any number of
factors), so it runs forward; those with a one-step inverse also run backward.

>>> import relgraph as rg
>>> from kanren import run, var
>>> x, y = rg.vector("x"), rg.vector("y")
>>> q = var()
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, mul_nego(rg.mul(-1, x, -y), q))]
['(x * y)']
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, exp_mulo(rg.exp(x) * rg.exp(y), q))]
['exp(x + y)']
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, exp_mulo(q, rg.exp(x + y)))]
['(exp(x) * exp(y))']
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from etuples import etuple
from kanren import conde, eq, lall
from unification import var, vars as lvars

from relations.arith import _zero_like, commo, negated, nego
from relations.databases import canonicalize_db, register
from relations.order import combinable, sorted_args
from relations.tags import CANONICALIZE, FAST_RUN, UNSAFE
from relations.zeros import signs_stay_in_ints
from relgraph import ops
from relgraph.logic.goals import computeo, eacho, has_head, ifgroundo, is_float, is_number, testo
from relgraph.ops import abs, add, exp, mul, neg, pow, reciprocal, sign, true_div
from relgraph.rewriting.declarations import ANY_CONSTANT, forward_only, needs_operand
from relgraph.rewriting.promotion import regroups
from relgraph.rewriting.rules import rule
from relgraph.terms.infer import typeof
from relgraph.terms.lvars import lvar, rest
from relgraph.terms.term import Term

__all__ = [
    "mul_nego", "abs_mulo", "div_consto", "exp_mulo", "exp_divo", "sign_div_consto", "cancelo",
    "reciprocal_reciprocalo", "zero_divo", "div_abso", "abs_nego", "abs_neg_sumo",
]  # fmt: skip


def _factors(t: Any) -> tuple | None:
    return t._tuple[1:] if has_head(t, mul) else None


def _product(args: list) -> Any:
    """The product of ``args``: one factor alone, none is 1; sorted in integer
    arithmetic, in their order in floating point (another order rounds otherwise)."""
    if not args:
        return 1
    if len(args) == 1:
        return args[0]
    product = Term((mul, *args))
    return Term((mul, *sorted_args(mul, args))) if regroups(product) else product


def _signs_pulled(t: Any) -> Any:
    factors = _factors(t)
    if factors is not None and len(factors) == 2 and is_number(factors[0]) and factors[0] == -1:
        if has_head(factors[1], add):
            return negated(factors[1])  # the form -(a + b) takes (-a + -b in integers)
    if factors is None or signs_stay_in_ints(t):
        return None
    minus_ones = sum(1 for a in factors if is_number(a) and a == -1)
    if minus_ones < 2 and not any(has_head(a, neg) for a in factors):
        return None  # -1 * x is the normal form
    flips, kept = 0, []
    for a in factors:  # a sign flip is exact wherever it is in the product
        while has_head(a, neg):
            a, flips = a._tuple[1], flips + 1
        if is_number(a) and a in (1, -1):  # -(1) leaves no 1 behind
            flips += a == -1
        else:
            kept.append(a)
    product = _product(kept)
    return negated(product) if flips % 2 else product


@register(
    canonicalize_db,
    CANONICALIZE,
    FAST_RUN,
    produces=(ops.neg, ops.mul),
    position=16,
    tracks=(ops.mul,),
    whole=True,
)
def mul_nego(in_lv, out_lv):
    """``x * -y -> -(x * y)``, ``(-x) * (-y) -> x * y``, ``-1 * x * -1 -> x``: signs leave
    a product (exactly, wherever they are in it; not a float product with an integer
    factor, where ``-i`` is 0 at ``i = 0`` and the product 0.0, not -0.0).

    An odd sign goes into the product's number, if it has one: ``2 * -x -> -2 * x``;
    ``-1 * (a + b) -> -(a + b)`` (``-a + -b`` for integers), the form ``-(a + b)`` takes.
    Backward, ``-(x * y)`` comes from ``-x * y`` and ``x * -y``.
    """
    forward = computeo(_signs_pulled, [in_lv], out_lv)
    return ifgroundo(in_lv, forward, eacho(_sign_pushed, out_lv, in_lv))


def _sign_pushed(t: Any) -> list:
    """``-(x * y)`` as ``-x * y`` and ``x * -y``."""
    inner = t._tuple[1] if has_head(t, neg) else None
    factors = _factors(inner)
    if factors is None:
        return []
    return [
        Term((mul, *factors[:i], Term((neg, a)), *factors[i + 1 :]))
        for i, a in enumerate(factors)
        if not is_number(a)
    ]


def _abs_merged(t: Any) -> Any:
    if has_head(t, true_div) and all(has_head(a, abs) for a in t._tuple[1:]):
        return Term((abs, Term((true_div, t._tuple[1]._tuple[1], t._tuple[2]._tuple[1]))))
    factors = _factors(t)
    if factors is None:
        return None
    absolutes, rest = combinable(t, lambda a: has_head(a, abs))
    if len(absolutes) < 2:
        return None
    return _product([Term((abs, _product([a._tuple[1] for a in absolutes]))), *rest])


@register(
    canonicalize_db,
    CANONICALIZE,
    FAST_RUN,
    produces=(ops.abs, ops.mul, ops.true_div),
    position=17,
    tracks=(ops.mul, ops.true_div),
    whole=True,
)
def abs_mulo(in_lv, out_lv):
    """``abs(x) * abs(y) <-> abs(x * y)``; ``abs(x) / abs(y) <-> abs(x / y)``: exact.

    Forward, every ``abs`` factor of a product merges at once.
    """
    x, y = lvars(2)
    backward = conde(
        *(
            [
                eq(out_lv, etuple(abs, etuple(op, x, y))),
                eq(in_lv, etuple(op, etuple(abs, x), etuple(abs, y))),
            ]
            for op in (mul, true_div)
        )
    )
    return ifgroundo(in_lv, computeo(_abs_merged, [in_lv], out_lv), backward)


def _constant_divided(t: Any) -> Any:
    """``(k * x) / c -> (k / c) * x`` for numbers ``k``, ``c`` when ``k / c`` is exact."""
    if not has_head(t, true_div):
        return None
    num, c = t._tuple[1], t._tuple[2]
    factors = _factors(num)
    if not is_number(c) or c == 0 or factors is None or not is_number(factors[0]):
        return None
    k = factors[0]
    ratio = k / c
    if ratio == 0 or not math.isfinite(ratio) or Fraction(ratio) * Fraction(c) != Fraction(k):
        return None  # the ratio rounds: the division stays
    rest = list(factors[1:])
    return _product(rest) if ratio == 1 else _product([ratio, *rest])


@register(canonicalize_db, CANONICALIZE, FAST_RUN, position=19, tracks=(ops.true_div,))
@forward_only
@needs_operand(ANY_CONSTANT)
def div_consto(in_lv, out_lv):
    """``(k * x) / c -> (k / c) * x`` for numbers with an exact ratio: ``2 * x / 2 -> x``.

    ``k * x`` may overflow where ``x`` does not, never the reverse.
    """
    return computeo(_constant_divided, [in_lv], out_lv)


def _power_base(a: Any) -> Any:
    """What a factor is a power of, for merging: ``"exp"``, or a positive number base."""
    if has_head(a, exp):
        return "exp"
    if has_head(a, pow) and is_number(a._tuple[1]) and a._tuple[1] > 0:
        return a._tuple[1]
    return None


def _exponent(a: Any) -> Any:
    return a._tuple[1] if a._tuple[0] is exp else a._tuple[2]


def _exps_merged(t: Any) -> Any:
    factors = _factors(t)
    if factors is None:
        return None
    if regroups(t):
        powers, rest = combinable(t, lambda a: _power_base(a) is not None)
    else:  # floats: the leading powers of one base only
        first = _power_base(factors[0])
        powers, rest = combinable(t, lambda a: first is not None and _power_base(a) == first)
    groups: dict[Any, list] = {}
    for a in powers:
        groups.setdefault(_power_base(a), []).append(a)
    if len(groups) == len(powers):
        return None
    merged = [g[0] if len(g) == 1 else _merged_power(base, g) for base, g in groups.items()]
    return _product(merged + rest)


def _merged_power(base: Any, group: list) -> Term:
    total = _sum_of([_exponent(a) for a in group])
    return Term((exp, total)) if base == "exp" else Term((pow, base, total))


def _sum_of(exponents: list) -> Term:
    """The sum a merge creates.  A sum among the exponents goes first, spliced: a sum
    folds from the left, so ``add(a, b, c)`` is ``(a + b) + c`` and merging
    ``exp(a + b) * exp(c)`` keeps the grouping of ``a + b`` (floats regroup only
    under the opt-in ``reassociate`` tag)."""
    first = next((e for e in exponents if has_head(e, add)), None)
    if first is None:
        return Term((add, *sorted_args(add, exponents)))
    rest = [e for e in exponents if e is not first]
    return Term((add, *first._tuple[1:], *sorted_args(add, rest)))


@register(
    canonicalize_db,
    CANONICALIZE,
    FAST_RUN,
    produces=(ops.exp, ops.pow, ops.mul),
    position=20,
    tracks=(ops.mul,),
    whole=True,
)
def exp_mulo(in_lv, out_lv):
    """``exp(a) * exp(b) -> exp(a + b)``, ``2 ** a * 2 ** b -> 2 ** (a + b)`` (any
    positive number base; every group of a product at once).

    Where ``exp(a) * exp(b)`` is ``inf * 0`` (NaN) the right side is the exact value.
    """
    a, b = lvars(2)
    backward = lall(
        eq(out_lv, etuple(exp, etuple(add, a, b))),
        commo(mul, etuple(exp, a), etuple(exp, b), in_lv),
    )
    return ifgroundo(in_lv, computeo(_exps_merged, [in_lv], out_lv), backward)


def _exps_divided(t: Any) -> Any:
    """``(exp(a) * y) / (exp(b) * z) -> (exp(a + -b) * y) / z``: exps of a quotient
    merge (in floating point only ``exp(a) / exp(b)``: others regroup the products)."""
    if not has_head(t, true_div):
        return None
    num, den = (list(_factors(a) or (a,)) for a in t._tuple[1:])
    moved = [a for a in den if has_head(a, exp)]
    if not moved or not any(has_head(a, exp) for a in num):
        return None
    if not regroups(t) and len(num) + len(den) > 2:
        return None
    top = [*num, *(Term((exp, negated(a._tuple[1]))) for a in moved)]
    merged = _exps_merged(Term((mul, *top)))
    rest = [a for a in den if all(a is not m for m in moved)]
    return merged if not rest else Term((true_div, merged, _product(rest)))


@register(
    canonicalize_db,
    CANONICALIZE,
    FAST_RUN,
    produces=(ops.exp, ops.mul, ops.true_div),
    position=21,
    tracks=(ops.true_div,),
)
def exp_divo(in_lv, out_lv):
    """``exp(a) / exp(b) -> exp(a - b)`` (also among other factors above and below).

    Where ``exp(a) / exp(b)`` is ``inf / inf`` the right side is the exact value.
    """
    a, b, minus_b = lvars(3)
    backward = lall(
        eq(out_lv, etuple(exp, etuple(add, a, minus_b))),
        nego(b, minus_b),
        eq(in_lv, etuple(true_div, etuple(exp, a), etuple(exp, b))),
    )
    return ifgroundo(in_lv, computeo(_exps_divided, [in_lv], out_lv), backward)


def _sign_of_quotient(t: Any) -> Any:
    if not has_head(t, sign):
        return None
    q = t._tuple[1]
    if not has_head(q, true_div) or not is_number(q._tuple[2]):
        return None
    c = q._tuple[2]
    if not c or c != c:
        return None
    x = q._tuple[1]
    return Term((sign, x)) if c > 0 else Term((sign, Term((neg, x))))


@register(canonicalize_db, CANONICALIZE, FAST_RUN, position=22, tracks=(ops.sign,))
@forward_only
def sign_div_consto(in_lv, out_lv):
    """``sign(x / c) -> sign(x)`` for a number ``c > 0`` (``sign(-x)`` for ``c < 0``:
    ``-sign(x)`` is -0.0 at ``x = 0``).

    Where ``x / c`` underflows to 0 the right side keeps the sign.
    """
    return computeo(_sign_of_quotient, [in_lv], out_lv)


def _numerator_denominator(t: Any) -> tuple[list, list]:
    """The factors of a nest of products and quotients, above and below the line."""
    if has_head(t, mul):
        num, den = [], []
        for a in t._tuple[1:]:
            n, d = _numerator_denominator(a)
            num += n
            den += d
        return num, den
    if has_head(t, true_div):
        n1, d1 = _numerator_denominator(t._tuple[1])
        n2, d2 = _numerator_denominator(t._tuple[2])
        return n1 + d2, d1 + n2
    return [t], []


def _cancelled(t: Any) -> Any:
    if type(t) is not Term or t._tuple[0] not in (mul, true_div):
        return None
    num, den = _numerator_denominator(t)
    kept_den = list(den)
    kept_num = []
    for a in num:
        if a in kept_den and not is_number(a):
            kept_den.remove(a)
        else:
            kept_num.append(a)
    if len(kept_num) == len(num):
        return None
    top = _product(kept_num)
    return top if not kept_den else Term((true_div, top, _product(kept_den)))


@register(
    canonicalize_db, CANONICALIZE, UNSAFE, position=37, tracks=(ops.mul, ops.true_div), whole=True
)
@forward_only
def cancelo(in_lv, out_lv):
    """``(x / y) * (y / z) / (x / w) -> w / z``: equal factors above and below cancel.

    Unsafe: where a cancelled factor is 0, inf or NaN the left side is NaN.
    """
    return computeo(_cancelled, [in_lv], out_lv)


@register(
    canonicalize_db, CANONICALIZE, FAST_RUN, position=27, tracks=(ops.true_div, ops.reciprocal)
)
def reciprocal_reciprocalo(in_lv, out_lv):
    """``1 / (1 / x) -> x`` (also ``reciprocal(reciprocal(x))``).

    Where ``1 / x`` overflows (a subnormal ``x``) the right side keeps ``x``; at 0,
    +-0.0 and the infinities both sides agree.  Floats only: numpy's reciprocal of
    an integer is an integer (``reciprocal(2) == 0``).
    """
    x = var()
    return lall(
        conde(
            [eq(in_lv, etuple(true_div, 1, etuple(true_div, 1, x)))],
            [eq(in_lv, etuple(reciprocal, etuple(reciprocal, x)))],
        ),
        eq(out_lv, x),
        testo(is_float, x),
    )


def _zero_quotient(t: Any) -> Any:
    if has_head(t, true_div) and is_number(t._tuple[1]):
        return _zero_like(t) if t._tuple[1] == 0 else None
    return None


@register(canonicalize_db, CANONICALIZE, UNSAFE, position=38, tracks=(ops.true_div,))
@forward_only
def zero_divo(in_lv, out_lv):
    """``0 / x -> 0`` for scalars.  Unsafe: ``0 / 0`` and ``0 / nan`` are NaN."""
    return computeo(_zero_quotient, [in_lv], out_lv)


@register(
    canonicalize_db,
    CANONICALIZE,
    UNSAFE,
    produces=(ops.sign,),
    position=39,
    tracks=(ops.true_div,),
)
def div_abso(in_lv, out_lv):
    """``x / abs(x) <-> sign(x)``.  Unsafe: at 0 and +-inf the left side is NaN."""
    x = var()
    return lall(eq(in_lv, etuple(true_div, x, etuple(abs, x))), eq(out_lv, etuple(sign, x)))


_x = lvar("x")
abs_nego = rule(abs(-_x), abs(_x), name="abs_nego", when=lambda x: typeof(x).dtype.kind in "fi")
register(canonicalize_db, CANONICALIZE, position=18, tracks=(ops.abs,))(abs_nego)
abs_nego.__doc__ = """``abs(-x) <-> abs(x)``: exact for floats and signed integers.

(For signed integers the most negative value is its own negation and its own
absolute value; unsigned ``-x`` wraps around, so they are left out.)

>>> import relgraph as rg
>>> rg.pprint(next(rg.rewrites(abs(-rg.vector("x")), abs_nego)))
'abs(x)'
>>> len(list(rg.rewrites(abs(-rg.vector("u", "uint8")), abs_nego)))
0
"""

_xs = rest("xs")
abs_neg_sumo = rule(abs(add(-_xs)), abs(add(_xs)), name="abs_neg_sumo",
                    when=lambda xs: all(typeof(x).dtype.kind in "fi" for x in xs))  # fmt: skip
register(canonicalize_db, CANONICALIZE, FAST_RUN, position=18.5, tracks=(ops.abs,))(abs_neg_sumo)
abs_neg_sumo.__doc__ = """``abs(-a + -b + ...) <-> abs(a + b + ...)``: exact for floats and
signed integers.

``-a + -b`` is ``-(a + b)`` but for the sign of a zero (0.0 where ``a = -b``, whose
negation is -0.0), and ``abs`` drops that sign.

>>> import relgraph as rg
>>> x, y = rg.vector("x"), rg.vector("y")
>>> rg.pprint(next(rg.rewrites(abs(-x + -y), abs_neg_sumo)))
'abs(x + y)'
"""
