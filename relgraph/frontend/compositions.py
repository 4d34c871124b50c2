"""numpy functions that are compositions of others, traced as numpy composes them:
``np.flip``, ``np.hstack`` and its kin, ``np.ptp``, ``np.polyval``, ``np.tril`` and
``np.triu``.

Each is written the way numpy's own implementation writes it (``numpy/lib``), so its
values are numpy's: ``np.polyval(p, x)`` folds ``y = y * x + c`` from ``y = 0`` (NaN
at ``x = inf``, as numpy's), ``np.ptp`` is ``max - min`` in the array's dtype (an
``int8`` range wraps around, as numpy's).

>>> import numpy as np, relgraph as rg
>>> x = rg.vector("x")
>>> rg.pprint(np.ptp(x)), rg.pprint(np.flip(x))
('(max(x) - min(x))', 'x[::-1]')
>>> f = rg.jit(lambda v: (np.polyval([2.0, 3.0], v), np.hstack([v, v[::-1]])))
>>> f(np.array([1.0, 2.0]))
(array([5., 7.]), array([1., 2., 2., 1.]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relgraph import ops
from relgraph.frontend.numpy_api import FUNCTIONS, _axis, _check_defaults, term_of
from relgraph.terms.infer import typeof

__all__ = ["COMPOSITIONS"]


def _flip(m: Any, axis: Any = None) -> Any:
    """``m`` reversed along ``axis`` (every axis for None): a view, as numpy's."""
    x = term_of(m)
    ndim = typeof(x).ndim
    axes = range(ndim) if axis is None else [a % ndim for a in np.atleast_1d(_axis(axis))]
    key = tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(ndim))
    return ops.getitem(x, key)


def _atleast(ndim: int) -> Callable[..., Any]:
    """``np.atleast_1d`` (``_2d``) of one array: a 0-d one becomes ``(1,)`` (``(1, 1)``),
    a vector ``(1, n)`` for 2-d."""

    def build(*arys: Any) -> Any:
        if len(arys) != 1:
            raise TypeError(f"numpy.atleast_{ndim}d of several arrays is not traced: "
                            "call it on each")  # fmt: skip
        x = term_of(arys[0])
        while typeof(x).ndim < ndim:
            x = ops.expand_dims(x, 0)
        return x

    return build


def _stack(axis_of: Callable[[int], int], min_ndim: int) -> Callable[..., Any]:
    """``np.hstack`` (joined along axis 0 for vectors, else 1) and ``np.vstack``
    (each made at least 2-d, joined along axis 0)."""

    def build(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
        _check_defaults("numpy.hstack/vstack", {"dtype": dtype}, {"dtype": None})
        terms = [_atleast(min_ndim)(a) for a in tup]
        return ops.concatenate(terms, axis_of(typeof(terms[0]).ndim))

    return build


def _column_stack(tup: Any) -> Any:
    """Vectors as columns, matrices as they are (a number as ``(1, 1)``), joined
    along axis 1."""
    columns = []
    for t in map(term_of, tup):
        ndim = typeof(t).ndim
        columns.append(t if ndim >= 2 else ops.reshape(t, (1, 1)) if ndim == 0 else
                       ops.expand_dims(t, 1))  # fmt: skip
    return ops.concatenate(columns, 1)


def _ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """``max - min`` along ``axis``, in the array's dtype (numpy's ``np.subtract``)."""
    _check_defaults("numpy.ptp", {"out": out}, {"out": None})
    x, axis = term_of(a), _axis(axis)
    return ops.max(x, axis, keepdims) - ops.min(x, axis, keepdims)


def _polyval(p: Any, x: Any) -> Any:
    """numpy's Horner loop: ``y = zeros_like(x)``, then ``y = y * x + c`` for each
    coefficient ``c`` of ``p`` (a sequence, an array, or a traced vector of known
    length)."""
    x = term_of(x)
    try:  # numbers: numpy's array of them (typed, not Python's weak scalars)
        coefficients = list(np.asarray(p))
    except Exception:  # a traced vector: its elements (rg.jit reads its length)
        poly = term_of(p)
        n = len(p) if hasattr(p, "__len__") else typeof(poly).shape[0]
        if typeof(poly).ndim != 1 or n is None:
            raise TypeError(
                "numpy.polyval: p must be a vector of known length when tracing"
            ) from None
        coefficients = [ops.getitem(poly, (k,)) for k in range(n)]
    y = ops.zeros_like(x)
    for c in coefficients:
        y = y * x + term_of(c)
    return y


def _triangle(lower: bool) -> Callable[..., Any]:
    """``np.tril`` (``np.triu``): zeros above (below) diagonal ``k`` of the last two
    axes, whose sizes the code then reads (the function is specialised on them)."""

    def build(m: Any, k: int = 0) -> Any:
        x = term_of(m)
        rows, cols = (m.shape if hasattr(m, "shape") else typeof(x).shape)[-2:]
        if rows is None or cols is None:
            raise TypeError(f"numpy.{'tril' if lower else 'triu'} needs the matrix's sizes")
        keep = np.tri(rows, cols, k if lower else k - 1, dtype=bool)
        return ops.where(term_of(keep if lower else ~keep), x, ops.zeros_like(x))

    return build


COMPOSITIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.flip: _flip, np.fliplr: lambda m: _flip(m, 1), np.flipud: lambda m: _flip(m, 0),
    np.atleast_1d: _atleast(1), np.atleast_2d: _atleast(2),
    np.hstack: _stack(lambda ndim: 0 if ndim == 1 else 1, 1),
    np.vstack: _stack(lambda ndim: 0, 2), np.column_stack: _column_stack,
    np.ptp: _ptp, np.polyval: _polyval, np.tril: _triangle(True), np.triu: _triangle(False),
}  # fmt: skip
FUNCTIONS.update(COMPOSITIONS)
