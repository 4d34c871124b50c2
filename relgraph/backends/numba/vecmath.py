"""Branch-free float64 ``exp``, ``log``, ``log1p``, ``sigmoid``, ``softplus``,
``logaddexp``, ``tanh``, ``hypot`` and ``arctan2`` that LLVM can vectorise inside Numba
loops, and the exponential and logarithm of any float width they are built from (the
error function and its kin are in :mod:`relgraph.backends.numba.vecspecial`, float32's
polynomials in :mod:`relgraph.backends.numba.vecmath32`).

PyPI's llvmlite has no SVML, so ``np.exp`` in a Numba loop is a scalar libm call
per element and blocks vectorisation: a fused loop ends up slower than numpy's own
SIMD ufuncs.  These are written with selects instead of branches and with bit
casts instead of ``frexp``/``ldexp`` (with
:mod:`relgraph.backends.numba.llvmfloat`'s operators over LLVM floats), so the loop
vectorises; each is a Numba ``intrinsic``, emitted in place.  Polynomials are
evaluated by Horner's rule with fused multiply-adds (one rounding per step: as
accurate as the plain formula or more, and 1.4x faster for ``exp``).  Accuracy: within
2 ulp of numpy over the whole domain (``tests/test_vecmath.py``), with numpy's results
for inf, NaN, overflow, underflow and subnormals.

``exp``: ``x = k ln2 + r``, ``|r| <= ln2/2``, ``exp(r)`` by a polynomial of degree
11 (error below 1.2e-17), then ``* 2^k`` in two steps so subnormal results are
right.  ``log1p``: fdlibm's algorithm (as in musl): ``1 + x = 2^k (1 + f)`` with a
correction term for the rounding of ``1 + x``, and the Remez polynomial in
``s = f / (2 + f)``.  ``sigmoid`` and ``softplus`` are the stable forms of
:mod:`relgraph.ops.special` over these two, ``logaddexp`` numpy's form over them.

``log``: the same polynomial as ``log1p`` on ``x = 2^k (1 + f)``.  ``tanh``:
Cephes' rational function below 0.625, ``1 - 2 / (exp(2|x|) + 1)`` above.
``hypot``: ``sqrt`` of the sum of squares, scaled by a power of two where the larger
magnitude is huge or tiny.  ``arctan2``: Cephes' ``atan`` of the smaller magnitude
over the larger, moved to its quadrant with pi/2 and pi in two parts.
``log1mexp`` calls libm through Numba: exact to numpy's accuracy, but its loops do
not vectorise.  ``exp``, ``log``, ``log1p`` and ``softplus`` take their polynomials
and thresholds as a :class:`_Precision`, so vecmath32 builds float32 ones from them;
other float32 results are these float64 ones, rounded
(:class:`~relgraph.backends.numba.elementwise.ScalarCode`).

On a CPU with AVX2 but not AVX-512 there is no vector instruction that converts
between 64-bit integers and doubles, and LLVM converts such a vector lane by lane:
:func:`_pow2` and :func:`_split` convert through
:attr:`~relgraph.backends.numba.llvmfloat._Layout.rounder` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from relgraph.backends.numba.llvmfloat import (
    _DOUBLE,
    _F,
    _abs,
    _bits,
    _floor,
    _fma,
    _horner,
    _if,
    _layout,
    _like,
    _negative,
    _prefer_wide_vectors,
    _sqrt,
    _vectorised,
    _with_bits,
)

__all__ = [
    "exp", "exp_term", "log", "log1p", "sigmoid", "softplus", "logaddexp", "tanh", "hypot",
    "arctan2", "maximum", "minimum",
]  # fmt: skip


def _pow2(k: _F) -> _F:
    """2.0 ** k for an integer-valued float k within the type's normal exponents: the
    low bits of ``k + bias``, from :attr:`_Layout.rounder`'s sum, shifted into the
    exponent field.  (Not ``fptosi``: AVX2 has no vector instruction that converts
    between 64-bit integers and doubles, and LLVM converts such a vector lane by lane,
    about 40 instructions per four doubles: half of ``exp``'s time on such a CPU.)"""
    b, t = k.b, _layout(k)
    return _with_bits(k, b.shl(b.add(_bits(k + t.rounder), t.int(t.bias)), t.int(t.mantissa)))


def _split(u: _F) -> tuple[_F, _F]:
    """``u = 2^k (1 + f)`` with ``1 + f`` in [sqrt(1/2), sqrt(2)): (k, f), from the
    bits, ``k`` converted through :attr:`_Layout.rounder` (see :func:`_pow2`)."""
    b, t = u.b, _layout(u)
    bits = b.add(_bits(u), t.int((t.bias << t.mantissa) - t.sqrt_half_bits))
    exponent = b.sub(b.ashr(bits, t.int(t.mantissa)), t.int(t.bias))
    k = _with_bits(u, b.add(exponent, t.int(t.rounder_bits))) - t.rounder
    mantissa = b.and_(bits, t.int((1 << t.mantissa) - 1))
    return k, _with_bits(u, b.add(mantissa, t.int(t.sqrt_half_bits))) - 1.0


class _Precision(NamedTuple):
    """What one float type's ``exp``, ``log``, ``log1p`` and ``softplus`` differ in
    besides its :class:`_Layout`: polynomials and thresholds."""

    exp_reduced: Callable[[_F], tuple[_F, _F]]
    exp_low: float  # below, exp rounds to 0
    exp_high: float  # above, exp overflows
    log_of: Callable[[_F, _F, Any], _F]
    tiny: float  # log1p(e) below it is e: the polynomial would underflow (a microcode
    # assist per element)
    clamp: float  # softplus(x) above it is x: exp(-clamp) is below half an ulp of x


def _exp_with(p: _Precision, x: _F, low: float | None = None, factor: _F | None = None) -> _F:
    """``exp(x)`` (times ``factor``, rounded once where the product is subnormal),
    vectorisable, 0 below ``low`` (by default, where it rounds to 0)."""
    low = p.exp_low if low is None else low
    # Outside the range the result is 0 or inf, set below: compute exp(0) there rather
    # than a clamped argument, whose subnormal intermediates cost ~100 cycles each.
    xc = _if((low <= x) & (x <= p.exp_high), x, 0.0)
    k, y = p.exp_reduced(xc)
    y = y if factor is None else y * factor
    # 2^k in two factors, each a normal number even when the result is subnormal
    k1 = _floor(k * 0.5)
    res = y * _pow2(k1) * _pow2(k - k1)
    res = _if(x > p.exp_high, float("inf"), res)
    res = _if(x < low, 0.0, res)
    return _if(x != x, x, res)


def _log_with(p: _Precision, x: _F) -> _F:
    """``np.log`` of one float, vectorisable: ``x = 2^k (1 + f)`` (a subnormal scaled
    into the normal range first), then the precision's polynomial."""
    t = _layout(x)
    sub = x < 2.0 ** (1 - t.bias)
    k, f = _split(_if(sub, x * 2.0 ** (t.mantissa + 2), x))
    res = p.log_of(f, k - _if(sub, _like(x, t.mantissa + 2), 0.0), 0.0)
    res = _if(x == float("inf"), float("inf"), res)
    res = _if(x == 0.0, float("-inf"), res)
    res = _if(x < 0.0, float("nan"), res)
    return _if(x != x, x, res)


def _log1p_unit(p: _Precision, e: _F) -> _F:
    """``np.log1p`` of ``e`` in [0, 1] (or NaN): :func:`_log1p` without what other
    arguments need.  ``1 + e = 2^k (1 + f)`` with ``k`` 0 (``e`` itself is ``f``, below
    sqrt(2) - 1) or 1 (``f = (1 + e) / 2 - 1``, exact, and the rounding of ``1 + e``
    restored by ``c``); a NaN stays NaN through the polynomial."""
    u = 1.0 + e
    near = e < 0.41421356237309503
    tiny = e < p.tiny
    f = _if(near, _if(tiny, 0.0, e), u * 0.5 - 1.0)
    c = _if(near, 0.0, (e - (u - 1.0)) / u)
    res = p.log_of(f, _if(near, 0.0, _like(e, 1.0)), c)
    return _if(tiny, e, res)


def _softplus_with(p: _Precision, x: _F) -> _F:
    """``log(1 + exp(x))`` of one float, vectorisable: ``max(x, 0) + log1p(exp(-|x|))``,
    and ``x`` itself above the clamp (which also keeps ``exp``'s result normal: a
    subnormal one costs a microcode assist)."""
    e = _exp_with(p, _if(x > p.clamp, -p.clamp, -_abs(x)))
    return _if(x > 0.0, x, 0.0) + _log1p_unit(p, e)


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10

# exp on [-ln2/2, ln2/2]: its interpolant of degree 11 at the Chebyshev nodes (solved
# at 50 digits with mpmath, rounded to doubles): error below 1.2e-17, a tenth of an
# ulp of 1.  Highest degree first.
_EXP_POLY = (2.5110037605963777e-08, 2.763263963904103e-07, 2.755724091857897e-06,
             2.4801485482328494e-05, 0.00019841269890047113, 0.0013888888952314775,
             0.008333333333319601, 0.0416666666664881, 0.1666666666666668,
             0.5000000000000019, 1.0, 1.0)  # fmt: skip


def _exp_reduced(x: _F) -> tuple[_F, _F]:
    """``exp(x) = 2^k * p``: ``k`` (an integer-valued float) and ``p``, the polynomial
    at ``r = x - k ln2``, ``|r| <= ln2/2``."""
    k = _floor(x * _LOG2E + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    return k, _horner(r, _EXP_POLY)


_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01


def _log_of(f: _F, k: _F, c: Any) -> _F:
    """``log(2^k (1 + f)) + c`` for ``1 + f`` in [sqrt(2)/2, sqrt(2)): fdlibm's Remez
    polynomial in ``s = f / (2 + f)``."""
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * _horner(w, (_LG6, _LG4, _LG2))
    t2 = z * _horner(w, (_LG7, _LG5, _LG3, _LG1))
    return s * (hfsq + t1 + t2) + (k * _LN2_LO + c) - hfsq + f + k * _LN2_HI


# exp rounds to 0 below -745.13 and overflows above 709.78; log1p(e) is e below
# 2**-54; softplus(x) is x above 37 (clamped at 40, where exp(-40) is still normal)
_F64 = _Precision(_exp_reduced, -745.1332191019412, 709.782712893384, _log_of, 1e-20, 40.0)


def _exp(x: _F) -> _F:
    """``np.exp`` for one float64, vectorisable."""
    return _exp_with(_F64, x)


def _exp_bounded(p: _Precision, x: _F) -> _F:
    """``exp(x)`` for ``x`` from 0 to where ``tanh``'s ``exp(2|x|)`` is clamped: the
    precision's polynomial and one power of two, with nothing to overflow, underflow
    or be NaN (those checks took a sixth of ``tanh``'s time)."""
    k, y = p.exp_reduced(x)
    return y * _pow2(k)


_EXP_NORMAL_MIN = -708.3964185322641  # log(2**-1022): below, exp is subnormal


def _exp_term(x: _F) -> _F:
    """``exp(x)`` as a term of a sum that also holds ``exp(0) = 1`` (logsumexp's
    ``exp(v - max)``): 0 where it is subnormal, which changes no such sum (every
    partial sum it could change is below 2**-960, and vanishes beside 1) and where
    it costs a microcode assist of ~100 cycles per element (2% of the elements of
    rows spread over 2,000: 1 ms in 10**6 elements)."""
    return _exp_with(_F64, x, _EXP_NORMAL_MIN)


def _log(x: _F) -> _F:
    """``np.log`` for one float64, vectorisable: fdlibm's polynomial."""
    return _log_with(_F64, x)


def _log1p(x: _F) -> _F:
    """``np.log1p`` for one float64, vectorisable (fdlibm's method)."""
    return _log1p_with(_F64, x)


def _log1p_with(p: _Precision, x: _F) -> _F:
    """``np.log1p`` of one float, vectorisable: fdlibm's method, with the precision's
    polynomial."""
    u = 1.0 + x
    k, f = _split(u)
    # 1 + x is rounded: c restores what the rounding lost (zero when k is large)
    c = _if(k >= 2.0, 1.0 - (u - x), x - (u - 1.0))
    c = _if(k < _layout(x).mantissa + 2.0, c / u, 0.0)
    # near 0 (1 + x within [sqrt(2)/2, sqrt(2))) use x itself: no rounding at all
    near = (x > -0.2928932188134524) & (x < 0.41421356237309503)
    f = _if(near, x, f)
    k = _if(near, 0.0, k)
    c = _if(near, 0.0, c)
    # log1p(x) is x for tiny x; the polynomial on such x would underflow, and each
    # underflow costs a microcode assist (~100 cycles): compute with 0 instead.
    tiny = _abs(x) < p.tiny
    f = _if(tiny, 0.0, f)
    res = p.log_of(f, k, c)
    res = _if(tiny, x, res)
    res = _if(x == float("inf"), float("inf"), res)
    res = _if(x == -1.0, float("-inf"), res)
    res = _if(x < -1.0, float("nan"), res)
    return _if(x != x, x, res)


def _sigmoid(x: _F) -> _F:
    """``1 / (1 + exp(-x))`` for one float64, vectorisable: exp only of ``-|x|``."""
    e = _exp(-_abs(x))
    r = 1.0 / (1.0 + e)
    return _if(x >= 0.0, r, _if(x == x, e * r, x))


def _softplus(x: _F) -> _F:
    """``log(1 + exp(x))`` for one float64, vectorisable: ``max(x, 0) + log1p(exp(-|x|))``."""
    return _softplus_with(_F64, x)


_LN2 = 0.6931471805599453


def _logaddexp(x: _F, y: _F) -> _F:
    """``np.logaddexp`` for two float64s, vectorisable, as numpy computes it: the larger
    plus ``log1p(exp(-|x - y|))`` (NaN where either is); ``x + log(2)`` where the two
    are equal (infinities of one sign too)."""
    d = x - y  # NaN where either is (and for infinities of one sign: equal)
    res = _if(d > 0.0, x, y) + _log1p_unit(_F64, _exp(-_abs(d)))
    return _if(x == y, x + _LN2, res)


_TANH_P = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
_TANH_Q = (1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)


def _tanh(x: _F) -> _F:
    """``np.tanh`` for one float64, vectorisable (Cephes' method): a rational function
    of ``x*x`` below 0.625, ``1 - 2 / (exp(2|x|) + 1)`` above (1 beyond 22)."""
    z = _abs(x)
    e = _exp_bounded(_F64, 2.0 * _if(z < 22.0, z, 22.0))  # NaN and inf clamp to 22 too
    big = 1.0 - 2.0 / (e + 1.0)
    big = _if(x > 0.0, big, -big)
    xs = _if(z < 0.625, x, 0.0)  # the small branch only where it is used: no overflow
    s = xs * xs
    p, q = _horner(s, _TANH_P), _horner(s, (1.0, *_TANH_Q))
    res = _if(z < 0.625, xs + xs * s * (p / q), big)
    return _if((x != x) | (x == 0.0), x, res)  # NaN, and a zero with its sign


def _extreme(name: str) -> Callable:
    """The Numba intrinsic ``llvm.maximum`` (or ``llvm.minimum``) of two float64s:
    NaN if either is NaN, as numpy's ``maximum``, and ``+0.0`` above ``-0.0``.  A
    reduction loop over it vectorises (one over a NaN-aware select does not)."""

    def typer(typingctx: Any, a: Any, b: Any) -> Any:
        if not all(isinstance(t, types.Float) for t in (a, b)):
            return None

        def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> Any:
            _prefer_wide_vectors(builder)
            x, y = (context.cast(builder, v, t, types.float64) for v, t in zip(args, (a, b)))
            fnty = ir.FunctionType(_DOUBLE, [_DOUBLE, _DOUBLE])
            fn = builder.module.declare_intrinsic(f"llvm.{name}", [_DOUBLE], fnty)
            return builder.call(fn, [x, y])

        return types.float64(a, b), codegen

    typer.__name__ = name
    return intrinsic(typer)


_HUGE, _TINY = 2.0**500, 2.0**-500  # hypot scales outside them, by a power of two


def _hypot(x: _F, y: _F) -> _F:
    """``np.hypot`` for two float64s, vectorisable: ``sqrt(hi^2 + lo^2)`` of the
    magnitudes, scaled by 2^-600 (2^600) where the larger is huge (tiny), so no
    square overflows or loses bits to underflow; inf wherever either is inf, NaN
    beside it included."""
    a, b = _abs(x), _abs(y)
    hi, lo = _if(a > b, a, b), _if(a > b, b, a)
    scale = _if(hi > _HUGE, 2.0**-600, _if(hi < _TINY, 2.0**600, 1.0))
    hs, ls = hi * scale, lo * scale
    res = _sqrt(_fma(hs, hs, ls * ls)) * _if(hi > _HUGE, 2.0**600, _if(hi < _TINY, 2.0**-600, 1.0))
    return _if((a == float("inf")) | (b == float("inf")), float("inf"), res)


# Cephes' atan on [0, 0.66]: x + x^3 P(x^2) / Q(x^2), Q monic
_ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1,
           -7.500855792314704667340e1, -1.228866684490136173410e2,
           -6.485021904942025371773e1)  # fmt: skip
_ATAN_Q = (1.0, 2.485846490142306297962e1, 1.650270098316988542046e2,
           4.328810604912902668951e2, 4.853903996359136964868e2,
           1.945506571482613964425e2)  # fmt: skip
_PIO4, _PIO2, _PI = 0.7853981633974483, 1.5707963267948966, 3.141592653589793
_MOREBITS, _PI_LO = 6.123233995736765886130e-17, 1.2246467991473532e-16  # pi/2's, pi's rest


def _arctan2(y: _F, x: _F) -> _F:
    """``np.arctan2(y, x)`` for two float64s, vectorisable: Cephes' atan of the ratio
    of the smaller magnitude to the larger (in [0, 1]: ``pi/4 + atan((r-1)/(r+1))``
    above 0.66), then ``pi/2 -`` it where ``|y|`` is the larger, ``pi -`` that where
    ``x``'s sign is negative (-0.0 too), and ``y``'s sign; C99's values at zeros
    (``arctan2(0, -0) = pi``) and infinities (``arctan2(inf, -inf) = 3pi/4``)."""
    a, b = _abs(y), _abs(x)
    big = a > b
    num, den = _if(big, b, a), _if(big, a, b)
    r = num / den
    mid = r > 0.66
    t = _if(mid, (r - 1.0) / (r + 1.0), r)
    z = t * t
    core = _fma(t, z * _horner(z, _ATAN_P) / _horner(z, _ATAN_Q), t)
    at = _if(mid, _PIO4 + (core + 0.5 * _MOREBITS), core)
    at = _if(num == den, _if(den == 0.0, 0.0, _PIO4), at)  # 0/0 and inf/inf: r is NaN
    # pi/2 - at where |y| is larger, pi - at where x is negative, pi/2 + at for both;
    # each constant as its double and its rest, added last
    neg = _negative(x)
    off = _if(big, _PIO2, _if(neg, _PI, 0.0))
    rest = _if(big, _MOREBITS, _if(neg, _PI_LO, 0.0))
    ang = off + (rest + _if(big, _if(neg, at, -at), _if(neg, -at, at)))
    res = _if(_negative(y), -ang, ang)
    return _if((x != x) | (y != y), x + y, res)


exp = _vectorised(_exp)
exp_term = _vectorised(_exp_term)
maximum, minimum = _extreme("maximum"), _extreme("minimum")
log = _vectorised(_log)
log1p = _vectorised(_log1p)
sigmoid = _vectorised(_sigmoid)
softplus = _vectorised(_softplus)
logaddexp = _vectorised(_logaddexp)
hypot = _vectorised(_hypot)
arctan2 = _vectorised(_arctan2)
tanh = _vectorised(_tanh)
