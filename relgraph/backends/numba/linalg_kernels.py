"""Linear algebra as numpy and scipy compute it, for the kernels to call.

``solve_triangular(a, x, lower)`` is scipy.linalg's ``solve_triangular``, which
Numba's ``np.linalg`` lacks, by substitution, in place on the right-hand sides ``x``
(n x k, a copy the kernel made), in the order ``a`` is laid out in memory: by columns
where ``a``'s columns are contiguous (a transposed factor, ``cholesky(S).T``: no copy
of it), each solved value subtracted from the rows still to solve, as LAPACK's
``trsv``; otherwise by rows, one or two right-hand sides a dot product of ``a``'s row
each, more all at once (``trsm``'s order).  Like scipy, a zero on the diagonal is an
error, not a row of infinities.

``inv``, ``solve``, ``det`` and ``slogdet`` are numpy's.  Numba's ``np.linalg``
raises ``LinAlgError`` on an infinity or a NaN, where numpy computes (``inv`` of
``diag(nan, 1)`` is ``[[nan, nan], [0, 1]]``), so such operands go to numpy's LAPACK
(in object mode: the pattern of NaNs is LAPACK's own).

Each is compiled into each kernel that calls it (no Numba disk cache of its own: see
:mod:`relgraph.backends.numba.kernels`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, objmode

__all__ = ["solve_triangular", "inv", "solve", "det", "slogdet"]

FEW_COLUMNS = 2  # right-hand sides solved one by one (measured: 3x at 200 x 200)


@njit(nogil=True, error_model="numpy")
def solve_triangular(a, x, lower):
    """``x`` overwritten with ``a^-1 x``, reading only ``a``'s lower or upper triangle."""
    if a.strides[0] < a.strides[1]:  # a's columns are contiguous
        return _by_columns(a, x, lower)
    n, k = x.shape
    for step in range(n):
        i = step if lower else n - 1 - step
        lo, hi = (0, i) if lower else (i + 1, n)
        d = _diagonal(a, i)
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
def _by_columns(a, x, lower):
    """:func:`solve_triangular` down ``a``'s columns: each solved ``x[j]`` times column
    ``j`` of ``a`` (contiguous) subtracted from the rows below (above) it."""
    n, k = x.shape
    for step in range(n):
        j = step if lower else n - 1 - step
        lo, hi = (j + 1, n) if lower else (0, j)
        d = _diagonal(a, j)
        if k <= FEW_COLUMNS:  # down the column, one right-hand side at a time
            for c in range(k):
                xj = x[j, c] / d
                x[j, c] = xj
                for i in range(lo, hi):
                    x[i, c] -= xj * a[i, j]
            continue
        for c in range(k):
            x[j, c] /= d
        for i in range(lo, hi):  # the loop over columns vectorises
            aij = a[i, j]
            for c in range(k):
                x[i, c] -= aij * x[j, c]
    return x


@njit(nogil=True, error_model="numpy")
def _diagonal(a, i):
    d = a[i, i]
    if d == 0:
        raise np.linalg.LinAlgError("singular matrix: a zero on the diagonal")
    return d


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


# Their object mode takes the GIL (Numba warns of nogil=True on them).
_WITH_NUMPY = njit(error_model="numpy")


@_WITH_NUMPY
def inv(a):
    """numpy's ``inv(a)``, of ``a``'s dtype, in Fortran order as Numba's: by numpy's
    algorithm, ``solve(a, I)`` (Numba's ``inv``, LAPACK's ``getri``, is 1.2-1.9x faster
    but gives ``inv(eye(3))`` zeros of the other sign, and other roundings)."""
    if np.isfinite(a).all():
        return np.linalg.solve(a, np.eye(a.shape[0], dtype=a.dtype))
    with objmode(out="float64[::1, :]"):
        out = np.asfortranarray(np.linalg.inv(a), np.float64)
    return out.T.astype(a.dtype).T  # exact: numpy computed in a's dtype


@_WITH_NUMPY
def solve(a, b):
    """numpy's ``solve(a, b)`` for a matrix ``b``, as :func:`inv`."""
    if np.isfinite(a).all() and np.isfinite(b).all():
        return np.linalg.solve(a, b)
    with objmode(out="float64[::1, :]"):
        out = np.asfortranarray(np.linalg.solve(a, b), np.float64)
    return out.T.astype(a.dtype).T


@_WITH_NUMPY
def det(a):
    """numpy's ``det(a)``, as a float64 (as Numba's)."""
    if np.isfinite(a).all():
        return np.linalg.det(a)
    with objmode(out="float64"):
        out = float(np.linalg.det(a))
    return out


@_WITH_NUMPY
def slogdet(a):
    """numpy's ``slogdet(a)``: (sign, log of the absolute value), as float64s."""
    if np.isfinite(a).all():
        return np.linalg.slogdet(a)
    with objmode(sign="float64", logabsdet="float64"):
        found = np.linalg.slogdet(a)
        sign, logabsdet = float(found[0]), float(found[1])
    return sign, logabsdet
