"""Linear algebra that Numba's ``np.linalg`` lacks, as loops the kernels call.

``solve_triangular(a, x, lower)`` is scipy.linalg's ``solve_triangular`` by
substitution (LAPACK's ``trsm`` order of operations, row by row), in place on the
right-hand sides ``x`` (n x k, a copy the kernel made).  Like scipy, a zero on the
diagonal is an error, not a row of infinities.  Compiled into each kernel that
calls it (no Numba disk cache of its own: see :mod:`relgraph.backends.numba.kernels`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["solve_triangular"]


@njit(nogil=True, error_model="numpy")
def solve_triangular(a, x, lower):
    """``x`` overwritten with ``a^-1 x``, reading only ``a``'s lower or upper triangle."""
    n, k = x.shape
    for step in range(n):
        i = step if lower else n - 1 - step
        lo, hi = (0, i) if lower else (i + 1, n)
        for j in range(lo, hi):
            aij = a[i, j]
            for c in range(k):
                x[i, c] -= aij * x[j, c]
        d = a[i, i]
        if d == 0:
            raise np.linalg.LinAlgError("singular matrix: a zero on the diagonal")
        for c in range(k):
            x[i, c] /= d
    return x
