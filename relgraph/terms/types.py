"""Array types: a dtype, a number of dimensions and, where known, a shape."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["TensorType", "broadcast_shapes"]

Shape = tuple[int | None, ...]


@dataclass(frozen=True)
class TensorType:
    """The type of an array value: ``dtype``, ``ndim`` and an optional shape.

    A dimension of the shape may be ``None`` (unknown).  ``shape`` is always a
    tuple of length ``ndim``.

    Examples
    --------
    >>> TensorType("float64", 2)
    TensorType(float64, shape=(?, ?))
    >>> TensorType("int64", 1, (3,)).shape
    (3,)
    """

    dtype: np.dtype
    ndim: int
    shape: Shape

    def __init__(self, dtype: Any, ndim: int, shape: Shape | None = None):
        key = (dtype, ndim, shape)
        try:  # type inference makes the same few types over and over
            dt, shape = _CHECKED[key]
        except (KeyError, TypeError):  # new, or unhashable (a list for a shape)
            dt, shape = _checked(dtype, ndim, shape)
            if len(_CHECKED) < 4096:
                try:
                    _CHECKED[key] = (dt, shape)
                except TypeError:
                    pass
        object.__setattr__(self, "dtype", dt)
        object.__setattr__(self, "ndim", ndim)
        object.__setattr__(self, "shape", shape)

    def __repr__(self) -> str:
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        if self.ndim == 1:
            dims += ","
        return f"TensorType({self.dtype}, shape=({dims}))"

    @property
    def size(self) -> int | None:
        """The number of elements, or None if a dimension is unknown.

        >>> TensorType("float64", 2, (3, 4)).size, TensorType("float64", 1).size
        (12, None)
        """
        if None in self.shape:
            return None
        return math.prod(self.shape)  # type: ignore[arg-type]

    def accepts(self, value: np.ndarray) -> bool:
        """Whether an array has this type's ndim, and its known shape."""
        return value.ndim == self.ndim and all(
            d is None or d == v for d, v in zip(self.shape, value.shape)
        )


_CHECKED: dict[tuple, tuple[np.dtype, Shape]] = {}  # (dtype, ndim, shape) as given -> checked


def _checked(dtype: Any, ndim: int, shape: Shape | None) -> tuple[np.dtype, Shape]:
    """The dtype and shape of a :class:`TensorType`, or ValueError naming the problem."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise ValueError(f"{dtype!r} is not a numpy dtype") from None
    if dt.kind not in "biufc":
        raise ValueError(
            f"unsupported dtype {dt}: relgraph computes with bool, integer, float "
            "and complex arrays"
        )
    if ndim < 0:
        raise ValueError(f"ndim must be >= 0, got {ndim}")
    if shape is None:
        shape = (None,) * ndim
    shape = tuple(None if d is None else int(d) for d in shape)
    if any(d is not None and d < 0 for d in shape):
        raise ValueError(f"shape {shape} has a negative dimension")
    if len(shape) != ndim:
        raise ValueError(f"shape {shape} does not have ndim={ndim} dimensions")
    return dt, shape


def broadcast_shapes(*shapes: Shape) -> Shape:
    """Broadcast shapes with unknown (``None``) dimensions, numpy style.

    Raises ``ValueError`` when two known dimensions differ and neither is 1.

    Examples
    --------
    >>> broadcast_shapes((3, None), (1, 4))
    (3, 4)
    >>> broadcast_shapes((None,), (2, 1))
    (2, None)
    """
    ndim = max((len(s) for s in shapes), default=0)
    out: list[int | None] = []
    for axis in range(ndim):
        dims = [s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(f"shapes {shapes} do not broadcast (axis {axis}: {sorted(known)})")
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)
