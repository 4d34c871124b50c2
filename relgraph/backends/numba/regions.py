"""The loops of an elementwise region, and the rows of the small products they read.

A region (:mod:`relgraph.backends.numba.lowering`) is computed by one loop nest over
its result, with no temporaries: a flat loop where no operand broadcasts (it
vectorises), else a loop per axis, the last one reading contiguous rows where no
operand broadcasts along it.  A region that runs in place over a product in its own
buffer (``exp(-g * (X @ Y.T))``) computes each row into a row of its own first: LLVM
cannot tell that each element is read before it is written, and a loop whose output
overlaps an input does not vectorise.

A float matrix product that only regions of two axes read (``X @ Y.T`` in an RBF
kernel, ``exp(-g * (-2 * X @ Y.T + xx + yy))``) is *fused*: where its inner
dimension is at most :data:`~relgraph.backends.numba.products.SKINNY` when the kernel
runs, each region computes the product's row ``i0``
(:func:`~relgraph.backends.numba.kernels.product_row`) just before its own row
``i0``, into a buffer that stays in cache, and the product is never an array.  BLAS
would write it first and the region read it back: a pass over memory more, and
BLAS's threads spin against the region's loop after it (the RBF kernel at 10^4 x 100
from 8 features: about 4.5 -> 2.3 ms on two cores).  Where the inner dimension is wider,
BLAS computes the product as before and the region copies its rows.

Examples
--------
>>> import relgraph as rg
>>> from relgraph.backends.numba.lowering import lower
>>> X, Y = rg.matrix("X"), rg.matrix("Y")
>>> lower([X, Y], [rg.exp(-(X @ Y.T))]).fused  # the region computes its rows
(Term((X @ Y.T)),)
>>> lower([X, Y], [X @ Y.T, rg.exp(-(X @ Y.T))]).fused  # an output: an array
()
"""

from __future__ import annotations

from typing import Any

from relgraph.backends.numba.products import SKINNY, calls_blas, float_matmat, product_into
from relgraph.backends.numba.scalars import dtype_expr
from relgraph.ops.products import Dot
from relgraph.terms.infer import typeof
from relgraph.terms.term import Term

__all__ = ["emit_loops", "fused_products", "emit_fused_product", "STAGED", "BROADCAST"]

STAGED = 64  # rows per block of a parallel loop with a row buffer of its own
BROADCAST = "relgraph: these shapes broadcast"  # raised by kernels built without it


def fused_products(g: Any) -> set[Term]:
    """The float matrix products that only regions of two axes read (none an output),
    whose rows those regions compute; none where the kernel calls BLAS anyway: it runs
    in one thread then, and BLAS's product on every core is faster than rows on one
    (``tanh(X @ W + b) @ V``)."""
    in_rows = set(g.epilogues.values())
    members: set[Term] = set()
    for root in g.materialised - in_rows:
        if typeof(root).ndim == 2:
            members.update(g._region(root, g.materialised))
    found = {
        n
        for n in g.nodes
        if type(n) is Term and isinstance(n.op, Dot) and float_matmat(n)
        and n not in g.outputs and g.readers.get(n) and g.readers[n] <= members
    }  # fmt: skip
    return set() if calls_blas(g.nodes, found) else found


def emit_fused_product(g: Any, node: Term) -> None:
    """A fused product's statements before the regions that read it: its shape, and
    either its right-hand operand in rows (small inner dimension) or BLAS's product,
    into the output's buffer where the output's region alone reads it (that region
    copies each row before it writes it)."""
    a, b = (g._value(x) for x in node.args)
    name, dtype = g._name(node), dtype_expr(typeof(node).dtype)
    blas = f"{name} = kernels.dot({a}, {b}, {dtype})"
    if node in g.into:
        blas = str(product_into(node)).replace("{buffer}", f"{name} = {g.into[node]}")
        blas = blas.format(a, b, dtype=dtype, out=name)
    g.lines += [
        f"{name}_shape = ({a}.shape[0], {b}.shape[1])",
        f"{name}_fused = {a}.shape[1] <= {SKINNY}",
        f"if {name}_fused:",
        f"    {name} = np.empty((0, 0), {dtype})",
        f"    {name}_b = np.ascontiguousarray({b})",
        "else:",
        *(f"    {line}" for line in blas.split("\n")),
        f"    {name}_b = {name}",
    ]


def emit_loops(g: Any, root: Term, region: list, leaves: list, out: str, out_type: Any) -> None:
    """The loops computing ``root``'s region (of ``leaves``) into array ``out``."""
    d = out_type.ndim
    dims = [f"{out}_n{k}" for k in range(d)]
    for k, dim in enumerate(dims):
        sizes = [f"{g.shape_of(name)}[{k - d + nd}]" for name, nd in leaves if k - d + nd >= 0]
        g.lines.append(g.broadcast_dim(dim, sizes))
    _allocate(g, root, out, dims, dtype_expr(out_type.dtype))
    full = [name for name, nd in leaves if nd == d]
    # A leaf whose type has length 1 where the result's has not surely broadcasts:
    # no flat loop for that region, the strided one only.
    surely = any(g.static_shapes[n][k] == 1 != out_type.shape[k] for n in full for k in range(d))
    rows = [(name, p) for p in g.fused for name, _ in leaves if name == g.names.get(p)]
    if len(full) == len(leaves) and not (surely or rows or _in_place(g, root)):
        same = " and ".join(f"{n}.shape == {out}.shape" for n in full) or "True"
        if not _emit_flat(g, root, region, leaves, out, same):
            return
        _emit_nested(g, root, region, leaves, out, dims, rows, "    ")
    else:
        _emit_nested(g, root, region, leaves, out, dims, rows, "")


def _allocate(g: Any, root: Term, out: str, dims: list[str], dtype: str) -> None:
    shape = "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
    buffer = _buffer_of(g, root)
    if buffer is not None:  # an output's, or the product's it alone reads
        g.lines += [f"if {buffer}.shape == {shape}:", f"    {out} = {buffer}", "else:"]
        g.lines.append(f"    {out} = kernels.fresh({shape}, {dtype})")
    else:
        g.lines.append(f"{out} = kernels.fresh({shape}, {dtype})")


def _emit_flat(g: Any, root: Term, region: list, leaves: list, out: str, same: str) -> bool:
    """The flat loop, for calls where no leaf broadcasts; whether the strided loops
    follow (under ``else:``)."""
    lines = g.lines
    if g.broadcast:
        # No broadcasting: one flat loop over contiguous data, which vectorises.
        lines.append(f"if {same}:")
    else:
        # Flat loop only: a call whose shapes differ raises BROADCAST, and the caller
        # runs the kernel that has the strided loop too.  About half the code, so
        # about half the compile time.
        lines += [f"if not ({same}):", f"    raise ValueError({BROADCAST!r})", "if True:"]
    lines.append(f"    {out}_size = {out}.size")
    lines.append(f"    {out}_f = {out}.reshape({out}_size)")
    for name, _ in leaves:
        lines.append(f"    {name}_f = np.ascontiguousarray({name}).reshape({out}_size)")
    flat = {name: f"{name}_f[i]" for name, _ in leaves}
    lines.append(f"    for i in {'prange' if g.parallel else 'range'}({out}_size):")
    lines += ["        " + line for line in g._body(region, flat)]
    lines.append(f"        {out}_f[i] = {g._local(root)}")
    if g.broadcast:
        lines.append("else:")
    return g.broadcast


def _emit_nested(g, root, region, leaves, out, dims, rows, indent) -> None:
    """A loop per axis; where no leaf broadcasts along the last axis, its loop reads
    contiguous rows."""
    lines, d = g.lines, len(dims)
    dtype = dtype_expr(typeof(root).dtype)
    index = [f"i{k}" for k in range(d)]
    generic, fast, same = g._loads(leaves, index, dims[-1], indent)
    for name, _ in rows:  # a fused product's row
        static = g.static_shapes[name]
        at = "0" if static[1] == 1 else index[1]
        generic[name] = f"{name}_r[{at if at == '0' else f'{at} * {name}_s1'}]"
        fast[name] = f"{name}_r[{at}]"
    staged = _in_place(g, root)
    store = f"{out}_row[{index[-1]}]" if staged else f"{out}[{', '.join(index)}]"
    # in parallel, blocks of rows, each with rows of its own
    blocked = (staged or rows) and g.parallel and d > 1
    buffers = [f"{out}_row = np.empty({dims[-1]}, {dtype})"] if staged else []
    buffers += [f"{name}_buf = np.empty({name}_shape[1], {dtype})" for name, _ in rows]
    if not blocked:
        lines += [indent + line for line in buffers]
    lines.append(f"{indent}if {same}:")  # no broadcasting along the last axis
    for load in (fast, generic):
        pad = indent + "    "
        if blocked:
            lines.append(f"{pad}for {out}_b in prange(({dims[0]} + {STAGED - 1}) // {STAGED}):")
            lines += [f"{pad}    {line}" for line in buffers]
            lines.append(f"{pad}    {out}_lo = {out}_b * {STAGED}")
            pad += "    "
        for k in range(d):
            loop = "prange" if k == 0 and g.parallel else "range"
            bounds = f"{loop}({dims[k]})"
            if blocked and k == 0:
                bounds = f"range({out}_lo, min({out}_lo + {STAGED}, {dims[0]}))"
            lines.append(f"{pad}{'    ' * k}for {index[k]} in {bounds}:")
            if k == 0:
                lines += [f"{pad}    {line}" for line in _row_lines(g, rows, index[0])]
        inner = pad + "    " * d
        lines += [inner + line for line in g._body(region, load)]
        lines.append(f"{inner}{store} = {g._local(root)}")
        if staged:
            at = pad + "    " * (d - 1)
            lines.append(f"{at}for {index[-1]} in range({dims[-1]}):")
            lines.append(f"{at}    {out}[{', '.join(index)}] = {store}")
        if load is fast:
            lines.append(f"{indent}else:")


def _row_lines(g: Any, rows: list, i0: str) -> list[str]:
    """Each fused product's row ``i0`` (its only row where it broadcasts along axis
    0) in its buffer: computed, or copied from BLAS's product (which may be the
    array the region writes)."""
    found = []
    for name, product in rows:
        at = "0" if g.static_shapes[name][0] == 1 else f"{i0} * {name}_s0"
        left = g._value(product.args[0])
        found.append(
            f"{name}_r = kernels.product_row({left}, {name}_b, {at}, {name}_buf) "
            f"if {name}_fused else kernels.row_copy({name}, {at}, {name}_buf)"
        )
    return found


def _buffer_of(g: Any, root: Term) -> str | None:
    """The array a region writes where its shape fits, if not a new one."""
    if root in g.slots:
        return f"o{list(g.slots).index(root)}"
    return g._name(g.over[root]) if root in g.over else None


def _in_place(g: Any, root: Term) -> bool:
    """Whether the region computing ``root`` reads a product in the array that it
    writes (:func:`_buffer_of`), not a fused product's (a row is copied first)."""
    buffer = _buffer_of(g, root)
    into = [b for p, b in g.into.items() if p not in g.fused]
    return root in g.over or buffer is not None and buffer in into
