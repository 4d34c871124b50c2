"""Numba implementations the generated kernels call for non-elementwise Ops.

Each helper is a plain Python function (the numpy meaning, used if Numba is
bypassed) with a Numba ``overload`` that picks an implementation at compile time
from the argument types: BLAS ``np.dot`` without a copy when the operands already
have the result dtype, loops where Numba has no native support.

None of them uses Numba's disk cache (its ``cache`` option): its index is not safe for two
processes writing it at once (each picks the same data file for a different
signature, or a different closure of one factory, and one process then loads the
other's machine code: a ``min`` that sums).  A generated kernel is cached whole, with
these compiled into it, under a file of its own that holds one signature.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from relgraph.backends.numba import vecmath
from relgraph.backends.numba.hugepages import fresh, moved
from relgraph.backends.numba.order_kernels import (
    argsort_last,
    argsort_last_parallel,
    median_rows,
    median_rows_parallel,
    quantile_rows,
    quantile_rows_parallel,
    sort_last,
    sort_last_parallel,
)
from relgraph.backends.numba.reduce_kernels import (  # the generated code calls kernels.*
    argmax_all,
    argmax_axis,
    argmin_all,
    argmin_axis,
    keep_dims,
    logsumexp_all,
    logsumexp_axis,
    max_all,
    max_axis,
    mean_all,
    mean_axis,
    min_all,
    min_axis,
    named as _named,
    prod_all,
    prod_axis,
    sum_all,
    sum_axis,
)

__all__ = [
    "fresh", "moved", "dot", "matvec", "product_row", "row_copy", "sum_all", "sum_axis", "max_all",
    "max_axis", "min_all", "min_axis", "prod_all", "prod_axis", "mean_all", "mean_axis",
    "logsumexp_all", "logsumexp_axis", "argmax_all", "argmax_axis", "argmin_all", "argmin_axis",
    "keep_dims", "index", "matmul", "disjoint", "broadcast_dim", "ipow", "lane_sum", "lane_max",
    "lane_min",
    "scalar_sigmoid", "scalar_softplus", "scalar_log1mexp", "scalar_ndtr", "scalar_log_ndtr",
    "scalar_erfcx", "cbrt", "cumsum_last", "cumprod_last", "take_rows", "add_rows",
    "take_along_rows", "add_along_rows", "sort_last", "median_rows", "quantile_rows",
    "sort_last_parallel", "median_rows_parallel", "quantile_rows_parallel", "argsort_last",
    "argsort_last_parallel",
]  # fmt: skip

_LN2 = 0.6931471805599453

NEGATIVE_POWER = "Integers to negative integer powers are not allowed."  # numpy's words


def ipow(a, b):
    """``a ** b`` for integers, refusing a negative exponent as numpy does."""
    if b < 0:
        raise ValueError(NEGATIVE_POWER)
    return a**b


# Stable scalar forms of the Ops numpy has no ufunc for (their numpy references are
# in relgraph.ops.special).


@njit(inline="always", error_model="numpy")
def scalar_sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + np.exp(-x))
    e = np.exp(x)
    return e / (1.0 + e)


@njit(inline="always", error_model="numpy")
def scalar_softplus(x):
    return max(x, 0.0) + np.log1p(np.exp(-abs(x)))


@njit(inline="always", error_model="numpy")
def scalar_log1mexp(x):
    if x > -_LN2:
        return np.log(-np.expm1(x))
    return np.log1p(-np.exp(x))


_SQRT_HALF = 0.7071067811865476
_LOG_SQRT_2PI = 0.9189385332046728


@njit(inline="always", error_model="numpy")
def scalar_ndtr(x):
    return 0.5 * math.erfc(-x * _SQRT_HALF)


@njit(inline="always", error_model="numpy")
def scalar_log_ndtr(x):
    """log(ndtr(x)): log1p of the upper tail above -1, the log of the tail down to -37,
    and below it the asymptotic series of Abramowitz and Stegun 26.2.12 (scipy's from
    -20, where its terms leave 2.5e-12 of the series: 86 ulp of the result)."""
    if x > -1.0:
        return np.log1p(-0.5 * math.erfc(x * _SQRT_HALF))
    if x > -37.0:
        return np.log(0.5 * math.erfc(-x * _SQRT_HALF))
    r = 1.0 / (x * x)
    series = 1.0 - r * (1.0 - 3.0 * r * (1.0 - 5.0 * r * (1.0 - 7.0 * r * (1.0 - 9.0 * r))))
    return -0.5 * x * x - np.log(-x) - _LOG_SQRT_2PI + np.log(series)


_INV_SQRT_PI = 0.5641895835477563


@intrinsic
def cbrt(typingctx: Any, x: Any) -> Any:
    """numpy's ``cbrt`` of a float64 or float32: libm's ``cbrt`` or ``cbrtf``, called by
    name (Numba's ``np.cbrt`` is a power of 1/3: up to 100 ulp off, and +0.0 for -0.0)."""
    if x not in (types.float64, types.float32):
        return None
    name = "cbrt" if x == types.float64 else "cbrtf"

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        t = context.get_value_type(x)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(t, [t]), name)
        return builder.call(fn, args)

    return x(x), codegen


@njit(inline="always", error_model="numpy")
def scalar_erfcx(x):
    """exp(x * x) * erfc(x): the product below 25 (exp(x * x) is finite), the
    asymptotic series of erfc above (its terms shrink as 1 / x ** 2), inf below -26.7."""
    if x < -26.7:
        return np.inf  # 2 exp(x * x) - erfcx(-x) overflows; x = -inf too
    if x < 25.0:
        # exp(x * x) to within an ulp or two: x * x split exactly (Dekker) into a
        # head whose exp is exact to rounding and a tail whose exp is 1 + tail
        a = x * 134217729.0
        head = a - (a - x)
        tail = x - head
        square_tail = 2.0 * head * tail + tail * tail
        return np.exp(head * head) * np.exp(square_tail) * math.erfc(x)
    r = 1.0 / (2.0 * x * x)
    series = 1.0 - r * (
        1.0 - 3.0 * r * (1.0 - 5.0 * r * (1.0 - 7.0 * r * (1.0 - 9.0 * r * (1.0 - 11.0 * r))))
    )
    return _INV_SQRT_PI / x * series


@overload(ipow, inline="always")
def _ipow(a, b):
    def impl(a, b):
        if b < 0:
            raise ValueError(NEGATIVE_POWER)
        return a**b

    return impl


def dot(a, b, dtype):
    """``np.dot(a, b)`` in the result dtype."""
    return np.dot(a, b).astype(dtype)


@njit(nogil=True, error_model="numpy", fastmath={"reassoc"})
def matvec(a, x, skinny):
    """``a @ x`` for a float matrix and vector of one dtype: a loop in this thread if
    ``a`` is C-contiguous with at most ``skinny`` columns, else BLAS.

    A serial kernel runs on blocks of rows on a pool's threads, and BLAS is slow on
    a block of an n x 8 matrix: each call sets up its threads for a few rows' work
    (3x slower than this loop on 16 cores).  Each row's dot keeps partial sums in
    vector lanes (reassociation only, as :func:`lane_sum`)."""
    if not a.flags.c_contiguous or a.shape[1] > skinny:
        return np.dot(a, x)
    out = np.empty(a.shape[0], a.dtype)
    for i in range(a.shape[0]):
        acc = a.dtype.type(0)
        for j in range(a.shape[1]):
            acc += a[i, j] * x[j]
        out[i] = acc
    return out


@njit(nogil=True, error_model="numpy", fastmath={"contract"})
def product_row(a, b, i, row):
    """``row[:] = a[i] @ b`` for float matrices of one dtype, ``b`` C-contiguous: the
    terms added in order along the inner axis, from +0.0 as BLAS's kernels do, each
    step a multiply-add over the whole row (a loop that vectorises)."""
    for j in range(b.shape[1]):
        row[j] = 0.0
    for k in range(a.shape[1]):
        v = a[i, k]
        for j in range(b.shape[1]):
            row[j] += v * b[k, j]
    return row


@njit(nogil=True, error_model="numpy")
def row_copy(a, i, row):
    """``row[:] = a[i]``."""
    for j in range(a.shape[1]):
        row[j] = a[i, j]
    return row


@njit
def disjoint(a, b):
    """Whether arrays ``a`` and ``b`` share no byte (by the span of their memory)."""
    a_lo, a_hi = _span(a)
    b_lo, b_hi = _span(b)
    return a_hi <= b_lo or b_hi <= a_lo


@njit
def _span(x):
    lo = hi = x.ctypes.data
    if x.size == 0:
        return lo, lo
    for k in range(x.ndim):
        step = (x.shape[k] - 1) * x.strides[k]
        if step < 0:
            lo += step
        else:
            hi += step
    return lo, hi + x.itemsize


@njit
def broadcast_dim(sizes):
    """The length numpy broadcasting gives sizes of one axis (checked beforehand)."""
    out = 1
    for size in sizes:
        if size != 1:
            out = size
    return out


# A row loop's reductions over its buffer, compiled once per process and called by
# every kernel (written out in each kernel, they were most of what Numba typed and
# lowered for a row program).


@njit(nogil=True, error_model="numpy", fastmath={"reassoc"})
def lane_sum(buf, n):
    """``sum(buf[:n])``.  Reassociation (and nothing else of fast-math: NaN, inf and
    signed zeros keep their meaning) lets LLVM keep a vector of partial sums: the
    rounding is of the kind numpy's pairwise sum has, not a left-to-right sum's, and
    it is twice as fast as scalar lanes."""
    acc = 0.0
    for k in range(n):
        acc += buf[k]
    return acc


@njit(nogil=True, error_model="numpy")
def lane_max(buf, n, acc):
    """``max(acc, *buf[:n])`` as a float64: NaN wins and stays, as in numpy; ``+0.0``
    counts above ``-0.0`` (numpy's pick between them depends on the order).  Over
    ``llvm.maximum`` the loop vectorises (it was eight chains of NaN-aware selects:
    twice the time)."""
    for k in range(n):
        acc = vecmath.maximum(acc, buf[k])
    return acc


@njit(nogil=True, error_model="numpy")
def lane_min(buf, n, acc):
    """``min(acc, *buf[:n])``, as :func:`lane_max`."""
    for k in range(n):
        acc = vecmath.minimum(acc, buf[k])
    return acc


def index(i, n):
    """Integer index ``i`` into an axis of length ``n``, negative counting from the end;
    IndexError as numpy's when it is out of bounds."""
    if not -n <= i < n:
        raise IndexError("index out of bounds for an axis of this length")
    return i + n if i < 0 else i


def _scan_last(times: bool) -> Any:
    """A running sum (product) along the last axis of a C-contiguous array, in
    ``dtype``, in order (as numpy: no reassociation)."""

    name = "cumprod_last" if times else "cumsum_last"

    def combine(acc, v):
        return acc * v if times else acc + v

    step = njit(inline="always")(_named(combine, f"{name}_step"))

    def impl(a, dtype):
        out = np.empty(a.shape, dtype)
        n = a.shape[-1]
        if a.size == 0:
            return out
        rows, outs = a.reshape((a.size // n, n)), out.reshape((a.size // n, n))
        for i in range(rows.shape[0]):
            acc = dtype(rows[i, 0])
            outs[i, 0] = acc
            for j in range(1, n):
                acc = step(acc, dtype(rows[i, j]))
                outs[i, j] = acc
        return out

    return njit(nogil=True, error_model="numpy")(_named(impl, name))


cumsum_last = _scan_last(times=False)
cumprod_last = _scan_last(times=True)


# Gathers and their scatter-adds, on 2-d views (the generated code moves the indexed
# axis first, or last for the "along" forms); indices bounds-checked as numpy's.


@njit(nogil=True, error_model="numpy")
def take_rows(a, idx):
    """The rows of ``a`` at ``idx`` (1-d)."""
    n = a.shape[0]
    out = np.empty((idx.size, a.shape[1]), a.dtype)
    for i in range(idx.size):
        out[i, :] = a[index(idx[i], n), :]
    return out


@njit(nogil=True, error_model="numpy")
def add_rows(g, idx, n):
    """Zeros of ``n`` rows with the rows of ``g`` added at ``idx``."""
    out = np.zeros((n, g.shape[1]), g.dtype)
    for i in range(idx.size):
        out[index(idx[i], n), :] += g[i, :]
    return out


@njit(nogil=True, error_model="numpy")
def take_along_rows(a, idx):
    """``a[r, idx[r, c]]`` for every row ``r`` and column ``c`` of ``idx``."""
    if idx.shape[0] != a.shape[0]:
        raise ValueError("take_along_axis: the shapes of the array and the indices differ")
    n = a.shape[1]
    out = np.empty(idx.shape, a.dtype)
    for r in range(idx.shape[0]):
        for c in range(idx.shape[1]):
            out[r, c] = a[r, index(idx[r, c], n)]
    return out


@njit(nogil=True, error_model="numpy")
def add_along_rows(g, idx, n):
    """Zeros of ``n`` columns with ``g[r, c]`` added at ``[r, idx[r, c]]``."""
    out = np.zeros((g.shape[0], n), g.dtype)
    for r in range(idx.shape[0]):
        for c in range(idx.shape[1]):
            out[r, index(idx[r, c], n)] += g[r, c]
    return out


def matmul(a, b, dtype):
    """``np.matmul(a, b)`` of stacks of matrices (ndim >= 3), in ``dtype``."""
    return np.matmul(a, b).astype(dtype)


def _target(dtype) -> types.Type:
    return dtype.instance_type if isinstance(dtype, types.NumberClass) else dtype.dtype


@overload(dot)
def _dot(a, b, dtype):
    target = _target(dtype)
    if isinstance(target, (types.Float, types.Complex)):
        if a.dtype == target and b.dtype == target:
            return lambda a, b, dtype: np.dot(a, b)
        return lambda a, b, dtype: np.dot(a.astype(dtype), b.astype(dtype))
    # Integers: BLAS has none; numpy loops too.
    if a.ndim == 1 and b.ndim == 1:

        def vv(a, b, dtype):
            acc = dtype(0)
            for k in range(a.shape[0]):
                acc += dtype(a[k]) * dtype(b[k])
            return acc

        return vv

    def mm(a, b, dtype):
        a2 = a.reshape((1, a.shape[0])) if a.ndim == 1 else a
        b2 = b.reshape((b.shape[0], 1)) if b.ndim == 1 else b
        out = np.zeros((a2.shape[0], b2.shape[1]), dtype)
        for i in range(a2.shape[0]):
            for k in range(a2.shape[1]):
                aik = dtype(a2[i, k])
                for j in range(b2.shape[1]):
                    out[i, j] += aik * dtype(b2[k, j])
        if a.ndim == 1:
            return out.reshape(out.shape[1])
        if b.ndim == 1:
            return out.reshape(out.shape[0])
        return out

    return mm


@overload(index)
def _index(i, n):
    def impl(i, n):
        if not -n <= i < n:
            raise IndexError("index out of bounds for an axis of this length")
        return i + n if i < 0 else i

    return impl


@overload(matmul)
def _matmul(a, b, dtype):
    # numpy's batching: the leading axes broadcast; each pair is a BLAS product.
    def impl(a, b, dtype):
        lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        rows, inner, cols = a.shape[-2], a.shape[-1], b.shape[-1]
        aa = np.ascontiguousarray(np.broadcast_to(a, lead + (rows, inner)))
        bb = np.ascontiguousarray(np.broadcast_to(b, lead + (inner, cols)))
        a3, b3 = aa.reshape((-1, rows, inner)), bb.reshape((-1, inner, cols))
        out = np.empty((a3.shape[0], rows, cols), dtype)
        for k in range(a3.shape[0]):
            out[k] = dot(a3[k], b3[k], dtype)
        return out.reshape(lead + (rows, cols))

    return impl
