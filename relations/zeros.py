"""Signed zeros: which terms may be -0.0, and the ``+ 0`` that keeps numpy's 0.0.

IEEE floats have two zeros.  numpy's ``==`` takes them as equal, but ``1 / z``,
``arctan2``, ``copysign`` and ``signbit`` tell them apart, so a safe relation keeps
the sign of every zero.  Three facts of round-to-nearest arithmetic decide it:

* a sum is -0.0 only when every term is -0.0 (``x + -x`` is 0.0): ``x + 0`` is ``x``
  with -0.0 made 0.0, the one thing ``log(1 + x)`` does that ``log1p(x)`` does not;
* ``-(a + b)`` is -0.0 where ``a = -b``, and ``-a + -b`` is 0.0;
* an integer has no -0: ``-0`` is 0, so a negation moved off an integer operand of a
  float product (or an integer literal 0) moves a sign that was never there.

:func:`may_be_minus_zero` is a conservative reading of a term
(:mod:`relgraph.ops.zeros`); :func:`plus_zero` adds the ``+ 0`` only where it may
matter, so ``log(1 + exp(x))`` still becomes ``log1p(exp(x))``.

>>> import relgraph as rg
>>> x = rg.vector("x")
>>> rg.pprint(plus_zero(rg.log1p(x))), rg.pprint(plus_zero(rg.exp(x)))
('(0 + log1p(x))', 'exp(x)')
>>> may_be_minus_zero(rg.vector("i", "int64")), may_be_minus_zero(-0.0)
(False, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relations.order import sorted_args
from relgraph import ops
from relgraph.logic.goals import is_number
from relgraph.ops.zeros import never_minus_zero
from relgraph.terms.infer import typeof
from relgraph.terms.term import Term

__all__ = [
    "may_be_minus_zero", "plus_zero", "without_plus_zero", "has_signed_zeros", "integer_zero",
    "signs_stay_in_ints",
]  # fmt: skip


def has_signed_zeros(t: Any) -> bool:
    """Whether ``t`` is of a float or complex dtype (an unknown term counts as one)."""
    if is_number(t):
        return isinstance(t, (float, complex, np.floating, np.complexfloating))
    try:
        return bool(typeof(t).dtype.kind in "fc")
    except Exception:  # a pattern variable, a term built backward: assume the worst
        return True


def integer_zero(t: Any) -> bool:
    """Whether ``t`` is the number 0 as an integer: its negation is 0, not -0.0."""
    return isinstance(t, (int, np.integer)) and not isinstance(t, bool) and t == 0


def signs_stay_in_ints(product: Any) -> bool:
    """Whether a sign in the float ``product`` may be computed in integers first: a
    factor that is an integer 0, or an integer term (``i * -1`` is 0 at ``i = 0``,
    where ``-(i * x)`` is -0.0), so moving a sign across it is not exact."""
    if type(product) is not Term or not has_signed_zeros(product):
        return False
    for a in product._tuple[1:]:
        while type(a) is Term and a._tuple[0] is ops.neg:
            a = a._tuple[1]
        if integer_zero(a) or (not is_number(a) and not has_signed_zeros(a)):
            return True
    return False


def may_be_minus_zero(t: Any) -> bool:
    """Whether ``t`` can be -0.0 for some input (conservative: True unless shown not)."""
    return not never_minus_zero(t)


def plus_zero(t: Any) -> Any:
    """``t + 0`` (numpy's 0.0 for -0.0, ``t`` elsewhere), or ``t`` where it cannot be -0.0."""
    return Term((ops.add, *sorted_args(ops.add, [t, 0]))) if may_be_minus_zero(t) else t


def without_plus_zero(t: Any) -> Any:
    """The ``x`` that :func:`plus_zero` made ``t`` of: ``x`` for ``0 + x``, ``t`` where it
    is never -0.0; None where ``t`` may be -0.0 (no ``x`` gives it)."""
    if type(t) is Term and t._tuple[0] is ops.add and len(t._tuple) == 3:
        if integer_zero(t._tuple[1]):
            return t._tuple[2]
    return None if may_be_minus_zero(t) else t
