"""numpy's array protocols on terms: numpy functions called on terms build terms.

``np.exp(x)``, ``np.sum(M, axis=1, keepdims=True)``, ``np.where(c, x, y)``,
``np.logaddexp.reduce(x)`` and ``x.sum()`` on a symbol or a term return the term
they mean.  Terms take part through ``__array_ufunc__`` and ``__array_function__``
(:class:`~relgraph.terms.operators.TermOps` forwards both here), so every supported numpy
callable is listed once, in :data:`UFUNCS`, :data:`REDUCERS` and :data:`FUNCTIONS`
(which :mod:`~relgraph.frontend.nanfunctions` adds numpy's NaN-ignoring reductions to).

A numpy callable outside these tables raises :class:`UnsupportedError`, naming it
and the nearest supported ones: numpy never computes with a term as an object.

Examples
--------
>>> import numpy as np, relgraph as rg
>>> x, M = rg.vector("x"), rg.matrix("M")
>>> rg.pprint(np.exp(x) + np.sum(M, axis=1))
'(exp(x) + sum(M, axis=1))'
>>> rg.pprint(np.logaddexp.reduce(M, axis=1)), rg.pprint(np.maximum(x, 0.0))
('logsumexp(M, axis=1)', 'maximum(x, 0.0)')
>>> np.partition(x, 1)
Traceback (most recent call last):
...
relgraph.exceptions.UnsupportedError: numpy.partition is not supported on relgraph terms; ...
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import operator
import os
import sys
import sysconfig
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from relgraph import ops
from relgraph.exceptions import TypeCheckError, UnsupportedError
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant
from relgraph.terms.operators import TermOps, register_operator

__all__ = [
    "UFUNCS", "REDUCERS", "FUNCTIONS", "term_of", "ufunc_term", "function_term",
    "supported_names", "constant_limit", "calling_library", "TRACEABLE",
]  # fmt: skip

# -- operands ---------------------------------------------------------------------

# The largest array (in bytes) that becomes a constant while a function is traced;
# None: no limit (building terms by hand).
_CONSTANT_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "relgraph_constant_limit", default=None
)


@contextlib.contextmanager
def constant_limit(nbytes: int | None) -> Iterator[None]:
    """Within the block, an array over ``nbytes`` cannot become a constant of a term."""
    token = _CONSTANT_LIMIT.set(nbytes)
    try:
        yield
    finally:
        _CONSTANT_LIMIT.reset(token)


def term_of(x: Any) -> Any:
    """``x`` as an operand of a term: terms as they are, arrays as constants.

    An object standing for a term (a traced value) gives it by ``__term__()``;
    Python and numpy scalars stay scalars.
    """
    if isinstance(x, TermOps):
        return x
    unwrap = getattr(type(x), "__term__", None)
    if unwrap is not None:
        return unwrap(x)
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return x
    if isinstance(x, (list, tuple)):
        x = _array_of_list(x)
    if isinstance(x, np.ndarray):
        return _constant(x)
    raise UnsupportedError(f"a {type(x).__name__} cannot be part of a term: {x!r:.80}")


def _array_of_list(items: list | tuple) -> np.ndarray:
    flat = np.asarray(items, dtype=object).ravel()
    if any(isinstance(i, TermOps) or hasattr(type(i), "__term__") for i in flat):
        raise UnsupportedError(
            "a list holding terms is not an array: join terms with np.stack or np.concatenate"
        )
    return np.asarray(items)


def _constant(arr: np.ndarray) -> Constant:
    if arr.dtype.kind not in "biufc":
        raise UnsupportedError(f"an array of dtype {arr.dtype} cannot be part of a term")
    limit = _CONSTANT_LIMIT.get()
    if limit is not None and arr.nbytes > limit:
        raise UnsupportedError(
            f"an array of shape {arr.shape} and dtype {arr.dtype} ({arr.nbytes:,} bytes) "
            f"would become a constant of the traced program, over the limit of "
            f"{limit:,} bytes: pass it as an argument instead (or raise "
            "max_constant_bytes)"
        )
    return Constant(arr)


# -- ufuncs -----------------------------------------------------------------------

# Every elementwise Op whose numpy reference is a ufunc stands for that ufunc.
UFUNCS: dict[Any, Callable[..., Any]] = {
    getattr(op, "ufunc"): op  # noqa: B009 - Elemwise Ops have one, other Ops not
    for op in ops.ALL_OPS.values()
    if isinstance(getattr(op, "ufunc", None), np.ufunc) and not op.scipy  # scipy's: _SCIPY
}
UFUNCS[np.positive] = lambda x: x
UFUNCS[np.matmul] = lambda a, b: ops.product_op(a, b)(a, b)
UFUNCS[np.divmod] = lambda a, b: (ops.floor_divide(a, b), ops.remainder(a, b))
# Bitwise operators on booleans are the logical ones (``(x > 0) & (y > 0)``).
_BOOLEAN = {np.bitwise_and: ops.logical_and, np.bitwise_or: ops.logical_or,
            np.invert: ops.logical_not}  # fmt: skip
# scipy.special's ufuncs, as the Ops declare them, looked up only if the caller has
# imported scipy.special.
_SCIPY = {op.scipy: op for op in ops.ALL_OPS.values() if op.scipy}
# ``ufunc.reduce`` as a reduction Op.
REDUCERS: dict[Any, Any] = {np.add: ops.sum, np.multiply: ops.prod, np.maximum: ops.max,
            np.minimum: ops.min, np.logaddexp: ops.logsumexp}  # fmt: skip
# Keyword arguments a ufunc call may give, with the value that means "as numpy does".
_UFUNC_DEFAULTS = {"out": None, "where": True, "casting": "same_kind", "order": "K",
                   "dtype": None, "subok": True, "signature": None, "axes": None}  # fmt: skip


@register_operator("array_ufunc")
def ufunc_term(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """The term ``ufunc.method(*inputs, **kwargs)`` stands for."""
    name = _ufunc_name(ufunc)
    if method == "reduce":
        return _reduce(ufunc, name, inputs, kwargs)
    _check_defaults(name, kwargs, _UFUNC_DEFAULTS)
    args = [term_of(x) for x in inputs]
    if method == "outer":
        ndim_b = _ndim(args[1])
        args = [ops.getitem(args[0], (..., *(None,) * ndim_b)), args[1]]
    elif method != "__call__":
        raise UnsupportedError(f"{name}.{method} is not supported on relgraph terms")
    return _ufunc_op(ufunc, name, args)(*args)


def _ufunc_op(ufunc: np.ufunc, name: str, args: list) -> Callable[..., Any]:
    if ufunc in _BOOLEAN:
        # On booleans ``&``, ``|`` and ``~`` are the logical Ops, which relations know;
        # ``mask | 2`` is numpy's bitwise or on int64.
        try:
            dtypes = {np.result_type(typeof(a).dtype if isinstance(a, TermOps) else a)
                      for a in args}  # fmt: skip
        except TypeCheckError:  # a pattern (``?x & ?y``): its variables have no dtype
            dtypes = set()
        if dtypes == {np.dtype(bool)}:
            return _BOOLEAN[ufunc]
    op = UFUNCS.get(ufunc)
    if op is not None:
        return op
    special = sys.modules.get("scipy.special")
    if special is not None and getattr(special, ufunc.__name__, None) is ufunc:
        if ufunc.__name__ in _SCIPY:
            return _SCIPY[ufunc.__name__]
    raise _unsupported(name)


def _reduce(ufunc: np.ufunc, name: str, inputs: tuple, kwargs: dict) -> Any:
    op = REDUCERS.get(ufunc)
    if op is None:
        raise _unsupported(f"{name}.reduce")
    kwargs = dict(kwargs)
    axis, keepdims = kwargs.pop("axis", 0), kwargs.pop("keepdims", False)
    _check_defaults(f"{name}.reduce", kwargs, {**_UFUNC_DEFAULTS, "initial": np._NoValue})
    return op(term_of(inputs[0]), axis=axis, keepdims=keepdims)


def _ufunc_name(ufunc: np.ufunc) -> str:
    if getattr(np, ufunc.__name__, None) is ufunc:
        return f"numpy.{ufunc.__name__}"
    special = sys.modules.get("scipy.special")
    if special is not None and getattr(special, ufunc.__name__, None) is ufunc:
        return f"scipy.special.{ufunc.__name__}"
    return ufunc.__name__


# -- functions --------------------------------------------------------------------


def _reduction(op: Any) -> Callable[..., Any]:
    def build(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
        _check_defaults(f"numpy.{op.name}", {"out": out, **rest}, _REDUCE_DEFAULTS)
        x = term_of(a) if dtype is None else ops.astype(term_of(a), dtype)
        result = op(x, axis=_axis(axis), keepdims=keepdims)
        if op in (ops.sum, ops.prod) and dtype is not None and typeof(result).dtype != dtype:
            # numpy accumulates in ``dtype`` (an int8 sum wraps, a bool sum is "any"):
            # summing wider and casting back gives the same values, modulo 2**bits.
            result = ops.astype(result, dtype)
        return result

    return build


_REDUCE_DEFAULTS = {"out": None, "initial": np._NoValue, "where": np._NoValue}


def _truth(all_: bool) -> Callable[..., Any]:
    """``np.any`` (``np.all``) as a count of the true (false) elements, which is 0 on
    an empty axis: numpy's "any" of nothing is False, its "all" True."""

    def build(a, axis=None, out=None, keepdims=False, **rest):
        _check_defaults("numpy.all" if all_ else "numpy.any", {"out": out, **rest},
                        {"out": None, "where": np._NoValue})  # fmt: skip
        count = _count(a, axis, keepdims, false=all_)
        return ops.equal(count, 0) if all_ else ops.greater(count, 0)

    return build


def _count(a: Any, axis: Any = None, keepdims: bool = False, false: bool = False) -> Any:
    """The true (``false``: false) elements of ``a`` along ``axis``, in numpy's intp
    (``np.count_nonzero``); NaN is true, as ``bool(nan)``."""
    truth = term_of(a)
    if typeof(truth).dtype != np.bool_:
        truth = ops.astype(truth, "bool")
    return ops.sum(ops.logical_not(truth) if false else truth, _axis(axis), keepdims)


def _axis(axis: Any) -> Any:
    if isinstance(axis, (list, tuple)):
        return tuple(operator.index(a) for a in axis)
    return axis if axis is None else operator.index(axis)  # numpy integers too


def _variance(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **rest):
    # As numpy computes it: the squared deviations from the mean, summed and divided
    # by the slice's size less ddof (at least 0), in the sum's dtype as numpy's is.
    _check_defaults("numpy.var", {"out": out, **rest}, _VAR_DEFAULTS)
    x = term_of(a) if dtype is None else ops.astype(term_of(a), dtype)
    deviation = x - ops.mean(x, axis=_axis(axis), keepdims=True)
    squares = deviation * deviation
    if not ddof:
        return ops.mean(squares, axis=_axis(axis), keepdims=keepdims)
    total = ops.sum(squares, axis=_axis(axis), keepdims=keepdims)
    # The slice's size: counted where tracing does not know it (a sum of ones).
    size = ops.sum(ops.expand_as(np.int64(1), x), axis=_axis(axis), keepdims=keepdims)
    dof = ops.maximum(size - ddof, 0)
    return total / ops.astype(dof, typeof(total).dtype)


_VAR_DEFAULTS = {"out": None, "where": np._NoValue, "mean": np._NoValue,
                 "correction": np._NoValue}  # fmt: skip


def _std(a, *args, **kwargs):
    return ops.sqrt(_variance(a, *args, **kwargs))


def _where(condition, x=np._NoValue, y=np._NoValue):
    if x is np._NoValue or y is np._NoValue:
        raise UnsupportedError(
            "numpy.where(condition) without x and y is not supported: its shape depends "
            "on the values"
        )
    return ops.where(term_of(condition), term_of(x), term_of(y))


def _clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=None, max=None, **rest):
    _check_defaults("numpy.clip", {"out": out, **rest}, _UFUNC_DEFAULTS)
    lo = min if a_min is np._NoValue else a_min
    hi = max if a_max is np._NoValue else a_max
    x = term_of(a)
    if lo is not None and hi is not None:
        return ops.clip(x, term_of(lo), term_of(hi))
    if lo is not None:
        return ops.maximum(x, term_of(lo))
    if hi is not None:
        return ops.minimum(x, term_of(hi))
    raise UnsupportedError("numpy.clip needs a lower or an upper bound")


def _round(a, decimals=0, out=None):
    """``np.round`` as numpy computes it: ``rint`` of ``a`` scaled by ``10**decimals``
    and scaled back (halves to even); integers are already round to ``decimals >= 0``."""
    _check_defaults("numpy.round", {"out": out}, {"out": None})
    x, decimals = term_of(a), operator.index(decimals)
    dtype = typeof(x).dtype
    if dtype.kind in "iu" and decimals >= 0:
        return ops.astype(x, dtype)  # numpy returns a copy
    if decimals == 0:
        return ops.rint(x)
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        return ops.rint(x * scale) / scale
    rounded = ops.rint(x / scale) * scale
    return ops.astype(rounded, dtype) if dtype.kind in "iu" else rounded


def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """``np.nan_to_num``: NaN and the infinities replaced, in ``x``'s dtype (by default
    with 0 and its largest and smallest finite values); other dtypes unchanged."""
    _check_defaults("numpy.nan_to_num", {"copy": copy}, {"copy": True})
    t = term_of(x)
    dtype = typeof(t).dtype
    if dtype.kind != "f":
        return ops.astype(t, dtype)  # numpy returns a copy
    big = float(np.finfo(dtype).max)
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf
    with np.errstate(over="ignore"):  # numpy's own cast of an out-of-range value: inf
        hi, lo, fill = dtype.type(hi), dtype.type(lo), dtype.type(nan)
    infinite = ops.where(ops.greater(t, 0), hi, lo)
    return ops.where(ops.isnan(t), fill, ops.where(ops.isinf(t), infinite, t))


def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``np.isclose`` by numpy's formula: ``|a - b| <= atol + rtol * |b|`` where ``b``
    is finite, or ``a == b``; ``b`` is first made a float (``abs`` of the smallest
    int64 would wrap)."""
    x, y = term_of(a), term_of(b)
    if isinstance(y, TermOps) and typeof(y).dtype.kind != "f":
        y = ops.astype(y, np.result_type(typeof(y).dtype, 1.0))
    elif isinstance(y, (bool, int, np.integer)):
        y = float(y)
    near = ops.less_equal(abs(x - y), term_of(atol) + term_of(rtol) * abs(y))
    close = ops.logical_or(ops.logical_and(near, ops.isfinite(y)), ops.equal(x, y))
    if equal_nan:
        close = ops.logical_or(close, ops.logical_and(ops.isnan(x), ops.isnan(y)))
    return close


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    _check_defaults("numpy.reshape", {"order": order}, {"order": "C"})
    shape = newshape if shape is None else shape
    return ops.reshape(term_of(a), (shape,) if isinstance(shape, (int, np.integer)) else shape)


def _ravel(a, order="C"):
    _check_defaults("numpy.ravel", {"order": order}, {"order": "C"})
    return ops.reshape(term_of(a), (-1,))


def _dot(a, b, out=None):
    _check_defaults("numpy.dot", {"out": out}, {"out": None})
    a, b = term_of(a), term_of(b)
    if _ndim(a) == 0 or _ndim(b) == 0:
        return ops.mul(a, b)
    if _ndim(a) > 2 or _ndim(b) > 2:
        raise UnsupportedError("numpy.dot of arrays above 2-d is not supported: use matmul")
    return ops.dot(a, b)


def _outer(a, b, out=None):
    _check_defaults("numpy.outer", {"out": out}, {"out": None})
    a, b = (t if _ndim(t) == 1 else ops.reshape(t, (-1,)) for t in map(term_of, (a, b)))
    return ops.mul(a[:, None], b[None, :])


def _swapaxes(a, axis1, axis2):
    x = term_of(a)
    perm = list(range(_ndim(x)))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return ops.transpose(x, tuple(perm))


def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """numpy's ``average``: the mean, or with weights of ``a``'s shape ``sum(a * w) /
    sum(w)``."""
    if returned:
        raise UnsupportedError("numpy.average: returned=True is not supported on terms")
    a, axis = term_of(a), _axis(axis)
    if weights is None:
        return ops.mean(a, axis, keepdims)
    w = term_of(weights)
    if typeof(w).ndim != typeof(a).ndim:
        raise UnsupportedError("numpy.average: the weights need the shape of the array")
    return ops.sum(a * w, axis, keepdims) / ops.sum(w, axis, keepdims)


def _einsum(subscripts, *operands, out=None, optimize=False, **rest):
    if not isinstance(subscripts, str):
        raise UnsupportedError("numpy.einsum: give the subscripts as a string ('ij,jk->ik')")
    _check_defaults(
        "numpy.einsum",
        {"out": out, **rest},
        {"out": None, "dtype": None, "order": "K", "casting": "safe"},
    )
    return ops.einsum(subscripts, *map(term_of, operands))


def _unsupported_mode() -> Any:
    raise UnsupportedError("numpy.take: only out=None and mode='raise' are supported")


def _unsupported_k() -> Any:
    raise UnsupportedError("numpy.diag and numpy.trace take the main diagonal only (k=0)")


def _scan(op: Any) -> Callable[..., Any]:
    def scan(a, axis=None, dtype=None, out=None):
        _check_defaults(f"numpy.{op.name}", {"dtype": dtype, "out": out}, _UFUNC_DEFAULTS)
        return op(term_of(a), axis)

    return scan


def _arg(op: Any) -> Callable[..., Any]:
    def arg(a, axis=None, out=None, *, keepdims=False):
        _check_defaults(f"numpy.{op.name}", {"out": out}, _UFUNC_DEFAULTS)
        return op(term_of(a), axis, bool(keepdims))

    return arg


def _diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    if prepend is not np._NoValue or append is not np._NoValue:
        raise UnsupportedError("numpy.diff: prepend= and append= are not supported on terms "
                               "(join them with np.concatenate first)")  # fmt: skip
    return ops.diff(term_of(a), n, axis)


def _like(build: Callable[..., Any]) -> Callable[..., Any]:
    """``np.zeros_like`` and its kin; ``shape=`` (another shape) is refused by name."""

    def like(a, dtype=None, order="K", subok=True, shape=None):
        _check_defaults("zeros_like", {"shape": shape}, {"shape": None})
        return build(term_of(a), dtype)

    return like


def _join(op: Any) -> Callable[..., Any]:
    def build(arrays, axis=0, out=None, **rest):
        _check_defaults(f"numpy.{op.name}", {"out": out, **rest}, _JOIN_DEFAULTS)
        return op([term_of(a) for a in arrays], axis)

    return build


_JOIN_DEFAULTS = {"out": None, "dtype": None, "casting": "same_kind"}


FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.sum: _reduction(ops.sum), np.prod: _reduction(ops.prod),
    np.max: _reduction(ops.max), np.amax: _reduction(ops.max),
    np.min: _reduction(ops.min), np.amin: _reduction(ops.min),
    np.mean: _reduction(ops.mean), np.var: _variance, np.std: _std,
    np.any: _truth(False), np.all: _truth(True),
    np.count_nonzero: lambda a, axis=None, *, keepdims=False: _count(a, axis, keepdims),
    np.where: _where, np.clip: _clip, np.round: _round, np.around: _round,
    np.nan_to_num: _nan_to_num, np.isclose: _isclose,
    np.allclose: lambda *args, **kwargs: _truth(True)(_isclose(*args, **kwargs)),
    np.transpose: lambda a, axes=None: ops.transpose(term_of(a), axes),
    np.swapaxes: _swapaxes, np.reshape: _reshape, np.ravel: _ravel,
    np.expand_dims: lambda a, axis: ops.expand_dims(term_of(a), axis),
    np.squeeze: lambda a, axis=None: ops.squeeze(term_of(a), axis),
    np.broadcast_to: lambda array, shape, subok=False: ops.broadcast_to(
        term_of(array), (shape,) if isinstance(shape, (int, np.integer)) else shape
    ),
    np.concatenate: _join(ops.concatenate), np.stack: _join(ops.stack),
    np.dot: _dot, np.outer: _outer,
    np.linalg.cholesky: lambda a, upper=False: ops.cholesky(term_of(a)) if not upper else
        ops.transpose(ops.cholesky(term_of(a))),
    np.linalg.inv: lambda a: ops.inv(term_of(a)),
    np.linalg.solve: lambda a, b: ops.solve(term_of(a), term_of(b)),
    np.linalg.det: lambda a: ops.det(term_of(a)),
    np.linalg.slogdet: lambda a: ops.slogdet(term_of(a)),
    np.linalg.norm: lambda x, ord=None, axis=None, keepdims=False: ops.norm(
        term_of(x), ord, _axis(axis), keepdims),
    np.diag: lambda v, k=0: ops.diag(term_of(v)) if k == 0 else _unsupported_k(),
    np.trace: lambda a, offset=0, axis1=0, axis2=1, dtype=None, out=None: ops.trace(term_of(a))
        if (offset, axis1, axis2, dtype, out) == (0, 0, 1, None, None) else _unsupported_k(),
    np.take: lambda a, indices, axis=None, out=None, mode="raise": ops.take(
        term_of(a), term_of(indices), axis) if (out, mode) == (None, "raise") else
        _unsupported_mode(),
    np.einsum: _einsum, np.average: _average,
    np.take_along_axis: lambda arr, indices, axis: ops.take_along_axis(
        term_of(arr), term_of(indices), axis),
    np.cumsum: _scan(ops.cumsum), np.cumprod: _scan(ops.cumprod),
    np.argmax: _arg(ops.argmax), np.argmin: _arg(ops.argmin), np.diff: _diff,
    np.zeros_like: _like(ops.zeros_like), np.ones_like: _like(ops.ones_like),
    np.empty_like: _like(ops.zeros_like),
    np.full_like: lambda a, fill_value, dtype=None, **rest: _like(
        lambda x, dtype: ops.full_like(x, fill_value, dtype))(a, dtype, **rest),
    # Not terms: what a traced value knows of its type (np.shape raises for a size
    # not known when tracing).
    np.ndim: lambda a: a.ndim, np.shape: lambda a: a.shape,
}  # fmt: skip
if hasattr(np, "astype"):  # numpy 2.1 and later
    FUNCTIONS[np.astype] = lambda x, dtype, copy=True, **kw: ops.astype(term_of(x), dtype)


@register_operator("array_function")
def function_term(func: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """The term ``func(*args, **kwargs)`` stands for (numpy's ``__array_function__``)."""
    build = FUNCTIONS.get(func)
    if build is None:
        error = _unsupported(f"{func.__module__}.{func.__name__}")
        library = calling_library()
        if library:  # the user never called it: say who did
            raise UnsupportedError(
                f"{library} called {func.__module__}.{func.__name__} on a traced value: "
                "relgraph does not trace into that library's code; write the computation "
                "with numpy functions or relgraph's Ops"
            )
        raise error
    return build(*args, **kwargs)


# -- errors -----------------------------------------------------------------------


_LIBRARIES = tuple(
    os.path.normcase(os.path.realpath(p))
    for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
)
_OURS = tuple(
    os.path.normcase(os.path.realpath(os.path.dirname(m.__file__ or "")))
    for m in (np, sys.modules["relgraph"])
)


def calling_library() -> str | None:
    """The function of an installed library (not numpy, not relgraph) that the
    traced code called and that is running now, as ``module.function`` (the one the
    user called, not its helpers); None when the user's own code is."""
    frame: Any = sys._getframe(1)
    outermost = None
    while frame is not None:
        path = os.path.normcase(os.path.realpath(frame.f_code.co_filename))
        if path.startswith(_LIBRARIES) and not path.startswith(_OURS):
            outermost = f"{frame.f_globals.get('__name__', '?')}.{frame.f_code.co_name}"
        elif not path.startswith(_OURS):
            return outermost
        frame = frame.f_back
    return outermost


# Callables other front-end modules make traceable (scipy_api's twins), by full name.
TRACEABLE: set[str] = set()


def supported_names() -> list[str]:
    """Every numpy (and scipy.special) callable that builds terms, by full name.

    >>> "numpy.logaddexp" in supported_names(), "numpy.sum" in supported_names()
    (True, True)
    """
    names = [f"numpy.{u.__name__}" for u in (*UFUNCS, *_BOOLEAN)]
    names += [f"numpy.{u.__name__}.reduce" for u in REDUCERS]
    names += [f"{f.__module__}.{f.__name__}" for f in FUNCTIONS]
    names += [f"scipy.special.{n}" for n in _SCIPY]
    return sorted({*names, *TRACEABLE})


def _unsupported(name: str) -> UnsupportedError:
    by_short: dict[str, str] = {}
    for full in supported_names():
        by_short.setdefault(full.rpartition(".")[2], full)
    short = name.rpartition(".")[2]
    # Names inside it (nancumsum: cumsum) or close to it (isnat: isnan); not merely alike
    # letters (sort is not sqrt).
    inside = sorted((s for s in by_short if len(s) >= 3 and s in short), key=len, reverse=True)
    close = difflib.get_close_matches(short, by_short, n=4, cutoff=0.8)
    nearest = [by_short[s] for s in dict.fromkeys([*inside, *close])][:4]
    hint = (
        f"the nearest supported: {', '.join(nearest)}"
        if nearest
        else "relgraph.frontend.numpy_api.supported_names() lists the supported ones"
    )
    return UnsupportedError(f"{name} is not supported on relgraph terms; {hint}")


def _check_defaults(name: str, given: dict, defaults: dict) -> None:
    for key, value in given.items():
        if key not in defaults:
            raise UnsupportedError(f"{name}: the argument {key}= is not supported")
        default = defaults[key]
        if value is not default and not (_plain(value) and value == default):
            raise UnsupportedError(
                f"{name}: {key}={value!r:.40} is not supported on relgraph terms "
                f"(only the default, {default!r})"
            )


def _plain(value: Any) -> bool:
    return isinstance(value, (bool, int, float, str)) or value is None


def _ndim(x: Any) -> int:
    return typeof(x).ndim if isinstance(x, TermOps) else np.ndim(x)
