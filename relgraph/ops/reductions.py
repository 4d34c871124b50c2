"""Reductions over all axes or any tuple of axes, of any rank, with ``keepdims``:
``sum``, ``max``, ``min``, ``prod``, ``mean`` and the stable ``logsumexp``.

How each backend computes them is that backend's (:mod:`relgraph.backends.numba.arrays`).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import mpmath
import numpy as np

from relgraph.exceptions import GradientError, TypeCheckError
from relgraph.ops import exact as exact_ref, special
from relgraph.ops.base import PERFORM, Op, pullback, register_ops, result_dtype
from relgraph.ops.elemwise import astype, equal, exp, expand_as, times, where
from relgraph.ops.shape import expand_dims, getitem, reshape, reshape_as
from relgraph.terms.infer import typeof
from relgraph.terms.term import Term
from relgraph.terms.types import TensorType

__all__ = [
    "Reduce", "reduced_dims", "sum", "max", "min", "prod", "mean", "logsumexp", "Scan",
    "cumsum", "cumprod", "ArgReduce", "argmax", "argmin",
]  # fmt: skip


class Reduce(Op):
    """A reduction over all axes (``axis=None``), one axis, or a tuple of axes.

    Examples
    --------
    >>> import relgraph as rg
    >>> rg.typeof(rg.sum(rg.matrix("A", shape=(2, 3)), 0))
    TensorType(float64, shape=(3,))
    >>> rg.typeof(rg.max(rg.tensor("T", shape=(2, 3, 4)), axis=(0, 2), keepdims=True))
    TensorType(float64, shape=(1, 3, 1))
    >>> rg.pprint(rg.logsumexp(rg.matrix("M"), axis=1))
    'logsumexp(M, axis=1)'
    """

    nin = 1
    params = (("axis", None), ("keepdims", False))

    def __init__(self, name: str, fn: Any, exact: Any, cost: float = 1.0):
        self.name = name
        self.fn = fn
        self.exact = exact
        self.cost = cost

    def normalise(self, params: list) -> list:
        axis, keepdims = params
        if not isinstance(keepdims, (bool, np.bool_)):
            raise TypeCheckError(f"{self.name}: keepdims must be True or False")
        axis = tuple(axis) if isinstance(axis, list) else axis
        if isinstance(axis, tuple):
            axis = tuple(int(a) if isinstance(a, np.integer) else a for a in axis)
        elif isinstance(axis, np.integer):  # axis=np.int64(1) is axis 1
            axis = int(axis)
        if isinstance(axis, tuple) and len(axis) == 1:
            axis = axis[0]  # one stored form: axis=(0,) is axis=0
        return [axis, bool(keepdims)]

    def perform(self, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        return self.fn(x, axis=axis, keepdims=keepdims)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        p = self.param_values(node.args)
        axes = self.axes(p["axis"], len(args[0]))
        return reduced_dims(args[0], axes, p["keepdims"], one=("size", 1))

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        t, p = types[0], self.param_values(args)
        shape = reduced_dims(t.shape, self.axes(p["axis"], t.ndim), p["keepdims"], one=1)
        return TensorType(result_dtype(self.fn, (t.dtype,)), len(shape), shape)

    def axes(self, axis: Any, ndim: int) -> set[int]:
        """The reduced axes, as non-negative integers (all of them for None)."""
        if axis is None:
            return set(range(ndim))
        axes = axis if isinstance(axis, tuple) else (axis,)
        if not all(type(a) is int and -ndim <= a < ndim for a in axes):
            raise TypeCheckError(f"{self.name}: axis {axis!r} is invalid for ndim {ndim}")
        if len({a % ndim for a in axes}) != len(axes):
            raise TypeCheckError(f"{self.name}: axis {axis!r} repeats an axis")
        return {a % ndim for a in axes}


def reduced_dims(dims: Sequence[Any], axes: set[int], keepdims: bool, one: Any) -> tuple:
    """``dims`` without the reduced axes, or with ``one`` in their place (keepdims)."""
    if keepdims:
        return tuple(one if k in axes else d for k, d in enumerate(dims))
    return tuple(d for k, d in enumerate(dims) if k not in axes)


# Exact references (rg.check) take a row of mpmath numbers; an empty row is NaN.
sum = Reduce("sum", np.sum, mpmath.fsum, cost=2.0)
max = Reduce("max", np.max, lambda xs: builtins.max(xs) if xs else mpmath.nan, cost=2.0)
min = Reduce("min", np.min, lambda xs: builtins.min(xs) if xs else mpmath.nan)
prod = Reduce("prod", np.prod, mpmath.fprod)
mean = Reduce("mean", np.mean, lambda xs: mpmath.fsum(xs) / len(xs) if xs else mpmath.nan)
logsumexp = Reduce("logsumexp", special.logsumexp, exact_ref.log_add_exp)
register_ops(sum, max, min, prod, mean, logsumexp)


def _int_axis(name: str, axis: Any) -> Any:
    if isinstance(axis, np.integer):
        return int(axis)
    if axis is not None and (type(axis) is not int):
        raise TypeCheckError(f"{name}: axis must be an integer or None, got {axis!r}")
    return axis


def _checked_axis(name: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise TypeCheckError(f"{name}: axis {axis} is invalid for ndim {ndim}")
    return axis % ndim


class Scan(Op):
    """``cumsum(x, axis=None)`` and ``cumprod``: numpy's running sums (products)
    along an axis, or along all elements flattened (``axis=None``), in numpy's dtype
    (``cumsum`` of int8 is int64).

    >>> import relgraph as rg
    >>> rg.typeof(rg.cumsum(rg.matrix("M", shape=(2, 3)), axis=1))
    TensorType(float64, shape=(2, 3))
    >>> rg.cumsum([[1, 2], [3, 4]]).tolist()
    [1, 3, 6, 10]
    """

    nin = 1
    params = (("axis", None),)
    exact = PERFORM  # numpy's running sums of mpmath numbers are exact

    def __init__(self, name: str, fn: Any):
        self.name, self.fn = name, fn

    def normalise(self, params: list) -> list:
        return [_int_axis(self.name, params[0])]

    def perform(self, x: Any, axis: Any = None) -> Any:
        return self.fn(x, axis=axis)

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        t, axis = types[0], self.param_values(args)["axis"]
        if t.ndim == 0:
            raise TypeCheckError(f"{self.name} of a 0-d value: give it an axis with expand_dims")
        dtype = result_dtype(self.fn, (t.dtype,))
        if axis is None:
            return TensorType(dtype, 1, (t.size,))
        _checked_axis(self.name, axis, t.ndim)
        return TensorType(dtype, t.ndim, t.shape)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        if self.param_values(node.args)["axis"] is None:
            return shapes.from_type(node)
        return args[0]


class ArgReduce(Op):
    """``argmax(x, axis=None, keepdims=False)`` and ``argmin``: numpy's index of the
    first largest (smallest) element, NaN counting as the largest (smallest), of the
    whole array flattened or along one axis; int64.

    >>> import numpy as np, relgraph as rg
    >>> rg.typeof(rg.argmax(rg.matrix("M"), axis=1))
    TensorType(int64, shape=(?,))
    >>> int(rg.argmin(np.array([3.0, np.nan, -1.0])))
    1
    """

    nin = 1
    params = (("axis", None), ("keepdims", False))
    exact = PERFORM

    def __init__(self, name: str, fn: Any):
        self.name, self.fn = name, fn

    def normalise(self, params: list) -> list:
        return [_int_axis(self.name, params[0]), bool(params[1])]

    def perform(self, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        return np.asarray(self.fn(x, axis=axis, keepdims=keepdims), np.int64)[()]

    def axes(self, axis: Any, ndim: int) -> set[int]:
        """The reduced axes (all of them for None)."""
        return set(range(ndim)) if axis is None else {_checked_axis(self.name, axis, ndim)}

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        t, p = types[0], self.param_values(args)
        shape = reduced_dims(t.shape, self.axes(p["axis"], t.ndim), p["keepdims"], one=1)
        return TensorType(np.dtype(np.int64), len(shape), shape)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        p = self.param_values(node.args)
        axes = self.axes(p["axis"], len(args[0]))
        return reduced_dims(args[0], axes, p["keepdims"], one=("size", 1))


cumsum = Scan("cumsum", np.cumsum)
cumprod = Scan("cumprod", np.cumprod)
argmax = ArgReduce("argmax", np.argmax)
argmin = ArgReduce("argmin", np.argmin)
register_ops(cumsum, cumprod, argmax, argmin)


# --- pullbacks (rg.grad): the cotangent spread back over the reduced axes -------------


def _kept(t: Any, y: Any) -> tuple[Any, Any, set[int]]:
    """``t`` (shaped as the node ``y``) with the reduced axes put back as length 1,
    the operand, and the reduced axes."""
    op, x = y.op, y.args[0]
    p = op.param_values(y.args)
    axes = op.axes(p["axis"], typeof(x).ndim)
    if type(t) is Term and t.op is expand_as and t.args[1] == y and typeof(t.args[0]).size == 1:
        t = t.args[0]  # spread over the node: as much over the operand
    if axes and not p["keepdims"] and typeof(t).ndim:
        t = expand_dims(t, tuple(sorted(axes)))
    return t, x, axes


def _count(x: Any, axes: set[int], dtype: np.dtype) -> Any:
    """How many elements each reduced slice has: a number where the type knows the
    sizes, else counted (a sum of ones, fused with the rest)."""
    sizes = [typeof(x).shape[k] for k in axes]
    if None not in sizes:
        return float(np.prod(sizes, dtype=np.float64))
    one = np.ones((), dtype)[()]
    return sum(expand_as(one, x), tuple(sorted(axes)), True)


@pullback(sum)
def _sum_pullback(g: Any, y: Any) -> tuple:
    g, x, _ = _kept(g, y)
    return (expand_as(g, x),)


@pullback(mean)
def _mean_pullback(g: Any, y: Any) -> tuple:
    g, x, axes = _kept(g, y)
    return (expand_as(g / _count(x, axes, typeof(y).dtype), x),)


@pullback(max, min)
def _extremum_pullback(g: Any, y: Any) -> tuple:
    """The cotangent goes to the elements equal to the result, split evenly among
    ties (as JAX); none to NaN."""
    g, x, axes = _kept(g, y)
    top, _, _ = _kept(y, y)
    hit = equal(x, top)
    ties = sum(astype(hit, typeof(y).dtype.name), tuple(sorted(axes)), True)
    return (where(hit, g / ties, 0.0),)


@pullback(logsumexp)
def _logsumexp_pullback(g: Any, y: Any) -> tuple:
    """The softmax of the operand times the cotangent."""
    g, x, _ = _kept(g, y)
    top, _, _ = _kept(y, y)
    return (times(g, exp(x - top)),)


@pullback(prod)
def _prod_pullback(g: Any, y: Any) -> tuple:
    raise GradientError(
        f"prod has no gradient yet (in {y}): for positive values write exp(sum(log(x)))"
    )


@pullback(cumsum)
def _cumsum_pullback(g: Any, y: Any) -> tuple:
    """The running sums of the cotangent from the end: ``x[i]`` counts in every
    ``y[j]`` with ``j >= i``."""
    x, axis = y.args[0], y.op.param_values(y.args)["axis"]
    k = 0 if axis is None else axis % typeof(x).ndim
    flip = ((None, None, None),) * k + ((None, None, -1),)
    back = getitem(cumsum(getitem(g, flip), k), flip)
    if axis is not None:
        return (back,)
    shape = typeof(x).shape
    return (reshape_as(back, x) if None in shape else reshape(back, shape),)


@pullback(cumprod)
def _cumprod_pullback(g: Any, y: Any) -> tuple:
    raise GradientError(f"cumprod has no gradient yet (in {y}): for positive values write "
                        "exp(cumsum(log(x)))")  # fmt: skip


@pullback(argmax, argmin)
def _index_pullback(g: Any, y: Any) -> tuple:
    return (None,)  # an index: piecewise constant
