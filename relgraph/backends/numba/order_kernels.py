"""Numba kernels of the order statistics (:mod:`relgraph.ops.order`), on matrices whose
rows are sorted or reduced: C-contiguous, or for a median or quantile along the first
axis, the transposed view of the array, read in place.  Many short rows are sorted by
the sorting network (:mod:`relgraph.backends.numba.sort_network`), 32 at a time; other
rows one by one, NaN last as numpy's (a sort in place, by insertion where a row is
short; an argsort by a stable merge sort).  Where no network sorts a row, a median or
quantile moves its numbers first and selects the values it needs (:func:`_select`:
quickselect, as numpy's ``partition``, with a partition that has no branch), then
applies numpy's formula.

``median_rows`` and ``quantile_rows`` take the dtype the statistic is computed in
(``wide``: float64 for integers and bools, else the array's own) and the result's;
``quantile_rows`` takes the array's own dtype too (``narrow``), in which numpy takes
``b - a``: integers wrap around there.

Rows run in blocks of ``BLOCK``, each with its sort buffer; the ``_parallel`` twins
(the same functions compiled with ``parallel=True``) run the blocks on every core, for
the kernels whose loops are ``prange`` (a row's statistic does not depend on another
row's).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, types
from numba.extending import overload

from relgraph.backends.numba.hugepages import fresh
from relgraph.backends.numba.sort_network import (
    FEWEST,
    LANES,
    LONGEST,
    argsort_block,
    has_keys,
    key_buffer,
    network,
    sort_block,
)

__all__ = [
    "sort_last", "median_rows", "quantile_rows", "sort_last_parallel", "median_rows_parallel",
    "quantile_rows_parallel", "argsort_last", "argsort_last_parallel",
]  # fmt: skip

BLOCK = 64  # rows per block: one buffer each

SHORT = 32  # rows up to this long are sorted by insertion: a call of sort() costs more
RADIX = 4096  # float64 rows from this long are sorted by radix (below, its passes cost more)


@njit(inline="always")
def _before(a, b):
    """Whether ``a`` sorts before ``b``: NaN after everything (a NaN is never before)."""
    return a < b or (b != b and a == a)


@njit(nogil=True, error_model="numpy")
def _sort_in_place(row):
    """``row`` sorted in place, NaN last: by insertion where it is short (stable), a
    long float64 row by radix (:func:`_radix`), others by Numba's sort."""
    n = row.shape[0]
    if n > SHORT:
        _long_sort(row)
        return
    for i in range(1, n):
        v = row[i]
        j = i - 1
        while j >= 0 and _before(v, row[j]):
            row[j + 1] = row[j]
            j -= 1
        row[j + 1] = v


def _long_sort(row):
    """A long row sorted in place (dispatched on its dtype, see the overload)."""
    row.sort()


@overload(_long_sort, jit_options={"nogil": True})
def _long_sort_by_dtype(row):
    if row.dtype == types.float64:

        def radix_when_long(row):
            if row.shape[0] >= RADIX:
                _radix(row)
            else:
                row.sort()

        return radix_when_long
    return lambda row: row.sort()


SIGN, ALL = np.uint64(1 << 63), np.uint64((1 << 64) - 1)
DIGIT, DIGITS = 11, 6  # bits per pass, passes (6 x 11 >= 64)


@njit(nogil=True, error_model="numpy")
def _radix(row):
    """A float64 row sorted in place by LSD radix over order-preserving keys (a
    float's bits, all flipped where negative, else its sign bit set): six passes of
    11 bits, a pass skipped where every key shares its digit; NaNs (no key) after
    the numbers, as they came.  -0.0 sorts before 0.0.  Twice numpy's sort of 10^6
    doubles here, where Numba's quicksort was half as fast as numpy's."""
    n, bits = row.shape[0], row.view(np.uint64)
    keys = np.empty(n, np.uint64)
    nans = np.empty(n, np.float64)
    counts = np.zeros((DIGITS, 1 << DIGIT), np.int64)
    m = k_nan = 0
    for i in range(n):  # the keys of the numbers, and every pass's histogram
        if row[i] != row[i]:
            nans[k_nan] = row[i]
            k_nan += 1
            continue
        b = bits[i]
        key = b ^ ALL if b >> np.uint64(63) else b | SIGN
        keys[m] = key
        m += 1
        for p in range(DIGITS):
            counts[p, (key >> np.uint64(DIGIT * p)) & np.uint64((1 << DIGIT) - 1)] += 1
    src, dst = keys[:m], np.empty(m, np.uint64)
    for p in range(DIGITS):
        c = counts[p]
        if c.max() == m:
            continue  # every key has this digit: nothing moves
        total = 0
        for d in range(1 << DIGIT):
            c[d], total = total, total + c[d]
        shift = np.uint64(DIGIT * p)
        for i in range(m):
            d = (src[i] >> shift) & np.uint64((1 << DIGIT) - 1)
            dst[c[d]] = src[i]
            c[d] += 1
        src, dst = dst, src
    for i in range(m):  # back to the floats' bits
        key = src[i]
        bits[i] = key ^ SIGN if key >> np.uint64(63) else key ^ ALL
    row[m:] = nans[:k_nan]


@njit(inline="always")
def _matrices(a, out):
    """``a`` and ``out`` (non-empty) as matrices of their rows along the last axis, and
    how many rows."""
    n = a.shape[-1]
    rows = a.size // n
    return a.reshape((rows, n)), out.reshape((rows, n)), rows


def _sort_last(a):
    """Each row along the last axis sorted, NaN last: many short rows by a sorting
    network across rows (:mod:`~relgraph.backends.numba.sort_network`), others one by
    one."""
    out = fresh(a.shape, a.dtype)
    if a.size == 0:
        return out
    rows, outs, count = _matrices(a, out)
    pairs = _pairs(count, a.shape[-1])
    for b in prange((count + BLOCK - 1) // BLOCK):
        _sort_rows(rows, outs, b * BLOCK, min(b * BLOCK + BLOCK, count), pairs)
    return out


@njit(nogil=True, error_model="numpy")
def _row_by_row(rows, outs, lo, hi):
    for i in range(lo, hi):
        row = outs[i]
        row[:] = rows[i]
        _sort_in_place(row)  # np.sort made a copy per row


def _sort_rows(rows, outs, lo, hi, pairs):
    """Rows ``lo .. hi`` of ``rows`` sorted into ``outs``: by the network ``pairs`` in
    blocks of LANES rows where there is one and the dtype has keys (see the
    overload), else row by row."""


@njit(inline="always")
def _sort_block(rows, first, count, pairs, buf, outs):
    sort_block(rows, first, count, pairs, buf, outs, first)


def _in_blocks(row_by_row, buffers, block):
    """The implementation of ``_sort_rows`` or ``_argsort_rows`` for a dtype with keys:
    ``block`` (with the ``buffers`` of the rows) on each block of LANES rows, or
    ``row_by_row`` where there is no network or too few rows."""

    def by_network(rows, outs, lo, hi, pairs):
        if pairs.shape[0] == 0:
            row_by_row(rows, outs, lo, hi)
            return
        buf = buffers(rows)
        for first in range(lo, hi, LANES):
            count = min(LANES, hi - first)
            if count < FEWEST:
                row_by_row(rows, outs, first, hi)
            else:
                block(rows, first, count, pairs, buf, outs)

    return by_network


@overload(_sort_rows, jit_options={"nogil": True})
def _sort_rows_by_dtype(rows, outs, lo, hi, pairs):
    if not has_keys(rows.dtype):
        return lambda rows, outs, lo, hi, pairs: _row_by_row(rows, outs, lo, hi)
    return _in_blocks(_row_by_row, key_buffer, _sort_block)


def _argsort_last(a):
    """For each row along the last axis, the indices that sort it: NaN last, equal
    values in their order (many short rows by the sorting network on pairs of key and
    index, others by a stable merge sort, insertion for short runs)."""
    out = fresh(a.shape, np.int64)
    if a.size == 0:
        return out
    rows, outs, count = _matrices(a, out)
    pairs = _pairs(count, a.shape[-1])
    for b in prange((count + BLOCK - 1) // BLOCK):
        _argsort_rows(rows, outs, b * BLOCK, min(b * BLOCK + BLOCK, count), pairs)
    return out


@njit(nogil=True, error_model="numpy")
def _orders_row_by_row(rows, outs, lo, hi):
    spare = np.empty(rows.shape[1], np.int64)
    for i in range(lo, hi):
        _stable_order(rows[i], outs[i], spare)


def _argsort_rows(rows, outs, lo, hi, pairs):
    """:func:`_sort_rows` for the indices that sort the rows."""


@njit(inline="always")
def _argsort_buffers(rows):
    keys = key_buffer(rows)
    return keys, np.empty(keys.shape, np.int64)


@overload(_argsort_rows, jit_options={"nogil": True})
def _argsort_rows_by_dtype(rows, outs, lo, hi, pairs):
    if not has_keys(rows.dtype):
        return lambda rows, outs, lo, hi, pairs: _orders_row_by_row(rows, outs, lo, hi)
    return _in_blocks(_orders_row_by_row, _argsort_buffers, argsort_block)


@njit(nogil=True, error_model="numpy")
def _stable_order(row, idx, spare):
    """``idx`` set to the indices that sort ``row`` stably (``spare``: a buffer)."""
    n = row.shape[0]
    for i in range(n):
        idx[i] = i
    for lo in range(0, n, SHORT):  # runs of SHORT by insertion
        hi = min(lo + SHORT, n)
        for i in range(lo + 1, hi):
            v = idx[i]
            j = i - 1
            while j >= lo and _before(row[v], row[idx[j]]):
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = v
    width, src, dst = SHORT, idx, spare
    while width < n:  # merge runs pairwise: the left one first among equals
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j < hi and (i >= mid or _before(row[src[j]], row[src[i]])):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
        src, dst = dst, src
        width *= 2
    if src is not idx:
        idx[:] = src


@njit(inline="always")
def _numbers_first(s, a, i, skip):
    """Row ``i`` of ``a`` copied into row 0 of ``s``, its numbers first: how many there
    are, or -1 where a NaN makes the statistic NaN (without ``skip``).  Rows are read
    by index, not as views: a view costs two atomic reference counts, more than a
    short row's statistic."""
    k = 0
    last = a.shape[1]
    for j in range(a.shape[1]):
        v = a[i, j]
        if v == v:
            s[0, k] = v
            k += 1
        elif not skip:
            return -1
        else:
            last -= 1
            s[0, last] = v
    return k


@njit(nogil=True, error_model="numpy")
def _select(s, k, j):
    """Reorder ``s[:k]`` (numbers) so that ``s[j]`` is the ``j``-th smallest, nothing
    larger before it, nothing smaller after it (quickselect, as numpy's ``partition``).

    Each round moves the values below the pivot to the front without a branch (a swap
    at every place, the front's end moved by the comparison: about 3x faster than
    Hoare's partition on random data, whose branches the CPU mispredicts half the
    time), then, where ``j`` is not in the front, the values equal to the pivot after
    it (so many equal values end the search).  The pivot is the median of the values
    a quarter in from either end and in the middle; after a round that kept more than
    7/8 of the range, of three at pseudo-random places.  After ``BAD_ROUNDS`` such
    rounds the rest is sorted (the rounds that shrink the range by 1/8 add up to 16k
    steps at most)."""
    lo, hi, seed, spread, bad = 0, k, 12345, True, 0
    while hi - lo > SHORT and bad <= BAD_ROUNDS:
        n = hi - lo
        if spread:
            a, b, c = s[lo + n // 4], s[lo + n // 2], s[hi - 1 - n // 4]
        else:
            seed = (seed * 6364136223846793005 + 1442695040888963407) & _LOW_63
            a, b, c = s[lo + seed % n], s[lo + (seed >> 21) % n], s[lo + (seed >> 42) % n]
        pivot = max(min(a, b), min(max(a, b), c))
        front = _move_front(s, lo, hi, pivot, False)
        if j < front:
            hi = front
        else:
            equal = _move_front(s, front, hi, pivot, True)
            if j < equal:
                return  # equal to the pivot
            lo = equal
        spread = hi - lo <= n - n // 8
        bad += not spread
    _sort_in_place(s[lo:hi])


#: Rounds of :func:`_select` that may keep more than 7/8 of the range before it sorts
#: the rest (the median of three random values does that in one round of eleven).
BAD_ROUNDS = 16
_LOW_63 = (1 << 63) - 1


@njit(inline="always")
def _move_front(s, lo, hi, pivot, equal):
    """Move the values of ``s[lo:hi]`` below ``pivot`` (equal to it, with ``equal``)
    to its front, without a branch; the end of those values."""
    front = lo
    for m in range(lo, hi):
        v = s[m]
        s[m] = s[front]
        s[front] = v
        front += (v == pivot) if equal else (v < pivot)
    return front


def _median_rows(a, wide, dtype, skip):
    """The median of each row of the matrix ``a``: its middle value, or the mean of
    the middle two; NaN for a row that holds a NaN (with ``skip``, of its numbers:
    NaN for a row of NaNs), or is empty (numpy warns there)."""
    rows, n = a.shape
    out = fresh((rows,), dtype)
    pairs = _pairs(rows, n)
    for b in prange((rows + BLOCK - 1) // BLOCK):
        lo, hi = b * BLOCK, min(b * BLOCK + BLOCK, rows)
        s, ordered = fresh((1, n), a.dtype), _sorted_block(a, lo, hi, pairs)
        for i in range(lo, hi):
            if ordered.shape[0]:
                k = _numbers_of_sorted(ordered, i - lo, skip)
                out[i] = _median_of(ordered, i - lo, k, wide, dtype, False)
            else:
                k = _numbers_first(s, a, i, skip)
                out[i] = _median_of(s, 0, k, wide, dtype, True)
    return out


def _quantile_rows(a, q, narrow, wide, dtype, skip, method):
    """The ``q`` quantile of each row of the matrix ``a``, by numpy's linear method
    (``method`` 0): the index ``(n - 1) q``, its neighbours ``a <= b`` and its fraction
    ``t`` (the index plus 1 past the last value, as numpy's), ``a + (b - a) t`` below
    0.5, else ``b - (b - a)(1 - t)``; or ``a`` itself (1, "lower") or ``b`` (2,
    "higher").  NaN for a row that holds a NaN (with ``skip``, ``n`` counts its
    numbers: NaN for a row of NaNs)."""
    rows, n = a.shape
    if n == 0 and not skip:
        raise IndexError("quantile of an empty slice")
    out = fresh((rows,), dtype)
    pairs = _pairs(rows, n)
    for b in prange((rows + BLOCK - 1) // BLOCK):
        lo, hi = b * BLOCK, min(b * BLOCK + BLOCK, rows)
        s, ordered = fresh((1, n), a.dtype), _sorted_block(a, lo, hi, pairs)
        for i in range(lo, hi):
            if ordered.shape[0]:
                k = _numbers_of_sorted(ordered, i - lo, skip)
                out[i] = _quantile_of(ordered, i - lo, k, q, narrow, wide, dtype, method, False)
            else:
                k = _numbers_first(s, a, i, skip)
                out[i] = _quantile_of(s, 0, k, q, narrow, wide, dtype, method, True)
    return out


@njit(inline="always")
def _pairs(rows, n):
    """The sorting network for ``rows`` rows of ``n`` where there are enough rows for
    it, else none (the rows are sorted, or their values selected, one by one)."""
    return network(n if 1 < n <= LONGEST and rows >= FEWEST else 1)


def _sorted_block(a, lo, hi, pairs):
    """Rows ``lo .. hi`` of ``a`` sorted by the network ``pairs`` (NaN last), or no rows
    where there is none or the dtype has no keys (see the overload)."""


@overload(_sorted_block, jit_options={"nogil": True})
def _sorted_block_by_dtype(a, lo, hi, pairs):
    if not has_keys(a.dtype):
        return lambda a, lo, hi, pairs: np.empty((0, a.shape[1]), a.dtype)

    def by_network(a, lo, hi, pairs):
        if pairs.shape[0] == 0:
            return np.empty((0, a.shape[1]), a.dtype)
        out, buf = np.empty((hi - lo, a.shape[1]), a.dtype), key_buffer(a)
        for first in range(lo, hi, LANES):
            sort_block(a, first, min(LANES, hi - first), pairs, buf, out, first - lo)
        return out

    return by_network


@njit(inline="always")
def _numbers_of_sorted(s, r, skip):
    """How many numbers the sorted row ``r`` of ``s`` (NaN last) starts with, or -1
    where a NaN makes the statistic NaN (without ``skip``)."""
    k = s.shape[1]
    while k and s[r, k - 1] != s[r, k - 1]:
        if not skip:
            return -1
        k -= 1
    return k


@njit(inline="always")
def _median_of(s, r, k, wide, dtype, select):
    """The median of the ``k`` numbers first in row ``r`` of ``s`` (NaN for none);
    ``select``: they are in any order (else sorted)."""
    h = k // 2
    if k <= 0:
        return dtype(np.nan)
    if select and k > 1:
        _select(s[r], k, h)
    if k % 2:
        return dtype(wide(s[r, h]))
    # the largest of the lower half is the other middle value
    other = _largest(s, r, h) if select else s[r, h - 1]
    return dtype((wide(other) + wide(s[r, h])) / wide(2))


@njit(inline="always")
def _quantile_of(s, r, k, q, narrow, wide, dtype, method, select):
    """The quantile of the ``k`` numbers first in row ``r`` of ``s`` (NaN for none);
    ``select``: they are in any order (else sorted)."""
    if k <= 0:
        return dtype(np.nan)
    index = (k - 1) * q
    if method:
        at = int(np.floor(index)) if method == 1 else int(np.ceil(index))
        if select and k > 1:
            _select(s[r], k, at)
        return dtype(s[r, at])
    if index >= k - 1:
        low, high, t = k - 1, k - 1, index + 1.0
    else:
        low = int(np.floor(index))
        high, t = low + 1, index - low
    if select and k > 1:
        _select(s[r], k, low)
    above = s[r, high] if high == low or not select else _smallest(s, r, low + 1, k)
    diff = wide(narrow(above - s[r, low]))
    if t >= 0.5:
        return dtype(wide(above) - diff * wide(1.0 - t))
    return dtype(wide(s[r, low]) + diff * wide(t))


@njit(inline="always")
def _largest(s, r, h):
    """The largest of ``s[r, :h]`` (h > 0), by a loop (not a reduction a parallel
    kernel would split)."""
    top = s[r, 0]
    for i in range(1, h):
        top = max(top, s[r, i])
    return top


@njit(inline="always")
def _smallest(s, r, lo, hi):
    """The smallest of ``s[r, lo:hi]`` (hi > lo)."""
    low = s[r, lo]
    for i in range(lo + 1, hi):
        low = min(low, s[r, i])
    return low


def _twins(fn):
    """``fn`` compiled serial, and with its ``prange`` loop on every core."""
    serial = njit(nogil=True, error_model="numpy")(fn)
    return serial, njit(nogil=True, error_model="numpy", parallel=True)(fn)


sort_last, sort_last_parallel = _twins(_sort_last)
argsort_last, argsort_last_parallel = _twins(_argsort_last)
median_rows, median_rows_parallel = _twins(_median_rows)
quantile_rows, quantile_rows_parallel = _twins(_quantile_rows)
