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
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from relgraph import ops
from relgraph.exceptions import TraceError, UnsupportedError
from relgraph.frontend import (  # noqa: F401 (register)
    compositions,
    nanfunctions,
    numpy_api,
    order as _order,  # noqa: F401 (registers numpy's sort and kin)
)
from relgraph.frontend.indexing import (
    MaskedSelection,
    array_index,
    cast_in_place,
    copies,
    is_array,
    is_mask,
    with_in_place_operators,
    written,
)
from relgraph.frontend.scipy_api import with_twins
from relgraph.ops.shape import ReshapeAs, ShapeOp
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


def _computed(term: Any) -> bool:
    """Whether a traced result is an array of its own in numpy (not a view: a
    transpose, reshape or basic index; a concatenation or ``take`` is a copy)."""
    return type(term) is Term and not isinstance(term.op, (ShapeOp, ReshapeAs))


class UnsupportedAttribute(UnsupportedError, AttributeError):
    """An ndarray attribute or method a traced value does not have."""


class SizeUnknown(TraceError):
    """Traced code read a size (``x.shape[1]``, ``len(x)``, ``x.size``) that the term's
    type leaves open; ``term`` is the term whose size it read.  ``rg.jit`` catches it
    and traces again with the sizes of the arguments it depends on."""

    def __init__(self, message: str, term: Any):
        super().__init__(message)
        self.term = term


@with_in_place_operators
class Traced:
    """An array being traced: it computes nothing and records a term.

    ``term`` is what it stands for.  Every numpy function and operator on it goes
    through :mod:`relgraph.frontend.numpy_api` and gives a traced value again.

    >>> import numpy as np, relgraph as rg
    >>> x = Traced(rg.vector("x"))
    >>> rg.pprint((np.where(x == 0, 1.0, x)[1:]).term)
    'where(x == 0, 1.0, x)[1:]'
    """

    __slots__ = ("term", "_owned", "_views", "_base", "array", "__weakref__")
    __hash__ = None  # type: ignore[assignment]  # == builds a term, as on arrays

    def __init__(self, term: Any, owned: bool | None = None, array: bool = False):
        self.term = term
        self.array = array  # numpy's function gives it as an array where it is 0-d
        # Whether writing into it is numpy's meaning: an array the function made (not
        # an argument, not a view of one).
        self._owned = _computed(term) if owned is None else owned
        self._views: list[weakref.ref[Traced]] = []  # its views (live while referenced)
        # A view ``base[key]`` of an array the function made writes into it and shows
        # its writes: (base, key, the base's term the view shows).
        self._base: tuple[Traced, Any, Any] | None = None

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
        if not isinstance(result, TermOps):
            return result
        traced = Traced(result, array=func in _ARRAY_RESULTS)
        if not _computed(result):  # a view (a transpose, a reshape) of its arguments
            for a in args:
                if isinstance(a, Traced):
                    a._view(traced)
        return traced

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
        if is_mask(entries):  # only x[mask] OP= v uses it
            return MaskedSelection(self, key, self._text())
        if any(map(is_array, entries)):
            return Traced(array_index(self.term, entries, self._text()))
        if copies(entries, self.ndim):  # x[2] of a vector: a numpy scalar
            return Traced(ops.getitem(self.term, key), owned=False)
        view = Traced(ops.getitem(self.term, key))
        self._view(view)
        if self._owned or self._base is not None:
            view._base = (self, key, self.term)
        return view

    def __setitem__(self, key, value):
        """``x[mask] = v`` and ``x[1:, 0] = v`` on an array the function made (or a
        view of one): the traced value becomes ``np.where`` of the old and the new
        values, and its views show them."""
        base = value._base if isinstance(value, Traced) else None
        if base is not None and base[0] is self and base[1] is key and base[2] is self.term:
            return  # x[k] = x[k], as ``x[1:] += 1`` ends: its view wrote already
        text = f"{self._text()}[...] = ..."
        new = value.written_into(self, key) if isinstance(value, MaskedSelection) else None
        self._store(written(self.term, key, value, self._text()) if new is None else new, text)

    def _in_place(self, ufunc: np.ufunc, other: Any, symbol: str) -> Any:
        """``self OP= other``: the result written into this array, as numpy writes
        it; a numpy scalar is a new value, as in numpy."""
        result = ufunc(self, other)
        if self.ndim == 0 and not self.array and self._base is None:
            return result  # a number (a 0-d argument counts as one): bound anew
        text = f"{self._text()} {symbol}= ..."
        self._store(cast_in_place(self.term, result.term, text), text)
        return self

    def _view(self, view: Traced) -> None:
        self._views = [r for r in self._views if r() is not None]
        self._views.append(weakref.ref(view))

    def _store(self, value: Any, text: str, writer: Traced | None = None) -> None:
        """Make ``value`` (a term of this array's type) this array's values, as a
        numpy write into it does: a view writes into its base, and every live view
        shows the new values.  TraceError where a term cannot follow the write: into
        an argument (numpy changes the caller's array), a view of one, or an array
        with a live view that is not a basic index (a transpose, a reshape)."""
        live = [v for r in self._views if (v := r()) is not None and v is not writer]
        why = None
        if self._base is None and not self._owned:
            why = "it is an argument or a view of one, and numpy would change that array"
        elif any(v._base is None for v in live):
            why = "a view of it (a transpose or a reshape) is alive, and numpy would change it"
        if why is not None:
            raise TraceError(
                f"{text}: {why}; write into a copy (x = x.copy()) or build the new values "
                "with np.where"
            )
        if self._base is not None:  # checked all the way up before the base changes
            base, key, _ = self._base
            base._store(written(base.term, key, value, text), text, writer=self)
            return
        self.term = value
        self._show_base()

    def _show_base(self) -> None:
        """Every live view (and theirs) shows this array's values again."""
        for r in self._views:
            view = r()
            if view is not None and view._base is not None:
                _, key, _ = view._base
                view.term, view._base = ops.getitem(self.term, key), (self, key, self.term)
                view._show_base()

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
        return Traced(ops.astype(self.term, dtype), owned=True if copy else None)  # a copy

    def copy(self):
        return Traced(self.term, owned=True)

    def flatten(self):
        return Traced(ops.reshape(self.term, (-1,)), owned=True)  # a copy, as numpy's

    def swapaxes(self, axis1, axis2):
        return np.swapaxes(self, axis1, axis2)

    def cumsum(self, axis=None, dtype=None, out=None):
        return np.cumsum(self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return np.cumprod(self, axis=axis, dtype=dtype, out=out)

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        return np.argsort(self, axis=axis, kind=kind, order=order, stable=stable)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        return np.argmax(self, axis=axis, out=out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        return np.argmin(self, axis=axis, out=out, keepdims=keepdims)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return np.trace(self, offset, axis1, axis2, dtype, out)

    def conj(self):
        """A real array's conjugate is the array itself (numpy's ``x.conj() is x``)."""
        return self._real("conj()")

    conjugate = conj

    @property
    def real(self) -> Traced:
        return self._real("real")

    @property
    def imag(self) -> Traced:
        self._real("imag")
        return Traced(ops.zeros_like(self.term), owned=False)  # numpy's is read-only

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def _real(self, what: str) -> Traced:
        if self.dtype.kind == "c":
            raise UnsupportedError(f"{self._text()}.{what}: complex arrays are not traced")
        return self

    def item(self, *args):
        raise TraceError(f"{self._text()}.item(): a traced value has no values yet")

    def tolist(self):
        raise TraceError(f"{self._text()}.tolist(): a traced value has no values yet")

    @property
    def mT(self) -> Any:
        """The transpose of the last two axes, a traced value."""
        return np.swapaxes(self, -1, -2)

    def __getattr__(self, name: str) -> Any:
        # Called only for names the class lacks: an ndarray's says it is not traced
        # (an AttributeError too, so hasattr() stays false).
        if name.startswith("_") or not hasattr(np.ndarray, name):
            raise AttributeError(f"'Traced' object has no attribute {name!r}")
        instead = "it sorts in place: np.sort returns the sorted copy; " if name == "sort" else ""
        raise UnsupportedAttribute(
            f"{self._text()}.{name}: ndarray.{name} is not traced; {instead}"
            "relgraph.frontend.numpy_api.supported_names() lists the numpy functions that are"
        )

    def any(self, axis=None, out=None, keepdims=False):
        return np.any(self, axis=axis, out=out, keepdims=keepdims)

    def all(self, axis=None, out=None, keepdims=False):
        return np.all(self, axis=axis, out=out, keepdims=keepdims)

    sum, mean, max, min, prod = (TermOps.sum, TermOps.mean, TermOps.max, TermOps.min,
                                 TermOps.prod)  # fmt: skip
    var, std, reshape, transpose, squeeze = (TermOps.var, TermOps.std, TermOps.reshape,
                                             TermOps.transpose, TermOps.squeeze)  # fmt: skip
    ravel, clip, dot, round = TermOps.ravel, TermOps.clip, TermOps.dot, TermOps.round
