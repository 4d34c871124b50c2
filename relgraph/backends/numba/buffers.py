"""Output arrays in memory that earlier results released, not in fresh pages.

A new output array of a few megabytes is fresh memory from the operating system: the
kernel pays a page fault for every 4 KiB it writes (an 8 MB result: 2,000 faults,
more than a short kernel's own time).  :func:`empty` hands out large arrays over
blocks that earlier results gave back, as XLA's allocator does for JAX.

A block goes back to the pool only when nothing can reach its memory any more: the
array is made over a ctypes view of the block, and the block is released when that
view dies, which every array and view of the result keeps alive (numpy collapses a
view's base only down to a non-array object).  So a result the caller holds, or any
slice, transpose or reshape of it, is never handed out again.  The pool keeps at
most :data:`MAX_BYTES` of released blocks (the oldest go first); arrays under
:data:`MIN_BYTES` come from numpy as before.

Examples
--------
>>> import numpy as np
>>> a = empty((1024, 512), np.float64)
>>> a[...] = 1.0
>>> view = a[::2]
>>> del a
>>> b = empty((1024, 512), np.float64)  # not the memory the view still reads
>>> np.shares_memory(view, b), float(view.sum())
(False, 262144.0)
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections import OrderedDict, deque
from typing import Any

import numpy as np

__all__ = ["empty", "MIN_BYTES", "MAX_BYTES"]

MIN_BYTES = 1 << 20  # smaller arrays: numpy's allocator (its small-block cache serves)
MAX_BYTES = 256 << 20  # released blocks kept, at most
_PAGE = 4096

_free: OrderedDict[int, list] = OrderedDict()  # size -> released blocks, oldest size first
_held = 0  # bytes in _free
_released: deque = deque()  # filled by finalizers, which may run in any thread (or gc)
_lock = threading.Lock()


def empty(shape: tuple, dtype: Any) -> np.ndarray:
    """``np.empty(shape, dtype)``, over a released block when it is large."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for n in shape:  # not np.prod: this runs on every call, small ones too
        nbytes *= int(n)
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    size = -(-nbytes // _PAGE) * _PAGE
    block = _take(size) or (ctypes.c_char * size)()
    view = (ctypes.c_char * nbytes).from_buffer(block)  # keeps the block alive
    weakref.finalize(view, _release, block)
    return np.frombuffer(view, dtype).reshape(shape)


def _release(block: Any) -> None:
    """A block no array reaches any more: back to the pool, which sheds what is over
    :data:`MAX_BYTES` at once.  A finalizer may run while this thread holds the lock
    (a collection inside :func:`_take`): then the holder files the block."""
    _released.append(block)
    if _lock.acquire(blocking=False):
        try:
            _file_released()
        finally:
            _lock.release()


def _file_released() -> None:
    """Move released blocks into the free lists, dropping the oldest sizes beyond the
    limit (call with the lock held)."""
    global _held
    while _released:
        block = _released.popleft()
        _free.setdefault(len(block), []).append(block)
        _free.move_to_end(len(block))
        _held += len(block)
    while _held > MAX_BYTES:  # drop the blocks of the size released longest ago
        old, blocks = next(iter(_free.items()))
        _held -= len(blocks.pop(0))
        if not blocks:
            del _free[old]


def _take(size: int) -> Any:
    """A released block of ``size`` bytes, or None."""
    global _held
    with _lock:
        _file_released()
        same = _free.get(size)
        if not same:
            return None
        _held -= size
        block = same.pop()
        if not same:
            del _free[size]
        else:
            _free.move_to_end(size)
        return block
