"""Column reductions fused with the elementwise region they reduce.

``x.var(axis=0)`` of a tall matrix reduces ``(x - mean) ** 2`` along axis 0.  Without
fusion the region becomes an array as large as ``x`` and the reduction a second pass
over it.  Here the kernel walks the rows once, in memory order, computing the region
at each element and folding it into a vector of accumulators, one per column.  With
``prange`` the rows are cut into blocks, each folding into its own vector, and the
vectors are folded together at the end (a sum adds in another order than numpy's
pairwise summation: equal to rounding).

Sums, means and products fold any dtype, in the result's dtype as numpy accumulates;
max and min fold floats (NaN wins, as in numpy; an empty axis raises numpy's
ValueError).  :func:`emit_column_loop` writes the loop with the lowering's generator.
"""

from __future__ import annotations

from typing import Any

from relgraph.backends.numba.scalars import dtype_expr
from relgraph.ops.reductions import Reduce
from relgraph.terms.infer import typeof
from relgraph.terms.term import Term

__all__ = ["column_fold", "emit_column_loop", "BLOCK_ELEMENTS"]

BLOCK_ELEMENTS = 1 << 16  # elements per block of rows folded by one thread

# kind: (initial accumulator, fold of the accumulator a and a value v)
_FOLDS = {
    "sum": ("0", "{a} + {v}"),
    "mean": ("0", "{a} + {v}"),
    "prod": ("1", "{a} * {v}"),
    "max": ("-np.inf", "{v} if {v} > {a} or {v} != {v} else {a}"),
    "min": ("np.inf", "{v} if {v} < {a} or {v} != {v} else {a}"),
}


def column_fold(node: Any) -> tuple[str, str] | None:
    """``(initial, fold)`` if ``node`` reduces a matrix along axis 0 (and only that)
    in a way a column loop computes; None otherwise."""
    op = node.op
    if not isinstance(op, Reduce) or op.name not in _FOLDS or not node.args:
        return None
    x = node.args[0]
    if type(x) is not Term or not x.op.elementwise or typeof(x).ndim != 2:
        return None
    if op.axes(op.param_values(node.args)["axis"], 2) != {0}:
        return None
    kind = typeof(node).dtype.kind
    if kind not in "biuf" or (op.name in ("max", "min") and kind != "f"):
        return None
    return _FOLDS[op.name]


def emit_column_loop(g: Any, node: Term, initial: str, fold: str) -> None:
    """Append to ``g`` (the lowering's generator) the loop computing ``node``."""
    x = node.args[0]
    out, lines = g._name(node), g.lines
    dtype = dtype_expr(typeof(node).dtype)
    n, rows, size = f"{out}_n", f"{out}_rows", f"{out}_r"
    b, i, j, acc, part = (f"{out}_{s}" for s in ("b", "i", "j", "acc", "part"))
    region = g._region(x, g.materialised)
    leaves = g._leaves(region)
    lines.append(g.broadcast_dim(n, [f"{name}.shape[{nd - 1}]" for name, nd in leaves]))
    lines.append(g.broadcast_dim(rows, [f"{nm}.shape[0]" for nm, nd in leaves if nd == 2]))
    generic, fast, same = g._loads(leaves, [i, j], n, "")
    if node.op.name in ("max", "min"):  # outside the prange loop: a raise makes it serial
        reduction = "maximum" if node.op.name == "max" else "minimum"
        lines.append(f"if {rows} == 0: raise ValueError('zero-size array to reduction "
                     f"operation {reduction} which has no identity')")  # fmt: skip
    lines.append(f"{size} = max(1, {BLOCK_ELEMENTS} // max({n}, 1))")
    lines.append(f"{part} = np.empty((max(1, ({rows} + {size} - 1) // {size}), {n}), {dtype})")
    lines.append(f"for {b} in {'prange' if g.parallel else 'range'}({part}.shape[0]):")
    lines.append(f"    {acc} = np.full({n}, {initial}, {dtype})")
    lines.append(f"    for {i} in range({b} * {size}, min({b} * {size} + {size}, {rows})):")
    prefix = f"{out}_e_"

    def fold_row(load: dict[str, str]) -> None:
        lines.append(f"            for {j} in range({n}):")
        lines.extend(f"                {line}" for line in g._body(region, load, prefix))
        value = f"{dtype}({g._local(x, prefix)})"
        lines.append(f"                {acc}[{j}] = {fold.format(a=f'{acc}[{j}]', v=value)}")

    lines.append(f"        if {same}:")
    fold_row(fast)
    lines.append("        else:")
    if g.broadcast:
        fold_row(generic)
    else:  # rows that broadcast along their last axis: the general kernel's
        lines.append(f"            raise ValueError({g.BROADCAST!r})")
    lines.append(f"    {part}[{b}] = {acc}")
    lines.append(f"{out} = {part}[0].copy()")
    lines.append(f"for {b} in range(1, {part}.shape[0]):")
    lines.append(f"    for {j} in range({n}):")
    lines.append(f"        {out}[{j}] = {fold.format(a=f'{out}[{j}]', v=f'{part}[{b}, {j}]')}")
    if node.op.name == "mean":
        lines.append(f"{out} = {out} / {dtype}({rows})")
    if g.op_keeps_dims(node):
        lines.append(f"{out} = {out}.reshape((1, {n}))")
