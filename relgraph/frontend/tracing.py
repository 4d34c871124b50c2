"""Tracing: the term(s) a Python function written with numpy computes.

:func:`trace` calls the function once with :class:`Traced` values in place of its
array arguments.  A traced value behaves as an ndarray does (``==`` compares
elementwise, ``x[1:]`` slices, ``len``, ``.shape``, numpy's functions) and records
what is computed as a term; Python and numpy scalars the function uses become
constants, and so do arrays it closes over, up to a size limit.

What a term cannot follow is an error, never a silently different program: the
truth value of an array (``if x > 0:``), a size not known when tracing, writing
into an array, converting one to a Python number or a numpy array.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from relgraph import ops
from relgraph.exceptions import TraceError, UnsupportedError
from relgraph.frontend import nanfunctions, numpy_api  # noqa: F401 (nanfunctions registers)
from relgraph.frontend.scipy_api import with_twins
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Symbol
from relgraph.terms.operators import TermOps
from relgraph.terms.printing import brief
from relgraph.terms.term import Term
from relgraph.terms.types import TensorType

__all__ = [
    "trace", "Traced", "MAX_CONSTANT_BYTES", "symbols_for", "flatten", "rebuild", "name_of",
    "SizeUnknown", "positional_names", "numpy_results",
]  # fmt: skip

#: The largest closed-over array (in bytes) a traced function may bake into its term.
MAX_CONSTANT_BYTES = 1 << 20


def trace(fn: Callable[..., Any], *types: Any, max_constant_bytes: int = MAX_CONSTANT_BYTES):
    """The term (or the tuple of terms) ``fn`` computes from inputs of these types.

    Parameters
    ----------
    fn : callable
        A function of arrays, written with numpy.
    *types : Symbol, TensorType, ndarray or scalar
        One per parameter.  A symbol is used as it is; a :class:`TensorType`, an
        example array or a scalar becomes a symbol named after the parameter (an
        example array fixes the shape too).
    max_constant_bytes : int
        A closed-over array above this size is an error, not a constant.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> def softplus(z):
    ...     return np.log(1 + np.exp(z))
    >>> rg.pprint(rg.trace(softplus, rg.matrix("z")))
    'log(1 + exp(z))'
    >>> def stats(x):
    ...     return x.mean(), x[1:] - x[:-1]
    >>> [rg.pprint(t) for t in rg.trace(stats, np.zeros(4))]
    ['mean(x)', '(x[1:] - x[:-1])']
    >>> rg.trace(lambda x: x if x > 0 else -x, rg.vector("x"))
    Traceback (most recent call last):
    ...
    relgraph.exceptions.TraceError: the truth value of (x > 0) is not known when tracing...
    """
    symbols = symbols_for(fn, types)
    return outputs_of(fn, [Traced(s) for s in symbols], max_constant_bytes)


def outputs_of(
    fn: Callable[..., Any], args: list, max_constant_bytes: int, scalars: list | None = None
) -> Any:
    """``fn(*args)`` with every traced value in its result (nested tuples and lists
    kept) replaced by its term.  ``scalars``, where given, receives per term (in the
    order of :func:`flatten`) whether numpy gives it as a numpy scalar where it is 0-d
    (:func:`numpy_scalar`)."""
    with numpy_api.constant_limit(max_constant_bytes):
        result = with_twins(fn)(*args)
        return _terms(result, fn, [] if scalars is None else scalars)


def _terms(result: Any, fn: Callable[..., Any], scalars: list) -> Any:
    if isinstance(result, (tuple, list)):
        return type(result)(_terms(r, fn, scalars) for r in result)
    if isinstance(result, Traced):
        scalars.append(not result.array and numpy_scalar(result.term))
        return result.term
    scalars.append(not isinstance(result, np.ndarray))  # a constant, as it is
    try:
        return numpy_api.term_of(result)
    except UnsupportedError:
        raise TraceError(
            f"{name_of(fn)} returned a {type(result).__name__}: a traced function returns "
            "arrays, or tuples and lists of them"
        ) from None


def symbols_for(fn: Callable[..., Any], types: tuple) -> list[Symbol]:
    """One input symbol per type, named after ``fn``'s parameters."""
    names = _parameter_names(fn, len(types))
    symbols = [_symbol(name, t) for name, t in zip(names, types)]
    seen: dict[str, Symbol] = {}
    for s in symbols:
        if s.name in seen and seen[s.name] != s:
            raise TraceError(f"two inputs of {name_of(fn)} are named {s.name!r}")
        seen[s.name] = s
    return symbols


def positional_names(params: list[inspect.Parameter], n: int) -> list[str]:
    """The names of up to ``n`` positional arguments (``*args`` as ``args0``, ``args1``...)."""
    names: list[str] = []
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            names += [f"{p.name}{i}" for i in range(n - len(names))]
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return names


def _parameter_names(fn: Callable[..., Any], n: int) -> list[str]:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return [f"x{i}" for i in range(n)]
    names = positional_names(params, n)
    if len(names) < n:
        raise TraceError(f"{name_of(fn)} takes {len(names)} positional arguments, given {n}")
    required = [p.name for p in params[n:] if p.default is p.empty and p.kind != p.VAR_KEYWORD]
    required = [r for r in required if r not in names[:n]]
    if required and not any(p.kind is p.VAR_POSITIONAL for p in params):
        raise TraceError(f"{name_of(fn)} needs a type for {', '.join(required)}")
    return names[:n]


def _symbol(name: str, t: Any) -> Symbol:
    if isinstance(t, Symbol):
        return t
    if isinstance(t, TensorType):
        return Symbol(name, t)
    if isinstance(t, (bool, int, float, complex, np.generic, np.ndarray)):
        arr = np.asarray(t)
        return Symbol(name, TensorType(arr.dtype, arr.ndim, arr.shape))
    raise TraceError(
        f"the type of {name!r} must be a symbol, a TensorType, an example array or a "
        f"scalar, got {type(t).__name__}"
    )


def name_of(fn: Callable[..., Any]) -> str:
    """How messages name a traced function."""
    return getattr(fn, "__qualname__", None) or repr(fn)


def flatten(structure: Any) -> list:
    """The leaves of a function's result: nested tuples and lists, in order.

    >>> flatten((1, [2, (3,)], 4))
    [1, 2, 3, 4]
    """
    if isinstance(structure, (tuple, list)):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def rebuild(structure: Any, leaves: Any) -> Any:
    """``structure`` with its leaves taken in order from the iterator ``leaves``.

    >>> rebuild((0, [0, (0,)]), iter("abc"))
    ('a', ['b', ('c',)])
    """
    if isinstance(structure, (tuple, list)):
        return type(structure)(rebuild(item, leaves) for item in structure)
    return next(leaves)


#: Ops whose 0-d result numpy gives as a 0-d array where their operand is an array: a
#: reshape, ``.T`` or ``.astype`` of an array is an array, of a numpy scalar a scalar.
_LIKE_OPERAND = frozenset(
    {"reshape", "reshape_as", "squeeze", "transpose", "astype", "broadcast_to", "expand_as"}
)
#: numpy functions that give a 0-d result as a 0-d array (its ufuncs, reductions and
#: products give a numpy scalar).
_ARRAY_RESULTS = frozenset({np.where, np.select, np.piecewise, np.copy, np.zeros_like,
                            np.ones_like, np.empty_like, np.full_like})  # fmt: skip


def numpy_scalar(term: Any) -> bool:
    """Whether numpy gives the 0-d result ``term`` as a numpy scalar, as its ufuncs,
    reductions, products and ``x[i]`` do, rather than a 0-d array (a reshape of an
    array, or an input the function returns, as given).  A traced value also knows
    whether numpy's function that made it gives arrays (``np.where``).

    >>> import relgraph as rg
    >>> x, s = rg.vector("x"), rg.scalar("s")
    >>> numpy_scalar(rg.sum(x)), numpy_scalar(rg.reshape(x, ())), numpy_scalar(s)
    (True, False, False)
    """
    while type(term) is Term and term.op.name in _LIKE_OPERAND:
        term = term.args[0]
        if typeof(term).ndim:  # np.reshape(x[:1], ()): an array
            return False
    return type(term) is Term or not isinstance(term, Symbol)


def numpy_results(structure: Any, scalars: list[bool]) -> Callable[[Any], Any] | None:
    """How a compiled program's results (one array, or a list of them in the order of
    :func:`flatten`) become what the traced function returns: ``structure``'s nesting,
    and a numpy scalar where ``scalars`` (per term) says numpy gives one (the kernels
    give every 0-d result as a 0-d array).  None where the results are that already."""
    leaves = flatten(structure)
    scalar = tuple(typeof(leaf).ndim == 0 and s for leaf, s in zip(leaves, scalars))
    if not isinstance(structure, (tuple, list)):
        return _as_scalar if scalar[0] else None
    return lambda results: rebuild(
        structure, (_as_scalar(r) if s else r for r, s in zip(results, scalar))
    )


def _as_scalar(result: Any) -> Any:
    """A 0-d ndarray's value as a numpy scalar of its dtype (a lazy dask array stays)."""
    return result[()] if type(result) is np.ndarray else result


def _binary(ufunc: np.ufunc) -> tuple[Callable, Callable]:
    return (lambda a, b: ufunc(a, b)), (lambda a, b: ufunc(b, a))


_ALL = slice(None)


def _is_array(entry: Any) -> bool:
    return isinstance(entry, (Traced, TermOps, np.ndarray, list))


def _array_index(term: Any, entries: tuple, text: str) -> Any:
    """``x[...]`` with integer arrays in the key: one axis indexed by an array
    (``x[idx]``, ``x[:, idx]``) is ``take``; one element per row
    (``x[np.arange(n), idx]``) is ``take_along_axis``."""
    ndim = typeof(term).ndim
    marks = [k for k, e in enumerate(entries) if e is None or e is Ellipsis]
    if any(entries[k] is None for k in marks) or len(marks) > 1:
        raise TraceError(f"{text}[...]: an array index with None is not supported")
    if marks:
        k = marks[0]
        entries = entries[:k] + (_ALL,) * (ndim - len(entries) + 1) + entries[k + 1 :]
    entries = entries + (_ALL,) * (ndim - len(entries))
    arrays = [k for k, e in enumerate(entries) if _is_array(e)]
    index = [numpy_api.term_of(entries[k]) for k in arrays]
    if any(typeof(i).dtype == np.bool_ for i in index):
        raise TraceError(
            f"{text}[mask]: the result's shape depends on the values, which tracing does "
            "not know: write np.where(mask, x, 0) (or a masked sum) instead"
        )
    rest = [e for k, e in enumerate(entries) if k not in arrays]
    if len(arrays) == 1 and all(type(e) is slice and e == _ALL for e in rest):
        return ops.take(term, index[0], arrays[0])
    if arrays == [0, 1] and ndim == 2 and _counts_rows(index[0]) and typeof(index[1]).ndim == 1:
        picked = ops.take_along_axis(term, ops.expand_dims(index[1], 1), 1)
        return ops.getitem(picked, (_ALL, 0))
    raise TraceError(
        f"{text}[...]: this array index is not supported: index one axis with an array "
        "(x[idx], x[:, idx]) or pick one element per row (x[np.arange(n), idx]); "
        "np.take and np.take_along_axis say the rest"
    )


def _computed(term: Any) -> bool:
    """Whether a traced result is an array of its own in numpy (not a view)."""
    return type(term) is Term and not term.op.moves_only


def _written(term: Any, key: Any, value: Any, text: str) -> Any:
    """``term`` with ``value`` written at ``key`` (numpy's casting to its dtype)."""
    dtype = typeof(term).dtype
    value = numpy_api.term_of(value)
    if typeof(value).dtype != dtype:
        value = ops.astype(value, dtype.name)
    entries = key if isinstance(key, tuple) else (key,)
    masks = [e for e in entries if _is_array(e)]
    if masks:
        mask = numpy_api.term_of(masks[0])
        if len(entries) != 1 or typeof(mask).dtype != np.bool_ or typeof(value).ndim:
            raise TraceError(
                f"{text}[...] = ...: only x[mask] = number and basic indices (slices, "
                "integers) can be written when tracing; use np.where for the rest"
            )
        return ops.where(mask, value, term)
    part = ops.getitem(term, key)
    stored = type(part) is Term and part.op is ops.getitem and len(part.args) > 1
    where_key = part.args[1] if stored else ()
    if None in where_key:
        raise TraceError(f"{text}[...] = ...: a write with None in the index is not supported")
    selected = ops.scatter_as(ops.expand_as(True, part), term, where_key)
    return ops.where(selected, ops.scatter_as(ops.expand_as(value, part), term, where_key), term)


def _counts_rows(index: Any) -> bool:
    """Whether an index is the constant ``0, 1, ..., n - 1`` (``np.arange(n)``)."""
    value = getattr(index, "value", None)
    return value is not None and value.ndim == 1 and np.array_equal(value, np.arange(len(value)))


class SizeUnknown(TraceError):
    """Traced code read a size (``x.shape[1]``, ``len(x)``, ``x.size``) that the term's
    type leaves open; ``term`` is the term whose size it read.  ``rg.jit`` catches it
    and traces again with the sizes of the arguments it depends on."""

    def __init__(self, message: str, term: Any):
        super().__init__(message)
        self.term = term


class Traced:
    """An array being traced: it computes nothing and records a term.

    ``term`` is what it stands for.  Every numpy function and operator on it goes
    through :mod:`relgraph.frontend.numpy_api` and gives a traced value again.

    >>> import numpy as np, relgraph as rg
    >>> x = Traced(rg.vector("x"))
    >>> rg.pprint((np.where(x == 0, 1.0, x)[1:]).term)
    'where(x == 0, 1.0, x)[1:]'
    """

    __slots__ = ("term", "_owned", "_viewed", "array")
    __hash__ = None  # type: ignore[assignment]  # == builds a term, as on arrays

    def __init__(self, term: Any, owned: bool | None = None, array: bool = False):
        self.term = term
        self.array = array  # numpy's function gives it as an array where it is 0-d
        # Whether writing into it is numpy's meaning: an array the function made (not
        # an argument, not a view of one), no view of which was taken before.
        self._owned = _computed(term) if owned is None else owned
        self._viewed = False

    def __term__(self) -> Any:
        return self.term

    def __repr__(self) -> str:
        return f"Traced({brief(self.term, 60)})"

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        result = numpy_api.ufunc_term(ufunc, method, inputs, kwargs)
        return tuple(map(Traced, result)) if isinstance(result, tuple) else Traced(result)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.copy:
            return Traced(numpy_api.term_of(args[0]), owned=True, array=True)
        result = numpy_api.function_term(func, args, kwargs)
        if isinstance(result, tuple):  # np.linalg.slogdet
            return tuple(Traced(r) if isinstance(r, TermOps) else r for r in result)
        if not _computed(result):  # a view (a transpose, a reshape) of its arguments
            for a in args:
                if isinstance(a, Traced):
                    a._viewed = True
        if not isinstance(result, TermOps):
            return result
        return Traced(result, array=func in _ARRAY_RESULTS)

    __add__, __radd__ = _binary(np.add)
    __sub__, __rsub__ = _binary(np.subtract)
    __mul__, __rmul__ = _binary(np.multiply)
    __truediv__, __rtruediv__ = _binary(np.true_divide)
    __floordiv__, __rfloordiv__ = _binary(np.floor_divide)
    __mod__, __rmod__ = _binary(np.remainder)
    __divmod__, __rdivmod__ = _binary(np.divmod)
    __rpow__ = _binary(np.power)[1]

    def __pow__(self, other: Any) -> Any:
        # numpy computes ``x ** 2`` as np.square(x): of the power's dtype, but for
        # bools (their square is int8, their power int64).
        if type(other) is int and other == 2 and typeof(self.term).dtype == np.bool_:
            return np.square(self)
        return np.power(self, other)

    __matmul__, __rmatmul__ = _binary(np.matmul)
    __and__, __rand__ = _binary(np.bitwise_and)
    __or__, __ror__ = _binary(np.bitwise_or)
    __xor__, __rxor__ = _binary(np.bitwise_xor)
    __lshift__, __rlshift__ = _binary(np.left_shift)
    __rshift__, __rrshift__ = _binary(np.right_shift)
    __lt__ = _binary(np.less)[0]
    __le__ = _binary(np.less_equal)[0]
    __gt__ = _binary(np.greater)[0]
    __ge__ = _binary(np.greater_equal)[0]
    __eq__ = _binary(np.equal)[0]
    __ne__ = _binary(np.not_equal)[0]

    def __neg__(self):
        return np.negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return np.absolute(self)

    def __invert__(self):
        return np.invert(self)

    def __getitem__(self, key):
        entries = key if isinstance(key, tuple) else (key,)
        if not any(map(_is_array, entries)):
            self._viewed = True
            return Traced(ops.getitem(self.term, key))
        return Traced(_array_index(self.term, entries, self._text()))

    def __setitem__(self, key, value):
        """``x[mask] = v`` and ``x[1:, 0] = v`` on an array the function made: the
        traced value becomes ``np.where`` of the old and the new values."""
        if not self._owned or self._viewed:
            why = (
                "a view of it was taken before the write, and numpy would change that view too"
                if self._owned
                else "it is an argument or a view of one, and numpy would change that array"
            )
            raise TraceError(
                f"{self._text()}[...] = ...: {why}; write into a copy (x = x.copy()) or "
                "build the new values with np.where"
            )
        self.term = _written(self.term, key, value, self._text())

    def __bool__(self):
        raise TraceError(
            f"the truth value of {self._text()} is not known when tracing: branch with "
            "np.where, or pass the value as a static argument (rg.jit's static_argnames)"
        )

    def __len__(self):
        return self._size(0, "len()")

    def __iter__(self):
        raise TraceError(f"iterating over {self._text()}: index it, or use a reduction")

    def __array__(self, dtype=None, copy=None):
        library = numpy_api.calling_library()
        if library:
            raise TraceError(
                f"{library} converted {self._text()} to a numpy array: relgraph does not "
                "trace into that library's code; write the computation with numpy "
                "functions (np.exp, np.sum, ...) or relgraph's Ops"
            )
        raise TraceError(
            f"{self._text()} was converted to a numpy array (np.asarray, np.array, or a "
            "function relgraph does not trace): a traced value has no values yet"
        )

    def __float__(self):
        raise TraceError(f"float() of {self._text()}: a traced value has no values yet")

    __int__ = __index__ = __complex__ = __float__

    @property
    def T(self) -> Any:
        """The transpose, a traced value."""
        return np.transpose(self)

    @property
    def ndim(self) -> int:
        return typeof(self.term).ndim

    @property
    def dtype(self) -> np.dtype:
        return typeof(self.term).dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._size(k, ".shape") for k in range(self.ndim))

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def _size(self, axis: int, what: str) -> int:
        if self.ndim == 0 and what == "len()":
            raise TraceError(f"len() of the 0-d {self._text()}")
        n = typeof(self.term).shape[axis]
        if n is None:
            raise SizeUnknown(
                f"{what} of {self._text()}: the size of axis {axis} is not known when "
                "tracing: trace with an example array (rg.trace(fn, np.zeros((3, 4)))) or "
                "a symbol with a shape (rg.matrix('x', shape=(3, 4)))",
                self.term,
            )
        return n

    def _text(self) -> str:
        return brief(self.term, 60)

    def astype(self, dtype, copy=True):
        return Traced(ops.astype(self.term, dtype))

    def copy(self):
        return Traced(self.term, owned=True)

    def flatten(self):
        return np.ravel(self)

    def any(self, axis=None, out=None, keepdims=False):
        return np.any(self, axis=axis, out=out, keepdims=keepdims)

    def all(self, axis=None, out=None, keepdims=False):
        return np.all(self, axis=axis, out=out, keepdims=keepdims)

    sum, mean, max, min, prod = (TermOps.sum, TermOps.mean, TermOps.max, TermOps.min,
                                 TermOps.prod)  # fmt: skip
    var, std, reshape, transpose, squeeze = (TermOps.var, TermOps.std, TermOps.reshape,
                                             TermOps.transpose, TermOps.squeeze)  # fmt: skip
    ravel, clip, dot, round = TermOps.ravel, TermOps.clip, TermOps.dot, TermOps.round
