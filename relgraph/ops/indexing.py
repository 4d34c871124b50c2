"""Integer-array indexing: ``take(x, idx, axis)`` (``x[idx]``, ``x[:, idx]``),
``take_along_axis(x, idx, axis)`` (``logp[np.arange(n), labels]``), and the two Ops
their gradients add values back with.

Indices are bounds-checked as numpy's are (an ``IndexError``, negative ones counting
from the end) in both tiers; the gathered values are exact copies.

>>> import numpy as np, relgraph as rg
>>> x, i = rg.vector("x"), rg.vector("i", "int64")
>>> rg.pprint(rg.take(x, i)), rg.typeof(rg.take(rg.matrix("M"), i, axis=1))
('take(x, i)', TensorType(float64, shape=(?, ?)))
>>> rg.take_along_axis(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1], [0]]), 1).tolist()
[[2.0], [3.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relgraph.exceptions import TypeCheckError
from relgraph.ops.base import PERFORM, Op, pullback, register_ops
from relgraph.terms.types import TensorType

__all__ = [
    "Take", "TakeAlong", "AddAt", "take", "take_along_axis", "add_at", "add_along_axis",
]  # fmt: skip


def _indices(t: TensorType, name: str, arg: Any) -> None:
    if t.ndim == 0:
        raise TypeCheckError(f"{name}: the indices {arg} are a single number: index with x[i]")
    if t.dtype.kind not in "iu":
        raise TypeCheckError(
            f"{name}: the indices {arg} are {t.dtype}, not integers (for a mask use np.where)"
        )


def _axis(axis: Any, ndim: int, name: str) -> int:
    if type(axis) is not int or not -ndim <= axis < ndim:
        raise TypeCheckError(f"{name}: axis {axis!r} is invalid for ndim {ndim}")
    return axis % ndim


class Take(Op):
    """``take(x, idx, axis=None)``: numpy's ``np.take`` (``mode="raise"``): the
    elements (``axis=None``: of ``x`` flattened) or the slices along ``axis`` at the
    integer indices ``idx`` (any shape; it replaces that axis)."""

    name = "take"
    nin = 2
    params = (("axis", None),)
    exact = PERFORM
    moves_only = True

    def normalise(self, params: list) -> list:
        axis = params[0]
        return [int(axis) if isinstance(axis, np.integer) else axis]

    def perform(self, x: Any, idx: Any, axis: Any = None) -> Any:
        return np.take(x, idx, axis=axis)

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        x, idx = types[:2]
        _indices(idx, self.name, args[1])
        axis = self.param_values(args)["axis"]
        if axis is None:
            return TensorType(x.dtype, idx.ndim, idx.shape)
        k = _axis(axis, x.ndim, self.name)
        shape = (*x.shape[:k], *idx.shape, *x.shape[k + 1 :])
        return TensorType(x.dtype, len(shape), shape)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        axis = self.param_values(node.args)["axis"]
        if axis is None:
            return args[1]
        k = axis % len(args[0])
        return (*args[0][:k], *args[1], *args[0][k + 1 :])


class TakeAlong(Op):
    """``take_along_axis(x, idx, axis)``: numpy's ``np.take_along_axis``: along
    ``axis``, the elements of each slice of ``x`` at the indices of the matching
    slice of ``idx`` (same ndim; the other axes equal)."""

    name = "take_along_axis"
    nin = 2
    params = (("axis", -1),)
    exact = PERFORM
    moves_only = True

    def perform(self, x: Any, idx: Any, axis: int = -1) -> Any:
        return np.take_along_axis(np.asarray(x), np.asarray(idx), axis)

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        x, idx = types[:2]
        _indices(idx, self.name, args[1])
        if idx.ndim != x.ndim:
            raise TypeCheckError(f"{self.name}: {args[1]} needs the ndim of {args[0]} ({x.ndim})")
        k = _axis(self.param_values(args)["axis"], x.ndim, self.name)
        for j, (a, b) in enumerate(zip(x.shape, idx.shape)):
            if j != k and a is not None and b is not None and a != b:
                raise TypeCheckError(
                    f"{self.name}: axis {j} is {a} in {args[0]}, {b} in {args[1]}"
                )
        return TensorType(x.dtype, x.ndim, idx.shape)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        k = self.param_values(node.args)["axis"] % len(args[0])
        for j, (a, b) in enumerate(zip(args[0], args[1])):
            if j != k:
                shapes.equal(a, b, node)
        return args[1]


class AddAt(Op):
    """``add_at(g, x, idx, axis)`` and ``add_along_axis``: zeros of ``x``'s shape (in
    ``g``'s dtype) with ``g`` added at the places ``take`` (``take_along_axis``) read
    from, repeated indices adding up: the pullbacks of the two gathers."""

    nin = 3
    exact = PERFORM

    def __init__(self, name: str, along: bool):
        self.name, self.along = name, along
        self.params = (("axis", -1 if along else None),)

    def perform(self, g: Any, x: Any, idx: Any, *axis: Any) -> Any:
        k = axis[0] if axis else self.params[0][1]
        g, idx = np.asarray(g), np.asarray(idx)
        out = np.zeros(np.shape(x), g.dtype)
        if k is None:  # take of x flattened
            np.add.at(out.reshape(-1), idx.reshape(-1), g.reshape(-1))
        elif self.along:
            grid = list(np.indices(idx.shape, sparse=True))
            grid[k % out.ndim] = idx
            np.add.at(out, tuple(grid), g)
        else:  # g has the shape x.shape[:k] + idx.shape + x.shape[k + 1:]
            k %= out.ndim
            rows = g.reshape(out.shape[:k] + (idx.size,) + out.shape[k + 1 :])
            np.add.at(np.moveaxis(out, k, 0), idx.reshape(-1), np.moveaxis(rows, k, 0))
        return out

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        g, x = types[:2]
        return TensorType(g.dtype, x.ndim, x.shape)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        return args[1]


take = Take()
take_along_axis = TakeAlong()
add_at = AddAt("add_at", along=False)
add_along_axis = AddAt("add_along_axis", along=True)
register_ops(take, take_along_axis, add_at, add_along_axis)


@pullback(take, add_at)
def _take_pullback(g: Any, y: Any) -> tuple:
    axis = y.op.param_values(y.args)["axis"]
    if y.op is add_at:  # gathers back what was added: the cotangent of g
        return take(g, y.args[2], axis), None, None
    x, idx = y.args[:2]
    return add_at(g, x, idx, axis), None


@pullback(take_along_axis, add_along_axis)
def _take_along_pullback(g: Any, y: Any) -> tuple:
    axis = y.op.param_values(y.args)["axis"]
    if y.op is add_along_axis:
        return take_along_axis(g, y.args[2], axis), None, None
    x, idx = y.args[:2]
    return add_along_axis(g, x, idx, axis), None
