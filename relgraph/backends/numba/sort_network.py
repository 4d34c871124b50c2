"""Sorting many short rows at once: a sorting network run across ``LANES`` rows.

A sorting network is a fixed list of compare-exchanges (``i, j``: the smaller value
to place ``i``, the larger to ``j``) that sorts any row of its length.  Run on a
block of rows transposed into a buffer of ``(n, LANES)`` keys, each compare-exchange
is a vector ``min`` and ``max`` over the block's rows: no branch depends on the data,
which is what makes numpy's own sort of short rows fast (it uses sorting networks in
SIMD registers too).  The network is Batcher's odd-even merge sort for the next power
of two, less the compare-exchanges with a place past the row (there, the padding
would sit and never move).

A value is compared by its key, an integer in the same order: an integer's own value,
a bool's byte, a float's bits with every bit but the sign flipped where it is
negative, so that ``-0.0`` sorts before ``0.0`` and NaN, given the largest key, after
everything, as numpy sorts it.  Keys turn back into the values they came from, bit
for bit; the NaNs, one key for all, are copied from the row as they came.

``sort_block`` sorts ``LANES`` rows (fewer at the end: the other lanes are sorted and
thrown away), a row's length up to ``LONGEST`` (beyond, the buffer leaves the cache,
and sorts of one long row are not helped); ``argsort_block`` gives the indices that
sort them stably, by the network on pairs of key and index.  ``has_keys`` says which
dtypes have keys.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

__all__ = [
    "LANES", "LONGEST", "FEWEST", "network", "sort_block", "argsort_block", "key_buffer",
    "has_keys",
]  # fmt: skip

#: Rows per block.  32 makes the lane loop long enough for LLVM to vectorize it.
LANES = 32
#: The longest row sorted by the network.
LONGEST = 4096
#: A block of fewer rows than this is sorted row by row (the network costs as much
#: for one row as for LANES).
FEWEST = 8


def has_keys(dtype: types.Type) -> bool:
    """Whether values of the Numba type ``dtype`` have keys here (integers, bools,
    float32 and float64).

    >>> has_keys(types.float32), has_keys(types.complex128)
    (True, False)
    """
    if isinstance(dtype, types.Float):
        return dtype.bitwidth in (32, 64)
    return isinstance(dtype, (types.Integer, types.Boolean))


@njit(nogil=True)
def network(n):
    """Batcher's odd-even merge sort for rows of ``n``: its compare-exchanges in order,
    an ``(m, 2)`` array of places."""
    width = 1
    while width < n:
        width *= 2
    out = np.empty((_emit(n, width, np.empty((0, 2), np.int64)), 2), np.int64)
    _emit(n, width, out)
    return out


@njit(nogil=True)
def _emit(n, width, out):
    """Write the compare-exchanges into ``out`` (if it has room); how many there are."""
    m, room = 0, out.shape[0]
    p = 1
    while p < width:
        k = p
        while k >= 1:
            j = k % p
            while j + k < width:
                for i in range(min(k, width - j - k)):
                    lo, hi = i + j, i + j + k
                    if lo // (2 * p) == hi // (2 * p) and hi < n:
                        if m < room:
                            out[m, 0], out[m, 1] = lo, hi
                        m += 1
                j += 2 * k
            k //= 2
        p *= 2
    return m


@njit(nogil=True, error_model="numpy")
def sort_block(rows, first, count, pairs, buf, outs, to):
    """Rows ``first .. first + count`` (count <= LANES) of the matrix ``rows`` sorted
    by the network ``pairs`` into rows ``to .. to + count`` of ``outs``; ``buf``: an
    ``(n, LANES)`` array of the rows' keys' dtype (see :func:`key_buffer`)."""
    n = rows.shape[1]
    out_bits = _bits(outs)
    _load_keys(rows, first, count, buf, False)
    for q in range(pairs.shape[0]):
        i, j = pairs[q, 0], pairs[q, 1]
        for lane in range(LANES):
            x, y = buf[i, lane], buf[j, lane]
            buf[i, lane] = min(x, y)
            buf[j, lane] = max(x, y)
    for lane in range(count):
        for i in range(n):
            out_bits[to + lane, i] = _value_bits(buf[i, lane], rows[0, 0])
        last = outs[to + lane, n - 1]
        if last != last:  # NaN sorts last: a row without one needs no view of it
            _nans_as_they_came(rows[first + lane], outs[to + lane])


@njit(nogil=True, error_model="numpy")
def argsort_block(rows, first, count, pairs, buffers, outs):
    """For rows ``first .. first + count`` of the matrix ``rows``, the indices that sort
    them stably (NaN last), into the same rows of ``outs``: the network ``pairs`` on
    ``(key, index)`` pairs, equal keys ordered by index.  ``buffers``: ``buf`` as for
    :func:`sort_block` and an int64 one of its shape.  Both zeros have one key here:
    numpy's stable argsort keeps ``0.0`` and ``-0.0`` in their order."""
    buf, order = buffers
    n = rows.shape[1]
    _load_keys(rows, first, count, buf, True)
    for i in range(n):
        for lane in range(LANES):
            order[i, lane] = i
    for q in range(pairs.shape[0]):
        i, j = pairs[q, 0], pairs[q, 1]
        for lane in range(LANES):
            x, y, a, b = buf[i, lane], buf[j, lane], order[i, lane], order[j, lane]
            swap = y < x or (y == x and b < a)
            buf[i, lane], buf[j, lane] = (y, x) if swap else (x, y)
            order[i, lane], order[j, lane] = (b, a) if swap else (a, b)
    for lane in range(count):
        for i in range(n):
            outs[first + lane, i] = order[i, lane]


@njit(inline="always")
def _load_keys(rows, first, count, buf, one_zero):
    """The keys of rows ``first .. first + count`` into the lanes of ``buf``, lane by
    lane, and zeros into the lanes past them (padding that sorts like any key);
    ``one_zero``: both zeros get the key of ``0``."""
    bits = _bits(rows)
    for lane in range(count):
        for i in range(rows.shape[1]):
            value = rows[first + lane, i]
            zero = one_zero and value == 0
            buf[i, lane] = 0 if zero else _key(bits[first + lane, i], value)
    for lane in range(count, LANES):
        for i in range(rows.shape[1]):
            buf[i, lane] = 0


@njit(inline="always")
def _nans_as_they_came(row, out):
    """The NaNs at the end of the sorted ``out`` (which ends with one) replaced by
    ``row``'s own, in their order: a NaN's sign and payload are kept, as numpy's sort
    keeps them."""
    k = row.shape[0] - 1
    while k > 0 and out[k - 1] != out[k - 1]:
        k -= 1
    for v in row:
        if v != v:
            out[k] = v
            k += 1


def key_buffer(rows):
    """An ``(n, LANES)`` buffer of the keys' dtype of the matrix ``rows``."""


@overload(key_buffer, jit_options={"nogil": True})
def _key_buffer(rows):
    key = _key_type(rows.dtype)
    return lambda rows: np.empty((rows.shape[1], LANES), key)


def _key_type(dtype):
    if isinstance(dtype, types.Float):
        return np.int64 if dtype.bitwidth == 64 else np.int32
    if isinstance(dtype, types.Boolean):
        return np.uint8
    return getattr(np, str(dtype))


def _bits(a):
    """The array of ``a``'s bits as its keys' dtype (itself for integers)."""


@overload(_bits, jit_options={"nogil": True})
def _bits_of(a):
    if isinstance(a.dtype, (types.Float, types.Boolean)):
        key = _key_type(a.dtype)
        return lambda a: a.view(key)
    return lambda a: a


def _key(bits, value):
    """The key of ``value`` whose bits are ``bits``."""


@overload(_key, inline="always")
def _key_of(bits, value):
    if isinstance(value, types.Float):
        top, shift = _signed_top(value.bitwidth)
        return lambda bits, value: top if value != value else bits ^ ((bits >> shift) & top)
    return lambda bits, value: bits


def _value_bits(key, like):
    """The bits of the value whose key is ``key`` (a value like ``like``)."""


@overload(_value_bits, inline="always")
def _value_bits_of(key, like):
    if isinstance(like, types.Float):
        top, shift = _signed_top(like.bitwidth)
        return lambda key, like: key ^ ((key >> shift) & top)
    return lambda key, like: key


def _signed_top(bitwidth):
    kind = np.int64 if bitwidth == 64 else np.int32
    return kind(np.iinfo(kind).max), kind(bitwidth - 1)
