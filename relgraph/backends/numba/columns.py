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
ValueError); ``logsumexp`` takes two passes, the maxima and then the sums of
``exp(v - max)``, each computing the region again (cheaper than storing it).
:func:`emit_column_loop` writes the loops with the lowering's generator.
"""

from __future__ import annotations

from typing import Any

from relgraph.backends.numba.scalars import dtype_expr
from relgraph.ops.reductions import Reduce
from relgraph.terms.infer import typeof
from relgraph.terms.term import Term

__all__ = ["column_folds", "emit_column_loop", "BLOCK_ELEMENTS"]

BLOCK_ELEMENTS = 1 << 16  # elements per block of rows folded by one thread

_LARGEST = ("-np.inf", "{v} if {v} > {a} or {v} != {v} else {a}")  # NaN wins and stays
# kind: its passes, each (initial accumulator, fold of an accumulator a and a value v);
# a later pass reads the one before as {prev}[j] (logsumexp's shift)
_FOLDS = {
    "sum": [("0", "{a} + {v}")],
    "mean": [("0", "{a} + {v}")],
    "prod": [("1", "{a} * {v}")],
    "max": [_LARGEST],
    "min": [("np.inf", "{v} if {v} < {a} or {v} != {v} else {a}")],
    "logsumexp": [_LARGEST, ("0", "{a} + {exp}")],
}
_FLOAT_ONLY = ("max", "min", "logsumexp")


def column_folds(node: Any) -> list[tuple[str, str]] | None:
    """The passes if ``node`` reduces a matrix (an elementwise region or an array)
    along axis 0 (and only that) in a way a column loop computes; None otherwise."""
    op = node.op
    if not isinstance(op, Reduce) or op.name not in _FOLDS or not node.args:
        return None
    x = node.args[0]
    if typeof(x).ndim != 2 or (type(x) is Term and not x.op.elementwise):
        return None
    if op.axes(op.param_values(node.args)["axis"], 2) != {0}:
        return None
    kind = typeof(node).dtype.kind
    if kind not in "biuf" or (op.name in _FLOAT_ONLY and kind != "f"):
        return None
    return _FOLDS[op.name]


def emit_column_loop(g: Any, node: Term, passes: list[tuple[str, str]]) -> None:
    """Append to ``g`` (the lowering's generator) the loops computing ``node``."""
    x, out, lines = node.args[0], g._name(node), g.lines
    dtype = dtype_expr(typeof(node).dtype)
    n, rows = f"{out}_n", f"{out}_rows"
    region = g._region(x, g.materialised) if type(x) is Term else []
    leaves = g._leaves(region) if region else g._leaf(x)
    lines.append(g.broadcast_dim(n, [f"{name}.shape[{nd - 1}]" for name, nd in leaves]))
    lines.append(g.broadcast_dim(rows, [f"{nm}.shape[0]" for nm, nd in leaves if nd == 2]))
    if node.op.name in ("max", "min"):  # outside the prange loop: a raise makes it serial
        numpy_name = "maximum" if node.op.name == "max" else "minimum"
        lines.append(f"if {rows} == 0: raise ValueError('zero-size array to reduction "
                     f"operation {numpy_name} which has no identity')")  # fmt: skip
    if node.op.name == "prod":  # one block: the rows in turn, in numpy's order (a column
        # that reaches 0 stays 0, not 0 * inf = nan from another block's overflow)
        lines.append(f"{out}_r = max(1, {rows})")
    else:
        lines.append(f"{out}_r = max(1, {BLOCK_ELEMENTS} // max({n}, 1))")
    prev = ""
    for k, (initial, fold) in enumerate(passes):
        result = out if k == len(passes) - 1 else f"{out}_p{k}"
        if prev:  # logsumexp's shift: the maxima where they are finite
            _each(g, n, f"if not np.isfinite({prev}[{{j}}]): {prev}[{{j}}] = 0.0", out)
        index = [f"{result}_i", f"{result}_j"]  # parallel loops must not share names
        loads = g._loads(leaves, index, n, "")
        exp = "vecmath.exp({v} - {prev}[{j}])"  # vectorising, as elementwise exp
        exp = exp if dtype == "np.float64" else "vecmath32.exp(np.float32({v} - {prev}[{j}]))"
        fold = fold.replace("{exp}", exp).replace("{prev}", prev).replace("{j}", index[1])
        _fold_pass(g, out, x, region, loads, result, (initial, fold), dtype, index)
        prev = result if k < len(passes) - 1 else prev
    # loops, not array expressions: Numba compiles those apart, with the parallel
    # flags and no prange, and warns that nothing could run in parallel
    if node.op.name == "mean":
        _each(g, n, f"{out}[{{j}}] = {out}[{{j}}] / {dtype}({rows})", out)
    if node.op.name == "logsumexp":
        _each(g, n, f"{out}[{{j}}] = np.log({out}[{{j}}]) + {prev}[{{j}}]", out)
    if g.op_keeps_dims(node):
        lines.append(f"{out} = {out}.reshape((1, {n}))")


def _each(g: Any, n: str, statement: str, out: str) -> None:
    """``statement`` for each column ``{j}``, serially (``n`` values: no work to share)."""
    j = f"{out}_c"
    g.lines.append(f"for {j} in range({n}):")
    g.lines.append("    " + statement.format(j=j))


def _fold_pass(g: Any, out: str, x: Term, region: list, loads: tuple, result: str,
               fold: tuple[str, str], dtype: str, index: list[str]) -> None:  # fmt: skip
    """``result[j]`` = the fold of column ``j`` of the region, over blocks of rows."""
    lines, (initial, fold_code), (i, j) = g.lines, fold, index
    n, rows, size = f"{out}_n", f"{out}_rows", f"{out}_r"
    b, acc, part = f"{result}_b", f"{result}_acc", f"{result}_part"
    generic, fast, same = loads
    prefix = f"{result}_e_"
    lines.append(f"{part} = np.empty((max(1, ({rows} + {size} - 1) // {size}), {n}), {dtype})")
    lines.append(f"for {b} in {'prange' if g.parallel else 'range'}({part}.shape[0]):")
    lines.append(f"    {acc} = np.full({n}, {initial}, {dtype})")
    lines.append(f"    for {i} in range({b} * {size}, min({b} * {size} + {size}, {rows})):")

    def fold_row(load: dict[str, str]) -> None:
        lines.append(f"            for {j} in range({n}):")
        lines.extend(f"                {line}" for line in g._body(region, load, prefix))
        value = f"{result}_v"  # read once: the fold names its value up to four times
        local = g._local(x, prefix) if region else load[g._value(x)]  # a region, or x
        lines.append(f"                {value} = {dtype}({local})")
        lines.append(f"                {acc}[{j}] = {fold_code.format(a=f'{acc}[{j}]', v=value)}")

    g.fast_or_generic(same, fold_row, fast, generic, "        ")
    lines.append(f"    {part}[{b}] = {acc}")
    # the blocks' accumulators, folded (logsumexp's sums add: its fold is a sum of exps)
    combine = "{a} + {v}" if "exp(" in fold_code else fold_code
    lines.append(f"{result} = {part}[0].copy()")
    lines.append(f"for {b} in range(1, {part}.shape[0]):")
    lines.append(f"    for {j} in range({n}):")
    step = combine.format(a=f"{result}[{j}]", v=f"{part}[{b}, {j}]")
    lines.append(f"        {result}[{j}] = {step}")
