"""Branch-free float64 ``erf``, ``erfc`` and ``log_ndtr`` that LLVM can vectorise
inside Numba loops, built as :mod:`relgraph.backends.numba.vecmath`'s functions are
(Numba intrinsics over its LLVM builder, selects instead of branches).

``erf``: fdlibm's rational functions below 1.25, Cephes' ``1 - exp(-x*x) P/Q`` above
(within 2 ulp of libm's).  ``erfc``: the same forms without the cancelling ``1 -``,
and ``exp(-x*x)`` from ``x*x`` as a double and its rounding error (within 6 ulp of
the exact value: libm's erfc, which it replaces in ``ndtr``, within 4; scipy's up to
32).  ``log_ndtr``: scipy's three forms, one ``erfc`` for all three and one ``log``
for the lower two.
"""

from __future__ import annotations

from relgraph.backends.numba.llvmfloat import _F, _abs, _fma, _horner, _if, _vectorised
from relgraph.backends.numba.vecmath import _F64, _exp, _exp_with, _log, _log1p

__all__ = ["erf", "erfc", "log_ndtr"]


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
# and from 8 on: exp(-x*x) R(x) / S(x)
_ERFC_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
           6.16021097993053585195e0, 7.40974269950448939160e0,
           2.97886665372100240670e0)  # fmt: skip
_ERFC_S = (2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
           1.70814450747565897222e1, 9.60896809063285878198e0,
           3.36907645100081516050e0)  # fmt: skip
_ERFC_ZERO = 27.3  # erfc is below the least subnormal from here on


def _poly(z: _F, coefficients: tuple[float, ...], lead: float | None = None) -> _F:
    """``c0 + z (c1 + z (c2 + ...))``, or ``lead + z (c0 + z (...))``."""
    acc = _horner(z, coefficients[::-1])
    return acc if lead is None else _fma(acc, z, lead)


def _erf(x: _F) -> _F:
    """``erf`` for one float64, vectorisable: fdlibm's rational functions below 1.25,
    Cephes' ``1 - exp(-x*x) P(|x|)/Q(|x|)`` above (1 from 6 on)."""
    a = _abs(x)
    xs = _if(a < 0.84375, x, 0.0)
    z = xs * xs
    small = xs + xs * (_poly(z, _ERF_PP) / _poly(z, _ERF_QQ, lead=1.0))
    m = _if(a < 1.25, a, 1.0) - 1.0
    mid = _ERX + _poly(m, _ERF_PA) / _poly(m, _ERF_QA, lead=1.0)
    xl = _if(a >= 1.25, a, 2.0)
    xl = _if(xl < 6.0, xl, 6.0)
    p, q = _horner(xl, _ERFC_P), _horner(xl, (1.0, *_ERFC_Q))
    large = 1.0 - _exp(-xl * xl) * p / q
    res = _if(a >= 1.25, large, mid)
    res = _if(x > 0.0, res, -res)
    res = _if(a < 0.84375, small, res)
    return _if(x != x, x, res)


def _erfc(x: _F) -> _F:
    """``erfc`` for one float64, vectorisable: fdlibm's forms below 1.25 (``1 - erf``
    without cancelling: ``0.5 - (x R + (x - 0.5))`` from 1/4 to 0.84375, ``1 - erf(1)
    - P/Q`` to 1.25); Cephes' ``exp(-x*x) P(|x|)/Q(|x|)`` above (R/S from 8 on), with
    ``x*x`` as a double and its rounding error, so ``exp(-x*x)`` keeps its accuracy
    where ``x*x`` has lost bits, and ``2 -`` that for negative ``x``."""
    a = _abs(x)
    xs = _if(a < 0.84375, x, 0.0)
    z = xs * xs
    r = xs * (_poly(z, _ERF_PP) / _poly(z, _ERF_QQ, lead=1.0))
    small = _if(xs < 0.25, 1.0 - (xs + r), 0.5 - (r + (xs - 0.5)))
    m = _if(a < 1.25, a, 1.0) - 1.0
    pq = _poly(m, _ERF_PA) / _poly(m, _ERF_QA, lead=1.0)
    mid = _if(x > 0.0, (1.0 - _ERX) - pq, 1.0 + (_ERX + pq))  # 1 - _ERX is exact
    xl = _if(a >= 1.25, a, 2.0)
    xl = _if(xl < _ERFC_ZERO, xl, _ERFC_ZERO)
    far = xl >= 8.0
    p = _if(far, _horner(xl, _ERFC_R), _horner(xl, _ERFC_P))
    q = _if(far, _horner(xl, (1.0, *_ERFC_S)), _horner(xl, (1.0, *_ERFC_Q)))
    hi = xl * xl
    lo = _fma(xl, xl, -hi)  # x*x = hi + lo exactly: exp(-x*x) = exp(-hi) (1 - lo)
    f = p / q
    tail = _exp_with(_F64, -hi, factor=_fma(f, -lo, f))
    tail = _if(a < _ERFC_ZERO, tail, 0.0)
    res = _if(x > 0.0, tail, 2.0 - tail)
    res = _if(a < 1.25, mid, res)
    res = _if(a < 0.84375, small, res)
    return _if(x != x, x, res)


_SQRT_HALF, _LOG_SQRT_2PI = 0.7071067811865476, 0.9189385332046728
# Below, the asymptotic series of log(ndtr): its terms to x**-10 leave 1e-15 of it
# (at -20, scipy's bound, 2.5e-12: 86 ulp), and erfc(-x/sqrt(2)) is no longer normal.
_SERIES = -37.0


def _log_ndtr(x: _F) -> _F:
    """``log(ndtr(x))`` for one float64, vectorisable, in the forms scipy uses:
    ``log1p(-erfc(x/sqrt(2))/2)`` above -1, ``log(erfc(-x/sqrt(2))/2)`` down to -37,
    and below it ``-x*x/2 - log(sqrt(2 pi)) + log(series / -x)`` (the asymptotic series
    of Abramowitz and Stegun 26.2.12): one ``erfc`` for all three, one ``log`` for
    the lower two."""
    upper = x > -1.0
    e = 0.5 * _erfc(_if(upper, x, -x) * _SQRT_HALF)
    xf = _if(x > _SERIES, _SERIES, x)  # the series only where it is used
    r = 1.0 / (xf * xf)
    series = 1.0 - r * (1.0 - 3.0 * r * (1.0 - 5.0 * r * (1.0 - 7.0 * r * (1.0 - 9.0 * r))))
    far = x <= _SERIES
    lg = _log(_if(far, series / -xf, e))
    res = _if(far, (-0.5 * xf * xf - _LOG_SQRT_2PI) + lg, lg)
    res = _if(upper, _log1p(-e), res)
    return _if(x != x, x, res)


erf = _vectorised(_erf)
erfc = _vectorised(_erfc)
log_ndtr = _vectorised(_log_ndtr)
