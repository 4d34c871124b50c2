"""numpy's ``sort``, ``argsort``, ``median``, ``quantile`` and ``percentile`` (and
``nanmedian``, ``nanquantile``, ``nanpercentile``) on terms: the order statistics of
:mod:`relgraph.ops.order`, numpy's values bit for bit.

Supported as numpy's defaults have them: one axis or ``axis=None``, ``keepdims``,
``quantile``'s default method (``"linear"``) or ``"lower"`` and ``"higher"``, and one
number ``q`` (a Python number, or a float64 one).  Anything else (a tuple of axes, an
array of ``q``, another method, ``weights``, ``out=``) is refused by name.

>>> import numpy as np, relgraph as rg
>>> x = rg.matrix("x")
>>> rg.pprint(np.median(x, axis=1) - np.percentile(x, 25, axis=1))
'(median(x, axis=1) - quantile(x, q=0.25, axis=1))'
>>> f = rg.jit(lambda a: np.sort(a, axis=0)[-2:])
>>> f(np.array([[3.0, np.nan], [1.0, 2.0], [2.0, 0.0]])).tolist()
[[2.0, 2.0], [3.0, nan]]
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from relgraph import ops
from relgraph.exceptions import UnsupportedError
from relgraph.frontend.numpy_api import FUNCTIONS, _check_defaults, term_of
from relgraph.ops.order import METHODS, weak

__all__ = ["ORDER_FUNCTIONS"]


def _one_axis(name: str, axis: Any) -> Any:
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        raise UnsupportedError(f"{name}: axis={axis!r}: one axis or None is supported")
    return operator.index(axis)


def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    # kind and stable choose the algorithm; sorted numbers are the same whichever runs
    _check_defaults("numpy.sort", {"order": order}, {"order": None})
    return ops.sort(term_of(a), _one_axis("numpy.sort", axis))


def _argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    # numpy's default sort leaves equal values in its algorithm's order; these keep
    # theirs (kind="stable"), one of the orders numpy's contract allows
    _check_defaults("numpy.argsort", {"order": order}, {"order": None})
    return ops.argsort(term_of(a), _one_axis("numpy.argsort", axis))


def _median(op: Any) -> Callable[..., Any]:
    """``np.median`` (``np.nanmedian``)."""
    name = f"numpy.{op.name}"

    def build(a, axis=None, out=None, overwrite_input=False, keepdims=False):
        # overwrite_input only lets numpy scribble on its input: a term has none to spare
        _check_defaults(name, {"out": out}, {"out": None})
        return op(term_of(a), _one_axis(name, axis), keepdims)

    return build


def _quantile(op: Any, scale: float, name: str) -> Callable[..., Any]:
    """``np.quantile`` (``scale`` 1) or ``np.percentile`` (100), or their nan-twins."""

    def build(a, q, axis=None, out=None, overwrite_input=False, method="linear",
              keepdims=False, *, weights=None, interpolation=None):  # fmt: skip
        given = {"out": out, "method": method, "weights": weights,
                 "interpolation": interpolation}  # fmt: skip
        if method in METHODS:  # numpy's default, and the values around the index
            given["method"] = "linear"
        _check_defaults(name, given, {"out": None, "method": "linear", "weights": None,
                                      "interpolation": None})  # fmt: skip
        if np.ndim(q) != 0 or isinstance(q, (bool, np.bool_)) or not np.isrealobj(q):
            raise UnsupportedError(f"{name}: q={q!r:.40}: one number is supported")
        divided = np.true_divide(q, scale)  # as numpy divides a percentile
        if not weak(q) and np.asarray(divided).dtype != np.float64:
            raise UnsupportedError(
                f"{name}: q={q!r} of dtype {np.asarray(divided).dtype}: numpy interpolates in "
                "it; give q as a Python number or a float64"
            )
        fraction = float(divided)
        if not 0.0 <= fraction <= 1.0:
            bounds = "[0, 100]" if scale == 100 else "[0, 1]"
            raise ValueError(f"{name}: q={q!r} must be in {bounds}")
        return op(term_of(a), fraction, _one_axis(name, axis), keepdims, method, weak(q))

    return build


ORDER_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.sort: _sort, np.argsort: _argsort,
    np.median: _median(ops.median), np.nanmedian: _median(ops.nanmedian),
    np.quantile: _quantile(ops.quantile, 1.0, "numpy.quantile"),
    np.percentile: _quantile(ops.quantile, 100.0, "numpy.percentile"),
    np.nanquantile: _quantile(ops.nanquantile, 1.0, "numpy.nanquantile"),
    np.nanpercentile: _quantile(ops.nanquantile, 100.0, "numpy.nanpercentile"),
}  # fmt: skip
FUNCTIONS.update(ORDER_FUNCTIONS)
