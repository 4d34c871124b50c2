"""Float32 ``exp``, ``tanh``, ``log``, ``log1p``, ``softplus`` and ``erf`` that LLVM
vectorises, eight floats to a 256-bit register.

:mod:`relgraph.backends.numba.vecmath` computes float64, four to a 256-bit register;
a float32 result computed with it is rounded from float64.  These compute in float32
throughout, as numpy's and XLA's float32 loops do: twice the lanes, and polynomials of
float32 accuracy (Cephes' ``expf``, ``tanhf`` and ``logf``, and for ``erf`` two fitted
here).  ``exp``, ``log``, ``log1p`` and ``softplus`` are vecmath's own functions given
these polynomials and float32's thresholds (a
:class:`~relgraph.backends.numba.vecmath._Precision`); their bit tricks follow the float
type.  Accuracy: within 2 ulp of the exact value over the whole domain, with numpy's
results for inf, NaN, overflow, underflow, subnormals and signed zeros, checked on every
float32 by ``benchmarks/check_float32_math.py`` (at most 1.01 ulp for ``exp``, 1.33
``tanh``, 0.83 ``log``, 0.84 ``log1p``, 1.65 ``softplus``, 1.21 ``erf``; a float32
``sigmoid`` from these reached 2.4 ulp, so sigmoid keeps the float64 form, rounded).

``exp``: ``x = k ln2 + r`` (``ln2`` in two parts, ``k ln2``'s first part exact), a
polynomial of degree 5 in ``r`` for ``(exp(r) - 1 - r) / r^2``.  ``tanh``: Cephes' odd
polynomial below 0.625, ``1 - 2 / (exp(2|x|) + 1)`` above (1 from 10: ``2 / (exp(20) +
1)`` is below half an ulp of 1).  ``log``: ``x = 2^k (1 + f)`` from the bits, Cephes'
polynomial in ``f``; ``log1p`` the same with fdlibm's correction for the rounding of
``1 + x``.  ``softplus``: ``x`` itself above 20 (``exp(-20)`` is below half an ulp of
it).  ``erf``: one polynomial below 1 and ``erfc(x) exp(x^2)`` as another above, so
its accuracy needs no more than a few terms each (vecmath's float64 ``erf`` computes
three rational functions per element).
"""

from __future__ import annotations

from typing import Any

from numba import types

from relgraph.backends.numba.llvmfloat import _F, _abs, _floor, _fma, _horner, _if, _vectorised
from relgraph.backends.numba.vecmath import (
    _exp_bounded,
    _exp_with,
    _log1p_with,
    _log_with,
    _Precision,
    _softplus_with,
)

__all__ = ["exp", "tanh", "log", "log1p", "softplus", "erf"]

_LOG2E = 1.44269504088896341
_LN2_HI = 0.693359375  # 9 significant bits: k * _LN2_HI is exact for |k| < 2^15
_LN2_LO = -2.12194440e-4
# Cephes' expf: (exp(r) - 1 - r) / r^2 on [-ln2/2, ln2/2], highest degree first
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
             1.6666665459e-1, 5.0000001201e-1)  # fmt: skip
_EXP_HIGH = 89.0  # above 88.7228 exp overflows: from here the result is set to inf
_EXP_LOW = -104.0  # below -103.9721 exp rounds to 0: from here it is set to 0


def _exp_reduced(x: _F) -> tuple[_F, _F]:
    """``exp(x) = 2^k * p``: ``k`` (an integer-valued float) and ``p``."""
    k = _floor(x * _LOG2E + 0.5)
    r = _fma(k, -_LN2_LO, _fma(k, -_LN2_HI, x))
    return k, _fma(_horner(r, _EXP_POLY), r * r, r) + 1.0


# Cephes' tanhf: (tanh(x) - x) / x^3 as a polynomial in x^2 on [0, 0.625]
_TANH_POLY = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
              -3.33332819422e-1)  # fmt: skip


def _tanh(x: _F) -> _F:
    """``np.tanh`` for one float32, vectorisable."""
    z = _abs(x)
    e = _exp_bounded(_F32, 2.0 * _if(z < 10.0, z, 10.0))  # NaN and inf clamp to 10 too
    big = 1.0 - 2.0 / (e + 1.0)
    xs = _if(z < 0.625, x, 0.0)  # the small branch only where it is used
    s = xs * xs
    small = _fma(_horner(s, _TANH_POLY) * s, xs, xs)
    res = _if(z < 0.625, small, _if(x > 0.0, big, -big))
    return _if((x != x) | (x == 0.0), x, res)  # NaN, and a zero with its sign


# Cephes' logf: (log(1 + f) - f + f^2 / 2) / f^3 on [sqrt(1/2) - 1, sqrt(2) - 1]
_LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
             1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
             3.3333331174e-1)  # fmt: skip


def _log_of(f: _F, k: _F, c: Any) -> _F:
    """``log(2^k (1 + f)) + c`` for ``1 + f`` in [sqrt(1/2), sqrt(2)): Cephes' ``logf``."""
    z = f * f
    y = _horner(f, _LOG_POLY) * f * z + (k * _LN2_LO + c) - 0.5 * z
    return f + y + k * _LN2_HI


_F32 = _Precision(_exp_reduced, _EXP_LOW, _EXP_HIGH, _log_of, tiny=1e-12, clamp=20.0)


def _exp(x: _F) -> _F:
    """``np.exp`` for one float32, vectorisable."""
    return _exp_with(_F32, x)


def _log(x: _F) -> _F:
    """``np.log`` for one float32, vectorisable: Cephes' ``logf`` polynomial."""
    return _log_with(_F32, x)


def _log1p(x: _F) -> _F:
    """``np.log1p`` for one float32, vectorisable: fdlibm's method, Cephes' polynomial."""
    return _log1p_with(_F32, x)


def _softplus(x: _F) -> _F:
    """``log(1 + exp(x))`` for one float32, vectorisable: ``max(x, 0) + log1p(exp(-|x|))``."""
    return _softplus_with(_F32, x)


# Fitted by benchmarks/fit_float32_erf.py (least squares at 4,000 Chebyshev nodes
# against scipy, each coefficient rounded to float32 and the rest fitted again),
# highest degree first:
# erf(x) / x - 1 as a polynomial in x^2 on [0, 1]
_ERF_SMALL = (7.842288e-05, -0.0008006793, 0.0051879627, -0.026853643, 0.112835824,
              -0.37612626, 0.12837917)  # fmt: skip
# erfc(x) exp(x^2) as a polynomial in 1/x on [1, 3.93]
_ERFCX = (-0.011141698, 0.036751196, 0.006888595, -0.22272666, 0.48378405, -0.46604276,
          0.040562727, 0.55925053, 0.00025756084)  # fmt: skip
_ERF_ONE = 3.93  # from here on erf rounds to 1: erfc(3.93) is below half an ulp of 1


def _erf(x: _F) -> _F:
    """``erf`` for one float32, vectorisable: ``x + x P(x^2)`` below 1, ``1 - exp(-x^2)
    Q(1/x)`` above, with ``x^2`` as a float and its rounding error, so ``exp(-x^2)``
    keeps its accuracy."""
    a = _abs(x)
    xs = _if(a < 1.0, x, 0.0)
    small = _fma(xs, _horner(xs * xs, _ERF_SMALL), xs)
    xl = _if(a < 1.0, 1.0, _if(a < _ERF_ONE, a, _ERF_ONE))  # NaN and inf too
    hi = xl * xl
    lo = _fma(xl, xl, -hi)  # x^2 = hi + lo exactly: exp(-x^2) = exp(-hi) (1 - lo)
    g = _horner(1.0 / xl, _ERFCX)
    large = 1.0 - _exp_with(_F32, -hi, factor=_fma(g, -lo, g))
    res = _if(a < 1.0, small, _if(x > 0.0, large, -large))
    return _if(x != x, x, res)


exp = _vectorised(_exp, types.float32)
log1p = _vectorised(_log1p, types.float32)
erf = _vectorised(_erf, types.float32)
tanh = _vectorised(_tanh, types.float32)
log = _vectorised(_log, types.float32)
softplus = _vectorised(_softplus, types.float32)
