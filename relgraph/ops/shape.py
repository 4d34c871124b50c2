"""Shape Ops: they move values and compute nothing (``moves_only``).

``transpose`` (reversed axes or a permutation), ``reshape``, ``expand_dims``,
``squeeze``, ``broadcast_to``, basic indexing (``getitem``: integers, slices with
steps and negative bounds, ``None``), ``concatenate`` and ``stack``.  Each lowers to
the numpy call Numba compiles; integer indices are bounds-checked in the kernel.

Compound terms are etuples, so ``t[0]`` and ``t[1:]`` on a compound term are its
head and arguments (kanren walks them that way); index a compound term with a tuple
(``t[1:, ...]``, ``t[:, 0]``) or with ``rg.getitem(t, np.s_[1:])``.  Symbols and
constants take any basic index: ``x[1:] - x[:-1]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from relgraph.exceptions import GradientError, TypeCheckError
from relgraph.ops.base import PERFORM, Op, pullback, register_ops
from relgraph.ops.elemwise import not_equal, sub
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.printing import Bare
from relgraph.terms.term import Term, brief
from relgraph.terms.types import TensorType

__all__ = [
    "Transpose", "Reshape", "ExpandDims", "Squeeze", "BroadcastTo", "GetItem", "Join",
    "transpose", "reshape", "expand_dims", "squeeze", "broadcast_to", "getitem",
    "concatenate", "stack", "ShapeOp", "numpy_key", "entry_text", "ScatterAs", "scatter_as",
    "ReshapeAs", "reshape_as", "diff",
]  # fmt: skip


def _ints(value: Any, what: str) -> tuple[int, ...]:
    value = (value,) if isinstance(value, (int, np.integer)) else value
    if not isinstance(value, (tuple, list)) or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value
    ):
        raise TypeCheckError(f"{what} must be an integer or a tuple of integers, got {value!r}")
    return tuple(int(v) for v in value)


def _axis(axis: int, ndim: int, name: str) -> int:
    if not -ndim <= axis < ndim:
        raise TypeCheckError(f"{name}: axis {axis} is out of bounds for ndim {ndim}")
    return axis % ndim


class ShapeOp(Op):
    """A one-operand Op that moves values: its dtype is its operand's."""

    nin = 1
    moves_only = True
    exact = PERFORM

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        t = types[0]
        shape = self.out_shape(t.shape, self.param_values(args))
        return TensorType(t.dtype, len(shape), shape)

    def out_shape(self, shape: tuple, p: dict) -> tuple:
        raise NotImplementedError


class Transpose(ShapeOp):
    """Reverse the axes (``x.T``), or permute them: ``transpose(T, (0, 2, 1))``."""

    name = "transpose"
    params = (("axes", None),)

    def normalise(self, params: list) -> list:
        return [None if params[0] is None else _ints(params[0], "transpose axes")]

    def perform(self, x: Any, axes: Any = None) -> Any:
        return np.transpose(x, axes)

    def layout(self, args: Sequence[Any]) -> list[Any]:
        return [args[0], ".T"] if len(args) == 1 else super().layout(args)

    def _perm(self, ndim: int, axes: Any) -> tuple[int, ...]:
        if axes is None:
            return tuple(range(ndim))[::-1]
        if sorted(a % ndim if -ndim <= a < ndim else a for a in axes) != list(range(ndim)):
            raise TypeCheckError(f"transpose: {axes} is not a permutation of {ndim} axes")
        return tuple(a % ndim for a in axes)

    def out_shape(self, shape: tuple, p: dict) -> tuple:
        return tuple(shape[k] for k in self._perm(len(shape), p["axes"]))

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        return self.out_shape(args[0], self.param_values(node.args))


class Reshape(ShapeOp):
    """``reshape(x, shape)``: the same elements in C order; one dimension may be -1."""

    name = "reshape"
    params = (("shape", None),)

    def normalise(self, params: list) -> list:
        shape = _ints(params[0], "reshape's shape")
        if shape.count(-1) > 1 or any(d < -1 for d in shape):
            raise TypeCheckError(f"reshape: invalid shape {shape}")
        return [shape]

    def perform(self, x: Any, shape: tuple) -> Any:
        return np.reshape(x, shape)

    def out_shape(self, shape: tuple, p: dict) -> tuple:
        new = p["shape"]
        if None in shape:
            return tuple(None if d == -1 else d for d in new)
        size, known = math.prod(shape), math.prod(d for d in new if d != -1)
        if -1 in new:
            if known == 0 or size % known:
                raise TypeCheckError(f"reshape: cannot reshape {shape} into {new}")
            return tuple(size // known if d == -1 else d for d in new)
        if size != known:
            raise TypeCheckError(f"reshape: cannot reshape {shape} ({size} elements) into {new}")
        return new


class ExpandDims(ShapeOp):
    """``expand_dims(x, axis)``: a new axis of length 1 at ``axis``."""

    name = "expand_dims"
    params = (("axis", None),)

    def normalise(self, params: list) -> list:
        axis = _ints(params[0], "expand_dims's axis")
        return [axis[0] if len(axis) == 1 else axis]

    def perform(self, x: Any, axis: Any) -> Any:
        return np.expand_dims(x, axis)

    def new_axes(self, ndim: int, axis: Any) -> set[int]:
        """The positions of the new axes in the result of an ``ndim``-d operand."""
        axis = (axis,) if type(axis) is int else axis
        out = ndim + len(axis)
        new = {_axis(a, out, self.name) for a in axis}
        if len(new) != len(axis):
            raise TypeCheckError(f"expand_dims: axis {axis} repeats an axis")
        return new

    def out_shape(self, shape: tuple, p: dict) -> tuple:
        new, rest = self.new_axes(len(shape), p["axis"]), iter(shape)
        return tuple(1 if k in new else next(rest) for k in range(len(shape) + len(new)))

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        new = self.new_axes(len(args[0]), self.param_values(node.args)["axis"])
        rest = iter(args[0])
        return tuple(
            ("size", 1) if k in new else next(rest) for k in range(len(args[0]) + len(new))
        )


class Squeeze(ShapeOp):
    """``squeeze(x, axis=None)``: drop axes of length 1 (all of them: their lengths
    must be known from the type; or the given ones, checked when called)."""

    name = "squeeze"
    params = (("axis", None),)

    def normalise(self, params: list) -> list:
        return [None if params[0] is None else _ints(params[0], "squeeze's axis")]

    def perform(self, x: Any, axis: Any = None) -> Any:
        return np.squeeze(x, axis)

    def dropped(self, shape: tuple, axis: Any) -> set[int]:
        """The axes removed, given the operand's shape."""
        if axis is None:
            if None in shape:
                raise TypeCheckError(
                    "squeeze: which axes have length 1 is not known from the type "
                    f"{shape}: pass axis="
                )
            return {k for k, d in enumerate(shape) if d == 1}
        axes = {_axis(a, len(shape), self.name) for a in axis}
        for k in axes:
            if shape[k] not in (1, None):
                raise TypeCheckError(f"squeeze: axis {k} has length {shape[k]}, not 1")
        return axes

    def out_shape(self, shape: tuple, p: dict) -> tuple:
        drop = self.dropped(shape, p["axis"])
        return tuple(d for k, d in enumerate(shape) if k not in drop)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        drop = self.dropped(typeof(node.args[0]).shape, self.param_values(node.args)["axis"])
        for k in drop:
            shapes.equal(args[0][k], ("size", 1), node)
        return tuple(d for k, d in enumerate(args[0]) if k not in drop)


class BroadcastTo(ShapeOp):
    """``broadcast_to(x, shape)``: numpy's read-only broadcast view."""

    name = "broadcast_to"
    params = (("shape", None),)

    def normalise(self, params: list) -> list:
        shape = _ints(params[0], "broadcast_to's shape")
        if any(d < 0 for d in shape):
            raise TypeCheckError(f"broadcast_to: invalid shape {shape}")
        return [shape]

    def perform(self, x: Any, shape: tuple) -> Any:
        return np.broadcast_to(x, shape)

    def out_shape(self, shape: tuple, p: dict) -> tuple:
        target = p["shape"]
        if len(shape) > len(target):
            raise TypeCheckError(f"broadcast_to: cannot broadcast ndim {len(shape)} to {target}")
        for d, t in zip(shape[::-1], target[::-1]):
            if d not in (None, 1, t):
                raise TypeCheckError(f"broadcast_to: cannot broadcast {shape} to {target}")
        return target

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        target = tuple(("size", d) for d in self.param_values(node.args)["shape"])
        for d, t in zip(args[0][::-1], target[::-1]):
            shapes.join(d, t, node)
        return target


class GetItem(ShapeOp):
    """Basic indexing ``x[key]``: integers, slices (steps, negative bounds) and None.

    The key is stored as a tuple: an int, None (a new axis) or ``(start, stop, step)``
    for a slice per entry; a missing trailing entry takes its whole axis.

    >>> import relgraph as rg
    >>> x, M = rg.vector("x", shape=5), rg.matrix("M", shape=(3, 4))
    >>> rg.pprint(x[1:] - x[:-1]), rg.typeof(x[1:])
    ('(x[1:] - x[:-1])', TensorType(float64, shape=(4,)))
    >>> rg.pprint(M[:, 0]), rg.typeof(M[::-2, None, 1:3])
    ('M[:, 0]', TensorType(float64, shape=(2, 1, 2)))
    """

    name = "getitem"
    params = (("key", ()),)

    def normalise(self, params: list) -> list:
        return [_key(params[0])]

    def bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple:
        x, *rest = super().bind(args, kwargs)
        if rest and Ellipsis in rest[0]:
            key = _expand_ellipsis(rest[0], typeof(x).ndim)
            rest = [key] if key else []  # the default, not stored
        return (x, *rest)

    def perform(self, x: Any, key: tuple = ()) -> Any:
        return np.asarray(x)[numpy_key(key)]

    def layout(self, args: Sequence[Any]) -> list[Any]:
        key = args[1] if len(args) > 1 else ()
        return [args[0], "[" + (", ".join(map(entry_text, key)) or "...") + "]"]

    def out_shape(self, shape: tuple, p: dict) -> tuple:
        key = p["key"]
        used = sum(1 for e in key if e is not None)
        if used > len(shape):
            raise TypeCheckError(f"getitem: {used} indices for an array of ndim {len(shape)}")
        out: list[int | None] = []
        dims = iter(shape)
        for entry in key:
            if entry is None:
                out.append(1)
                continue
            n = next(dims)
            if type(entry) is int:
                if n is not None and not -n <= entry < n:
                    raise TypeCheckError(f"getitem: index {entry} is out of bounds for {n}")
            else:
                out.append(None if n is None else len(range(*slice(*entry).indices(n))))
        return (*out, *dims)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        own, dims, out = shapes.from_type(node), iter(args[0]), []
        for entry in self.param_values(node.args)["key"]:
            if entry is None:
                out.append(("size", 1))
                continue
            dim = next(dims)
            if type(entry) is not int:
                out.append(dim if entry == (None, None, None) else own[len(out)])
        return (*out, *dims)


def _key(key: Any) -> tuple:
    entries = key if isinstance(key, tuple) else (key,)
    out: list[Any] = []
    for e in entries:
        if isinstance(e, slice):
            e = (e.start, e.stop, e.step)
        if isinstance(e, tuple) and len(e) == 3 and all(_int_or_none(v) for v in e):
            if e[2] == 0:
                raise TypeCheckError("getitem: slice step cannot be zero")
            out.append(tuple(None if v is None else int(v) for v in e))
        elif e is None or e is Ellipsis:
            out.append(e)
        elif isinstance(e, (int, np.integer)) and not isinstance(e, bool):
            out.append(int(e))
        else:
            raise TypeCheckError(
                f"getitem: {e!r} is not a basic index (integers, slices, None and ...)"
            )
    if out.count(Ellipsis) > 1:
        raise TypeCheckError("getitem: an index can only have a single ellipsis ('...')")
    while out and out[-1] == (None, None, None):
        out.pop()
    return tuple(out)


def _int_or_none(v: Any) -> bool:
    return v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool))


def _expand_ellipsis(key: tuple, ndim: int) -> tuple:
    k = key.index(Ellipsis)
    used = sum(1 for e in key if e is not None and e is not Ellipsis)
    full = ((None, None, None),) * max(ndim - used, 0)
    return _key(key[:k] + full + key[k + 1 :])


def numpy_key(key: tuple) -> tuple:
    return tuple(slice(*e) if isinstance(e, tuple) else e for e in key)


def entry_text(entry: Any) -> str:
    if entry is None:
        return "None"
    if type(entry) is int:
        return str(entry)
    start, stop, step = ("" if v is None else str(v) for v in entry)
    return f"{start}:{stop}" + (f":{step}" if step else "")


class Join(Op):
    """``concatenate(xs, axis)`` along an existing axis, or ``stack(xs, axis)`` along a
    new one.  The axis is always stored, after the operands."""

    moves_only = True
    exact = PERFORM
    params = (("axis", 0),)

    def __init__(self, name: str, fn: Any, new_axis: bool):
        self.name, self.fn, self.new_axis = name, fn, new_axis

    def bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple:
        if len(args) not in (1, 2) or not isinstance(args[0], (list, tuple)):
            raise TypeError(f"{self.name} takes a list of arrays and an axis")
        axis = args[1] if len(args) == 2 else kwargs.pop("axis", 0)
        if kwargs:
            raise TypeError(f"{self.name} has no parameter {next(iter(kwargs))!r}")
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
            raise TypeCheckError(f"{self.name}: axis must be an integer, got {axis!r}")
        return (*args[0], int(axis))

    def check_arity(self, n: int) -> None:
        if n < 1:
            raise TypeCheckError(f"{self.name} needs at least one array")

    def operands(self, args: Sequence[Any]) -> Sequence[Any]:
        return args[:-1]

    def perform(self, *args: Any) -> Any:
        return self.fn(list(args[:-1]), axis=args[-1])

    def layout(self, args: Sequence[Any]) -> list[Any]:
        pieces: list[Any] = [f"{self.name}(["]
        for i, a in enumerate(args[:-1]):
            pieces += [", ", Bare(a)] if i else [Bare(a)]
        return [*pieces, f"], axis={args[-1]!r})"]

    def _checked(self, shapes: list[tuple], axis: int) -> tuple[int, tuple]:
        ndim = len(shapes[0])
        if any(len(s) != ndim for s in shapes) or ndim + self.new_axis == 0:
            raise TypeCheckError(f"{self.name}: the arrays need the same ndim (at least 1)")
        axis = _axis(axis, ndim + self.new_axis, self.name)
        for k in range(ndim):
            known = {s[k] for s in shapes if s[k] is not None}
            if len(known) > 1 and (self.new_axis or k != axis):
                raise TypeCheckError(f"{self.name}: the shapes {shapes} differ on axis {k}")
        return axis, tuple(next(iter({s[k] for s in shapes} - {None}), None) for k in range(ndim))

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        ts = [t for t in types if t is not None]
        axis, common = self._checked([t.shape for t in ts], args[-1])
        if self.new_axis:
            shape = (*common[:axis], len(ts), *common[axis:])
        else:
            lengths = [t.shape[axis] for t in ts]
            known = [n for n in lengths if n is not None]
            total = sum(known) if len(known) == len(lengths) else None
            shape = (*common[:axis], total, *common[axis + 1 :])
        return TensorType(np.result_type(*(t.dtype for t in ts)), len(shape), shape)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        axis = _axis(node.args[-1], len(args[0]) + self.new_axis, self.name)
        for k in range(len(args[0])):
            if self.new_axis or k != axis:
                for other in args[1:]:
                    shapes.equal(args[0][k], other[k], node)
        return shapes.from_type(node)


class ScatterAs(Op):
    """``scatter_as(g, x, key)``: zeros of ``x``'s shape, in ``g``'s dtype, with ``g``
    at ``[key]`` (integers and slices): how a cotangent flows back through ``x[key]``.

    >>> import numpy as np, relgraph as rg
    >>> rg.scatter_as(np.array([1.0, 2.0]), np.zeros(4), ((1, None, 2),)).tolist()
    [0.0, 1.0, 0.0, 2.0]
    """

    name = "scatter_as"
    nin = 2
    params = (("key", ()),)
    exact = PERFORM

    def normalise(self, params: list) -> list:
        key = _key(params[0])
        if None in key or Ellipsis in key:
            raise TypeCheckError(f"scatter_as: the key {key} may hold integers and slices only")
        return [key]

    def perform(self, g: Any, x: Any, key: tuple = ()) -> Any:
        g = np.asarray(g)
        out = np.zeros(np.shape(x), g.dtype)
        out[numpy_key(key)] = g
        return out

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        return args[1]

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        g, x = types[:2]
        return TensorType(g.dtype, x.ndim, x.shape)


class ReshapeAs(Op):
    """``reshape_as(g, x)``: ``g``'s values in ``x``'s shape (the same number of
    elements, C order): how a cotangent flows back through a reshape.

    >>> import numpy as np, relgraph as rg
    >>> rg.reshape_as(np.arange(4.0), np.zeros((2, 2))).tolist()
    [[0.0, 1.0], [2.0, 3.0]]
    """

    name = "reshape_as"
    nin = 2
    moves_only = True
    exact = PERFORM

    def perform(self, g: Any, x: Any) -> Any:
        return np.reshape(g, np.shape(x))

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        return args[1]

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        g, x = types
        if g.size is not None and x.size is not None and g.size != x.size:
            raise TypeCheckError(f"reshape_as: {g.shape} and {x.shape} differ in size")
        return TensorType(g.dtype, x.ndim, x.shape)


transpose = Transpose()
reshape = Reshape()
expand_dims = ExpandDims()
squeeze = Squeeze()
broadcast_to = BroadcastTo()
getitem = GetItem()
concatenate = Join("concatenate", np.concatenate, new_axis=False)
stack = Join("stack", np.stack, new_axis=True)
scatter_as = ScatterAs()
reshape_as = ReshapeAs()
register_ops(
    transpose, reshape, expand_dims, squeeze, broadcast_to, getitem, concatenate, stack,
    scatter_as, reshape_as,
)  # fmt: skip


def diff(x: Any, n: int = 1, axis: int = -1) -> Any:
    """numpy's ``diff``: ``x[1:] - x[:-1]`` along ``axis``, ``n`` times (``!=`` for
    booleans, as numpy), built of slices (fused, differentiable).

    >>> import relgraph as rg
    >>> rg.pprint(rg.diff(rg.vector("x")))
    '(x[1:] - x[:-1])'
    >>> rg.diff([1, 4, 9, 16], n=2).tolist()
    [2, 2]
    """
    if not isinstance(x, (Term, Symbol, Constant)):
        return np.diff(x, n=n, axis=axis)
    ndim = typeof(x).ndim
    if ndim == 0:
        raise TypeCheckError("diff of a 0-d value: it needs an axis")
    k = _axis(axis, ndim, "diff")
    lead = ((None, None, None),) * k
    for _ in range(n):
        step = not_equal if typeof(x).dtype == np.bool_ else sub
        x = step(getitem(x, (*lead, (1, None, None))), getitem(x, (*lead, (None, -1, None))))
    return x


# --- pullbacks (rg.grad): the cotangent moved back where the values came from -------


@pullback(transpose)
def _transpose_pullback(g: Any, y: Any) -> tuple:
    axes = y.op.param_values(y.args)["axes"]
    return (transpose(g) if axes is None else transpose(g, tuple(np.argsort(axes).tolist())),)


@pullback(reshape)
def _reshape_pullback(g: Any, y: Any) -> tuple:
    x = y.args[0]
    shape = typeof(x).shape
    return (reshape_as(g, x) if None in shape else reshape(g, shape),)


@pullback(reshape_as)
def _reshape_as_pullback(g: Any, y: Any) -> tuple:
    return reshape_as(g, y.args[0]), None


@pullback(expand_dims)
def _expand_dims_pullback(g: Any, y: Any) -> tuple:
    new = y.op.new_axes(typeof(y.args[0]).ndim, y.op.param_values(y.args)["axis"])
    return (squeeze(g, tuple(sorted(new))),)


@pullback(squeeze)
def _squeeze_pullback(g: Any, y: Any) -> tuple:
    drop = y.op.dropped(typeof(y.args[0]).shape, y.op.param_values(y.args)["axis"])
    return (expand_dims(g, tuple(sorted(drop))) if drop else g,)


@pullback(broadcast_to)
def _broadcast_to_pullback(g: Any, y: Any) -> tuple:
    return (g,)  # the caller sums it over the broadcast axes


@pullback(getitem)
def _getitem_pullback(g: Any, y: Any) -> tuple:
    key, new, position = y.op.param_values(y.args)["key"], [], 0
    for entry in key:
        if entry is None:
            new.append(position)
        position += type(entry) is not int
    g = squeeze(g, tuple(new)) if new else g
    return (scatter_as(g, y.args[0], tuple(e for e in key if e is not None)),)


@pullback(scatter_as)
def _scatter_as_pullback(g: Any, y: Any) -> tuple:
    return getitem(g, y.op.param_values(y.args)["key"]), None


@pullback(concatenate, stack)
def _join_pullback(g: Any, y: Any) -> tuple:
    xs, axis = y.args[:-1], y.args[-1] % typeof(y).ndim
    lead = ((None, None, None),) * axis
    if y.op.new_axis:
        return tuple(getitem(g, (*lead, k)) for k in range(len(xs)))
    sizes = [typeof(x).shape[axis] for x in xs]
    if None in sizes:
        raise GradientError(
            f"the gradient of {brief(y, 60)} needs the sizes of its arrays along axis "
            f"{axis}, which their types leave open {sizes}: give the symbols shapes"
        )
    ends = np.cumsum([0, *sizes]).tolist()
    return tuple(getitem(g, (*lead, (a, b, None))) for a, b in zip(ends, ends[1:]))
