"""How kernels compute matrix products: BLAS, or loops of their own where BLAS is the
wrong tool.

A float matrix-vector product with at most :data:`SKINNY` columns (or rows) is the
kernel's own loop: it is memory-bound, and BLAS would set up its threads for a few
multiply-adds per row, which then spin against the kernel's loops.  Other products
are BLAS's, written into an output's buffer where only that output's region reads
them (:func:`product_into`).  A float matrix-matrix product that only elementwise
regions read is *fused* into them (:mod:`relgraph.backends.numba.regions`): they
compute its rows where its inner dimension is at most :data:`SKINNY` when the call
runs, so whether a call runs BLAS follows from its shapes; :func:`calls_blas` names
the products that always do.  Where every product multiplies rows of the cut inputs
by a matrix (:func:`row_products`), a large call's blocks of rows run in chunks that
keep BLAS on the calling thread (:func:`chunk_rows`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from relgraph.backends.numba.arrays import array_code, parallel_code
from relgraph.backends.numba.shapes import planned_shape
from relgraph.ops.linalg import LinalgOp
from relgraph.ops.products import Dot, Matmul
from relgraph.terms.infer import typeof
from relgraph.terms.traverse import free_symbols

__all__ = [
    "SKINNY", "matvec_matrices", "calls_blas", "own_loop", "product_into", "float_matmat",
    "row_products", "chunk_rows", "ONE_THREAD", "ONE_CALL",
]  # fmt: skip

#: The largest small dimension of a product computed by the kernel's own loop rather
#: than BLAS: a matrix-vector product is memory-bound, and BLAS's threads would spin
#: against the kernel's (an n x 8 matrix times a vector: 2x faster here, 3x on 16
#: cores); a matrix-matrix product with this inner dimension is a few multiply-adds
#: per element.
SKINNY = 16


def matvec_matrices(nodes: Iterable[Any]) -> set[Any]:
    """The matrices of the float matrix-vector products among ``nodes``: what
    :func:`own_loop` asks about."""
    return {n.args[0] for n in nodes if isinstance(n.op, Dot) and _float_matvec(n)}


def calls_blas(nodes: Iterable[Any], fused: Iterable[Any] = ()) -> bool:
    """Whether any of ``nodes`` is a product that BLAS computes whatever the shapes
    (not a float matrix-vector product, nor one of the ``fused`` products, which
    only a wide inner dimension sends to BLAS) or a LAPACK routine: kernels on blocks
    of rows would run BLAS's threads against each other (exp(-(X @ Y.T)) at 10^4 x
    100 from 64 features: 2.4 ms serial, 2.7 on two blocks), and a ``prange`` kernel
    against them (8 ms)."""
    skip = set(fused)
    return any(
        isinstance(n.op, LinalgOp)
        or isinstance(n.op, (Dot, Matmul)) and not _float_matvec(n) and n not in skip
        for n in nodes
    )  # fmt: skip


#: Multiply-adds of a product that OpenBLAS computes on the calling thread, starting
#: none of its own (measured: (4096 x 8) @ (8 x 16) took as long with one BLAS thread
#: as with two, (8192 x 8) @ (8 x 16) half as long with two).
ONE_THREAD = 1 << 19
#: The fewest rows worth a kernel call of their own (each costs a few microseconds).
MIN_CHUNK = 512
#: :func:`chunk_rows`'s answer where fewer than :data:`MIN_CHUNK` rows would keep BLAS
#: on one thread: the call runs whole, BLAS computing its products on its threads.
#: Blocks of rows would each start BLAS's threads and take turns with each other, and
#: BLAS's threads, which spin for a while after a product, would slow the blocks' and
#: the ``prange`` kernel's threads (pairwise distances of 2,000 rows of 64 on 16 cores:
#: 9.4 ms on blocks, 5.3 ms as one call, of which 1.2 ms is the product).
ONE_CALL = 0


def row_products(nodes: Iterable[Any], cut: set[Any]) -> list[tuple[Any, Any]] | None:
    """The two operands of each matrix-matrix product among ``nodes`` (BLAS's, or
    fused), where every one is a product of rows of the ``cut`` inputs by a matrix
    that is the same for every row (``tanh(X @ W1 + b) @ W2``); None where one is
    not, or a LAPACK routine runs (:func:`chunk_rows` has nothing to go by)."""
    found = []
    for n in dict.fromkeys(nodes):
        if isinstance(n.op, LinalgOp):
            return None
        if isinstance(n.op, (Dot, Matmul)) and not _float_matvec(n):
            left, right = n.args[:2]
            rows = free_symbols([left]) & cut and not free_symbols([right]) & cut
            if not (isinstance(n.op, Dot) and typeof(left).ndim == 2 and rows):
                return None
            found.append((left, right))
    return found or None


def chunk_rows(plans: list | None, shapes: list, cut: Iterable[int]) -> int | None:
    """Rows per kernel call for a call with arguments of ``shapes`` whose products
    multiply rows of ``k`` elements by ``k x n`` matrices (``plans``: the shape plans
    of their two operands, in turn, as :func:`row_products` gives them), so that
    BLAS computes each on the calling thread: blocks of rows on threads then run at
    once, where BLAS's threads and theirs would take turns (a two-layer perceptron on
    125,000 rows of 8: 7.1 ms in one call, 3.5-4.4 ms on two threads in chunks);
    :data:`ONE_CALL` where that is fewer than :data:`MIN_CHUNK` rows; None where a
    size is unknown, or where the inputs that are not ``cut`` (positions in
    ``shapes``), which each chunk reads whole, hold more than a quarter of what a chunk
    reads of the cut ones.

    >>> import relgraph as rg
    >>> from relgraph.backends.numba.shapes import shape_checks
    >>> X, W = rg.matrix("X"), rg.matrix("W")
    >>> plans = shape_checks([X, W], [X, W])[2]  # X @ W: rows of X by W
    >>> chunk_rows(plans, [(10**6, 8), (8, 16)], [0])
    4096
    >>> chunk_rows(plans, [(2000, 64), (64, 2000)], [0]) == ONE_CALL
    True
    """
    if not plans or None in plans:
        return None
    dims = [planned_shape(p, shapes) for p in plans]
    per_row = sum(a[-1] * (b[-1] if len(b) == 2 else 1) for a, b in zip(dims[::2], dims[1::2]))
    rows = ONE_THREAD // max(per_row, 1)
    if rows < MIN_CHUNK:
        return ONE_CALL
    cut = set(cut)
    width = sum(math.prod(s[1:]) for i, s in enumerate(shapes) if i in cut)
    whole = sum(math.prod(s) for i, s in enumerate(shapes) if i not in cut)
    return rows if 4 * whole <= rows * width else None


def own_loop(matrix: Any) -> bool:
    """Whether a matrix-vector product computes with ``matrix`` (an argument array) in
    the kernel's own loop, which blocks of rows on threads speed up: not a matrix wider
    than :data:`SKINNY`, which goes to BLAS, whose own threads would spin against the
    blocks' (the product at 1000 x 1000: 140 -> 190 us on blocks)."""
    return matrix.shape[1] <= SKINNY


@array_code.register
def _array_code_dot(op: Dot, node: Any) -> str:
    """
    >>> import relgraph as rg
    >>> A, B, x = rg.matrix("A"), rg.matrix("B"), rg.vector("x")
    >>> array_code(rg.dot, A @ x)  # its own loop up to 16 columns, else BLAS
    'kernels.matvec({0}, {1}, 16)'
    >>> array_code(rg.dot, A @ B)
    'kernels.dot({0}, {1}, {dtype})'
    """
    if _float_matvec(node):
        return f"kernels.matvec({{0}}, {{1}}, {SKINNY})"  # a loop where BLAS is slow
    return "kernels.dot({0}, {1}, {dtype})"  # BLAS for floats


def product_into(node: Any) -> str | None:
    """The statements computing a float matrix product into ``{buffer}``, the buffer
    of the output whose region alone reads it (BLAS's ``out=``; the region then runs
    in place, each element read before it is written), or into an array of its own
    where that buffer does not fit or overlaps an operand; None for other products.

    Writing the output directly saves a product-sized array's allocation and a pass
    over it: ``sum(x**2, 1)[:, None] + sum(y**2, 1)[None] - 2 * x @ y.T`` at
    1414 x 1414 took a third of the time."""
    return _PRODUCT_INTO if isinstance(node.op, Dot) and float_matmat(node) else None


_PRODUCT_INTO = """{buffer}
{out}_fits = {out}.shape == ({0}.shape[0], {1}.shape[1])
if {out}_fits and kernels.disjoint({out}, {0}) and kernels.disjoint({out}, {1}):
    np.dot({0}, {1}, {out})
else:
    {out} = kernels.dot({0}, {1}, {dtype})"""


def _float_matvec(node: Any) -> bool:
    """A float matrix times a vector, all of one dtype."""
    a, b, out = (typeof(t) for t in (*node.args, node))
    same = a.dtype == b.dtype == out.dtype
    return a.ndim == 2 and b.ndim == 1 and out.dtype.kind == "f" and same


def float_matmat(node: Any) -> bool:
    """A float matrix times a float matrix, all of one dtype."""
    a, b, out = (typeof(t) for t in (*node.args, node))
    same = a.dtype == b.dtype == out.dtype
    return a.ndim == b.ndim == 2 and out.dtype.kind == "f" and same


_SKINNY_DOT = """np.empty({0}.shape[0], {dtype})
if {0}.shape[1] <= SKINNY:
    for {out}_i in prange({0}.shape[0]):
        {out}_acc = 0.0
        for {out}_j in range({0}.shape[1]):
            {out}_acc += {0}[{out}_i, {out}_j] * {1}[{out}_j]
        {out}[{out}_i] = {out}_acc
elif {0}.shape[0] <= SKINNY:
    {out}_n = {0}.shape[1]
    {out}_part = np.zeros((({out}_n + 4095) // 4096, {0}.shape[0]), {dtype})
    for {out}_b in prange({out}_part.shape[0]):
        for {out}_i in range({out}_b * 4096, min({out}_b * 4096 + 4096, {out}_n)):
            {out}_v = {1}[{out}_i]
            for {out}_j in range({0}.shape[0]):
                {out}_part[{out}_b, {out}_j] += {0}[{out}_j, {out}_i] * {out}_v
    for {out}_j in range({0}.shape[0]):
        {out}[{out}_j] = {out}_part[:, {out}_j].sum()
else:
    {out}[:] = kernels.dot({0}, {1}, {dtype})""".replace("SKINNY", str(SKINNY))


@parallel_code.register
def _parallel_dot(op: Dot, node: Any) -> str | None:
    """A matrix (n x k or k x n, k small) times a vector: rows (or blocks of rows'
    partial sums) in parallel; BLAS otherwise."""
    return _SKINNY_DOT if _float_matvec(node) else None


@array_code.register
def _array_code_matmul(op: Matmul, node: Any) -> str:
    return "kernels.matmul({0}, {1}, {dtype})"
