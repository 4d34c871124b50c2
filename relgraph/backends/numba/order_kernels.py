"""Numba kernels of the order statistics (:mod:`relgraph.ops.order`), on C-contiguous
arrays whose last axis is the one sorted or reduced: each row is sorted (Numba's
``np.sort``, NaN last as numpy's) and the statistic read from it with numpy's formula.

``median_rows`` and ``quantile_rows`` take the dtype the statistic is computed in
(``wide``: float64 for integers, float32 for float16, else the array's) and the
result's; ``quantile_rows`` takes the array's own dtype too (``narrow``), in which
numpy takes ``b - a``: integers wrap around there.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["sort_last", "median_rows", "quantile_rows"]

SHORT = 32  # rows up to this long are sorted by insertion: a call of sort() costs more


@njit(inline="always")
def _before(a, b):
    """Whether ``a`` sorts before ``b``: NaN after everything (a NaN is never before)."""
    return a < b or (b != b and a == a)


@njit(nogil=True, error_model="numpy")
def _sort_in_place(row):
    """``row`` sorted in place, NaN last: by insertion where it is short (stable), by
    Numba's sort otherwise."""
    n = row.shape[0]
    if n > SHORT:
        row.sort()
        return
    for i in range(1, n):
        v = row[i]
        j = i - 1
        while j >= 0 and _before(v, row[j]):
            row[j + 1] = row[j]
            j -= 1
        row[j + 1] = v


@njit(nogil=True, error_model="numpy")
def sort_last(a):
    """Each row along the last axis sorted, NaN last."""
    out = np.empty(a.shape, a.dtype)
    n = a.shape[-1]
    if a.size == 0:
        return out
    rows, outs = a.reshape((a.size // n, n)), out.reshape((a.size // n, n))
    for i in range(rows.shape[0]):
        row = outs[i]
        row[:] = rows[i]
        _sort_in_place(row)  # np.sort made a copy per row
    return out


@njit(inline="always")
def _count(s, skip):
    """How many values of the sorted row ``s`` count: all of them, or with ``skip``
    its numbers (NaNs sort last); -1 where a NaN makes the statistic NaN."""
    n = s.shape[0]
    if not skip:
        return -1 if n and s[n - 1] != s[n - 1] else n
    while n and s[n - 1] != s[n - 1]:
        n -= 1
    return n


@njit(nogil=True, error_model="numpy")
def median_rows(a, wide, dtype, skip):
    """The median of each row of the matrix ``a``: its middle value, or the mean of
    the middle two; NaN for a row that holds a NaN (with ``skip``, of its numbers:
    NaN for a row of NaNs), or is empty (numpy warns there)."""
    rows, n = a.shape
    out = np.empty(rows, dtype)
    s = np.empty(n, a.dtype)  # each row sorted in place here
    for i in range(rows):
        s[:] = a[i]
        _sort_in_place(s)
        k = _count(s, skip)
        h = k // 2
        if k <= 0:
            out[i] = np.nan
        elif k % 2:
            out[i] = dtype(wide(s[h]))
        else:
            out[i] = dtype((wide(s[h - 1]) + wide(s[h])) / wide(2))
    return out


@njit(nogil=True, error_model="numpy")
def quantile_rows(a, q, narrow, wide, dtype, skip, method):
    """The ``q`` quantile of each row of the matrix ``a``, by numpy's linear method
    (``method`` 0): the index ``(n - 1) q``, its neighbours ``a <= b`` and its fraction
    ``t`` (the index plus 1 past the last value, as numpy's), ``a + (b - a) t`` below
    0.5, else ``b - (b - a)(1 - t)``; or ``a`` itself (1, "lower") or ``b`` (2,
    "higher").  NaN for a row that holds a NaN (with ``skip``, ``n`` counts its
    numbers: NaN for a row of NaNs)."""
    rows, n = a.shape
    if n == 0 and not skip:
        raise IndexError("quantile of an empty slice")
    out = np.empty(rows, dtype)
    s = np.empty(n, a.dtype)
    for i in range(rows):
        s[:] = a[i]
        _sort_in_place(s)
        k = _count(s, skip)
        if k <= 0:
            out[i] = np.nan
            continue
        index = (k - 1) * q
        if method:
            out[i] = s[int(np.floor(index)) if method == 1 else int(np.ceil(index))]
            continue
        if index >= k - 1:
            low, high, t = k - 1, k - 1, index + 1.0
        else:
            low = int(np.floor(index))
            high, t = low + 1, index - low
        diff = wide(narrow(s[high] - s[low]))
        if t >= 0.5:
            out[i] = dtype(wide(s[high]) - diff * wide(1.0 - t))
        else:
            out[i] = dtype(wide(s[low]) + diff * wide(t))
    return out
