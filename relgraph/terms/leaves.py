"""The leaves of terms: typed symbols and constants, and the operators they share.

A :class:`Symbol` is a typed input of a program and compares by (name, type); a
:class:`Constant` wraps a numpy array so that it hashes.  :class:`TermOps` gives
them (and :class:`~relgraph.terms.term.Term`) the Python operators that build terms.

The operators call what the layers above register in :data:`OPERATORS`, beside
the definitions: the Ops (:mod:`relgraph.ops`), typing (:mod:`relgraph.terms.infer`)
and numpy's protocols (:mod:`relgraph.frontend.numpy_api`).  So this module, the
bottom of the terms layer, imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relgraph.terms.types import TensorType

__all__ = [
    "TermOps", "OPERATORS", "register_operator", "Symbol", "Constant", "scalar", "vector",
    "matrix", "tensor",
]  # fmt: skip

#: What the operators of terms call, by name (``"add"``, ``"typeof"``,
#: ``"array_ufunc"``, ...), filled once, at import, by the module defining each.
OPERATORS: dict[str, Callable[..., Any]] = {}


def register_operator(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make ``fn`` what the term operator ``name`` calls; returns ``fn`` unchanged.

    Examples
    --------
    >>> import relgraph as rg
    >>> OPERATORS["add"] is rg.add
    True
    """

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if OPERATORS.setdefault(name, fn) is not fn:
            raise ValueError(f"the term operator {name!r} is already registered")
        return fn

    return register


def _op(name: str) -> Callable[..., Any]:
    try:
        return OPERATORS[name]
    except KeyError:
        raise TypeError(f"terms have no {name!r} until relgraph is imported") from None


class TermOps:
    """Python operators that build terms: ``A @ (x + y)``, ``2.0 * x``, ``A.T``."""

    __slots__ = ()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy's ufuncs on terms build terms: ``np.exp(x)``, ``np.add.reduce(x)``."""
        if ufunc in (np.equal, np.not_equal) and _from_scalar_comparison(inputs):
            # ``np.float64(1) == x`` reaches here as np.equal(array(1.), x): == on
            # terms is structural equality, whichever side the term is on.
            return ufunc is np.not_equal
        if any(hasattr(type(x), "__term__") for x in inputs):
            return NotImplemented  # a traced value builds the term, and wraps it
        return _op("array_ufunc")(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """numpy's functions on terms build terms: ``np.sum(M, axis=1)``, ``np.where``."""
        if any(hasattr(t, "__term__") for t in types):
            return NotImplemented
        return _op("array_function")(func, args, kwargs)

    def __add__(self, other):
        return _op("add")(self, other)

    def __radd__(self, other):
        return _op("add")(other, self)

    def __sub__(self, other):
        return _op("sub")(self, other)

    def __rsub__(self, other):
        return _op("sub")(other, self)

    def __mul__(self, other):
        return _op("mul")(self, other)

    def __rmul__(self, other):
        return _op("mul")(other, self)

    def __truediv__(self, other):
        return _op("true_div")(self, other)

    def __rtruediv__(self, other):
        return _op("true_div")(other, self)

    def __pow__(self, other):
        return _op("pow")(self, other)

    def __rpow__(self, other):
        return _op("pow")(other, self)

    def __matmul__(self, other):
        return _op("@")(self, other)

    def __rmatmul__(self, other):
        return _op("@")(other, self)

    def __neg__(self):
        return _op("neg")(self)

    # Comparisons build terms; == and != stay structural equality (terms are keys).
    def __lt__(self, other):
        return _op("less")(self, other)

    def __le__(self, other):
        return _op("less_equal")(self, other)

    def __gt__(self, other):
        return _op("greater")(self, other)

    def __ge__(self, other):
        return _op("greater_equal")(self, other)

    def __abs__(self):
        return _op("abs")(self)

    @property
    def T(self):
        """The transpose, ``transpose(self)``."""
        return _op("transpose")(self)

    def __getitem__(self, key):
        """Basic indexing, ``x[1:, ::2]``, ``x[None]``: a ``getitem`` term."""
        return _op("getitem")(self, key)

    def astype(self, dtype):
        """``astype(self, dtype)``."""
        return _op("astype")(self, dtype)

    # numpy's array methods, built as numpy's functions are (relgraph.frontend.numpy_api).
    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        """``np.sum(self, ...)``."""
        return np.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        """``np.mean(self, ...)``."""
        return np.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def max(self, axis=None, out=None, keepdims=False):
        """``np.max(self, ...)``."""
        return np.max(self, axis=axis, out=out, keepdims=keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        """``np.min(self, ...)``."""
        return np.min(self, axis=axis, out=out, keepdims=keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        """``np.prod(self, ...)``."""
        return np.prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        """``np.var(self, ...)``."""
        return np.var(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        """``np.std(self, ...)``."""
        return np.std(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)

    def reshape(self, *shape, order="C"):
        """``np.reshape(self, shape)``; the shape as one tuple or as integers."""
        one = len(shape) == 1 and not isinstance(shape[0], (int, np.integer))
        return np.reshape(self, shape[0] if one else shape, order=order)

    def transpose(self, *axes):
        """``np.transpose(self, axes)``; the axes as one tuple or as integers."""
        one = len(axes) == 1 and not isinstance(axes[0], (int, np.integer))
        return np.transpose(self, (axes[0] if one else axes) or None)

    def squeeze(self, axis=None):
        """``np.squeeze(self, axis)``."""
        return np.squeeze(self, axis)

    def ravel(self, order="C"):
        """``np.ravel(self)``."""
        return np.ravel(self, order)

    def clip(self, min=None, max=None):
        """``np.clip(self, min, max)``."""
        return np.clip(self, min, max)

    def dot(self, other):
        """``np.dot(self, other)``."""
        return np.dot(self, other)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return _op("typeof")(self).ndim

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the values."""
        return _op("typeof")(self).dtype

    @property
    def shape(self) -> tuple:
        """The shape, None for a size not known."""
        return _op("typeof")(self).shape


def _from_scalar_comparison(inputs: tuple) -> bool:
    return any(type(x) is np.ndarray and x.ndim == 0 for x in inputs)


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
