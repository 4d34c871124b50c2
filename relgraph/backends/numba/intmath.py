"""numpy's floor division, remainders and shifts of two scalars of one dtype, for the
generated kernels (``intmath.floor_divide(a, b)``).

Numba's own ``//`` and ``%`` follow Python: they raise on a zero divisor, and
``MIN // -1`` traps on x86.  numpy's answers hold at every value here:

* integers: ``x // 0`` and ``x % 0`` are 0, ``MIN // -1`` wraps to ``MIN``;
* floats: numpy's ``npy_divmod`` (CPython's algorithm), in the operands' own dtype:
  the quotient snapped to an integer, the remainder of the divisor's sign, zeros
  signed as numpy signs them, ``x // 0`` is ``x / 0``;
* shifts: by at least the dtype's width (or by a negative amount) give 0, or -1 for
  a negative number shifted right.

Each function is its numpy meaning in Python, with a Numba ``overload`` that picks
the integer or float algorithm from the argument type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

__all__ = ["floor_divide", "remainder", "fmod", "left_shift", "right_shift"]


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


def _float_divmod(kind: types.Float) -> Any:
    """``npy_divmod`` in the dtype of ``kind``: the floored quotient and the remainder."""
    zero, one, half = (as_dtype(kind).type(v) for v in (0, 1, 0.5))

    def divmod_(a, b):
        mod = np.fmod(a, b)
        div = (a - mod) / b  # very nearly an integer
        if mod != 0:
            if (b < zero) != (mod < zero):
                mod += b
                div -= one
        else:
            mod = np.copysign(zero, b)
        if div != 0:
            floor = np.floor(div)
            if div - floor > half:
                floor += one
        else:
            floor = np.copysign(zero, a / b)
        return floor, mod

    return njit(error_model="numpy")(divmod_)


@overload(floor_divide)
def _floor_divide(a, b):
    if isinstance(a, types.Float):
        divmod_ = _float_divmod(a)
        return lambda a, b: a / b if b == 0 else divmod_(a, b)[0]
    if a.signed:

        def signed(a, b):
            x, y = np.int64(a), np.int64(b)
            if y == 0:
                return np.int64(0)
            if y == -1:  # MIN // -1 wraps to MIN
                return np.int64(np.uint64(0) - np.uint64(x))
            return x // y

        return signed
    return lambda a, b: np.uint64(0) if b == 0 else np.uint64(a) // np.uint64(b)


@overload(remainder)
def _remainder(a, b):
    if isinstance(a, types.Float):
        divmod_ = _float_divmod(a)
        return lambda a, b: np.fmod(a, b) if b == 0 else divmod_(a, b)[1]
    if a.signed:
        return lambda a, b: np.int64(0) if b == 0 or b == -1 else np.int64(a) % np.int64(b)
    return lambda a, b: np.uint64(0) if b == 0 else np.uint64(a) % np.uint64(b)


@overload(fmod)
def _fmod(a, b):
    if isinstance(a, types.Float):
        return lambda a, b: np.fmod(a, b)
    if a.signed:

        def signed(a, b):
            x, y = np.int64(a), np.int64(b)
            if y == 0 or y == -1:
                return np.int64(0)
            r = x % y  # of the sign of y; C's has the sign of x
            return r - y if r != 0 and (r < 0) != (x < 0) else r

        return signed
    return lambda a, b: np.uint64(0) if b == 0 else np.uint64(a) % np.uint64(b)


@overload(left_shift)
def _left_shift(a, b):
    width = a.bitwidth
    if a.signed:  # shifted as unsigned: Numba marks signed shifts "no signed wrap"
        return lambda a, b: (
            np.int64(np.uint64(np.int64(a)) << np.uint64(b)) if 0 <= b < width else np.int64(0)
        )
    return lambda a, b: np.uint64(a) << np.uint64(b) if b < width else np.uint64(0)


@overload(right_shift)
def _right_shift(a, b):
    width = a.bitwidth
    if a.signed:
        return lambda a, b: (
            np.int64(a) >> np.int64(b) if 0 <= b < width else np.int64(-1 if a < 0 else 0)
        )
    return lambda a, b: np.uint64(a) >> np.uint64(b) if b < width else np.uint64(0)
