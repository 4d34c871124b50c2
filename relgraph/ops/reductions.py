"""Reductions over all axes or any tuple of axes, of any rank, with ``keepdims``:
``sum``, ``max``, ``min``, ``prod``, ``mean`` and the stable ``logsumexp``.

Lowered to :mod:`relgraph.backends.numba.kernels`: ``<kind>_all`` over everything, ``<kind>_axis``
along one axis of a matrix; any other axes are moved last and flattened so that the
reduction runs along the rows of a matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relgraph.exceptions import TypeCheckError
from relgraph.ops import special
from relgraph.ops.base import Op, register_ops, result_dtype
from relgraph.terms.infer import typeof
from relgraph.terms.types import TensorType

__all__ = ["Reduce", "sum", "max", "min", "prod", "mean", "logsumexp"]


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

    def __init__(self, name: str, fn: Any):
        self.name = name
        self.fn = fn

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
        return _reduced(args[0], axes, p["keepdims"], one=("size", 1))

    def array_code(self, node: Any) -> str:
        p = self.param_values(node.args)
        code = self._reduced_code(typeof(node.args[0]).ndim, p["axis"])
        if p["keepdims"]:
            shape = "".join(f"{d}, " for d in self._kept_shape(node))
            return f"kernels.keep_dims({code}, ({shape}))"
        return code

    def _kept_shape(self, node: Any) -> tuple[str, ...]:
        ndim = typeof(node).ndim
        axes = self.axes(self.param_values(node.args)["axis"], ndim)
        return _reduced([f"{{0}}.shape[{k}]" for k in range(ndim)], axes, True, one="1")

    def _reduced_code(self, ndim: int, axis: Any) -> str:
        axes = sorted(self.axes(axis, ndim))
        if len(axes) == ndim or ndim <= 1:
            return f"kernels.{self.name}_all({{0}}, {{dtype}})"
        if ndim == 2:
            return f"kernels.{self.name}_axis({{0}}, {axes[0]}, {{dtype}})"
        kept = [k for k in range(ndim) if k not in axes]

        def size(group: list[int]) -> str:
            return " * ".join(f"{{0}}.shape[{k}]" for k in group)

        moved = f"np.ascontiguousarray(np.transpose({{0}}, {tuple(kept + axes)!r}))"
        matrix = f"{moved}.reshape(({size(kept)}, {size(axes)}))"
        shape = "(" + "".join(f"{{0}}.shape[{k}], " for k in kept) + ")"
        return f"kernels.{self.name}_axis({matrix}, 1, {{dtype}}).reshape({shape})"

    def row_loop(self, node: Any) -> tuple[list[tuple], str, str | None] | None:
        """How a fused loop reduces each row, if ``node`` reduces the last axis of a 1-d
        or 2-d float operand: passes of (set-up, map of ``{v}`` or None, update by
        ``{v}``) over a row of length ``{n}``, then the result over ``{acc}`` (and
        ``{shift}``), and a check of the row length made once, before the loop.  None
        when the node has no fused form (the kernels in :mod:`relgraph.backends.numba.kernels`
        compute it)."""
        x, p = typeof(node.args[0]), self.param_values(node.args)
        dtype = typeof(node).dtype
        if x.ndim not in (1, 2) or self.axes(p["axis"], x.ndim) != {x.ndim - 1}:
            return None
        if dtype != x.dtype or dtype not in (np.float32, np.float64):
            return None
        if dtype == np.float64 and self.name == "logsumexp":
            return _LOGSUMEXP_F64  # exp from relgraph.backends.numba.vecmath: the loop vectorises
        return _ROW_LOOPS[self.name]

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        t, p = types[0], self.param_values(args)
        shape = _reduced(t.shape, self.axes(p["axis"], t.ndim), p["keepdims"], one=1)
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


def _reduced(dims: Sequence[Any], axes: set[int], keepdims: bool, one: Any) -> tuple:
    """``dims`` without the reduced axes, or with ``one`` in their place (keepdims)."""
    if keepdims:
        return tuple(one if k in axes else d for k, d in enumerate(dims))
    return tuple(d for k, d in enumerate(dims) if k not in axes)


_EMPTY = "if {n} == 0: raise ValueError('zero-size array to reduction operation {kind}')"
_LARGEST = "if {v} > {acc} or {v} != {v}: {acc} = {v}"  # NaN wins and stays
_ROW_LOOPS = {
    "sum": ([("{acc} = 0.0", None, "{acc} += {v}")], "{acc}", None),
    "mean": ([("{acc} = 0.0", None, "{acc} += {v}")], "{acc} / {n}", None),
    "prod": ([("{acc} = 1.0", None, "{acc} *= {v}")], "{acc}", None),
    "max": ([("{acc} = -np.inf", None, _LARGEST)], "{acc}", _EMPTY.replace("{kind}", "maximum")),
    "min": ([("{acc} = np.inf", None, _LARGEST.replace(">", "<"))], "{acc}",
            _EMPTY.replace("{kind}", "minimum")),
    "logsumexp": (
        [
            ("{acc} = -np.inf", None, _LARGEST),
            ("{shift} = {acc} if np.isfinite({acc}) else 0.0\n{acc} = 0.0",
             "np.exp({v} - {shift})", "{acc} += {v}"),
        ],
        "np.log({acc}) + {shift}",
        None,
    ),
}  # fmt: skip
_LOGSUMEXP_F64 = (
    [
        _ROW_LOOPS["logsumexp"][0][0],
        (_ROW_LOOPS["logsumexp"][0][1][0], "vecmath.exp({v} - {shift})", "{acc} += {v}"),
    ],
    *_ROW_LOOPS["logsumexp"][1:],
)

sum = Reduce("sum", np.sum)
max = Reduce("max", np.max)
min = Reduce("min", np.min)
prod = Reduce("prod", np.prod)
mean = Reduce("mean", np.mean)
logsumexp = Reduce("logsumexp", special.logsumexp)
register_ops(sum, max, min, prod, mean, logsumexp)
