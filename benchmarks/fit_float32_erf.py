"""Fit the polynomials of ``vecmath32``'s float32 ``erf`` again, and compare.

Run from the repository root::

    python benchmarks/fit_float32_erf.py

``erf(x) / x - 1`` as a polynomial of degree 6 in ``x^2`` on [0, 1], and
``erfc(x) exp(x^2)`` (scipy's ``erfcx``) as one of degree 8 in ``1/x`` on [1, 3.93]:
least squares at 4,000 Chebyshev nodes (relative to ``erf(x) / x`` and to ``erfcx``),
each coefficient rounded to float32 from the lowest degree up and the rest fitted
again, so the rounded polynomial stays close to the best one.  Prints both, and exits
1 if they differ from the coefficients in ``relgraph/backends/numba/vecmath32.py``
(``check_float32_math.py erf`` checks the function they make on every float32).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import scipy.special

from relgraph.backends.numba import vecmath32


def chebyshev_nodes(a: float, b: float, n: int = 4000) -> np.ndarray:
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / n)


def fit(
    f: Callable, of: Callable, a: float, b: float, degree: int, shift: float = 0.0
) -> tuple[float, ...]:
    """Float32 coefficients of ``p(of(x)) ~ f(x)`` on [a, b], highest degree first,
    the error relative to ``shift + f(x)``."""
    x = chebyshev_nodes(a, b)
    v, y = of(x), f(x)
    weight = 1.0 / np.abs(shift + y)
    fixed: list[float] = []  # lowest degree first
    for i in range(degree + 1):
        rest = y - sum(c * v**j for j, c in enumerate(fixed))
        basis = np.stack([v**j for j in range(i, degree + 1)], 1)
        c, *_ = np.linalg.lstsq(basis * weight[:, None], rest * weight, rcond=None)
        fixed.append(float(np.float32(c[0])))
    return tuple(fixed[::-1])


def erf_over_x_minus_1(z: np.ndarray) -> np.ndarray:
    s = np.sqrt(np.maximum(z, 1e-30))
    return scipy.special.erf(s) / s - 1.0


def main() -> int:
    fits = {
        "_ERF_SMALL": fit(erf_over_x_minus_1, lambda z: z, 0.0, 1.0, 6, shift=1.0),
        "_ERFCX": fit(scipy.special.erfcx, lambda x: 1.0 / x, 1.0, 3.93, 8),
    }
    differ = False
    for name, coefficients in fits.items():
        kept = tuple(float(np.float32(c)) for c in getattr(vecmath32, name))
        same = kept == coefficients
        differ |= not same
        print(f"{name} = {tuple(str(np.float32(c)) for c in coefficients)}")
        print(f"  as in vecmath32: {same}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
