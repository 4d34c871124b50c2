"""Float32 ``exp``, ``tanh``, ``log`` and ``softplus`` that LLVM vectorises, eight floats
to a 256-bit register.

:mod:`relgraph.backends.numba.vecmath` computes float64, four to a 256-bit register;
a float32 result computed with it is rounded from float64.  These compute in float32
throughout, as numpy's and XLA's float32 loops do: twice the lanes, and polynomials of
float32 accuracy (Cephes' ``expf``, ``tanhf`` and ``logf``), with the same building
blocks (:class:`~relgraph.backends.numba.vecmath._F` over LLVM floats), selects instead
of branches and bit casts instead of ``frexp``/``ldexp``.  Accuracy: within 2 ulp of the
exact value over the whole domain, with numpy's results for inf, NaN, overflow,
underflow, subnormals and signed zeros, checked on every float32 by
``benchmarks/check_float32_math.py`` (at most 1.01 ulp for ``exp``, 1.33 ``tanh``, 0.83
``log``, 1.65 ``softplus``; a float32 ``sigmoid`` from these reached 2.4 ulp, so sigmoid
keeps the float64 form, rounded).

``exp``: ``x = k ln2 + r`` (``ln2`` in two parts, ``k ln2``'s first part exact), a
polynomial of degree 5 in ``r`` for ``(exp(r) - 1 - r) / r^2``, then ``* 2^k`` in two
steps so subnormal results round once.  ``tanh``: Cephes' odd polynomial below 0.625,
``1 - 2 / (exp(2|x|) + 1)`` above (1 from 10: ``2 / (exp(20) + 1)`` is below half an
ulp of 1).  ``log``: ``x = 2^k (1 + f)`` from the bits, Cephes' polynomial in ``f``.
``softplus``: ``max(x, 0) + log1p(exp(-|x|))``, as vecmath's.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types

from relgraph.backends.numba.vecmath import _F, _abs, _floor, _fma, _horner, _if, _vectorised

__all__ = ["exp", "tanh", "log", "softplus"]

_FLOAT, _I32 = ir.FloatType(), ir.IntType(32)
# 2^23 + 2^22: an integer-valued float below 2^22 in magnitude plus this holds the
# integer in its low bits (vecmath's _ROUNDER, for float32)
_ROUNDER = 12582912.0


def _pow2(k: _F) -> _F:
    """2.0 ** k for an integer-valued float32 k in [-126, 127]."""
    b = k.b
    bits = b.bitcast((k + _ROUNDER).v, _I32)
    biased = b.shl(b.add(bits, ir.Constant(_I32, 127)), ir.Constant(_I32, 23))
    return _F(b, b.bitcast(biased, _FLOAT))


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


def _exp(x: _F) -> _F:
    """``np.exp`` for one float32, vectorisable."""
    # Outside [_EXP_LOW, _EXP_HIGH] the result is 0 or inf, set below: compute exp(0)
    xc = _if((_EXP_LOW <= x) & (x <= _EXP_HIGH), x, 0.0)
    k, p = _exp_reduced(xc)
    # 2^k in two factors, each a normal number even when the result is subnormal (or
    # past the largest float, where the product overflows to inf as it should)
    k1 = _floor(k * 0.5)
    res = p * _pow2(k1) * _pow2(k - k1)
    res = _if(x > _EXP_HIGH, float("inf"), res)
    res = _if(x < _EXP_LOW, 0.0, res)
    return _if(x != x, x, res)


# Cephes' tanhf: (tanh(x) - x) / x^3 as a polynomial in x^2 on [0, 0.625]
_TANH_POLY = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
              -3.33332819422e-1)  # fmt: skip


def _tanh(x: _F) -> _F:
    """``np.tanh`` for one float32, vectorisable."""
    z = _abs(x)
    k, p = _exp_reduced(2.0 * _if(z < 10.0, z, 10.0))  # NaN and inf clamp to 10 too
    e = p * _pow2(k)  # exp(2|x|) for 2|x| <= 20: no overflow, no subnormal
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
_SQRT_HALF_BITS = 0x3F3504F3  # bits of sqrt(1/2), rounded down: the mantissa's lower bound
_ONE_BITS = 0x3F800000
_ROUNDER_BITS = 0x4B400000


def _i32(value: int) -> ir.Constant:
    return ir.Constant(_I32, value)


def _log_of(f: _F, k: _F, c: Any) -> _F:
    """``log(2^k (1 + f)) + c`` for ``1 + f`` in [sqrt(1/2), sqrt(2)): Cephes' ``logf``."""
    z = f * f
    y = _horner(f, _LOG_POLY) * f * z + (k * _LN2_LO + c) - 0.5 * z
    return f + y + k * _LN2_HI


def _log(x: _F) -> _F:
    """``np.log`` for one float32, vectorisable: ``x = 2^k (1 + f)`` from the bits
    (subnormals scaled by 2^25 first), then Cephes' polynomial."""
    b = x.b
    sub = x < 1.1754943508222875e-38
    u = _if(sub, x * 33554432.0, x)
    bits = b.add(b.bitcast(u.v, _I32), _i32(_ONE_BITS - _SQRT_HALF_BITS))
    exponent = b.sub(b.ashr(bits, _i32(23)), _i32(127))
    k = _F(b, b.bitcast(b.add(exponent, _i32(_ROUNDER_BITS)), _FLOAT)) - _ROUNDER
    mantissa = b.add(b.and_(bits, _i32(0x007FFFFF)), _i32(_SQRT_HALF_BITS))
    f = _F(b, b.bitcast(mantissa, _FLOAT)) - 1.0
    res = _log_of(f, k - _if(sub, _F(b, 25.0, _FLOAT), 0.0), 0.0)
    res = _if(x == float("inf"), float("inf"), res)
    res = _if(x == 0.0, float("-inf"), res)
    res = _if(x < 0.0, float("nan"), res)
    return _if(x != x, x, res)


def _log1p_unit(e: _F) -> _F:
    """``np.log1p`` of ``e`` in [0, 1] (or NaN), as vecmath's: ``1 + e = 2^k (1 + f)``
    with ``k`` 0 or 1, and the rounding of ``1 + e`` restored by ``c``."""
    u = 1.0 + e
    near = e < 0.41421356237309503
    tiny = e < 1e-12  # log1p is e; the polynomial would underflow
    f = _if(near, _if(tiny, 0.0, e), u * 0.5 - 1.0)
    c = _if(near, 0.0, (e - (u - 1.0)) / u)
    return _if(tiny, e, _log_of(f, _if(near, 0.0, _F(e.b, 1.0, _FLOAT)), c))


def _softplus(x: _F) -> _F:
    """``log(1 + exp(x))`` for one float32, vectorisable: ``max(x, 0) +
    log1p(exp(-|x|))`` (above 20, ``x`` itself: exp(-20) is below half an ulp of it)."""
    return _if(x > 0.0, x, 0.0) + _log1p_unit(_exp(_if(x > 20.0, -20.0, -_abs(x))))


exp = _vectorised(_exp, types.float32)
tanh = _vectorised(_tanh, types.float32)
log = _vectorised(_log, types.float32)
softplus = _vectorised(_softplus, types.float32)
