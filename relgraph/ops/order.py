"""Order statistics: numpy's ``sort``, ``median`` and ``quantile`` (``percentile`` is the
quantile of ``q / 100``) and the NaN-ignoring ``nanmedian`` and ``nanquantile``, along
one axis or of the array flattened (``axis=None``).

The values are numpy's, including where numpy's formulas show through:

* ``sort`` puts NaN last (after ``inf``);
* ``median`` is the middle value, or the mean of the middle two (``(a + b) / 2``, in
  float64 for integers and bools, in float32 for float16, cast back), NaN where the
  slice holds a NaN or is empty;
* ``quantile`` is numpy's default method ("linear"): the sorted values ``a`` and ``b``
  around the index ``(n - 1) q``, and ``a + (b - a) t`` where the index's fraction ``t``
  is below 0.5, else ``b - (b - a)(1 - t)``.  ``b - a`` is taken in the array's dtype,
  so integers wrap around (int8's ``[-100, 100]`` at 0.25 is -114.0, as numpy's) and
  ``inf - inf`` is NaN (``[1, inf]`` at 1.0 is NaN).  ``q`` is one number in [0, 1]:
  a Python number is a weak scalar, so float32 data gives float32; a numpy scalar
  (``weak=False``) makes numpy interpolate in float64, and so does the Op.  ``method="lower"`` and
  ``"higher"`` give ``a`` and ``b`` themselves.

``argsort`` gives the indices that sort, equal values in their order (numpy's
``kind="stable"``).  A median's or quantile's gradient goes to the elements equal to
``a`` (``1 - t`` of it) and ``b`` (``t``), split evenly among equal elements; a sort's
to each element from the place it was sorted to.

>>> import numpy as np, relgraph as rg
>>> x = rg.matrix("x")
>>> rg.typeof(rg.median(x, axis=1))
TensorType(float64, shape=(?,))
>>> rg.median(np.array([[3.0, 1.0, 2.0], [np.nan, 0.0, 1.0]]), axis=1)
array([ 2., nan])
>>> float(rg.quantile(np.array([1.0, 2.0, 3.0, 4.0]), 0.25))
1.75
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import mpmath
import numpy as np

from relgraph.exceptions import TypeCheckError
from relgraph.ops.base import PERFORM, Op, pullback, register_ops, result_dtype
from relgraph.ops.elemwise import (
    astype,
    equal,
    expand_as,
    floor,
    isnan,
    logical_not,
    where,
)
from relgraph.ops.exact import reduce_rows
from relgraph.ops.indexing import add_along_axis
from relgraph.ops.reductions import (
    _checked_axis as _checked,
    _int_axis as _axis,
    _kept,
    reduced_dims,
    sum,
)
from relgraph.ops.shape import reshape, reshape_as
from relgraph.terms.infer import typeof
from relgraph.terms.types import TensorType

__all__ = [
    "Sort", "ArgSort", "OrderStatistic", "sort", "argsort", "median", "quantile",
    "percentile", "nanmedian", "nanquantile", "nanpercentile",
]  # fmt: skip


def _is_number(q: Any) -> bool:
    return isinstance(q, (int, float, np.number)) and not isinstance(q, (bool, np.bool_))


def _rank_key(v: Any) -> tuple:
    """A sort key of an exact value: numbers in order, NaN after them."""
    nan = bool(mpmath.isnan(v))
    return (nan, 0 if nan else v)


def _nan_last(values: Sequence[Any]) -> list:
    """Exact values (mpmath numbers) in numpy's order: NaN after everything else."""
    return sorted(values, key=_rank_key)


def _stable_order(values: list) -> list:
    """The indices that sort exact values, NaN last, ties in order."""
    return sorted(range(len(values)), key=lambda i: _rank_key(values[i]))


def _rows(fn: Any, x: np.ndarray, axis: int | None, dtype: Any) -> np.ndarray:
    """``fn`` of each slice along ``axis`` (of the flattened array for None), a list
    the length of the slice, in place of it."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    moved = np.moveaxis(x, axis, -1)
    out = np.empty(moved.shape, dtype)
    for index in np.ndindex(moved.shape[:-1]):
        out[index] = fn(list(moved[index]))
    return np.moveaxis(out, -1, axis)


class Sort(Op):
    """``sort(x, axis=-1)``: numpy's sorted copy along an axis, or of the flattened
    array for ``axis=None``; NaN last.

    >>> import numpy as np, relgraph as rg
    >>> rg.typeof(rg.sort(rg.matrix("M", shape=(2, 3)), axis=None))
    TensorType(float64, shape=(6,))
    >>> rg.sort(np.array([2.0, np.nan, -np.inf, 1.0]))
    array([-inf,   1.,   2.,  nan])
    """

    name = "sort"
    nin = 1
    params = (("axis", -1),)
    exact = PERFORM  # on exact values it sorts them, NaN last (see perform)
    cost = 8.0  # n log n comparisons and a copy

    def normalise(self, params: list) -> list:
        return [_axis(self.name, params[0])]

    def perform(self, x: Any, axis: Any = -1) -> Any:
        x = np.asarray(x)
        if x.dtype != object:
            return np.sort(x, axis=axis)
        return _rows(_nan_last, x, axis, object)  # exact values: NaN compares False

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        t, axis = types[0], self.param_values(args)["axis"]
        if axis is None:
            return TensorType(t.dtype, 1, (t.size,))
        if t.ndim == 0:
            raise TypeCheckError("sort of a 0-d value: give it an axis with expand_dims")
        _checked(self.name, axis, t.ndim)
        return t

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        if self.param_values(node.args)["axis"] is None:
            return shapes.from_type(node)
        return args[0]


class ArgSort(Sort):
    """``argsort(x, axis=-1)``: the indices that sort ``x`` along an axis (of the
    flattened array for ``axis=None``), NaN last, equal values in their order
    (numpy's ``kind="stable"``; its default sort leaves the order of equal values to
    its algorithm); int64.

    >>> import numpy as np, relgraph as rg
    >>> rg.argsort(np.array([2.0, np.nan, 1.0, 2.0])).tolist()
    [2, 0, 3, 1]
    """

    name = "argsort"

    def perform(self, x: Any, axis: Any = -1) -> Any:
        x = np.asarray(x)
        if x.dtype != object:
            return np.argsort(x, axis=axis, kind="stable").astype(np.int64)
        return _rows(_stable_order, x, axis, np.int64)  # exact values: NaN last

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        t = super().infer_type(types, args)
        return TensorType(np.dtype(np.int64), t.ndim, t.shape)


class OrderStatistic(Op):
    """``median(x, axis=None, keepdims=False)`` and ``quantile(x, q, axis=None,
    keepdims=False, method="linear")``: numpy's, along one axis or of every element
    (see the module docs for the formulas; ``method="lower"`` and ``"higher"`` take the
    sorted value at or below, at or above, the index ``(n - 1) q``, in the array's own
    dtype); ``nanmedian`` and ``nanquantile`` are the same of each slice's numbers,
    its NaNs left out (NaN for a slice of NaNs, where numpy warns)."""

    nin = 1
    exact = PERFORM  # on exact values: the same formula, exactly (see perform)

    def __init__(self, name: str, params: tuple):
        self.name, self.params = name, params
        self.cost = 8.0  # a sort of each slice
        self.skips_nan = name.startswith("nan")
        self.reference = getattr(np, name)

    def normalise(self, params: list) -> list:
        if len(params) == 2:  # a median
            return [_axis(self.name, params[0]), bool(params[1])]
        q, axis, keepdims, method, weak = params
        if not _is_number(q):
            raise TypeCheckError(f"{self.name}: q must be one number in [0, 1], got {q!r}")
        if not 0.0 <= float(q) <= 1.0:
            raise TypeCheckError(f"{self.name}: q must be in [0, 1], got {q!r}")
        if method not in METHODS:
            raise TypeCheckError(f"{self.name}: method must be one of {METHODS}, got {method!r}")
        return [float(q), _axis(self.name, axis), bool(keepdims), method, bool(weak)]

    def axes(self, axis: Any, ndim: int) -> set[int]:
        """The reduced axes (all of them for None)."""
        return set(range(ndim)) if axis is None else {_checked(self.name, axis, ndim)}

    def perform(self, x: Any, *params: Any) -> Any:
        p = self.param_values((x, *params))
        x = np.asarray(x)
        q, how = ((_q(p),), {"method": p["method"]}) if "q" in p else ((), {})
        if x.dtype == object:  # exact values: a NaN makes NaN, unless it is skipped
            at = _exact_quantile(p.get("q", 0.5), p.get("method", "linear"))
            fn = (lambda row: at(_numbers(row))) if self.skips_nan else at
            return reduce_rows(fn, x, p["axis"], p["keepdims"], sees_nan=self.skips_nan)
        return self.reference(x, *q, axis=p["axis"], keepdims=p["keepdims"], **how)

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        t, p = types[0], self.param_values(args)
        if "q" not in p:
            dtype = result_dtype(self.reference, (t.dtype,))
        else:  # numpy's b - a: no linear quantile of bools
            if t.dtype.kind == "b" and p["method"] == "linear":
                raise TypeCheckError(f"{self.name} of bools: numpy refuses it (b - a of bools)")
            dtype = result_dtype(_sample_q(self.reference, p["method"], p["weak"]), (t.dtype,))
        shape = reduced_dims(t.shape, self.axes(p["axis"], t.ndim), p["keepdims"], one=1)
        return TensorType(dtype, len(shape), shape)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        p = self.param_values(node.args)
        axes = self.axes(p["axis"], len(args[0]))
        return reduced_dims(args[0], axes, p["keepdims"], one=("size", 1))


#: numpy's quantile methods relgraph computes: its default, and the sorted values
#: around the index (a gradient reads those two).
METHODS = ("linear", "lower", "higher")


def _sample_q(reference: Any, method: str, weak: bool) -> Any:
    q = 0.5 if weak else np.float64(0.5)
    return lambda a: reference(a, q, method=method)


def _q(p: dict) -> Any:
    """``q`` as numpy was given it: a Python float, or a numpy scalar, which numpy does
    not treat as weak (float32 data then gives float64)."""
    return p["q"] if p["weak"] else np.float64(p["q"])


def weak(q: Any) -> bool:
    """Whether numpy treats ``q`` as a weak scalar (a Python int or float)."""
    return type(q) in (int, float)


def _numbers(values: list) -> list:
    return [v for v in values if not mpmath.isnan(v)]


def _exact_quantile(q: float, method: str) -> Any:
    """The exact linear interpolation at numpy's index and fraction, or the value at
    or below (above) the index, of numbers (a median: at 0.5, the middle value or the
    mean of the middle two)."""

    def at(values: list) -> Any:
        row = sorted(values)
        if not row:
            return mpmath.nan
        index = (len(row) - 1) * q
        below = math.floor(index)
        above = min(math.ceil(index), len(row) - 1)
        low, high = row[below], row[above]
        if method != "linear":
            return low if method == "lower" else high
        if low == high:
            return low
        return low + (high - low) * mpmath.mpf(index - below)

    return at


sort = Sort()
argsort = ArgSort()
median = OrderStatistic("median", (("axis", None), ("keepdims", False)))
quantile = OrderStatistic(
    "quantile",
    (("q", 0.5), ("axis", None), ("keepdims", False), ("method", "linear"), ("weak", True)),
)
nanmedian = OrderStatistic("nanmedian", median.params)
nanquantile = OrderStatistic("nanquantile", quantile.params)
register_ops(sort, argsort, median, quantile, nanmedian, nanquantile)


def percentile(
    x: Any, q: Any, axis: Any = None, keepdims: bool = False, method: str = "linear"
) -> Any:
    """numpy's ``percentile``: the :data:`quantile` of ``q / 100`` (as numpy divides).

    >>> import numpy as np, relgraph as rg
    >>> float(rg.percentile(np.array([1.0, 2.0, 3.0, 4.0]), 25))
    1.75
    """
    return quantile(x, _fraction(q), axis, keepdims, method, weak(q))


def nanpercentile(
    x: Any, q: Any, axis: Any = None, keepdims: bool = False, method: str = "linear"
) -> Any:
    """numpy's ``nanpercentile``: the :data:`nanquantile` of ``q / 100``.

    >>> import numpy as np, relgraph as rg
    >>> float(rg.nanpercentile(np.array([1.0, np.nan, 3.0]), 50, method="higher"))
    3.0
    """
    return nanquantile(x, _fraction(q), axis, keepdims, method, weak(q))


def _fraction(q: Any) -> Any:
    """A percentile's ``q / 100``, divided as numpy divides."""
    return float(np.true_divide(q, 100)) if _is_number(q) else q


@pullback(sort)
def _sort_pullback(g: Any, y: Any) -> tuple:
    """Each element gets the cotangent of the place it was sorted to: ``sort(x)`` is
    ``take_along_axis(x, argsort(x))``, whose pullback adds back along the indices."""
    x, axis = y.args[0], y.op.param_values(y.args)["axis"]
    if axis is not None:
        return (add_along_axis(g, x, argsort(x, axis), axis),)
    flat = reshape(x, (-1,))
    return (reshape_as(add_along_axis(g, flat, argsort(x, None), 0), x),)


@pullback(argsort)
def _argsort_pullback(g: Any, y: Any) -> tuple:
    return (None,)  # indices: piecewise constant


@pullback(median, quantile, nanmedian, nanquantile)
def _order_statistic_pullback(g: Any, y: Any) -> tuple:
    """The statistic is ``(1 - t) a + t b`` of the sorted values ``a`` and ``b`` around
    numpy's index (a median's: ``t = 1/2``, or ``a = b``): ``1 - t`` of the cotangent
    goes to the elements equal to ``a``, ``t`` to those equal to ``b``, each split
    evenly among ties (as ``max``'s), none to a NaN."""
    op, x = y.op, y.args[0]
    p = op.param_values(y.args)
    g, _, axes = _kept(g, y)
    kept, dtype = tuple(sorted(axes)), typeof(y).dtype
    twin = nanquantile if op.skips_nan else quantile
    q, method = p.get("q", 0.5), p.get("method", "linear")
    if method != "linear":  # the value of the elements equal to it
        return (g * _share(x, _kept(y, y)[0], kept, dtype),)
    low = twin(x, q, p["axis"], True, "lower")
    high = twin(x, q, p["axis"], True, "higher")
    if "q" not in p:
        t: Any = 0.5
    else:  # numpy's fraction of (n - 1) q, n the slice's numbers
        numbers = logical_not(isnan(x)) if op.skips_nan else expand_as(True, x)
        index = (sum(astype(numbers, dtype.name), kept, True) - 1.0) * q
        t = index - floor(index)
    weights = _share(x, low, kept, dtype) * (1.0 - t) + _share(x, high, kept, dtype) * t
    return (g * weights,)


def _share(x: Any, value: Any, kept: tuple, dtype: Any) -> Any:
    """1 over the elements of ``x`` equal to ``value`` (a slice's), 0 elsewhere."""
    hit = equal(x, value)
    return where(hit, 1.0 / sum(astype(hit, dtype.name), kept, True), 0.0)
