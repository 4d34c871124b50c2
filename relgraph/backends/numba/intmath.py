"""numpy's floor division, remainders, shifts, greatest common divisors and least
common multiples of two scalars of one dtype, for the generated kernels
(``intmath.floor_divide(a, b)``).

Numba's own ``//`` and ``%`` follow Python: they raise on a zero divisor (give 0
under numpy's error model), and its ``MIN // -1`` is 0.  numpy's answers hold at
every value here:

* integers: ``x // 0`` and ``x % 0`` are 0, ``MIN // -1`` wraps to ``MIN``;
* floats: numpy's ``npy_divmod`` (CPython's algorithm), in the operands' own dtype:
  the quotient snapped to an integer, the remainder of the divisor's sign, zeros
  signed as numpy signs them, ``x // 0`` is ``x / 0``;
* shifts: by at least the dtype's width (or by a negative amount) give 0, or -1 for
  a negative number shifted right;
* ``gcd`` and ``lcm``: of the absolute values, computed unsigned and cast back to the
  dtype, so they wrap as numpy's (``gcd(-128, 0)`` is -128 in int8, ``lcm(100, 3)``
  is 44); ``gcd(0, 0)`` and ``lcm(x, 0)`` are 0.

Each function is its numpy meaning in Python, with a Numba ``overload`` that picks
the integer or float algorithm from the argument type.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import njit, types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

__all__ = ["floor_divide", "remainder", "fmod", "left_shift", "right_shift", "gcd", "lcm"]


def floor_divide(a: Any, b: Any) -> Any:
    """numpy's ``a // b``."""
    return np.floor_divide(a, b)


def remainder(a: Any, b: Any) -> Any:
    """numpy's ``a % b``, of the sign of ``b``."""
    return np.remainder(a, b)


def fmod(a: Any, b: Any) -> Any:
    """numpy's ``np.fmod(a, b)``, of the sign of ``a``."""
    return np.fmod(a, b)


def left_shift(a: Any, b: Any) -> Any:
    """numpy's ``a << b``."""
    return np.left_shift(a, b)


def right_shift(a: Any, b: Any) -> Any:
    """numpy's ``a >> b``."""
    return np.right_shift(a, b)


def gcd(a: Any, b: Any) -> Any:
    """numpy's ``np.gcd(a, b)``."""
    return np.gcd(a, b)


def lcm(a: Any, b: Any) -> Any:
    """numpy's ``np.lcm(a, b)``."""
    return np.lcm(a, b)


@functools.cache
def _float_divmod(kind: types.Float) -> Any:
    """``npy_divmod`` in the dtype of ``kind``: the floored quotient and the remainder.
    A call, not inlined: Numba's inliner warns about its branches; ``fmod`` costs more.
    One per dtype, so that it compiles once, not in every kernel that divides."""
    zero, one, half = (as_dtype(kind).type(v) for v in (0, 1, 0.5))

    @njit(error_model="numpy")
    def snapped(div, a, b):  # the quotient, snapped to the nearest integer
        if div == 0:
            return np.copysign(zero, a / b)
        floor = np.floor(div)
        if div - floor > half:
            return floor + one
        return floor

    @njit(error_model="numpy")
    def divmod_(a, b):
        mod = np.fmod(a, b)
        div = (a - mod) / b  # very nearly an integer
        if mod == 0:
            return snapped(div, a, b), np.copysign(zero, b)
        if (b < zero) != (mod < zero):  # to the sign of b
            return snapped(div - one, a, b), mod + b
        return snapped(div, a, b), mod

    return divmod_


# The helpers below are inlined into the kernels (a constant divisor then becomes a
# multiplication); written with statements, not conditional expressions, which
# Numba's inliner warns about.


@overload(floor_divide, inline="always")
def _floor_divide(a, b):
    if isinstance(a, types.Float):
        divmod_ = _float_divmod(a)

        def floats(a, b):
            if b == 0:
                return a / b
            return divmod_(a, b)[0]

        return floats
    if a.signed:

        def signed(a, b):
            x, y = np.int64(a), np.int64(b)
            if y == 0:
                return np.int64(0)
            if y == -1:  # MIN // -1 wraps to MIN
                return np.int64(np.uint64(0) - np.uint64(x))
            return x // y

        return signed

    def unsigned(a, b):
        if b == 0:
            return np.uint64(0)
        return np.uint64(a) // np.uint64(b)

    return unsigned


@overload(remainder, inline="always")
def _remainder(a, b):
    if isinstance(a, types.Float):
        divmod_ = _float_divmod(a)

        def floats(a, b):
            if b == 0:
                return np.fmod(a, b)
            return divmod_(a, b)[1]

        return floats
    if a.signed:

        def signed(a, b):
            if b == 0 or b == -1:
                return np.int64(0)
            return np.int64(a) % np.int64(b)  # of the sign of b

        return signed
    return _unsigned_remainder


@overload(fmod, inline="always")
def _fmod(a, b):
    if isinstance(a, types.Float):
        return lambda a, b: np.fmod(a, b)
    if a.signed:

        def signed(a, b):
            x, y = np.int64(a), np.int64(b)
            if y == 0 or y == -1:
                return np.int64(0)
            r = x % y  # of the sign of y; C's has the sign of x
            if r != 0 and (r < 0) != (x < 0):
                return r - y
            return r

        return signed
    return _unsigned_remainder


def _unsigned_remainder(a, b):
    if b == 0:
        return np.uint64(0)
    return np.uint64(a) % np.uint64(b)


@overload(left_shift, inline="always")
def _left_shift(a, b):
    width = a.bitwidth
    if a.signed:  # shifted as unsigned: Numba marks signed shifts "no signed wrap"

        def signed(a, b):
            if b < 0 or b >= width:
                return np.int64(0)
            return np.int64(np.uint64(np.int64(a)) << np.uint64(b))

        return signed

    def unsigned(a, b):
        if b >= width:
            return np.uint64(0)
        return np.uint64(a) << np.uint64(b)

    return unsigned


@overload(right_shift, inline="always")
def _right_shift(a, b):
    width = a.bitwidth
    if a.signed:

        def signed(a, b):
            if b >= 0 and b < width:
                return np.int64(a) >> np.int64(b)
            if a < 0:
                return np.int64(-1)
            return np.int64(0)

        return signed

    def unsigned(a, b):
        if b >= width:
            return np.uint64(0)
        return np.uint64(a) >> np.uint64(b)

    return unsigned


@njit(nogil=True)
def _magnitude(a):
    """``|a|`` of a signed integer as an unsigned 64-bit one (``|MIN|`` too)."""
    u = np.uint64(np.int64(a))
    return np.uint64(0) - u if a < 0 else u


@njit(nogil=True)
def _gcd_unsigned(a, b):
    """Euclid's algorithm on unsigned 64-bit integers, as numpy's ``npy_gcdu``."""
    while a != 0:
        a, b = b % a, a
    return b


@njit(nogil=True)
def _lcm_unsigned(a, b):
    """``a / gcd * b``, wrapping, as numpy's ``npy_lcmu``; 0 where the gcd is 0."""
    g = _gcd_unsigned(a, b)
    return np.uint64(0) if g == 0 else a // g * b


def _of_magnitudes(unsigned):
    """The overload of an Op computed on the operands' absolute values, unsigned."""

    def typed(a, b):
        if a.signed:
            return lambda a, b: np.int64(unsigned(_magnitude(a), _magnitude(b)))
        return lambda a, b: unsigned(np.uint64(a), np.uint64(b))

    return typed


overload(gcd, inline="always")(_of_magnitudes(_gcd_unsigned))
overload(lcm, inline="always")(_of_magnitudes(_lcm_unsigned))
