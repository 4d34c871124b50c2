"""Large arrays a kernel makes, on huge pages.

An array a kernel allocates (a region's intermediate, an axis moved last, a sort's
result) is fresh memory from the operating system where it is large, and every 4 KiB
page costs a page fault when it is first written: about 2 us each on a virtual
machine, so a 24 MB intermediate costs 12 ms, more than the kernel's own work.  numpy
asks Linux for huge pages (2 MiB: 512 times fewer faults) on its own large arrays
(``madvise(MADV_HUGEPAGE)``); :func:`fresh` does the same for the arrays a kernel
makes, before they are written.  The advice is for that memory alone, as numpy's:
no setting of the process changes, and elsewhere than on Linux nothing is asked.
``madvise`` is called by its name (resolved when a kernel is loaded), so a kernel
that calls it can be cached.

:func:`moved` is ``np.ascontiguousarray(np.transpose(a, order))`` into such an array.
"""

from __future__ import annotations

import sys

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["fresh", "moved", "ADVISED_BYTES"]

#: Arrays from this size are advised (numpy's threshold: 4 MiB).
ADVISED_BYTES = 1 << 22
_HUGE = 1 << 21  # a huge page: the advice covers the whole ones inside an array
_MADV_HUGEPAGE = 14  # Linux's <sys/mman.h>
_LINUX = sys.platform.startswith("linux")


@intrinsic
def _madvise(typingctx, address, length):
    """``madvise(address, length, MADV_HUGEPAGE)``; its result is ignored (where the
    kernel has no huge pages to give, the memory is as it was)."""
    sig = types.int32(types.uintp, types.uintp)

    def codegen(context, builder, signature, args):
        byte_ptr = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.IntType(32), [byte_ptr, ir.IntType(64), ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "madvise")
        pointer = builder.inttoptr(args[0], byte_ptr)
        advice = ir.Constant(ir.IntType(32), _MADV_HUGEPAGE)
        return builder.call(fn, [pointer, args[1], advice])

    return sig, codegen


@njit(nogil=True)
def _advise_huge_pages(a):
    """Advise the whole huge pages inside array ``a``'s memory."""
    base = a.ctypes.data
    start = (base + _HUGE - 1) // _HUGE * _HUGE
    end = (base + a.nbytes) // _HUGE * _HUGE
    if end > start:
        _madvise(start, end - start)


@njit(nogil=True)
def _no_advice(a):
    """Elsewhere than on Linux: no call of ``madvise`` is compiled at all."""


_advise = _advise_huge_pages if _LINUX else _no_advice


@njit(nogil=True)
def fresh(shape, dtype):
    """``np.empty(shape, dtype)``, on huge pages where it is large (see the module)."""
    a = np.empty(shape, dtype)
    if a.nbytes >= ADVISED_BYTES:
        _advise(a)
    return a


@njit(nogil=True)
def moved(a, order):
    """``a`` with its axes in ``order``, copied C-contiguous into a :func:`fresh` array."""
    view = np.transpose(a, order)
    out = fresh(view.shape, a.dtype)
    out[...] = view
    return out
