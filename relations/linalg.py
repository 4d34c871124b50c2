"""Linear algebra relations.

``dot_distributeo`` is the example of the Aesara/PyTensor graph rewriting
documentation, written as there: a plain
kanren goal constructor, so it runs forward and backward.

>>> import relgraph as rg
>>> from kanren import run, var
>>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
>>> q = var()
>>> [rg.pprint(rg.as_term(r)) for r in run(1, q, dot_distributeo(A @ (x + y), q))]
['((A @ x) + (A @ y))']
>>> [rg.pprint(rg.as_term(r)) for r in run(1, q, dot_distributeo(q, A @ x + A @ y))]
['(A @ (x + y))']
"""

import math
from functools import partial
from typing import Any

import numpy as np
from etuples import etuple
from kanren import conde, conso, eq, heado, lall, tailo
from kanren.assoccomm import assoc_flatten
from unification import var, vars as lvars

from relations.databases import canonicalize_db, linalg_db, register, specialize_db
from relations.tags import CANONICALIZE, EXPAND, FACTOR, FAST_RUN, LINALG, SPECIALIZE, UNSAFE
from relations.zeros import has_signed_zeros
from relgraph import ops
from relgraph.logic.goals import (
    has_head,
    is_number,
    is_scalar,
    pipeo,
    removeo,
    testo,
    variadico,
    zipo,
)
from relgraph.ops import (
    add,
    cholesky,
    dot,
    inv,
    mul,
    solve,
    solve_lower,
    solve_upper,
    sum,
    transpose,
)
from relgraph.rewriting.declarations import needs_operand, reads, reassociates
from relgraph.rewriting.rules import rule
from relgraph.terms.infer import typeof
from relgraph.terms.lvars import lvar, rest as rest_lvar
from relgraph.terms.traverse import as_term, subterms

__all__ = [
    "inv_solveo",
    "solve_choleskyo",
    "solve_cholesky_To",
    "dot_distributeo",
    "dot_distribute_sameo",
    "transpose_transposeo",
    "transpose_lowo",
    "transpose_doto",
    "dot_assoco",
    "cheaper_dot_ordero",
    "dot_scaleo",
    "sum_scale_anyo",
    "dot_scale_anyo",
    "sum_doto",
    "sum_scaleo",
]


@reassociates
def dot_distributeo(in_lv, out_lv):
    """Relate ``A @ (a + b + ...)`` and ``(A @ a) + (A @ b) + ...``.

    Nested sums are flattened first (``add`` is associative), so the output is
    one variadic sum of products.  A distribution regroups float sums itself, so a
    query with it regroups them as one with ``reassociate`` does (gathering
    ``B @ z + B @ w`` out of the middle of a sum).
    """
    A_lv, add_term_lv, add_cdr_lv, dot_cdr_lv, add_flat_lv = lvars(5)

    return lall(
        # Make sure the input is a `dot`
        eq(in_lv, etuple(dot, A_lv, add_term_lv)),
        # Make sure the term being `dot`ed is an `add`
        heado(add, add_term_lv),
        # Flatten the associative pairings of `add` operations
        assoc_flatten(add_term_lv, add_flat_lv),
        # Get the flattened `add` arguments
        tailo(add_cdr_lv, add_flat_lv),
        # Add all the `dot`ed arguments and set the output
        conso(add, dot_cdr_lv, out_lv),
        # Apply the `dot` to all the flattened `add` arguments (kanren's `mapo`,
        # as one conjunction once a list's length is known: linear in the sum)
        zipo(lambda x, y: conso(dot, etuple(A_lv, x), y), add_cdr_lv, dot_cdr_lv),
    )


_T = lvar("A")
transpose_transposeo = rule(transpose(transpose(_T)), _T, name="transpose_transposeo")
transpose_transposeo.__doc__ = """``(A.T).T -> A``."""
register(canonicalize_db, CANONICALIZE, LINALG, FAST_RUN, position=28,
         tracks=(ops.transpose,))(transpose_transposeo)  # fmt: skip


transpose_lowo = rule(transpose(_T), _T, name="transpose_lowo", when=lambda A: _low(A))
transpose_lowo.__doc__ = (
    """``x.T -> x`` for vectors and scalars (transpose reverses no axes there)."""
)
register(canonicalize_db, CANONICALIZE, LINALG, FAST_RUN, position=29,
         tracks=(ops.transpose,))(transpose_lowo)  # fmt: skip


def _low(x: Any) -> bool:
    return typeof(x).ndim <= 1


_P, _Q = lvar("A"), lvar("B")
transpose_doto = rule((_P @ _Q).T, _Q.T @ _P.T, name="transpose_doto")
transpose_doto.__doc__ = """``(A @ B).T <-> B.T @ A.T``."""
register(linalg_db, LINALG, position=4, tracks=(ops.transpose,))(transpose_doto)


def dot_assoco(in_lv, out_lv):
    """``(A @ B) @ C <-> A @ (B @ C)``: matrix-chain reassociation."""
    A, B, C = lvars(3)
    return lall(
        eq(in_lv, etuple(dot, etuple(dot, A, B), C)),
        eq(out_lv, etuple(dot, A, etuple(dot, B, C))),
    )


def _flops(t: Any) -> int:
    """Multiply-adds of the products in a term; an unknown size counts as 1000."""
    total = 0
    for node in subterms(as_term(t)):
        if node._tuple[0] is dot:
            a, b = (typeof(x).shape for x in node._tuple[1:])
            total += math.prod(1000 if d is None else d for d in (*a, *b[1:]))
    return total


@register(
    specialize_db, SPECIALIZE, LINALG, FAST_RUN, produces=(ops.dot,), position=9, tracks=(ops.dot,)
)
@reads({ops.dot: {ops.dot: {}}})
@needs_operand(ops.dot)
def cheaper_dot_ordero(in_lv, out_lv):
    """Reassociate a product chain, either way, when that costs fewer multiply-adds.

    With unknown sizes, ``(A @ B) @ x -> A @ (B @ x)`` still wins (two
    matrix-vector products instead of a matrix product).
    """
    return pipeo(
        in_lv,
        testo(partial(_has_operand, dot, dot), in_lv),  # a cheap test first
        lall(
            conde([dot_assoco(in_lv, out_lv)], [dot_assoco(out_lv, in_lv)]),
            testo(lambda a, b: _flops(b) < _flops(a), in_lv, out_lv),
        ),
        testo(partial(_has_operand, dot, dot), out_lv),  # first backward
    )


def _has_operand(op: Any, inner: Any, t: Any) -> bool:
    """Whether ``t`` applies ``op`` to a term applying ``inner`` (the test a relation
    runs before its goal: a product of a product, the sum of a product)."""
    t = as_term(t)  # built by a goal when run backward
    return has_head(t, op) and any(has_head(a, inner) for a in t._tuple[1:])


#: What the scaling relations read: the products among a product's (a sum's) operands.
_SCALED_DOT, _SCALED_SUM = {ops.dot: {ops.mul: {}}}, {ops.sum: {ops.mul: {}}}


def _scalar_factoro(scaled, c, plain):
    """``scaled`` is the product of the scalar ``c`` and ``plain``."""
    args, rest = lvars(2)
    return pipeo(
        scaled,
        conso(mul, args, scaled),
        removeo(c, args, rest),
        testo(is_scalar, c),
        variadico(mul, rest, plain),
    )


@register(linalg_db, LINALG, FAST_RUN, produces=(ops.mul,), position=2, tracks=(ops.dot,))
@reads(_SCALED_DOT)
@needs_operand(ops.mul)
def dot_scaleo(in_lv, out_lv):
    """``(c * A) @ B <-> c * (A @ B)`` and ``A @ (c * B) <-> c * (A @ B)``, ``c`` a
    finite number with ``|c| >= 1`` (``c >= 1`` for floats: ``-(A @ B)`` is -0.0 where
    ``A @ B`` is 0.0).

    Forward, the scaling moves to the result, usually smaller than a matrix operand.
    Not for other scalars: see ``dot_scale_anyo``.
    """
    c = var()
    return pipeo(
        in_lv,
        testo(partial(_has_operand, dot, mul), in_lv),  # a cheap test first
        lall(dot_scale_anyo(in_lv, out_lv, c), testo(_scales_exactly, c, in_lv)),
    )


@register(linalg_db, LINALG, UNSAFE, produces=(ops.mul,), position=3, tracks=(ops.dot,))
@reads(_SCALED_DOT)
@needs_operand(ops.mul)
def dot_scale_anyo(in_lv, out_lv, c=None):
    """``(c * A) @ B <-> c * (A @ B)`` and ``A @ (c * B) <-> c * (A @ B)``, ``c`` any scalar.

    Unsafe: with ``|c| < 1`` the product may overflow only on the right, and an
    infinite ``c`` times a zero of ``A`` is NaN only on the left.
    """
    c = var() if c is None else c
    A, B, scaled = lvars(3)
    return pipeo(
        in_lv,
        testo(partial(_has_operand, dot, mul), in_lv),  # a cheap test first
        conde(
            [eq(in_lv, etuple(dot, scaled, B)), _scalar_factoro(scaled, c, A)],
            [eq(in_lv, etuple(dot, A, scaled)), _scalar_factoro(scaled, c, B)],
        ),
        eq(out_lv, etuple(mul, c, etuple(dot, A, B))),
    )


_S, _w = lvar("A", ndim=2), lvar("x", ndim=1)
sum_doto = rule(sum(_S @ _w), sum(_S, 0) @ _w, name="sum_doto")
sum_doto.__doc__ = """``sum(A @ x) <-> sum(A, 0) @ x``: the column sums of ``A`` dotted with
``x``."""
register(linalg_db, LINALG, produces=(ops.dot,), position=5, tracks=(ops.sum,))(sum_doto)


@register(
    canonicalize_db, CANONICALIZE, FAST_RUN, produces=(ops.mul,), position=30, tracks=(ops.sum,)
)
@reads(_SCALED_SUM)
@needs_operand(ops.mul)
def sum_scaleo(in_lv, out_lv):
    """``sum(c * x) <-> c * sum(x)``, ``c`` a number with ``|c| >= 1``: one multiplication,
    not n.  For floats ``c >= 1``: ``-sum(x)`` is -0.0 where ``sum(-x)`` is 0.0.

    Not for ``|c| < 1`` (``sum(x)`` may overflow where ``sum(0.5 * x)`` does not) nor
    for a symbol (``inf * sum([0, 1])`` is inf, ``sum(inf * [0, 1])`` NaN): see
    ``sum_scale_anyo``.
    """
    c = var()
    return pipeo(
        in_lv,
        testo(partial(_has_operand, sum, mul), in_lv),  # a cheap test first
        lall(sum_scale_anyo(in_lv, out_lv, c), testo(_scales_exactly, c, in_lv)),
    )


def _scales_exactly(c: Any, t: Any) -> bool:
    """``c >= 1``, or ``c <= -1`` in integers: a float sum or dot product is never -0.0,
    but ``-sum(x)`` is -0.0 where ``sum(x)`` is 0.0."""
    if not (is_number(c) and np.isfinite(c)):
        return False
    return bool(c >= 1 or (c <= -1 and not has_signed_zeros(as_term(t))))


@register(
    canonicalize_db, CANONICALIZE, UNSAFE, produces=(ops.mul,), position=40, tracks=(ops.sum,)
)
@reads(_SCALED_SUM)
@needs_operand(ops.mul)
def sum_scale_anyo(in_lv, out_lv, c=None):
    """``sum(c * x) <-> c * sum(x)``, ``c`` any scalar.

    Unsafe: ``sum(x)`` may overflow where ``sum(c * x)`` does not (``|c| < 1``),
    and an infinite ``c`` times the zeros of ``x`` is NaN only on the left.
    """
    c = var() if c is None else c
    x, scaled = lvars(2)
    return pipeo(
        in_lv,
        testo(partial(_has_operand, sum, mul), in_lv),  # a cheap test first
        eq(in_lv, etuple(sum, scaled)),
        _scalar_factoro(scaled, c, x),
        eq(out_lv, etuple(mul, c, etuple(sum, x))),
    )


def _one_ndim(xs: tuple) -> bool:
    """Every summand has the sum's ndim (none is broadcast)."""
    return len({typeof(s).ndim for s in xs}) == 1


_A, _xs = lvar("A"), rest_lvar("xs")
dot_distribute_sameo = rule(
    _A @ add(_xs), add(_A @ _xs), name="dot_distributeo", when=lambda xs: _one_ndim(xs)
)
dot_distribute_sameo.__doc__ = """``A @ (x + y + ...) <-> A @ x + A @ y + ...`` where no summand
is broadcast.

Unsafe in ``fast_run``'s sense both ways: an infinite entry of ``A`` times a zero is
NaN on one side only.  ``A @ (x + B)`` with ``x`` a vector and ``B`` a matrix adds
``x`` to every row of ``B``, and ``A @ x + A @ B`` is another (well-typed) matrix: the
documentation's relation does not hold there.  The databases hold this rule twin of
:func:`dot_distributeo` (a pattern, which the e-graph matches directly); it takes a
nested sum flat, as that goal does.  A distribution regroups float sums itself, so a
query with it regroups them as ``reassociateo`` does."""
register(linalg_db, LINALG, EXPAND, name="dot_distributeo", position=1, tracks=(ops.dot,))(
    reassociates(dot_distribute_sameo)
)
register(
    specialize_db,
    SPECIALIZE,
    FACTOR,
    UNSAFE,
    name="dot_factoro",
    position=8,
    tracks=(ops.add,),
    reverse=True,
)(dot_distribute_sameo)

_M, _v = lvar("A", dtype=np.floating), lvar("b", dtype=np.floating)
inv_solveo = rule(inv(_M) @ _v, solve(_M, _v), name="inv_solveo")
inv_solveo.__doc__ = """``inv(A) @ b -> solve(A, b)``: one LU factorisation, no inverse formed
(about 3x fewer flops, and the backward error of a solve).

Unsafe: where ``A`` holds an infinity, ``inv`` gives NaN entries and the solve may
give infinities; and the two round differently, so an entry of either may be the
closer one."""
register(linalg_db, LINALG, UNSAFE, produces=(ops.solve,), position=12,
         tracks=(ops.dot,))(inv_solveo)  # fmt: skip


_F = cholesky(_M)
solve_choleskyo = rule(solve(_F, _v), solve_lower(_F, _v), name="solve_choleskyo")
solve_choleskyo.__doc__ = """``solve(L, b) -> solve_lower(L, b)`` for a Cholesky factor
``L = cholesky(S)``: a triangular solve (n^2 flops, not an LU factorisation's n^3).
With ``solve_cholesky_To``, ``solve(L.T, solve(L, b))`` is two triangular solves.

Unsafe: where ``L`` holds a NaN or an infinity the LU factorisation spreads it to
every entry, and the triangular solve only to the entries below it."""
solve_cholesky_To = rule(
    solve(transpose(_F), _v), solve_upper(transpose(_F), _v), name="solve_cholesky_To"
)
solve_cholesky_To.__doc__ = """``solve(L.T, b) -> solve_upper(L.T, b)`` for ``L = cholesky(S)``:
see :data:`solve_choleskyo`."""
for _rule, _position in ((solve_choleskyo, 14), (solve_cholesky_To, 15)):
    register(linalg_db, LINALG, UNSAFE, produces=(ops.solve_lower, ops.solve_upper),
             position=_position,
             tracks=(ops.solve,))(_rule)  # fmt: skip
