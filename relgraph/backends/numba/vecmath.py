"""Branch-free float64 ``exp``, ``log``, ``log1p``, ``sigmoid``, ``softplus``, ``tanh``
and ``erf`` that LLVM can vectorise inside Numba loops.

PyPI's llvmlite has no SVML, so ``np.exp`` in a Numba loop is a scalar libm call
per element and blocks vectorisation: a fused loop ends up slower than numpy's own
SIMD ufuncs.  These are written with selects instead of branches and with bit
casts (a Numba intrinsic) instead of ``frexp``/``ldexp``, so the loop vectorises.
Accuracy: within 2 ulp of numpy over the whole domain (``tests/test_vecmath.py``),
with numpy's results for inf, NaN, overflow, underflow and subnormals.

``exp``: ``x = k ln2 + r``, ``|r| <= ln2/2``, ``exp(r)`` by its Taylor series to
degree 13 (error below 2^-60), then ``* 2^k`` in two steps so subnormal results
are right.  ``log1p``: fdlibm's algorithm (as in musl): ``1 + x = 2^k (1 + f)``
with a correction term for the rounding of ``1 + x``, and the Remez polynomial in
``s = f / (2 + f)``.  ``sigmoid`` and ``softplus`` are the stable forms of
:mod:`relgraph.ops.special` over these two.

``log``: the same polynomial as ``log1p`` on ``x = 2^k (1 + f)``.  ``erf``: fdlibm's
rational functions below 1.25, Cephes' ``1 - exp(-x*x) P/Q`` above.  ``tanh``:
Cephes' rational function below 0.625, ``1 - 2 / (exp(2|x|) + 1)`` above.
``log1mexp`` (and float32 results) call libm through Numba: exact to numpy's accuracy,
but their loops do not vectorise.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["exp", "log", "log1p", "sigmoid", "softplus", "tanh", "erf"]


@intrinsic
def _f64_from_bits(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def _bits_from_f64(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_EXP_MAX = 709.782712893384  # above: inf
_EXP_MIN = -745.1332191019412  # below: 0


@njit(inline="always", error_model="numpy")
def _pow2(k):
    """2.0 ** k for an integer-valued float k in [-1022, 1023]."""
    return _f64_from_bits(np.int64(k + 1023.0) << 52)


@njit(inline="always", error_model="numpy")
def exp(x):
    """``np.exp`` for one float64, vectorisable."""
    # Outside the range the result is 0 or inf, set below: compute exp(0) there rather
    # than a clamped argument, whose subnormal intermediates cost ~100 cycles each.
    xc = x if _EXP_MIN <= x <= _EXP_MAX else 0.0
    k = np.floor(xc * _LOG2E + 0.5)
    r = (xc - k * _LN2_HI) - k * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    # 2^k in two factors, each a normal number even when the result is subnormal
    k1 = np.floor(k * 0.5)
    res = p * _pow2(k1) * _pow2(k - k1)
    res = np.inf if x > _EXP_MAX else res
    res = 0.0 if x < _EXP_MIN else res
    return x if x != x else res


_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_SQRT2_HALF_BITS = 0x3FE6A09E00000000  # bits of about sqrt(2)/2: mantissa lower bound
_ONE_BITS = 0x3FF0000000000000


@njit(inline="always", error_model="numpy")
def _log_of(f, k, c):
    """``log(2^k (1 + f)) + c`` for ``1 + f`` in [sqrt(2)/2, sqrt(2)): fdlibm's Remez
    polynomial in ``s = f / (2 + f)``."""
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    return s * (hfsq + t1 + t2) + (k * _LN2_LO + c) - hfsq + f + k * _LN2_HI


@njit(inline="always", error_model="numpy")
def log(x):
    """``np.log`` for one float64, vectorisable: ``x = 2^k (1 + f)``, then fdlibm's
    polynomial (subnormals scaled by 2^54 first)."""
    sub = x < 2.2250738585072014e-308
    xs = x * 18014398509481984.0 if sub else x
    bits = _bits_from_f64(xs) + (_ONE_BITS - _SQRT2_HALF_BITS)
    k = np.float64((bits >> 52) - 1023) - (54.0 if sub else 0.0)
    f = _f64_from_bits((bits & 0x000FFFFFFFFFFFFF) + _SQRT2_HALF_BITS) - 1.0
    res = _log_of(f, k, 0.0)
    res = np.inf if x == np.inf else res
    res = -np.inf if x == 0.0 else res
    res = np.nan if x < 0.0 else res
    return x if x != x else res


@njit(inline="always", error_model="numpy")
def log1p(x):
    """``np.log1p`` for one float64, vectorisable (fdlibm's method)."""
    u = 1.0 + x
    bits = _bits_from_f64(u) + (_ONE_BITS - _SQRT2_HALF_BITS)
    k = np.float64((bits >> 52) - 1023)
    # 1 + x is rounded: c restores what the rounding lost (zero when k is large)
    c = (1.0 - (u - x)) if k >= 2.0 else (x - (u - 1.0))
    c = c / u if k < 54.0 else 0.0
    f = _f64_from_bits((bits & 0x000FFFFFFFFFFFFF) + _SQRT2_HALF_BITS) - 1.0
    # near 0 (1 + x within [sqrt(2)/2, sqrt(2))) use x itself: no rounding at all
    near = (x > -0.2928932188134524) and (x < 0.41421356237309503)
    f = x if near else f
    k = 0.0 if near else k
    c = 0.0 if near else c
    # log1p(x) is x when |x| < 2**-54; the polynomial on such x would underflow, and
    # each underflow costs a microcode assist (~100 cycles): compute with 0 instead.
    tiny = abs(x) < 1e-20
    f = 0.0 if tiny else f
    res = _log_of(f, k, c)
    res = x if tiny else res
    res = np.inf if x == np.inf else res
    res = -np.inf if x == -1.0 else res
    res = np.nan if x < -1.0 else res
    return x if x != x else res


@njit(inline="always", error_model="numpy")
def sigmoid(x):
    """``1 / (1 + exp(-x))`` for one float64, vectorisable: exp only of ``-|x|``."""
    e = exp(-abs(x))
    r = 1.0 / (1.0 + e)
    return r if x >= 0.0 else (e * r if x == x else x)


@njit(inline="always", error_model="numpy")
def softplus(x):
    """``log(1 + exp(x))`` for one float64, vectorisable: ``max(x, 0) + log1p(exp(-|x|))``."""
    return (x if x > 0.0 else 0.0) + log1p(exp(-abs(x)))


_TANH_P = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
_TANH_Q = (1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)


@njit(inline="always", error_model="numpy")
def tanh(x):
    """``np.tanh`` for one float64, vectorisable (Cephes' method): a rational function
    of ``x*x`` below 0.625, ``1 - 2 / (exp(2|x|) + 1)`` above (1 beyond 22)."""
    z = abs(x)
    e = exp(2.0 * (z if z < 22.0 else 22.0))
    big = 1.0 - 2.0 / (e + 1.0)
    big = big if x > 0.0 else -big
    xs = x if z < 0.625 else 0.0  # the small branch only where it is used: no overflow
    s = xs * xs
    p = (_TANH_P[0] * s + _TANH_P[1]) * s + _TANH_P[2]
    q = ((s + _TANH_Q[0]) * s + _TANH_Q[1]) * s + _TANH_Q[2]
    res = (xs + xs * s * (p / q)) if z < 0.625 else big
    return x if x != x else res


# fdlibm's erf below 1.25: x + x R(x*x) below 0.84375, erf(1) + P(s)/Q(s) in s = |x| - 1
_ERF_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01,
           -2.84817495755985104766e-02, -5.77027029648944159157e-03,
           -2.37630166566501626084e-05)  # fmt: skip
_ERF_QQ = (3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
           1.32494738004321644526e-04, -3.96022827877536812320e-06)  # fmt: skip
_ERF_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01,
           -3.72207876035701323847e-01, 3.18346619901161753674e-01,
           -1.10894694282396677476e-01, 3.54783043256182359371e-02,
           -2.16637559486879084300e-03)  # fmt: skip
_ERF_QA = (1.06420880400844228286e-01, 5.40397917702171048937e-01,
           7.18286544141962662868e-02, 1.26171219808761642112e-01,
           1.36370839120290507362e-02, 1.19844998467991074170e-02)  # fmt: skip
_ERX = 8.45062911510467529297e-01
# Cephes' erfc from 1.25: exp(-x*x) P(x) / Q(x)
_ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
           4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
           9.34528527171957607540e2, 1.02755188689515710272e3,
           5.57535335369399327526e2)  # fmt: skip
_ERFC_Q = (1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
           9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
           1.65666309194161350182e3, 5.57535340817727675546e2)  # fmt: skip


@njit(inline="always", error_model="numpy")
def erf(x):
    """``erf`` for one float64, vectorisable: fdlibm's rational functions below 1.25,
    Cephes' ``1 - exp(-x*x) P(|x|)/Q(|x|)`` above (1 from 6 on).  Straight-line
    Horner forms: Numba's parallel compiler is slow on loops over tuples."""
    a = abs(x)
    xs = x if a < 0.84375 else 0.0
    z = xs * xs
    pp, qq = _ERF_PP, _ERF_QQ
    r = pp[0] + z * (pp[1] + z * (pp[2] + z * (pp[3] + z * pp[4])))
    s = 1.0 + z * (qq[0] + z * (qq[1] + z * (qq[2] + z * (qq[3] + z * qq[4]))))
    small = xs + xs * (r / s)
    m = (a if a < 1.25 else 1.0) - 1.0
    pa, qa = _ERF_PA, _ERF_QA
    p = pa[0] + m * (pa[1] + m * (pa[2] + m * (pa[3] + m * (pa[4] + m * (pa[5] + m * pa[6])))))
    q = 1.0 + m * (qa[0] + m * (qa[1] + m * (qa[2] + m * (qa[3] + m * (qa[4] + m * qa[5])))))
    mid = _ERX + p / q
    xl = a if a >= 1.25 else 2.0
    xl = xl if xl < 6.0 else 6.0
    cp, cq = _ERFC_P, _ERFC_Q
    p = ((((((((cp[0] * xl + cp[1]) * xl + cp[2]) * xl + cp[3]) * xl + cp[4]) * xl + cp[5])
           * xl + cp[6]) * xl + cp[7]) * xl + cp[8])  # fmt: skip
    q = ((((((((xl + cq[0]) * xl + cq[1]) * xl + cq[2]) * xl + cq[3]) * xl + cq[4]) * xl
           + cq[5]) * xl + cq[6]) * xl + cq[7])  # fmt: skip
    large = 1.0 - exp(-xl * xl) * p / q
    res = large if a >= 1.25 else mid
    res = res if x > 0.0 else -res
    res = small if a < 0.84375 else res
    return x if x != x else res
