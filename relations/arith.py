"""Arithmetic relations: the AC normal form, constant folding, identities, signs.

Like terms and powers are collected in :mod:`relations.collect`.

Each relation is a goal constructor ``rel(a, b)``: ``b`` is ``a`` rewritten.
Run backward (``rel(q, term)``) they enumerate inputs that rewrite to ``term``.

>>> import relgraph as rg
>>> from kanren import run, var
>>> x, y = rg.vector("x"), rg.vector("y")
>>> q = var()
>>> i, j = rg.vector("i", "int64"), rg.vector("j", "int64")
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, ac_normalo(j * (i * j), q))]
['(i * j * j)']
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, ac_normalo(x * (y * x), q))]  # floats: kept
[]
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, reassociateo(x * y * x, q))]
['(x * x * y)']
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, add_zeroo(q, i))]
['(0 + i)', '(i + 0)']
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, add_zeroo(x + 0, q))]  # 0.0 at x = -0.0
[]
"""

from __future__ import annotations

import operator
from functools import partial
from typing import Any

import numpy as np
from cons import cons
from etuples import etuple
from kanren import conde, conso, eq, lall
from kanren.assoccomm import associative, commutative, eq_assoccomm, flatten_assoc_args
from unification import vars as lvars

from relations.databases import canonicalize_db, register, specialize_db
from relations.order import combinable, sorted_args
from relations.tags import (
    CANONICALIZE,
    EXPAND,
    FACTOR,
    FAST_RUN,
    NO_SIGNED_ZEROS,
    REASSOCIATE,
    SPECIALIZE,
    UNSAFE,
)
from relations.zeros import has_signed_zeros, integer_zero, may_be_minus_zero, signs_stay_in_ints
from relgraph import ops
from relgraph.logic.goals import (
    computeo,
    has_head,
    ifgroundo,
    is_constant,
    is_float,
    is_number,
    pipeo,
    removeo,
    testo,
    variadico,
)
from relgraph.ops import add, mul, neg, pow, sqrt, true_div
from relgraph.rewriting.declarations import (
    ANY_CONSTANT,
    forward_only,
    needs_operand,
    reads,
    reassociates,
)
from relgraph.rewriting.promotion import any_order
from relgraph.rewriting.rules import rule
from relgraph.terms.evaluate import evaluate
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant
from relgraph.terms.lvars import lvar
from relgraph.terms.term import Term
from relgraph.terms.traverse import as_term

__all__ = [
    "ac_normalo",
    "reassociateo",
    "constant_foldo",
    "add_zeroo",
    "add_float_zeroo",
    "mul_oneo",
    "mul_zeroo",
    "sub_zeroo",
    "div_oneo",
    "pow_oneo",
    "pow_zeroo",
    "neg_nego",
    "sub_addo",
    "div_mul_invo",
    "neg_addo",
    "neg_add_floato",
    "neg_mulo",
    "div_divo",
    "div_selfo",
    "mul_div_cancelo",
    "distributeo",
    "pow_halfo",
    "mul_neg_oneo",
    "commo",
    "negated",
    "nego",
]


def _is_ac(op: Any) -> bool:
    return (op,) in associative.facts and (op,) in commutative.facts


#: What the AC normal form reads of a sum (product): the sums (products) it splices,
#: and the symbols and constants it sorts by name and value.
_NESTED = {ops.add: {ops.add: {}, "leaf": {}}, ops.mul: {ops.mul: {}, "leaf": {}}}


def _ac_normal(t: Any, regroup: bool = False) -> Any:
    """The AC normal form of a sum or product, or None if ``t`` is in it already.

    Integer sums and products wrap around (modular arithmetic) and bool ones are
    logic: any grouping and order gives the same values, so they are flattened and
    sorted.  A float sum or product is rounded, and can overflow, differently in
    another grouping (``x * (y * 1e300)`` is finite where ``1e300 * x * y`` is
    inf), unless ``regroup``: only what is exact is done, splicing a left-nested
    chain (``(x + y) + z`` is ``add(x, y, z)``, which folds from the left) and
    sorting the two arguments of a binary one.
    """
    if type(t) is not Term or not _is_ac(t._tuple[0]):
        return None
    op, args = t._tuple[0], t._tuple[1:]
    if regroup or any_order(t):
        if any(type(a) is Term and a._tuple[0] is op for a in args):
            args = tuple(flatten_assoc_args(lambda head: head is op, args))
        ordered = sorted_args(op, args)
    else:
        while type(args[0]) is Term and args[0]._tuple[0] is op:  # the left fold: exact
            args = (*args[0]._tuple[1:], *args[1:])
        ordered = sorted_args(op, args) if len(args) == 2 else args
    if len(ordered) == len(t._tuple) - 1 and all(a is b for a, b in zip(ordered, t._tuple[1:])):
        return None
    return Term((op, *ordered))


@register(
    canonicalize_db,
    CANONICALIZE,
    FAST_RUN,
    produces=(ops.add, ops.mul),
    position=2,
    tracks=(ops.add, ops.mul),
    whole=True,
)
@register(specialize_db, SPECIALIZE, FAST_RUN, position=1, tracks=(ops.add, ops.mul), whole=True)
@reads(_NESTED)
def ac_normalo(in_lv, out_lv):
    """Flatten nested ``add``/``mul`` and sort their arguments where that keeps the
    values exactly: the AC normal form (integers and bools flattened and sorted;
    float sums and products keep their grouping: left-nested chains are spliced, a
    binary one is sorted).

    Forward this computes the one representative of the input's AC class
    (``kanren.assoccomm``'s flattening, then :mod:`relations.order`), so it
    never enumerates permutations.  Backward it is ``eq_assoccomm``: the
    groupings and orders of a sum or product, lazily.
    """
    return ifgroundo(in_lv, computeo(_ac_normal, [in_lv], out_lv), eq_assoccomm(in_lv, out_lv))


@register(
    canonicalize_db, CANONICALIZE, REASSOCIATE, position=1, tracks=(ops.add, ops.mul), whole=True
)
@reassociates
@reads(_NESTED)
def reassociateo(in_lv, out_lv):
    """Flatten and sort float sums and products too (``x * (y * 1e300) ->
    1e300 * x * y``): the float AC normal form, opt-in like LLVM's ``reassoc`` flag,
    since another grouping can overflow or round where the written one does not.
    A query that selects it lets the other relations (collecting like terms, folding
    constants, merging exponentials) take their arguments from anywhere in a float
    sum or product, as they do in integer ones.
    """
    regrouped = partial(_ac_normal, regroup=True)
    return ifgroundo(in_lv, computeo(regrouped, [in_lv], out_lv), eq_assoccomm(in_lv, out_lv))


def _fold(t: Term) -> Any:
    """The value of a constant term, or None where folding would hide something:
    numpy refuses it (``2 ** -1``), it is not finite (``1 / 0``), or integer
    arithmetic wrapped around (``10 ** 10 ** 10`` in int64)."""
    dtype = typeof(t).dtype
    with np.errstate(all="ignore"):
        try:
            value = np.asarray(evaluate(t, {}), dtype=dtype)
        except (ArithmeticError, ValueError, TypeError):
            return None
        if dtype.kind in "iu" and not _exact(t, value):
            return None
    if dtype.kind in "fc" and not np.all(np.isfinite(value)):
        return None  # keep 1 / 0 visible rather than fold it to inf
    return value[()] if value.ndim == 0 else Constant(value)


def _exact(t: Term, value: np.ndarray) -> bool:
    """Whether an integer fold agrees with the same arithmetic in float64 (no wrap)."""

    def as_float(x: Any) -> Any:
        if type(x) is Term:
            return Term((x._tuple[0], *(as_float(a) for a in x._tuple[1:])))
        if isinstance(x, Constant):
            return Constant(x.value.astype(np.float64))
        return float(x) if isinstance(x, (int, np.integer, bool, np.bool_)) else x

    try:
        wide = np.asarray(evaluate(as_float(t), {}), dtype=np.float64)
    except (ArithmeticError, ValueError, TypeError):
        return False
    return bool(np.all(np.isfinite(wide)) and np.allclose(value, wide, rtol=1e-9, atol=0.5))


def _folded(t: Any) -> Any:
    """The value of ``t`` if its arguments are constants; a sum or product with
    its constant arguments folded into one (in floating point, its leading ones);
    else None."""
    if type(t) is not Term:
        return None
    op, args = t._tuple[0], t._tuple[1:]
    if all(is_constant(a) for a in args):
        return _fold(t)
    if not _is_ac(op):
        return None
    constants, others = combinable(t, is_constant)
    if len(constants) < 2:
        return None
    value = _fold(Term((op, *constants)))
    return None if value is None else Term((op, value, *others))


@register(canonicalize_db, CANONICALIZE, FAST_RUN, position=3, whole=True)
@forward_only
@reads()
@needs_operand(ANY_CONSTANT)
def constant_foldo(in_lv, out_lv):
    """An Op applied to constants is its value: ``2 * 3 -> 6``; the constants of a
    sum or product fold into one: ``2 + 3 + x -> 5 + x``, ``2 + i + 3 -> 5 + i`` for
    integers (in floating point ``(2 + x) + 3`` rounds twice; finite results only)."""
    return computeo(_folded, [in_lv], out_lv)


def _has_arg(op: Any, constant: Any, t: Any) -> bool:
    """Whether ``t`` is ``op`` applied to the number ``constant``, among others."""
    t = as_term(t)  # built by a goal when run backward
    if type(t) is not Term or t._tuple[0] is not op:
        return False
    return any(is_number(a) and a == constant for a in t._tuple[1:])


def _drop_constanto(op, constant, exact=None):
    """``op(..., constant, ...) -> op(...)``: the constant is op's identity element
    (where ``exact`` of the term with it holds)."""
    has = partial(_has_arg, op, constant)
    test = has if exact is None else lambda t: has(t) and exact(t)

    def relation(in_lv, out_lv):
        args, rest = lvars(2)
        return pipeo(
            in_lv,
            testo(test, in_lv),  # a cheap test first (run backward: once in_lv is built)
            conso(op, args, in_lv),
            removeo(constant, args, rest),
            variadico(op, rest, out_lv),
        )

    return relation


def _zero_drops_exactly(total: Any) -> bool:
    """Whether ``total`` (a sum with a 0) is itself without a 0 at every zero: in
    integers; where its zeros are -0.0 (``x + -0.0`` is ``x``); where another of its
    terms is never -0.0 (a float sum is -0.0 only where every term is)."""
    total = as_term(total)  # built by a goal when run backward
    if not has_signed_zeros(total):
        return True
    args = total._tuple[1:]
    if not any(is_number(a) and a == 0 and not may_be_minus_zero(a) for a in args):
        return True
    return sum(not may_be_minus_zero(a) for a in args) >= 2


@register(canonicalize_db, CANONICALIZE, FAST_RUN, position=4, tracks=(ops.add,), whole=True)
@reads({ops.add: {}})
@needs_operand(ANY_CONSTANT)
def add_zeroo(in_lv, out_lv):
    """``x + 0 -> x`` (in a sum of any length) where it keeps the sign of a zero: for
    integers, for ``x + -0.0``, and where ``x`` is never -0.0 (``exp(y) + 0``).

    Elsewhere ``x + 0`` is 0.0 at ``x = -0.0``: see ``add_float_zeroo``.
    """
    return _drop_constanto(add, 0, _zero_drops_exactly)(in_lv, out_lv)


@register(canonicalize_db, CANONICALIZE, FAST_RUN, NO_SIGNED_ZEROS, position=4.5,
          tracks=(ops.add,), whole=True)  # fmt: skip
@reads({ops.add: {}})
@needs_operand(ANY_CONSTANT)
def add_float_zeroo(in_lv, out_lv):
    """``x + 0 -> x`` for every float ``x``.

    At ``x = -0.0`` the program gives 0.0 and the rewrite -0.0.
    """
    return _drop_constanto(add, 0)(in_lv, out_lv)


@register(canonicalize_db, CANONICALIZE, FAST_RUN, position=5, tracks=(ops.mul,), whole=True)
@reads({ops.mul: {}})
@needs_operand(ANY_CONSTANT)
def mul_oneo(in_lv, out_lv):
    """``x * 1 -> x`` (in a product of any length)."""
    return _drop_constanto(mul, 1)(in_lv, out_lv)


def _zero_like(t: Any) -> Any:
    tp = typeof(t)
    return np.zeros((), tp.dtype)[()] if tp.ndim == 0 else None


def _zero_product(t: Any) -> Any:
    return _zero_like(t) if _has_arg(mul, 0, t) else None


@register(canonicalize_db, CANONICALIZE, UNSAFE, position=31, tracks=(ops.mul,), whole=True)
@forward_only
@needs_operand(ANY_CONSTANT)
def mul_zeroo(in_lv, out_lv):
    """``x * 0 -> 0`` for scalars.  Unsafe: ``inf * 0`` and ``nan * 0`` are NaN."""
    return computeo(_zero_product, [in_lv], out_lv)


def _one_like(t: Any) -> Any:
    tp = typeof(t)
    return np.ones((), tp.dtype)[()] if tp.ndim == 0 else None


@register(canonicalize_db, CANONICALIZE, FAST_RUN, position=9, tracks=(ops.pow,))
@forward_only
@needs_operand(ANY_CONSTANT)
def pow_zeroo(in_lv, out_lv):
    """``x ** 0 -> 1`` for scalars (numpy: also for ``x = 0``, ``inf`` and NaN)."""
    x = lvars(1)[0]
    return lall(eq(in_lv, etuple(pow, x, 0)), computeo(_one_like, [in_lv], out_lv))


_x = lvar("x")
sub_zeroo = rule(_x - 0, _x, name="sub_zeroo")
sub_zeroo.__doc__ = """``x - 0 -> x``."""
register(canonicalize_db, CANONICALIZE, FAST_RUN, position=6, tracks=(ops.sub,))(sub_zeroo)
div_oneo = rule(_x / 1, _x, name="div_oneo")
div_oneo.__doc__ = """``x / 1 -> x``."""
register(canonicalize_db, CANONICALIZE, FAST_RUN, position=7, tracks=(ops.true_div,))(div_oneo)
pow_oneo = rule(_x**1, _x, name="pow_oneo")
pow_oneo.__doc__ = """``x ** 1 -> x``."""
register(canonicalize_db, CANONICALIZE, FAST_RUN, position=8, tracks=(ops.pow,))(pow_oneo)

neg_nego = rule(neg(neg(_x)), _x, name="neg_nego")
neg_nego.__doc__ = """``-(-x) -> x``."""
register(canonicalize_db, CANONICALIZE, FAST_RUN, position=10, tracks=(ops.neg,))(neg_nego)


_y = lvar("y")
sub_addo = rule(_x - _y, _x + -_y, name="sub_addo", when=lambda y: not integer_zero(y))
sub_addo.__doc__ = """``x - y <-> x + (-y)``.

    Not for the integer ``y = 0``: ``-0`` is 0, and ``x + 0`` is 0.0 where ``x - 0`` is
    -0.0.
    """
register(canonicalize_db, CANONICALIZE, FAST_RUN, produces=(ops.add,), position=11,
         tracks=(ops.sub,))(sub_addo)  # fmt: skip
register(specialize_db, SPECIALIZE, FAST_RUN, name="add_nego", produces=(ops.sub,), position=2,
         tracks=(ops.add,), reverse=True)(sub_addo)  # fmt: skip


def negated(x: Any) -> Any:
    """``-x`` in the normal form: ``-(-u)`` is ``u``, ``-(c * u)`` is ``(-c) * u``, ``-c`` a
    number, ``-(a + b)`` of integers is ``-a + -b`` (sorted); a float sum stays
    ``-(a + b)``, which is -0.0 where ``a = -b`` (``-a + -b`` is 0.0)."""
    if is_number(x):
        return -x
    if has_head(x, neg):
        return x._tuple[1]
    if has_head(x, add) and not has_signed_zeros(x):
        return Term((add, *sorted_args(add, [negated(a) for a in x._tuple[1:]])))
    if has_head(x, mul) and _negates_exactly(x._tuple[1]):
        c, rest = -x._tuple[1], x._tuple[2:]
        if c == 1:
            return rest[0] if len(rest) == 1 else Term((mul, *rest))
        return Term((mul, c, *rest))
    return Term((neg, x))


def nego(x, minus_x):
    """``minus_x`` is ``-x`` simplified (see :func:`negated`), in either direction."""
    return ifgroundo(
        x,
        computeo(negated, [x], minus_x),
        ifgroundo(minus_x, computeo(negated, [minus_x], x), eq(minus_x, etuple(neg, x))),
    )


def commo(op, a, b, term):
    """``term`` is ``op(a, b)`` or ``op(b, a)``: a binary pattern on a commutative Op.

    A known ``term`` is matched both ways; an unknown one is built one way.
    """
    built = eq(term, etuple(op, a, b))
    return ifgroundo(term, conde([built], [eq(term, etuple(op, b, a))]), built)


div_mul_invo = rule(_x / _y, _x * _y**-1, name="div_mul_invo", when=lambda y: is_float(y))
div_mul_invo.__doc__ = """``x / y <-> x * y ** -1``.

    Only for floating ``y``: numpy refuses ``int ** -1``.
    """
register(specialize_db, SPECIALIZE, FAST_RUN, name="mul_invo", produces=(ops.true_div,),
         position=3, tracks=(ops.mul,), reverse=True)(div_mul_invo)  # fmt: skip
register(specialize_db, EXPAND, produces=(ops.mul,), position=10,
         tracks=(ops.true_div,))(div_mul_invo)  # fmt: skip


def _negated_terms(t: Any, floats: bool = False) -> Any:
    """``-(a + b + ...)`` as ``-a + -b + ...`` (of integers, unless ``floats``); None
    for another term."""
    if not (has_head(t, neg) and has_head(t._tuple[1], add)):
        return None
    if not floats and has_signed_zeros(t):
        return None
    return Term((add, *(Term((neg, a)) for a in t._tuple[1]._tuple[1:])))


def _un_negated(t: Any, floats: bool = False) -> Any:
    """``-a + -b + ...`` as ``-(a + b + ...)`` (of integers, unless ``floats``); None for
    another term."""
    t = as_term(t)  # built by a goal when run backward
    if not has_head(t, add) or not all(has_head(a, neg) for a in t._tuple[1:]):
        return None
    if not floats and has_signed_zeros(t):
        return None
    return Term((neg, Term((add, *(a._tuple[1] for a in t._tuple[1:])))))


def _neg_addo(in_lv, out_lv, floats=False):
    forward, backward = (
        computeo(partial(_negated_terms, floats=floats), [in_lv], out_lv),
        computeo(partial(_un_negated, floats=floats), [out_lv], in_lv),
    )
    return ifgroundo(in_lv, forward, backward)


@register(
    canonicalize_db, CANONICALIZE, FAST_RUN, produces=(ops.add,), position=12, tracks=(ops.neg,)
)
def neg_addo(in_lv, out_lv):
    """``-(a + b + ...) -> -a + -b + ...`` for integers: negation distributes over a
    sum (exactly, in modular arithmetic).  For floats see ``neg_add_floato``."""
    return _neg_addo(in_lv, out_lv)


@register(canonicalize_db, CANONICALIZE, FAST_RUN, NO_SIGNED_ZEROS, produces=(ops.add,),
          position=12.5, tracks=(ops.neg,))  # fmt: skip
def neg_add_floato(in_lv, out_lv):
    """``-(a + b + ...) -> -a + -b + ...`` for every dtype.

    At ``a = -b`` the program gives -0.0 and the rewrite 0.0.
    """
    return _neg_addo(in_lv, out_lv, floats=True)


def _scaled_negated(t: Any) -> Any:
    """``-(c * x * ...)`` as ``(-c) * x * ...`` for a number ``c``; None otherwise."""
    if not (has_head(t, neg) and has_head(t._tuple[1], mul)):
        return None
    c, *rest = t._tuple[1]._tuple[1:]
    # -(0 * x) is -0.0 where (-0) * x, an integer 0 times x, is 0.0
    return Term((mul, operator.neg(c), *rest)) if _negates_exactly(c) else None


def _negates_exactly(c: Any) -> bool:
    """A number whose negation carries its sign into a float product: not the integer 0."""
    return is_number(c) and not integer_zero(c)


@register(
    canonicalize_db, CANONICALIZE, FAST_RUN, produces=(ops.mul,), position=13, tracks=(ops.neg,)
)
def neg_mulo(in_lv, out_lv):
    """``-(c * x) -> (-c) * x`` for a number ``c`` (not the integer 0: ``-0`` is 0)."""
    c, rest, minus_c = lvars(3)
    negative = eq(in_lv, etuple(neg, cons(mul, cons(c, rest))))
    scaled = conso(mul, cons(minus_c, rest), out_lv)
    backward = lall(
        scaled, testo(_negates_exactly, minus_c), computeo(operator.neg, [minus_c], c), negative
    )
    return ifgroundo(in_lv, computeo(_scaled_negated, [in_lv], out_lv), backward)


_z = lvar("z")
div_divo = rule((_x / _y) / _z, _x / (_y * _z), name="div_divo")
div_divo.__doc__ = """``(x / y) / z -> x / (y * z)``: one division instead of two."""
register(canonicalize_db, CANONICALIZE, UNSAFE, position=36, tracks=(ops.true_div,))(div_divo)


@register(canonicalize_db, CANONICALIZE, UNSAFE, position=33, tracks=(ops.true_div,))
@forward_only
def div_selfo(in_lv, out_lv):
    """``x / x -> 1`` for scalars.  Unsafe: ``0 / 0`` is NaN."""
    x = lvars(1)[0]
    return lall(eq(in_lv, etuple(true_div, x, x)), computeo(_one_like, [in_lv], out_lv))


@register(canonicalize_db, CANONICALIZE, UNSAFE, position=34, tracks=(ops.true_div,), whole=True)
@forward_only
def mul_div_cancelo(in_lv, out_lv):
    """``(x * y) / y -> x`` (``y`` anywhere in the product).  Unsafe: ``y = 0``."""
    args, rest, y = lvars(3)
    return pipeo(
        in_lv,
        eq(in_lv, etuple(true_div, cons(mul, args), y)),
        removeo(y, args, rest),
        variadico(mul, rest, out_lv),
    )


@register(
    specialize_db,
    SPECIALIZE,
    FACTOR,
    UNSAFE,
    name="factoro",
    produces=(ops.mul,),
    position=7,
    tracks=(ops.add,),
    reverse=True,
)
@register(specialize_db, EXPAND, produces=(ops.add,), position=11, tracks=(ops.mul,))
@reassociates
def distributeo(in_lv, out_lv):
    """``x * (y + z) <-> x * y + x * z`` (reversed, it factors ``x`` out); it regroups
    float sums itself, so a query with it regroups them as ``reassociateo`` does."""
    x, y, z, xy, xz = lvars(5)
    return lall(
        commo(mul, x, etuple(add, y, z), in_lv),
        eq(out_lv, etuple(add, xy, xz)),
        commo(mul, x, y, xy),
        commo(mul, x, z, xz),
    )


pow_halfo = rule(_x**0.5, sqrt(_x), name="pow_halfo")
pow_halfo.__doc__ = """``x ** 0.5 <-> sqrt(x)``."""
register(specialize_db, SPECIALIZE, UNSAFE, position=6, tracks=(ops.pow,))(pow_halfo)


@register(
    specialize_db,
    SPECIALIZE,
    FAST_RUN,
    produces=(ops.neg, ops.mul),
    position=4,
    tracks=(ops.mul,),
    whole=True,
)
@needs_operand(ANY_CONSTANT)
def mul_neg_oneo(in_lv, out_lv):
    """``-1 * x -> -x`` (in a product of any length), ``-x`` as ``canonicalize`` writes
    it: ``-1 * (a + b) -> -(a + b)`` (``-a + -b`` for integers)."""
    args, rest, x = lvars(3)
    return pipeo(
        in_lv,
        testo(partial(_has_arg, mul, -1), in_lv),  # a cheap test first
        testo(lambda t: not signs_stay_in_ints(as_term(t)), in_lv),
        conso(mul, args, in_lv),
        removeo(-1, args, rest),
        variadico(mul, rest, x),
        nego(x, out_lv),
    )
