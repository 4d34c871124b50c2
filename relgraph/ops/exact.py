"""The exact value of a program: every Op computed in high precision with mpmath.

A stabilisation is right when it is at least as accurate as its input, and
"accurate" needs a reference more precise than float64: :func:`exact_evaluate`
computes each node with mpmath at 1000 significant digits (no overflow, no
cancellation at float64's scale) and rounds the result to float64 once.  Where
the real result is undefined (``log(-1)``, ``inf - inf``, ``0 / 0``) it is NaN.
mpmath is imported when this module first computes (``rg.check`` uses it):
``from relgraph.ops.exact import exact_evaluate``.

>>> import numpy as np, relgraph as rg
>>> x = rg.vector("x")
>>> float(exact_evaluate(rg.log(1 + x), {x: np.array([1e-20])})[0])
1e-20
>>> float(rg.evaluate(rg.log(1 + x), {x: np.array([1e-20])})[0])  # 1 + x rounds to 1
0.0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import mpmath
import numpy as np

from relgraph.exceptions import UnsupportedError
from relgraph.ops.base import PERFORM
from relgraph.terms.evaluate import _leaf_value
from relgraph.terms.term import Term
from relgraph.terms.traverse import subterms

__all__ = [
    "exact_evaluate", "agrees", "zero_sign_flips", "div", "exp", "expm1", "power",
    "log_add_exp", "log1mexp", "log_ndtr", "atan2", "xlogy", "gammaln", "erfcx",
    "floor_divide", "remainder", "fmod", "rint", "trunc", "ignoring_nan", "reduce_rows",
]  # fmt: skip

DIGITS = 1000


def exact_evaluate(term: Any, inputs: Mapping[Any, Any]) -> np.ma.MaskedArray:
    """``term``'s value, computed exactly and rounded to float64 at the end.

    Masked where 1000 digits do not resolve it: ``1 - sigmoid(1e300)`` is
    ``exp(-1e300)``, which no working precision holds (a saturating function
    reaches its limit at a finite point, a sum cancels below its rounding noise,
    or an exponent is beyond any precision).
    Compare only the unmasked values.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> x = rg.vector("x")
    >>> exact_evaluate(rg.exp(x) * rg.exp(-x), {x: np.array([1000.0, np.inf])})
    masked_array(data=[1.0, nan],
                 mask=[False, False],
           fill_value=1e+20)
    >>> exact_evaluate(1 - rg.sigmoid(x), {x: np.array([30.0, 1e300])}).mask.tolist()
    [False, True]
    """

    # Special points are evaluated on purpose: numpy's warnings about them say nothing.
    with mpmath.workdps(DIGITS), np.errstate(all="ignore"):
        values: dict[Term, Any] = {}
        for node in subterms(term):
            op, args = node._tuple[0], node._tuple[1:]
            n = len(op.operands(args))
            vals = [values[a] if type(a) is Term else _exact_leaf(a, inputs) for a in args[:n]]
            values[node] = _apply(op, vals, args[n:])
        result = values[term] if type(term) is Term else _exact_leaf(term, inputs)
    unresolved = np.vectorize(lambda v: v is UNRESOLVED, otypes=[bool])(result)
    with np.errstate(invalid="ignore", over="ignore"):
        rounded = np.vectorize(_rounded, otypes=[np.float64])(result)
    return np.ma.masked_array(rounded, mask=unresolved)


def agrees(before: Any, after: Any, exact: Any) -> np.ndarray:
    """Elementwise: whether a rewritten program's values ``after`` may stand for the
    input's values ``before``, given the exact ones (from :func:`exact_evaluate`).

    ``after`` equals ``before`` (NaN matches NaN, finite values up to rounding, a
    zero only a zero of its sign: ``1 / x`` tells them apart), or is no farther from
    ``exact`` (both off by the same rounding error counts as agreeing; ``-0.0`` for
    ``0.0`` only where ``exact`` is a negative number float64 rounds to ``-0.0``, an
    exact zero being ``0.0``), or is NaN where the exact value is undefined.  Where
    ``exact`` is masked (not resolved) it cannot judge: any number passes, and NaN only
    where ``before`` is NaN.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> x = rg.vector("x")
    >>> v = {x: np.array([1e-20, 1.0])}
    >>> before = rg.evaluate(rg.log(1 + x), v)
    >>> agrees(before, rg.evaluate(rg.log1p(x), v), exact_evaluate(rg.log(1 + x), v))
    array([ True,  True])
    >>> agrees(before, np.array([1e-20, 0.5]), exact_evaluate(rg.log(1 + x), v))
    array([ True, False])
    >>> agrees(np.array([0.0]), np.array([-0.0]), np.array([0.0]))  # x + 0 -> x at -0.0
    array([False])
    """
    unresolved = np.ma.getmaskarray(exact)
    exact = np.ma.getdata(exact)
    before, after, exact, unresolved = np.broadcast_arrays(
        *(np.asarray(a, np.float64) for a in (before, after, exact)), unresolved
    )

    def error(v: np.ndarray) -> np.ndarray:
        """|v - exact|: 0 where equal (infinities too), inf for a NaN ``v``."""
        err = np.where(v == exact, 0.0, np.abs(v - exact))
        return np.where(np.isnan(v) | np.isnan(err), np.inf, err)

    with np.errstate(all="ignore"):
        same = (np.isnan(before) & np.isnan(after)) | (before == after)
        same |= np.isclose(after, before, rtol=1e-9, atol=1e-300)
        closer = ~np.isnan(after) & ~np.isnan(exact) & (error(after) <= error(before))
        flips = zero_sign_flips(before, after)
        same &= ~flips
        closer &= ~flips | (np.signbit(after) & np.signbit(exact))  # exact: a negative
        undefined = np.isnan(after) & np.isnan(exact)
    cannot_judge = unresolved & (~np.isnan(after) | np.isnan(before))
    return same | ((closer | undefined) & ~unresolved) | cannot_judge


def zero_sign_flips(a: Any, b: Any) -> np.ndarray:
    """Elementwise: where ``a`` and ``b`` are zeros of opposite signs (``0.0`` and
    ``-0.0``), which numpy's ``==`` takes as equal and ``1 / z`` or ``arctan2`` do not.

    >>> zero_sign_flips(np.array([0.0, -0.0, 0.0, 1.0]), np.array([-0.0, -0.0, 0.0, -1.0]))
    array([ True, False, False, False])
    """
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    if a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        return np.zeros(a.shape, bool)
    with np.errstate(invalid="ignore"):
        real = np.signbit(a.real) != np.signbit(b.real)
        signs = real | (np.signbit(a.imag) != np.signbit(b.imag))
    return (a == 0) & (b == 0) & signs


class _Unresolved:
    """The value of a node whose exact value the working precision does not hold."""

    def __repr__(self) -> str:
        return "UNRESOLVED"


UNRESOLVED = _Unresolved()


def _rounded(v: Any) -> float:
    return np.nan if v is UNRESOLVED else float(v)


def _exact_leaf(x: Any, inputs: Mapping[Any, Any]) -> Any:
    value = np.asarray(_leaf_value(x, inputs))
    if value.dtype.kind == "b":
        return value
    return np.vectorize(lambda v: mpmath.mpf(float(v)), otypes=[object])(value)


def _apply(op: Any, vals: list, params: tuple) -> Any:
    if op.exact is None:
        raise UnsupportedError(f"{op.name} has no exact reference: rg.check cannot judge it")
    if op.exact == PERFORM:  # moves values, or computes exactly on mpmath numbers
        return op.perform(*vals, *params)
    if not op.elementwise:  # a reduction: its reference takes a row
        p = op.param_values((None, *params))
        return reduce_rows(op.exact, vals[0], p["axis"], p["keepdims"])
    if op.selects:
        fn = _selected(op.exact)
    else:
        fn = _guarded(op.exact, op.name, op.sees_nan)
    if op.nin is None and len(vals) > 2:  # a variadic Op folds from the left
        step = np.frompyfunc(fn, 2, 1)
        out = vals[0]
        for v in vals[1:]:
            out = step(out, v)
        return out
    return np.frompyfunc(fn, len(vals), 1)(*vals)


def _guarded(fn: Callable, name: str = "", sees_nan: bool = False) -> Callable:
    """``fn`` with NaN in, NaN out (unless the Op sees NaN as numpy does:
    ``Op.sees_nan``), NaN for a complex or undefined result, and UNRESOLVED in, or
    where the result lost its operands to the working precision."""

    def guarded(*args: Any) -> Any:
        if any(a is UNRESOLVED for a in args):
            return UNRESOLVED
        if not sees_nan and any(
            mpmath.isnan(a) for a in args if not isinstance(a, (bool, np.bool_))
        ):
            return mpmath.nan
        try:
            out = fn(*args)
        except (ZeroDivisionError, ValueError):
            return mpmath.nan
        except (_Clamped, OverflowError):  # OverflowError: mpmath's erfc at 1e308
            return UNRESOLVED
        if isinstance(out, mpmath.mpc):
            return mpmath.nan  # sqrt or log of a negative number
        return UNRESOLVED if _lost(name, args, out) else out

    return guarded


def ignoring_nan(pick: Callable, a: Any, b: Any) -> Any:
    """``pick(a, b)``, or the operand that is not NaN (numpy's ``fmax``, ``fmin``)."""
    return b if mpmath.isnan(a) else a if mpmath.isnan(b) else pick(a, b)


def _selected(fn: Callable) -> Callable:
    """``fn`` of an Op that selects (``where``): the branch it does not take may be NaN
    or unresolved (``where(det_sign(A) < 0, nan, logabsdet(A))``)."""

    def selected(condition: Any, *branches: Any) -> Any:
        return UNRESOLVED if condition is UNRESOLVED else fn(condition, *branches)

    return selected


# A sum below 10 ** -NOISE of its largest operand cancelled more than half the
# working digits.  Sums of float64 inputs cancel exactly (to 0) or by far fewer
# digits; more is the rounding noise of an identity (``x - log(exp(x))``, where
# ``exp(x)`` rounded ``1 + x`` at 1000 digits): its sign and size mean nothing.
NOISE = DIGITS // 2

# Functions that approach a limit they never reach at a finite argument.
_SATURATING = {
    "sigmoid": (0, 1), "tanh": (-1, 1), "erf": (-1, 1), "expm1": (-1,), "ndtr": (0, 1),
}  # fmt: skip


def _lost(name: str, args: tuple, out: Any) -> bool:
    """Whether the working precision lost the result: a saturating function reached
    its limit at a finite point (the distance to it, which ``1 - sigmoid(x)`` needs,
    is gone), or a sum cancelled below its rounding noise."""

    if name in _SATURATING:
        return mpmath.isfinite(args[0]) and out in _SATURATING[name]
    if name in ("add", "sub") and out != 0 and all(mpmath.isfinite(a) for a in args):
        return abs(out) < max(abs(a) for a in args) * mpmath.mpf(10) ** -NOISE
    return False


class _Clamped(ArithmeticError):
    """An exponent beyond any precision: the value is not resolved."""


def div(a: Any, b: Any) -> Any:
    if b == 0:
        return mpmath.nan if a == 0 else mpmath.inf * mpmath.sign(a)
    return a / b


# exp of a number beyond this has an exponent too long to hold.
_EXP_LIMIT = 10**400


def floor_divide(a: Any, b: Any) -> Any:
    """numpy's ``a // b``: NaN where ``a`` is infinite, ``a / b`` where ``b`` is 0, and
    -1 for a finite ``a`` over an infinite ``b`` of the other sign."""
    if mpmath.isinf(a):
        return mpmath.nan
    if b == 0:
        return div(a, b)
    if mpmath.isinf(b):
        return 0 if a == 0 or (a > 0) == (b > 0) else -1
    return mpmath.floor(a / b)


def remainder(a: Any, b: Any) -> Any:
    """numpy's ``a % b``, of the sign of ``b``: ``b`` itself for a finite ``a`` of the
    other sign over an infinite ``b``."""
    if mpmath.isinf(a) or b == 0:
        return mpmath.nan
    if mpmath.isinf(b):
        return a if a == 0 or (a > 0) == (b > 0) else b
    return a - b * mpmath.floor(a / b)


def fmod(a: Any, b: Any) -> Any:
    """C's ``fmod``: the remainder of the sign of ``a``."""
    if mpmath.isinf(a) or b == 0:
        return mpmath.nan
    return a if mpmath.isinf(b) else a - b * trunc(a / b)


def rint(a: Any) -> Any:
    """The nearest integer, halves to even."""
    if mpmath.isinf(a):
        return a
    low = mpmath.floor(a)
    if a - low == 0.5:
        return low if low % 2 == 0 else low + 1
    return low if a - low < 0.5 else low + 1


def trunc(a: Any) -> Any:
    """Towards zero."""
    return a if mpmath.isinf(a) else (mpmath.floor(a) if a >= 0 else mpmath.ceil(a))


def exp(a: Any) -> Any:
    if mpmath.isfinite(a) and abs(a) > _EXP_LIMIT:
        raise _Clamped(a)
    return mpmath.exp(a)


def power(a: Any, b: Any) -> Any:
    """``a ** b`` as C99's ``pow`` and numpy define it at the edges: ``x ** 0`` and
    ``1 ** y`` are 1 even for a NaN, ``(-1) ** inf`` is 1, a negative base to an
    infinite power or ``-inf`` to a fractional one is a limit, not NaN."""
    if b == 0 or a == 1:
        return mpmath.mpf(1)
    if mpmath.isnan(a) or mpmath.isnan(b):
        return mpmath.nan
    if mpmath.isinf(b):
        size = abs(a)
        if size == 1:
            return mpmath.mpf(1)
        return mpmath.inf if (size > 1) == (b > 0) else mpmath.mpf(0)
    if a == 0:
        return mpmath.inf if b < 0 else mpmath.mpf(0)
    if a < 0 and b != int(b):
        if mpmath.isinf(a):  # -inf ** 0.5 is inf, -inf ** -0.5 is 0
            return mpmath.inf if b > 0 else mpmath.mpf(0)
        return mpmath.nan
    magnitude = exp(b * mpmath.log(abs(a)))
    return -magnitude if a < 0 and int(b) % 2 else magnitude


def log_add_exp(values: list) -> Any:
    """``log(sum(exp(v)))``, shifted by the maximum so no exponent grows."""

    top = max(values) if values else mpmath.ninf
    if not mpmath.isfinite(top):
        return top
    return top + mpmath.log(mpmath.fsum(exp(v - top) for v in values))


def expm1(a: Any) -> Any:
    return exp(a) - 1 if abs(a) > 1 else mpmath.expm1(a)


def log1mexp(a: Any) -> Any:
    return mpmath.log(1 - exp(a)) if abs(a) > 1 else mpmath.log(-mpmath.expm1(a))


def reduce_rows(
    fn: Callable, x: np.ndarray, axis: Any, keepdims: bool, sees_nan: bool = False
) -> Any:
    """``fn`` of each slice of exact values ``x`` along ``axis`` (an int, a tuple, or
    None for every axis), as a list; NaN for a slice holding a NaN unless the reduction
    sees NaN (``nanmedian``), unresolved for one holding an unresolved value."""
    x = np.asarray(x, dtype=object)
    axes = tuple(range(x.ndim)) if axis is None else np.atleast_1d(axis).tolist()
    axes = tuple(a % x.ndim for a in axes)
    kept = [d for d in range(x.ndim) if d not in axes]
    rows = np.transpose(x, kept + list(axes)).reshape([x.shape[d] for d in kept] + [-1])
    reduce_row = _guarded(lambda *row: fn(list(row)), sees_nan=sees_nan)
    out = np.empty(rows.shape[:-1], dtype=object)
    for index in np.ndindex(out.shape):
        out[index] = reduce_row(*rows[index])
    if keepdims:
        out = out.reshape([1 if d in axes else x.shape[d] for d in range(x.ndim)])
    return out


def log_ndtr(x: Any) -> Any:
    """``log(ncdf(x))``; far in the lower tail (``x < -1e6``) its asymptotic series,
    exact to far below float64's precision there."""
    if x < -(10**6):
        r = 1 / (x * x)
        return (
            -x * x / 2
            - mpmath.log(-x)
            - mpmath.log(2 * mpmath.pi) / 2
            + mpmath.log(1 - r + 3 * r * r - 15 * r**3 + 105 * r**4)
        )
    return mpmath.log(mpmath.ncdf(x))


def atan2(y: Any, x: Any) -> Any:
    """The angle of the point ``(x, y)``; not resolved on the negative x axis, where
    the sign of a zero ``y`` decides between pi and -pi and mpmath has no signed zero."""
    if y == 0 and x < 0:
        raise _Clamped
    return mpmath.atan2(y, x)


def xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, and 0 where ``x`` is 0."""
    return mpmath.mpf(0) if x == 0 else x * mpmath.log(y)


def gammaln(x: Any) -> Any:
    """``log(abs(gamma(x)))``: infinite at the poles (0, -1, -2, ...)."""
    if mpmath.isinf(x) or (x <= 0 and x == mpmath.floor(x)):
        return -mpmath.inf if x == -mpmath.inf else mpmath.inf
    return mpmath.log(abs(mpmath.gamma(x)))


def erfcx(x: Any) -> Any:
    """``exp(x * x) * erfc(x)``."""
    return mpmath.exp(x * x) * mpmath.erfc(x)
