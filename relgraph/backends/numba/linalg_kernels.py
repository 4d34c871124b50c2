"""Linear algebra that Numba's ``np.linalg`` lacks, as loops the kernels call.

``solve_triangular(a, x, lower)`` is scipy.linalg's ``solve_triangular`` by
substitution, row by row, in place on the right-hand sides ``x`` (n x k, a copy the
kernel made): one or two right-hand sides a dot product of ``a``'s row each, more all
at once (LAPACK's ``trsm`` order of operations).  Like scipy, a zero on the
diagonal is an error, not a row of infinities.  Compiled into each kernel that
calls it (no Numba disk cache of its own: see :mod:`relgraph.backends.numba.kernels`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["solve_triangular"]

FEW_COLUMNS = 2  # right-hand sides solved one by one (measured: 3x at 200 x 200)


@njit(nogil=True, error_model="numpy")
def solve_triangular(a, x, lower):
    """``x`` overwritten with ``a^-1 x``, reading only ``a``'s lower or upper triangle."""
    n, k = x.shape
    for step in range(n):
        i = step if lower else n - 1 - step
        lo, hi = (0, i) if lower else (i + 1, n)
        d = a[i, i]
        if d == 0:
            raise np.linalg.LinAlgError("singular matrix: a zero on the diagonal")
        if k <= FEW_COLUMNS:  # one column at a time: a dot product of a's row
            for c in range(k):
                x[i, c] = (x[i, c] - _row_dot(a, x, i, c, lo, hi)) / d
            continue
        for j in range(lo, hi):  # a's row times x's rows: the loop over columns vectorises
            aij = a[i, j]
            for c in range(k):
                x[i, c] -= aij * x[j, c]
        for c in range(k):
            x[i, c] /= d
    return x


@njit(nogil=True, error_model="numpy")
def _row_dot(a, x, i, c, lo, hi):
    """``sum(a[i, lo:hi] * x[lo:hi, c])`` in four interleaved partial sums: one sum
    waits for each add before the next, four keep the multiply-add units busy."""
    s0 = s1 = s2 = s3 = 0.0
    j = lo
    while j + 4 <= hi:
        s0 += a[i, j] * x[j, c]
        s1 += a[i, j + 1] * x[j + 1, c]
        s2 += a[i, j + 2] * x[j + 2, c]
        s3 += a[i, j + 3] * x[j + 3, c]
        j += 4
    while j < hi:
        s0 += a[i, j] * x[j, c]
        j += 1
    return (s0 + s1) + (s2 + s3)
