"""Integer arithmetic as numpy computes it: floor division and remainders (of floats
too), bit operations and shifts, greatest common divisors and least common multiples,
and rounding to integral values.

numpy's semantics hold at every value: ``x // 0`` and ``x % 0`` are 0 for integers
(``inf`` or NaN for floats), ``MIN // -1`` wraps to ``MIN``, ``x % y`` takes the sign
of ``y`` (``np.fmod``: of ``x``), a shift by at least the width of the dtype is 0 (or
-1 for a negative number shifted right), ``gcd`` and ``lcm`` are of the absolute
values and wrap as numpy's (``gcd(-128, 0)`` is -128 in int8, ``lcm(100, 3)`` 44), and
``rint`` rounds halves to even.

>>> import numpy as np, relgraph as rg
>>> i = rg.vector("i", "int8")
>>> rg.pprint(i // 3 + i % 3), rg.typeof(i & 7)
('((i // 3) + (i % 3))', TensorType(int8, shape=(?,)))
>>> rg.evaluate(i // 0, {i: np.array([5, -5], np.int8)})
array([0, 0], dtype=int8)
>>> rg.evaluate(rg.lcm(i, 3), {i: np.array([-4, 100], np.int8)})
array([12, 44], dtype=int8)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from relgraph.ops import exact as exact_ref
from relgraph.ops.base import pullback, register_ops
from relgraph.ops.elemwise import Elemwise, constant_pullback, floor, spread_times

__all__ = [
    "floor_divide", "remainder", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor", "invert",
    "left_shift", "right_shift", "gcd", "lcm", "rint", "trunc",
]  # fmt: skip


def _bits(fn: Any) -> Any:
    """An exact reference on the integers a bit operation's operands hold (mpmath
    has no bit operations)."""
    return lambda *values: fn(*(int(v) for v in values))


floor_divide = Elemwise("floor_divide", np.floor_divide, 2, "//", exact=exact_ref.floor_divide,
                        cost=4.0)  # fmt: skip
remainder = Elemwise("remainder", np.remainder, 2, "%", exact=exact_ref.remainder, cost=4.0)
fmod = Elemwise("fmod", np.fmod, 2, exact=exact_ref.fmod, cost=4.0)
bitwise_and = Elemwise("bitwise_and", np.bitwise_and, 2, "&", exact=_bits(lambda a, b: a & b))
bitwise_or = Elemwise("bitwise_or", np.bitwise_or, 2, "|", exact=_bits(lambda a, b: a | b))
bitwise_xor = Elemwise("bitwise_xor", np.bitwise_xor, 2, "^", exact=_bits(lambda a, b: a ^ b))
invert = Elemwise("invert", np.invert, 1, "~", exact=_bits(lambda a: ~a))
left_shift = Elemwise("left_shift", np.left_shift, 2, "<<", exact=_bits(lambda a, b: a << b))
right_shift = Elemwise("right_shift", np.right_shift, 2, ">>", exact=_bits(lambda a, b: a >> b))
# Euclid's algorithm: a division per step, about log2 of the operands' steps.
gcd = Elemwise("gcd", np.gcd, 2, exact=_bits(math.gcd), cost=20.0)
lcm = Elemwise("lcm", np.lcm, 2, exact=_bits(math.lcm), cost=24.0)
rint = Elemwise("rint", np.rint, 1, exact=exact_ref.rint)
trunc = Elemwise("trunc", np.trunc, 1, exact=exact_ref.trunc)

register_ops(
    floor_divide, remainder, fmod, bitwise_and, bitwise_or, bitwise_xor, invert, left_shift,
    right_shift, gcd, lcm, rint, trunc,
)  # fmt: skip

pullback(floor_divide, bitwise_and, bitwise_or, bitwise_xor, invert, left_shift, right_shift,
         gcd, lcm, rint, trunc)(constant_pullback)  # fmt: skip


@pullback(remainder, fmod)
def _remainder_pullback(g: Any, y: Any) -> tuple:
    """``a - b * q`` with the quotient ``q`` (floored, or truncated for fmod) constant
    almost everywhere, as in JAX."""
    a, b = y.args
    whole = (floor if y.op is remainder else trunc)(a / b)
    return g, spread_times(g, -whole)
