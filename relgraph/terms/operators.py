"""The Python operators of terms: ``A @ (x + y)``, ``2.0 * x``, ``A.T``, ``np.exp(x)``.

:class:`TermOps` gives symbols, constants and terms their operators.  They call what
the layers above register in :data:`OPERATORS`, beside the definitions: the Ops
(:mod:`relgraph.ops`), typing (:mod:`relgraph.terms.infer`), printing
(:mod:`relgraph.terms.printing`) and numpy's protocols
(:mod:`relgraph.frontend.numpy_api`).  So this module, the bottom of the terms
layer, imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relgraph.exceptions import RegistrationError

__all__ = ["TermOps", "OPERATORS", "register_operator"]

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
            raise RegistrationError(f"the term operator {name!r} is already registered")
        return fn

    return register


def _op(name: str) -> Callable[..., Any]:
    try:
        return OPERATORS[name]
    except KeyError:
        raise TypeError(f"terms have no {name!r} until relgraph is imported") from None


def _ufunc(ufunc: np.ufunc, *inputs: Any) -> Any:
    return _op("array_ufunc")(ufunc, "__call__", inputs, {})


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

    def __floordiv__(self, other):
        return _op("floor_divide")(self, other)

    def __rfloordiv__(self, other):
        return _op("floor_divide")(other, self)

    def __mod__(self, other):
        return _op("remainder")(self, other)

    def __rmod__(self, other):
        return _op("remainder")(other, self)

    # ``&``, ``|`` and ``~`` as numpy's ufuncs: on booleans, the logical Ops.
    def __and__(self, other):
        return _ufunc(np.bitwise_and, self, other)

    def __rand__(self, other):
        return _ufunc(np.bitwise_and, other, self)

    def __or__(self, other):
        return _ufunc(np.bitwise_or, self, other)

    def __ror__(self, other):
        return _ufunc(np.bitwise_or, other, self)

    def __xor__(self, other):
        return _op("bitwise_xor")(self, other)

    def __rxor__(self, other):
        return _op("bitwise_xor")(other, self)

    def __lshift__(self, other):
        return _op("left_shift")(self, other)

    def __rlshift__(self, other):
        return _op("left_shift")(other, self)

    def __rshift__(self, other):
        return _op("right_shift")(self, other)

    def __rrshift__(self, other):
        return _op("right_shift")(other, self)

    def __invert__(self):
        return _ufunc(np.invert, self)

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

    def round(self, decimals=0, out=None):
        """``np.round(self, decimals)``."""
        return np.round(self, decimals, out)

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
