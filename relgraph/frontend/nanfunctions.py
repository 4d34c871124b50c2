"""numpy's NaN-ignoring reductions, ``np.nansum`` and its kin, as the terms numpy's own
implementation computes.

numpy replaces each NaN of a float array by the reduction's identity and reduces
what is left (``numpy/lib/_nanfunctions_impl.py``); arrays of other dtypes hold no
NaN and reduce as they are.  The terms here do the same, so their values are
numpy's, bit for bit where numpy's plain reduction's are:

* ``nansum`` and ``nanprod``: a NaN counts as 0 (1), so a slice of NaNs sums to 0;
* ``nanmean``: the sum of the numbers over how many there are, divided in float64
  and cast back to the array's dtype, as numpy's ``np.divide(..., casting="unsafe")``
  does; a slice of NaNs is NaN (0 / 0; numpy also warns);
* ``nanvar`` and ``nanstd`` (``ddof=0``): the deviations from that mean, a NaN's
  counted as 0, squared and averaged the same way;
* ``nanmax`` and ``nanmin``: the largest (smallest) number, NaN where a slice holds
  only NaNs (numpy also warns).

>>> import numpy as np, relgraph as rg
>>> x = rg.vector("x")
>>> rg.pprint(np.nansum(x))
'sum(where(isnan(x), 0, x))'
>>> f = rg.jit(lambda a: (np.nanmean(a, axis=1), np.nanmax(a, axis=1)))
>>> f(np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, np.nan]]))
(array([1.5, nan]), array([ 2., nan]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relgraph import ops
from relgraph.frontend.numpy_api import FUNCTIONS, _axis, _check_defaults, _reduction, term_of
from relgraph.terms.infer import typeof

__all__ = ["NAN_FUNCTIONS"]

_DEFAULTS = {"out": None, "dtype": None, "initial": np._NoValue, "where": np._NoValue}


def _floats(a: Any) -> Any:
    """``a`` as a term, or None where its dtype holds no NaN."""
    x = term_of(a)
    return x if np.issubdtype(typeof(x).dtype, np.inexact) else None


def _replacing(op: Any, identity: float) -> Callable[..., Any]:
    """``np.nansum`` (``np.nanprod``): ``op`` of the array with its NaNs replaced."""
    plain = _reduction(op)

    def build(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
        _check_defaults(f"numpy.nan{op.name}", {"out": out, "dtype": dtype, **rest}, _DEFAULTS)
        x = _floats(a)
        if x is not None:
            a = ops.where(ops.isnan(x), identity, x)
        return plain(a, axis, keepdims=keepdims)

    return build


def _nanmean(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
    _check_defaults("numpy.nanmean", {"out": out, "dtype": dtype, **rest}, _DEFAULTS)
    x = _floats(a)
    if x is None:
        return ops.mean(term_of(a), _axis(axis), keepdims)
    nan = ops.isnan(x)
    return _mean_of(ops.where(nan, 0, x), nan, x, axis, keepdims)


def _mean_of(replaced: Any, nan: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """The sum of ``replaced`` over the count of numbers, divided as numpy divides:
    in float64, cast back to the dtype of ``x``."""
    total = ops.sum(replaced, _axis(axis), keepdims)
    mean = total / ops.sum(ops.logical_not(nan), _axis(axis), keepdims)
    dtype = typeof(x).dtype
    return mean if typeof(mean).dtype == dtype else ops.astype(mean, dtype)


def _nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **rest):
    """``np.nanvar`` as numpy computes it: the deviations of the numbers from their
    mean (a NaN's is 0), squared, summed and divided by the count of numbers."""
    given = {"out": out, "dtype": dtype, "ddof": ddof, **rest}
    _check_defaults("numpy.nanvar", given, {**_DEFAULTS, "ddof": 0, "mean": np._NoValue,
                                             "correction": np._NoValue})  # fmt: skip
    x = _floats(a)
    if x is None:
        return FUNCTIONS[np.var](a, axis, keepdims=keepdims)
    nan = ops.isnan(x)
    mean = _mean_of(ops.where(nan, 0, x), nan, x, axis, True)
    deviation = ops.where(nan, 0, x - mean)
    return _mean_of(deviation * deviation, nan, x, axis, keepdims)


def _nanstd(a, *args, **kwargs):
    return ops.sqrt(_nanvar(a, *args, **kwargs))


def _extreme(op: Any, worst: float) -> Callable[..., Any]:
    """``np.nanmax`` (``np.nanmin``): ``op`` of the numbers, NaN where there are none."""

    def build(a, axis=None, out=None, keepdims=False, **rest):
        _check_defaults(f"numpy.nan{op.name}", {"out": out, **rest}, _DEFAULTS)
        x = _floats(a)
        if x is None:
            return op(term_of(a), _axis(axis), keepdims)
        nan = ops.isnan(x)
        found = op(ops.where(nan, worst, x), _axis(axis), keepdims)
        missing = ops.equal(ops.sum(ops.logical_not(nan), _axis(axis), keepdims), 0)
        return ops.where(missing, np.nan, found)

    return build


NAN_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.nansum: _replacing(ops.sum, 0), np.nanprod: _replacing(ops.prod, 1),
    np.nanmean: _nanmean, np.nanvar: _nanvar, np.nanstd: _nanstd,
    np.nanmax: _extreme(ops.max, -np.inf), np.nanmin: _extreme(ops.min, np.inf),
}  # fmt: skip
FUNCTIONS.update(NAN_FUNCTIONS)
