"""numpy references of the Ops numpy has no ufunc for: ``sigmoid``, ``softplus``,
``log1mexp``, ``erf`` and ``logsumexp``.

Each computes in the float dtype numpy's ``exp`` gives its input (float16 for small
ints and bool, as numpy would), and stays finite where the naive formula overflows.
Compiled kernels use the scalar forms in :mod:`relgraph.backends.numba.kernels`.

Examples
--------
>>> import numpy as np
>>> sigmoid(np.array([-1000.0, 0.0, 1000.0])).tolist()
[0.0, 0.5, 1.0]
>>> float(softplus(np.float64(1000.0)))
1000.0
>>> float(log1mexp(np.float64(-1e-20)))  # log(1 - exp(x)) where 1 - exp(x) rounds to 0
-46.051701859880914
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import (
    erf as scipy_erf,
    erfc as scipy_erfc,
    erfcx as scipy_erfcx,
    gammaln as scipy_gammaln,
    log_ndtr as scipy_log_ndtr,
    ndtr as scipy_ndtr,
    xlogy as scipy_xlogy,
)

__all__ = [
    "sigmoid", "softplus", "log1mexp", "erf", "logsumexp", "ndtr", "log_ndtr", "xlogy", "gammaln",
    "erfc", "erfcx",
]  # fmt: skip

LN2 = 0.6931471805599453


def _as_float(x: Any) -> np.ndarray:
    x = np.asarray(x)
    return x.astype(np.exp(np.zeros(1, x.dtype)).dtype, copy=False)


def sigmoid(x: Any) -> Any:
    """``1 / (1 + exp(-x))``, without overflow: ``exp`` only of ``-|x|``."""
    x = _as_float(x)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)[()]


def softplus(x: Any) -> Any:
    """``log(1 + exp(x))`` as ``max(x, 0) + log1p(exp(-|x|))``: no overflow."""
    x = _as_float(x)
    return (np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))).astype(x.dtype)[()]


def log1mexp(x: Any) -> Any:
    """``log(1 - exp(x))`` for ``x <= 0`` (NaN above): ``log(-expm1(x))`` near 0,
    ``log1p(-exp(x))`` below ``-log 2`` (Maechler's choice), accurate on both sides."""
    x = _as_float(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        near, far = np.log(-np.expm1(x)), np.log1p(-np.exp(x))
    return np.where(x > -LN2, near, far).astype(x.dtype)[()]


def erf(x: Any) -> Any:
    """The error function (scipy's, imported on first use)."""

    x = _as_float(x)
    return scipy_erf(x).astype(x.dtype)[()]


def ndtr(x: Any) -> Any:
    """The standard normal distribution function (scipy's)."""
    x = _as_float(x)
    return scipy_ndtr(x).astype(x.dtype)[()]


def log_ndtr(x: Any) -> Any:
    """The log of :func:`ndtr`, accurate far into the lower tail (scipy's).

    >>> float(log_ndtr(np.float64(-40.0)))
    -804.6084420137539
    """
    x = _as_float(x)
    return scipy_log_ndtr(x).astype(x.dtype)[()]


#: ``x * log(y)``, 0 where ``x`` is 0 (and ``y`` is not NaN): scipy's ufunc.
xlogy = scipy_xlogy
#: ``log(abs(gamma(x)))``: scipy's ufunc.
gammaln = scipy_gammaln
#: ``1 - erf(x)``, accurate where it is tiny: scipy's ufunc.
erfc = scipy_erfc
#: ``exp(x ** 2) * erfc(x)``, finite where both factors are not: scipy's ufunc.
erfcx = scipy_erfcx


def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(x), axis))`` shifted by the largest element, so it neither
    overflows nor underflows; an all ``-inf`` slice gives ``-inf``, any ``+inf`` gives
    ``+inf``, any NaN gives NaN.

    >>> float(logsumexp(np.array([1000.0, 1000.0])))
    1000.6931471805599
    >>> float(logsumexp(np.array([-np.inf, -np.inf])))
    -inf
    """
    x = _as_float(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        top = np.max(x, axis=axis, keepdims=True) if x.size else np.zeros((1,) * x.ndim, x.dtype)
        shift = np.where(np.isfinite(top), top, 0).astype(x.dtype)
        total = np.sum(np.exp(x - shift), axis=axis, keepdims=True)
        out = np.log(total) + shift
    if not keepdims:
        out = np.squeeze(out, axis=axis) if axis is not None else out.reshape(())
    return out.astype(x.dtype)[()]
