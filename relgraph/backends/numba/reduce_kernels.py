"""Reductions the generated kernels call: of every element, or along one axis of a
1-d or 2-d array (the lowering reshapes every other case to these).

Each is a plain Python function (numpy's meaning, used if Numba is bypassed) with a
Numba ``overload``.  Along an axis they read the array in memory order, whatever
the axis: a line at a time where the reduced axis is the inner one, a vector of
accumulators where it is the outer one (a column sum of a C-ordered matrix reads each
row once, in order, instead of one strided pass per column).  Results are numpy's, to
rounding (sums add in another order than numpy's pairwise summation); max and min
propagate NaN as numpy does, and raise on an empty axis as numpy does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, types
from numba.extending import overload

from relgraph.ops import special

__all__ = [
    "sum_all", "sum_axis", "max_all", "max_axis", "min_all", "min_axis", "prod_all",
    "prod_axis", "mean_all", "mean_axis", "logsumexp_all", "logsumexp_axis", "argmax_all",
    "argmax_axis", "argmin_all", "argmin_axis", "keep_dims", "named",
]  # fmt: skip


def named(fn: Any, name: str) -> Any:
    """``fn``, made by a factory, under a name of its own.

    Numba names compiled code by qualified name, argument types and a counter that
    starts again in every process.  Two closures of one factory with the same
    argument types (the sum and the mean of rows) could get the same symbol in two
    processes, and a kernel loaded from the disk cache into a process that compiled
    the other one would call its body: a sum that returns a mean (Numba issue 10486).
    """
    fn.__name__ = fn.__qualname__ = name
    return fn


def sum_all(a, dtype):
    """The sum of every element, in ``dtype``."""
    return dtype(np.sum(a))


def max_all(a, dtype):
    """The largest element (NaN if any is NaN), in ``dtype``."""
    return dtype(np.max(a))


def min_all(a, dtype):
    """The smallest element (NaN if any is NaN), in ``dtype``."""
    return dtype(np.min(a))


def prod_all(a, dtype):
    """The product of every element, in ``dtype``."""
    return dtype(np.prod(a))


def mean_all(a, dtype):
    """The mean of every element, in ``dtype``."""
    return dtype(np.mean(a))


def sum_axis(a, axis, dtype):
    """The sum along one axis of a 1-d or 2-d array."""
    return np.sum(a, axis=axis).astype(dtype)


def max_axis(a, axis, dtype):
    """The maximum along one axis of a 1-d or 2-d array."""
    return np.max(a, axis=axis).astype(dtype)


def min_axis(a, axis, dtype):
    """The minimum along one axis of a 1-d or 2-d array."""
    return np.min(a, axis=axis).astype(dtype)


def prod_axis(a, axis, dtype):
    """The product along one axis of a 1-d or 2-d array."""
    return np.prod(a, axis=axis).astype(dtype)


def mean_axis(a, axis, dtype):
    """The mean along one axis of a 1-d or 2-d array."""
    return np.mean(a, axis=axis).astype(dtype)


def logsumexp_all(a, dtype):
    """The stable ``log(sum(exp(a)))`` of every element, in ``dtype``."""
    return dtype(special.logsumexp(a))


def logsumexp_axis(a, axis, dtype):
    """The stable ``log(sum(exp(a), axis))`` along one axis of a 1-d or 2-d array."""
    return special.logsumexp(a, axis=axis).astype(dtype)


def argmax_all(a, dtype):
    """numpy's ``argmax`` of the flattened array (the first largest; NaN the largest)."""
    return dtype(np.argmax(a))


def argmax_axis(a, axis, dtype):
    """numpy's ``argmax`` along ``axis`` (0 or 1) of a 1-d or 2-d array."""
    return np.argmax(a, axis=axis).astype(dtype)


def argmin_all(a, dtype):
    """numpy's ``argmin`` of the flattened array (the first smallest; NaN the smallest)."""
    return dtype(np.argmin(a))


def argmin_axis(a, axis, dtype):
    """numpy's ``argmin`` along ``axis`` (0 or 1) of a 1-d or 2-d array."""
    return np.argmin(a, axis=axis).astype(dtype)


def keep_dims(value, shape):
    """A reduction's result (an array or a scalar) with its reduced axes kept as 1."""
    return np.reshape(np.asarray(value), shape)


@overload(sum_all)
def _sum_all(a, dtype):
    if isinstance(a, types.Array):
        return lambda a, dtype: dtype(np.sum(a))
    return lambda a, dtype: dtype(a)


def elements(a):
    """The elements of ``a`` as a 1-d array: ``a`` itself if it is one (any layout, so
    a strided row is read in place, not copied), else ``a.ravel()``."""
    return a.ravel()


@overload(elements)
def _elements(a):
    if a.ndim == 1:
        return lambda a: a
    return lambda a: a.ravel()


def _extreme_all(largest: bool):
    """The largest (or smallest) element; NaN wins, as in numpy."""

    def impl(a, dtype):
        flat = elements(a)
        if flat.shape[0] == 0:
            raise ValueError("max of an empty array" if largest else "min of an empty array")
        best = flat[0]
        for v in flat:
            if (v > best if largest else v < best) or v != v:
                best = v
                if v != v:
                    break
        return dtype(best)

    return named(impl, "max_all_impl" if largest else "min_all_impl")


@overload(max_all)
def _max_all(a, dtype):
    if isinstance(a, types.Array):
        return _extreme_all(True)
    return lambda a, dtype: dtype(a)


@overload(min_all)
def _min_all(a, dtype):
    if isinstance(a, types.Array):
        return _extreme_all(False)
    return lambda a, dtype: dtype(a)


def _fold_all(kind: str):
    """The product or the mean of every element, accumulated in ``dtype``."""

    def impl(a, dtype):
        acc = dtype(1) if kind == "prod" else dtype(0)
        for v in elements(a):
            if kind == "prod":
                acc *= dtype(v)
            else:
                acc += dtype(v)
        return acc / dtype(a.size) if kind == "mean" else acc

    return named(impl, f"{kind}_all_impl")


@overload(prod_all)
def _prod_all(a, dtype):
    if isinstance(a, types.Array):
        return _fold_all("prod")
    return lambda a, dtype: dtype(a)


@overload(mean_all)
def _mean_all(a, dtype):
    if isinstance(a, types.Array):
        return _fold_all("mean")
    return lambda a, dtype: dtype(a)


def _reduce_rows(kind: str):
    """Along axis 0 or 1 of a 2-d array (the lowering reshapes every other case to
    this), for sum, max, min, prod and mean, reading the array in memory order: along
    a line where the reduced axis is the inner one, into a vector of accumulators
    where it is the outer one (a column reduction of a C array reads each row once)."""
    extreme = kind in ("max", "min")

    def impl(a, axis, dtype):
        m = a.shape[axis]
        if extreme and m == 0:
            raise ValueError("max of an empty array" if kind == "max" else "min of an empty array")
        # the reduced axis outer in memory: sweep it, accumulating a vector
        sweep = a.strides[axis] >= a.strides[1 - axis] and a.shape[1 - axis] > 1
        b = a if axis == 0 else a.T  # reduce along axis 0 of b
        n = b.shape[1]
        out = np.empty(n, dtype)
        if sweep:
            for i in range(n):
                out[i] = dtype(b[0, i]) if extreme else dtype(1 if kind == "prod" else 0)
            for k in range(1 if extreme else 0, m):
                for i in range(n):
                    out[i] = _step(out[i], dtype(b[k, i]))
        else:
            for i in range(n):
                acc = dtype(b[0, i]) if extreme else dtype(1 if kind == "prod" else 0)
                for k in range(1 if extreme else 0, m):
                    acc = _step(acc, dtype(b[k, i]))
                out[i] = acc
        if kind == "mean":
            for i in range(n):
                out[i] /= dtype(m)
        return out

    _step = _STEPS[kind]
    return named(impl, f"{kind}_rows_impl")


@njit(inline="always")
def _larger(acc, v):
    return v if v > acc or v != v else acc  # NaN wins, as in numpy


@njit(inline="always")
def _smaller(acc, v):
    return v if v < acc or v != v else acc


_STEPS = {
    "sum": njit(inline="always")(lambda acc, v: acc + v),
    "mean": njit(inline="always")(lambda acc, v: acc + v),
    "prod": njit(inline="always")(lambda acc, v: acc * v),
    "max": _larger,
    "min": _smaller,
}


def _axis_overload(kind: str, reduce_all):
    """The Numba overload of ``<kind>_axis``: a vector reduces whole."""

    def typer(a, axis, dtype):
        if a.ndim == 1:
            return named(lambda a, axis, dtype: reduce_all(a, dtype), f"{kind}_vector_impl")
        return _reduce_rows(kind)

    return typer


for _kind, _axis_fn, _all_fn in (
    ("sum", sum_axis, sum_all),
    ("max", max_axis, max_all),
    ("min", min_axis, min_all),
    ("prod", prod_axis, prod_all),
    ("mean", mean_axis, mean_all),
):
    overload(_axis_fn)(_axis_overload(_kind, _all_fn))


@overload(logsumexp_all)
def _logsumexp_all(a, dtype):
    if not isinstance(a, types.Array):
        return lambda a, dtype: dtype(a)

    def impl(a, dtype):
        flat = elements(a)
        top = dtype(-np.inf)
        for v in flat:
            if dtype(v) > top or v != v:
                top = dtype(v)
                if v != v:
                    return top
        shift = top if np.isfinite(top) else dtype(0)
        acc = dtype(0)
        for v in flat:
            acc += np.exp(dtype(v) - shift)
        return np.log(acc) + shift

    return impl


@overload(logsumexp_axis)
def _logsumexp_axis(a, axis, dtype):
    if a.ndim == 1:
        return lambda a, axis, dtype: logsumexp_all(a, dtype)

    def impl(a, axis, dtype):
        b = a if axis == 0 else a.T  # along axis 0 of b
        if b.strides[0] < b.strides[1] or b.shape[1] == 1:  # each line in memory order
            out = np.empty(b.shape[1], dtype)
            for i in range(b.shape[1]):
                out[i] = logsumexp_all(b[:, i], dtype)
            return out
        # rows in memory order: the maxima, then the sums, each a vector
        top = np.full(b.shape[1], -np.inf, dtype)
        for k in range(b.shape[0]):
            for i in range(b.shape[1]):
                top[i] = _larger(top[i], dtype(b[k, i]))
        shift = np.where(np.isfinite(top), top, dtype(0))
        acc = np.zeros(b.shape[1], dtype)
        for k in range(b.shape[0]):
            for i in range(b.shape[1]):
                acc[i] += np.exp(dtype(b[k, i]) - shift[i])
        return np.log(acc) + shift

    return impl


# An arg-reduction along the inner axis of lines shorter than ``ARG_SHORT`` compares
# ``ARG_BLOCK`` lines at once, a position at a time, in one loop over the block's
# lines that vectorises (a line of 10 elements makes no vector loop of its own):
# their elements are first copied to a tile with the lines as columns.
ARG_BLOCK = 256
ARG_SHORT = 32


def _arg_lines(largest: bool):
    """``argmax``/``argmin`` along axis 0 or 1 of a 2-d array, without a branch: each
    line's best value and its index are updated by a select, a vector of lines at a
    time.  The first best wins, a NaN over any number (numpy's order).  Long lines
    along the inner axis are Numba's ``np.argmax`` (``np.argmin``), a line at a time."""
    name = "argmax" if largest else "argmin"
    empty = f"attempt to get {name} of an empty sequence"  # numpy's words
    numpys = getattr(np, name)

    def better(v, best):
        return ((v > best) if largest else (v < best)) | ((v != v) & (best == best))

    better = njit(inline="always")(named(better, f"{name}_better"))  # see named

    def fold(lines, at, count, best, index):  # lines[:, at : at + count]
        for i in range(count):
            best[i], index[i] = lines[0, at + i], 0
        for k in range(1, lines.shape[0]):
            for i in range(count):
                v = lines[k, at + i]
                take = better(v, best[i])
                best[i] = v if take else best[i]
                index[i] = k if take else index[i]

    fold = njit(inline="always")(named(fold, f"{name}_fold"))

    def impl(a, axis, dtype):
        b = a if axis == 0 else a.T  # along axis 0 of b: one result per column of b
        m, n = b.shape
        if m == 0:
            raise ValueError(empty)
        inner = b.strides[0] < b.strides[1] and n > 1  # each line in memory order
        if inner and m >= ARG_SHORT:
            return numpys(a, axis=axis).astype(dtype)
        block = max(1, min(ARG_BLOCK if inner else n, n))
        out = np.empty(n, dtype)
        tile = np.empty((m, block if inner else 0), b.dtype)
        best, index = np.empty(block, b.dtype), np.empty(block, dtype)
        for first in range(0, n, block):
            count = min(block, n - first)
            if inner:
                for i in range(count):
                    for k in range(m):
                        tile[k, i] = b[k, first + i]
                fold(tile, 0, count, best, index)
            else:  # b's rows lie in memory: read in place
                fold(b, first, count, best, index)
            out[first : first + count] = index[:count]
        return out

    return named(impl, f"{name}_lines_impl")


def _arg_overloads(name: str, whole: Any, along: Any) -> None:
    largest = name == "argmax"
    numpys = getattr(np, name)

    @overload(whole)
    def _whole(a, dtype):
        return lambda a, dtype: dtype(numpys(a))

    @overload(along)
    def _along(a, axis, dtype):
        if isinstance(a.dtype, (types.Float, types.Integer, types.Boolean)):
            return _arg_lines(largest)
        return lambda a, axis, dtype: numpys(a, axis=axis).astype(dtype)  # complex


_arg_overloads("argmax", argmax_all, argmax_axis)
_arg_overloads("argmin", argmin_all, argmin_axis)


@overload(keep_dims)
def _keep_dims(value, shape):
    if isinstance(value, types.Array):
        return lambda value, shape: np.ascontiguousarray(value).reshape(shape)
    return lambda value, shape: np.full(shape, value)
