"""The leaves of terms: typed symbols and constants.

A :class:`Symbol` is a typed input of a program and compares by (name, type); a
:class:`Constant` wraps a numpy array so that it hashes.  Both build terms with
Python's operators (:mod:`relgraph.terms.operators`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relgraph.terms.operators import TermOps
from relgraph.terms.types import TensorType

__all__ = ["Symbol", "Constant", "scalar", "vector", "matrix", "tensor"]


class Symbol(TermOps):
    """A typed input of a program; compares and hashes by (name, type).

    Examples
    --------
    >>> from relgraph import vector
    >>> vector("x") == vector("x"), vector("x") == vector("x", dtype="float32")
    (True, False)
    """

    __slots__ = ("name", "type", "_hash")
    name: str
    type: TensorType

    def __init__(self, name: str, type: TensorType):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"symbol name must be a Python identifier, got {name!r}")
        if not isinstance(type, TensorType):
            raise TypeError(f"symbol type must be a TensorType, got {type!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "_hash", hash(("Symbol", name, type)))

    def __setattr__(self, key, value):
        raise AttributeError("Symbol is immutable")

    def __eq__(self, other):
        return self is other or (
            type(other) is Symbol and self.name == other.name and self.type == other.type
        )

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return self.name

    def __reduce__(self):
        return (Symbol, (self.name, self.type))


class Constant(TermOps):
    """A numpy array inside a term, frozen and hashed by dtype, shape and bytes.

    Examples
    --------
    >>> import numpy as np
    >>> Constant(np.arange(3)) == Constant(np.arange(3))
    True
    """

    __slots__ = ("value", "type", "_hash")
    value: np.ndarray
    type: TensorType

    def __init__(self, value: Any):
        arr = np.array(value, copy=True)
        arr.flags.writeable = False
        object.__setattr__(self, "value", arr)
        object.__setattr__(self, "type", TensorType(arr.dtype, arr.ndim, arr.shape))
        object.__setattr__(self, "_hash", hash((arr.dtype.str, arr.shape, arr.tobytes())))

    def __setattr__(self, key, value):
        raise AttributeError("Constant is immutable")

    def __eq__(self, other):
        return self is other or (
            type(other) is Constant
            and self._hash == other._hash
            and self.type == other.type
            and self.value.tobytes() == other.value.tobytes()
        )

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        if self.value.ndim == 0:  # as the Python number it holds: 3.0, not 3.
            return repr(self.value.item())
        return np.array2string(self.value, threshold=6, separator=", ")

    def __reduce__(self):
        return (Constant, (np.array(self.value),))


def tensor(
    name: str, dtype: object = "float64", shape: tuple | None = None, ndim: int | None = None
) -> Symbol:
    """A symbol of any number of dimensions.

    Examples
    --------
    >>> tensor("T", ndim=3).type
    TensorType(float64, shape=(?, ?, ?))
    """
    if ndim is None:
        if shape is None:
            raise ValueError(f"tensor {name!r}: give ndim or shape")
        ndim = len(shape)
    return Symbol(name, TensorType(dtype, ndim, shape))


def scalar(name: str, dtype: object = "float64") -> Symbol:
    """A 0-d symbol.

    Examples
    --------
    >>> scalar("s", "int64").type
    TensorType(int64, shape=())
    """
    return Symbol(name, TensorType(dtype, 0, ()))


def vector(name: str, dtype: object = "float64", shape: tuple | int | None = None) -> Symbol:
    """A 1-d symbol; ``shape`` may be ``(n,)`` or ``n``.

    Examples
    --------
    >>> vector("x", shape=3).type
    TensorType(float64, shape=(3,))
    """
    if isinstance(shape, int):
        shape = (shape,)
    return Symbol(name, TensorType(dtype, 1, shape))


def matrix(name: str, dtype: object = "float64", shape: tuple | None = None) -> Symbol:
    """A 2-d symbol.

    Examples
    --------
    >>> matrix("A", shape=(2, None)).type
    TensorType(float64, shape=(2, ?))
    """
    return Symbol(name, TensorType(dtype, 2, shape))
