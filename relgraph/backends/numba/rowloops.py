"""Reductions along the last axis fused with the elementwise region they reduce, and
with the region that reads them back.

``softmax(x) = exp(x - m) / sum(exp(x - m))`` reduces each row twice and then divides
every element.  Each reduction runs in a loop over rows that computes its operand's
region into a row buffer (a loop that vectorises) and folds the buffer
(:mod:`~relgraph.backends.numba.kernels`' lane helpers); rows run in parallel.  A
reduction that maps its values before folding them (logsumexp's ``exp(v - shift)``)
runs a block of rows at a time and maps the whole block in one loop: a row of 4 or 10
elements is too short for a vector loop of its own.

The region that reads the reductions back, elementwise over the same rows (the
*epilogue*: the division above), runs in the rows of the last reduction it reads,
right after that row is reduced: the row is still in cache, and where the epilogue
recomputes the reduced operand (``exp(x - m)``) it reads the buffer instead.  Three
passes over ``x`` and two ``exp`` per element become two passes and one ``exp``.
:func:`emit_row_loop` writes the loops with the lowering's generator; :func:`epilogues`
finds which regions run this way.
"""

from __future__ import annotations

from typing import Any

from relgraph.backends.numba.scalars import dtype_expr
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term

__all__ = ["emit_row_loop", "epilogues", "CHUNK", "ROW_BLOCK", "EXTREMES"]

CHUNK = 4096  # elements per parallel chunk of a vector's reduction
ROW_BLOCK = 2048  # elements per block of a matrix's rows (one row where rows are longer)
ROW_CHUNK = 64  # rows per iteration of a parallel loop that folds each row on its own
# The row loops' max and min updates (relgraph.ops.reductions): kernels' lane helpers.
EXTREMES = {
    "if {v} > {acc} or {v} != {v}: {acc} = {v}": "max",
    "if {v} < {acc} or {v} != {v}: {acc} = {v}": "min",
}


def epilogues(g: Any) -> dict[Term, Term]:
    """``{row reduction: region root}`` for each region of a matrix computed in the
    rows of a reduction (see the module docs), over ``g`` (the lowering's generator)."""
    found: dict[Term, Term] = {}
    order = {n: k for k, n in enumerate(g.nodes)}
    for root in g.nodes:
        if root not in g.materialised or typeof(root).ndim != 2:
            continue
        region = g._region(root, g.materialised)
        outside = _operands_outside(region)
        rows = [a for a in outside if a in g.row_loops and _row_of_matrix(g, a)]
        if not rows:
            continue
        last = max(rows, key=order.__getitem__)
        if last in found:
            continue
        arrays = _arrays_read(g, last)
        fits = all(
            (type(a) is not Term or order[a] <= order[last])  # computed by then
            and (
                _is_scalar(a)
                or a in arrays
                or (a in g.row_loops and _row_of_matrix(g, a) and _arrays_read(g, a) <= arrays)
            )
            for a in outside
        )
        # Its shape is the rows' (rows, n): it computes the reduced operand again, or
        # reads every matrix that operand reads (not only columns, (rows, 1)).
        full = {a for a in arrays if typeof(a).ndim == 2 and typeof(a).shape[-1] != 1}
        full -= set(g.row_loops)
        recomputes = last.args[0] in region
        if fits and (recomputes or (full and full <= set(outside))):
            found[last] = root
    return found


def _operands_outside(region: list[Term]) -> list[Any]:
    """The operands a region reads from outside it."""
    members = set(region)
    return [
        a for n in region for a in n.op.operands(n.args) if not (type(a) is Term and a in members)
    ]


def _is_scalar(a: Any) -> bool:
    return not isinstance(a, (Term, Symbol, Constant)) or typeof(a).ndim == 0


def _row_of_matrix(g: Any, node: Term) -> bool:
    """A reduction of a matrix's rows that keeps the reduced axis: a column (rows, 1)."""
    return typeof(node.args[0]).ndim == 2 and g.op_keeps_dims(node) and not _whole(node)


def _whole(node: Term) -> bool:
    """A reduction of every element of a matrix: its rows' results, reduced again."""
    axis = node.op.param_values(node.args)["axis"]
    return typeof(node.args[0]).ndim == 2 and len(node.op.axes(axis, 2)) == 2


def _operand_region(g: Any, x: Any) -> list[Term]:
    """The elementwise region computing a row reduction's operand in its loop; none
    where the operand is an array (an input, a product's result)."""
    return g._region(x, g.materialised) if type(x) is Term and x.op.elementwise else []


def _arrays_read(g: Any, node: Term) -> set[Any]:
    """The arrays a row reduction's region reads."""
    region = _operand_region(g, node.args[0])
    if not region:
        return {node.args[0]}
    return {a for a in _operands_outside(region) if not _is_scalar(a)}


def emit_row_loop(g: Any, node: Term, passes: list[tuple], result: str, check: str | None) -> None:
    """A reduction along the last axis, computing its operand's region inline.

    A matrix's rows run a block at a time (:func:`_emit_row_blocks`).  A vector runs
    in chunks of ``CHUNK`` elements in parallel where one pass suffices, else whole:
    its values go to a buffer in a loop that vectorises, then the passes run over the
    buffer in order: an optional vectorised map (``exp(v - shift)``), then the
    in-order update.
    """
    x = node.args[0]
    if typeof(x).ndim == 2:
        return _emit_row_blocks(g, node, passes, result, check)
    if typeof(x).ndim > 2:
        return _emit_trailing(g, node, passes, result, check)
    out = g._name(node)
    names = {"acc": f"{out}_acc", "shift": f"{out}_shift", "n": f"{out}_n"}
    rows, n, lines = f"{out}_rows", names["n"], g.lines
    i, j, k = f"{out}_i", f"{out}_j", f"{out}_k"  # parallel loops must not share names
    region = _operand_region(g, x)
    leaves = g._leaves(region) if region else g._leaf(x)
    lines.append(g.broadcast_dim(n, [f"{name}.shape[{nd - 1}]" for name, nd in leaves]))
    # A product runs in numpy's order, one chunk: a 0 then stays 0 (numpy's value), where
    # chunks would meet another chunk's overflow in 0 * inf = nan.
    chunked = len(passes) == 1 and node.op.name != "prod"
    lines.append(f"{rows} = ({n} + {CHUNK - 1}) // {CHUNK}" if chunked else f"{rows} = 1")
    generic, fast, same = g._loads(leaves, [j], n, "")
    if check:  # outside the parallel loop, which a raise inside would make serial
        lines.append(check.format(**names))
    dtype, keep = dtype_expr(typeof(node).dtype), g.op_keeps_dims(node)
    each = f"{out}_part"
    lines.append(f"{each} = np.empty(({rows},), {dtype})")
    lo, hi, buf, prefix = f"{out}_lo", f"{out}_hi", f"{out}_buf", f"{out}_e_"
    # One buffer for every chunk; in a prange loop, one per chunk (threads share none).
    allocate = f"{buf} = np.empty({CHUNK if chunked else n}, {dtype_expr(typeof(x).dtype)})"
    if not g.parallel:
        lines.append(allocate)
    lines.append(f"for {i} in {'prange' if g.parallel else 'range'}({rows}):")
    lines.append(f"    {lo} = {i} * {CHUNK}" if chunked else f"    {lo} = 0")
    lines.append(f"    {hi} = min({lo} + {CHUNK}, {n})" if chunked else f"    {hi} = {n}")
    if g.parallel:
        lines.append(f"    {allocate}")

    def fill(load: dict[str, str]) -> None:
        # counting from 0 and storing at buf[t]: with buf[j - lo] the loop ran 1.6x
        # slower (an index Numba cannot prove non-negative is wrapped around)
        if chunked and load is fast:
            load = _chunk_loads(g, leaves, load, (j, lo, hi, f"{out}_t"))
        value = g._local(x, prefix) if region else load[leaves[0][0]]
        lines.append(f"        for {out}_t in range({hi} - {lo}):")
        lines.append(f"            {j} = {lo} + {out}_t")
        lines.extend(f"            {line}" for line in g._body(region, load, prefix))
        lines.append(f"            {buf}[{out}_t] = {value}")

    g.fast_or_generic(same, fill, fast, generic, "    ")
    _passes(g, passes, names, buf, f"{hi} - {lo}", k, "    ")
    lines.append(f"    {each}[{i}] = {names['acc'] if chunked else result.format(**names)}")
    if chunked:  # the chunks' results, combined by the same pass
        _passes(g, passes, names, each, rows, k, "")
    value = f"{dtype}({result.format(**names)})" if chunked else f"{each}[0]"
    lines.append(f"{out} = np.full(1, {value})" if keep else f"{out} = {value}")


def _emit_trailing(
    g: Any, node: Term, passes: list[tuple], result: str, check: str | None
) -> None:
    """A reduction of every axis but the first of an n-d region (``einsum("ij,jk,ik->i")``
    sums ``x[:, :, None] * A * x[:, None, :]`` over its last two axes): for each index
    of the first axis, loops over the others (the innermost vectorises) write the
    region's values to a buffer, and the passes run over the buffer.  Blocks of about
    ``ROW_BLOCK`` elements run in parallel, each with its own buffer."""
    x, out, lines = node.args[0], g._name(node), g.lines
    nd = typeof(x).ndim
    region = _operand_region(g, x)
    leaves = g._leaves(region) if region else g._leaf(x)
    dims, index = [f"{out}_d{k}" for k in range(nd)], [f"{out}_i{k}" for k in range(nd)]
    for k, dim in enumerate(dims):  # axis k is axis k - nd + m of a leaf of m axes
        lines.append(g.broadcast_dim(dim, [f"{a}.shape[{k - nd + m}]" for a, m in leaves
                                           if k - nd + m >= 0]))  # fmt: skip
    n, buf, b, per = f"{out}_n", f"{out}_buf", f"{out}_b", f"{out}_per"
    lines.append(f"{n} = {' * '.join(dims[1:])}")
    generic, fast, same = g._loads(leaves, index, dims[-1], "")
    names = {"acc": f"{out}_acc", "shift": f"{out}_shift", "n": n}
    if check:  # outside the parallel loop, which a raise inside would make serial
        lines.append(check.format(**names))
    keep, dtype = g.op_keeps_dims(node), dtype_expr(typeof(node).dtype)
    lines.append(f"{out} = np.empty(({dims[0]},{' 1,' * (nd - 1) if keep else ''}), {dtype})")
    lines.append(f"{per} = max(1, {ROW_BLOCK} // max({n}, 1))")
    lines.append(
        f"for {b} in {'prange' if g.parallel else 'range'}(({dims[0]} + {per} - 1) // {per}):"
    )
    lines.append(f"    {buf} = np.empty({n}, {dtype_expr(typeof(x).dtype)})")
    lines.append(f"    for {index[0]} in range({b} * {per}, min(({b} + 1) * {per}, {dims[0]})):")

    def fill(load: dict[str, str]) -> None:
        ind, place = "            ", "0"
        for k in range(1, nd):  # the buffer's place: row-major over the trailing axes
            lines.append(f"{ind}for {index[k]} in range({dims[k]}):")
            ind, place = ind + "    ", f"({place}) * {dims[k]} + {index[k]}"
        lines.extend(f"{ind}{line}" for line in g._body(region, load, f"{out}_e_"))
        value = g._local(x, f"{out}_e_") if region else load[leaves[0][0]]
        lines.append(f"{ind}{buf}[{place}] = {value}")

    g.fast_or_generic(same, fill, fast, generic, "        ")
    _passes(g, passes, names, buf, n, f"{out}_k", "        ")
    at = index[0] + ", 0" * (nd - 1) if keep else index[0]
    lines.append(f"        {out}[{at}] = {dtype}({result.format(**names)})")


def _emit_row_blocks(
    g: Any, node: Term, passes: list[tuple], result: str, check: str | None
) -> None:
    """The rows of a matrix (or of its region), reduced a block of rows at a time.

    The block's values go to one buffer, row after row, and each row folds them right
    away; only a pass that maps the values (logsumexp's ``exp(v - shift)``) maps the
    whole block in one loop that vectorises (a row of 4 elements makes no vector loop
    of its own: rows of 4 reduce 3x faster so) and then folds each row in a second
    loop over the rows; then each row's result, and its epilogue if a region runs in
    these rows.  A sum of every element of the matrix folds each block at once, and
    then the blocks' sums.  Blocks hold about ``ROW_BLOCK`` elements (one row where
    rows are longer, or where no pass maps) and run in parallel.
    """
    x, out = node.args[0], g._name(node)
    v: dict[str, Any] = {
        w: f"{out}_{w}" for w in ("rows", "n", "per", "blocks", "b", "r", "i", "j", "k")
    }
    v |= {w: f"{out}_{w}" for w in ("first", "count", "buf", "spread", "part", "e_")}
    rows, n, r, i, j, buf, lines = v["rows"], v["n"], v["r"], v["i"], v["j"], v["buf"], g.lines
    region = _operand_region(g, x)
    leaves = g._leaves(region) if region else g._leaf(x)
    lines.append(g.broadcast_dim(n, [f"{name}.shape[{nd - 1}]" for name, nd in leaves]))
    lines.append(g.broadcast_dim(rows, [f"{nm}.shape[0]" for nm, nd in leaves if nd == 2]))
    generic, fast, same = g._loads(leaves, [i, j], n, "")
    # A map (logsumexp's exp(v - shift)) runs over whole blocks of rows, and so does the
    # fold of a matrix's sum; otherwise each row is folded as it is written (a block of
    # one row, accumulators in locals).  Row r of a block is a view of the buffer from
    # r * n where a pass folds it (kernels' lane helpers take an array).
    mapped, whole = any(mapping for _, mapping, _ in passes), _whole(node)
    blocked = mapped or whole
    v["row"], v["ind"] = (f"{out}_row", "        ") if blocked else (buf, "    ")
    at = f"[{r}]" if mapped else ""
    names = {"acc": f"{out}_acc{at}", "shift": f"{out}_shift{at}", "n": n}
    if check:  # outside the parallel loop, which a raise inside would make serial
        lines.append(check.format(**names))
    keep = g.op_keeps_dims(node)
    flat = whole and all(nd == 2 for _, nd in leaves)
    if flat:  # leaves of the region's shape, C-contiguous: one run of elements a block
        _flat_views(g, out, leaves, v)
    opened = len(lines)
    after = _open_blocks(g, node, passes, v, (blocked, mapped, whole))
    ind = v["ind"]
    start = len(lines)

    def fill(load: dict[str, str]) -> None:
        value = g._local(x, v["e_"]) if region else load[leaves[0][0]]
        lines.append(f"{ind}    for {j} in range({n}):")
        lines.extend(f"{ind}        {line}" for line in g._body(region, load, v["e_"]))
        lines.append(f"{ind}        {buf}[{r} * {n} + {j}] = {value}" if blocked else
                     f"{ind}        {v['row']}[{j}] = {value}")  # fmt: skip

    lines.extend(_each_row(v)[:2] if blocked else [])  # no view: 20% faster on rows of 4
    if mapped:  # the first pass folds the row as it is written
        lines.extend(_each_row(v)[2:])
    g.fast_or_generic(same, fill, fast, generic, ind)
    if flat:
        lines[start:] = [*_flat_fill(g, out, (x, region, leaves), v), "    else:"] + [
            f"    {line}" for line in lines[start:]
        ]
    dtype = dtype_expr(typeof(node).dtype)
    if whole:  # one pass, no map: the block folded at once, whatever its rows' length
        _passes(g, passes, names, buf, f"{v['count']} * {n}", v["k"], "    ")
        lines.append(f"    {v['part']}[{v['b']}] = {names['acc']}")
        _passes(g, passes, names, v["part"], v["blocks"], v["k"], "")
        value = f"{dtype}({result.format(**names)})"
        lines.append(f"{out} = np.full((1, 1), {value})" if keep else f"{out} = {value}")
        return
    _fold_rows(g, passes, names, v)
    lines.append(f"{ind}{out}[{i}{', 0' if keep else ''}] = {dtype}({result.format(**names)})")
    if after is not None:
        after()
    if g.parallel and not blocked:
        _in_chunks(lines, lines.index(f"for {i} in prange({rows}):", opened), v)


def _flat_views(g: Any, out: str, leaves: list, v: dict) -> None:
    """Whether every leaf has the region's shape and is C-contiguous, and each leaf's
    elements as one vector where so (an empty one where not)."""
    rows, n = v["rows"], v["n"]
    tests = [f"{a}.shape == ({rows}, {n}) and {a}.flags.c_contiguous" for a, _ in leaves]
    g.lines.append(f"{out}_flat = {' and '.join(tests)}")
    for a, _ in leaves:
        flat = f"np.ascontiguousarray({a} if {out}_flat else {a}[:0]).reshape(-1)"
        g.lines.append(f"{out}_{a}_w = {flat}")  # named per region: another reads a too


def _flat_fill(g: Any, out: str, operand: tuple, v: dict) -> list[str]:
    """A block's values in one loop over its run of elements (the rows' values in the
    same order: the same sums, bit for bit): a column of 10**6 rows as fast as a
    vector, where a loop per row of one element took twice as long."""
    (x, region, leaves), count, n = operand, v["count"], v["n"]
    t, base = f"{out}_t", f"{out}_base"
    views = {a: f"{out}_{a}_v" for a, _ in leaves}
    body = g._body(region, {a: f"{w}[{t}]" for a, w in views.items()}, v["e_"])
    value = g._local(x, v["e_"]) if region else f"{views[leaves[0][0]]}[{t}]"
    return [
        f"    if {out}_flat:",
        f"        {base} = {v['first']} * {n}",
        *(f"        {w} = {out}_{a}_w[{base} : {base} + {count} * {n}]" for a, w in views.items()),
        f"        for {t} in range({count} * {n}):",
        *(f"            {line}" for line in body),
        f"            {v['buf']}[{t}] = {value}",
    ]


def _open_blocks(g: Any, node: Term, passes: list[tuple], v: dict, kinds: tuple) -> Any:
    """The result's array, the epilogue's set-up, the buffers, and the loop over blocks
    of rows (over rows where each is a block of its own); returns the epilogue's writer
    (:func:`_epilogue`)."""
    (blocked, mapped, whole), lines, out = kinds, g.lines, g._name(node)
    rows, n, per, buf = v["rows"], v["n"], v["per"], v["buf"]
    lines.append(f"{per} = max(1, {ROW_BLOCK} // max({n}, 1))" if blocked else f"{per} = 1")
    lines.append(f"{v['blocks']} = ({rows} + {per} - 1) // {per}")
    if whole:  # a sum of a matrix: the blocks' sums, then their sum
        lines.append(f"{v['part']} = np.empty({v['blocks']}, np.float64)")
    else:
        shape = f"({rows}, 1)" if g.op_keeps_dims(node) else f"({rows},)"
        lines.append(f"{out} = np.empty({shape}, {dtype_expr(typeof(node).dtype)})")
    after = _epilogue(g, node, passes, (v["i"], rows, n, f"{v['row']}[{{}}]"), v["ind"])
    shifted = any(mapping and "{shift}" in mapping for _, mapping, _ in passes)
    operand = dtype_expr(typeof(node.args[0]).dtype)
    allocate = [f"{buf} = np.empty({per} * {n}, {operand})"]
    allocate += [f"{out}_{a} = np.empty({per}, np.float64)" for a in ("acc", "shift") if mapped]
    # the shifts spread over the block in the operand's dtype (a maximum of its values,
    # or 0): the map then subtracts in that dtype, as numpy does
    allocate += [f"{v['spread']} = np.empty({per} * {n}, {operand})"] if shifted else []
    if not g.parallel:  # one buffer for every block; in a prange loop, one per block
        lines.extend(allocate)
    loop = "prange" if g.parallel else "range"
    if blocked:
        lines.append(f"for {v['b']} in {loop}({v['blocks']}):")
        lines.append(f"    {v['first']} = {v['b']} * {per}")
        lines.append(f"    {v['count']} = min({per}, {rows} - {v['first']})")
    else:
        lines.append(f"for {v['i']} in {loop}({rows}):")
    if g.parallel:
        lines.extend(f"    {a}" for a in allocate)
    return after


def _in_chunks(lines: list[str], head: int, v: dict) -> None:
    """A prange loop over rows (from ``lines[head]``, its buffers allocated first in
    its body) as a prange loop over chunks of ``ROW_CHUNK`` rows, each allocating the
    buffers once: a row of 8 elements allocated its buffer per row, on every thread
    (``angle_between`` at 125,000 rows: 5.3 ms, slower than the serial kernel's 4.4)."""
    i, rows, c = v["i"], v["rows"], v["b"]
    body = lines[head + 1 :]
    allocated = 0
    while allocated < len(body) and " = np.empty(" in body[allocated]:
        allocated += 1
    lines[head:] = [
        f"for {c} in prange(({rows} + {ROW_CHUNK - 1}) // {ROW_CHUNK}):",
        *body[:allocated],
        f"    for {i} in range({c} * {ROW_CHUNK}, min({c} * {ROW_CHUNK} + {ROW_CHUNK}, {rows})):",
        *(f"    {line}" for line in body[allocated:]),
    ]


def _each_row(v: dict) -> list[str]:
    """The head of a loop over a block's rows: the row's index, and its view."""
    return [
        f"    for {v['r']} in range({v['count']}):",
        f"        {v['i']} = {v['first']} + {v['r']}",
        f"        {v['row']} = {v['buf']}[{v['r']} * {v['n']} :]",
    ]


def _fold_rows(g: Any, passes: list[tuple], names: dict, v: dict) -> None:
    """Each pass over a block's rows: set up, map the block (in a loop of its own, then
    a new loop over the rows), fold each row."""
    lines, ind, n, k = g.lines, v["ind"], v["n"], v["k"]
    for setup, mapping, update in passes:
        lines.extend(f"{ind}{line.format(**names)}" for line in setup.split("\n"))
        if mapping:  # over the whole block: a loop that vectorises, between two row loops
            if "{shift}" in mapping:
                spread = f"{v['spread']}[{v['r']} * {n} : ({v['r']} + 1) * {n}]"
                lines.append(f"{ind}{spread} = {names['shift']}")
            value = mapping.format(v=f"{v['buf']}[{k}]", shift=f"{v['spread']}[{k}]", n=n)
            lines.append(f"    for {k} in range({v['count']} * {n}):")
            lines.append(f"        {v['buf']}[{k}] = {value}")
            lines.extend(_each_row(v))
        _update(g, update, names, (v["row"], f"{v['row']}[{{}}]"), n, k, ind)


def _chunk_loads(g: Any, leaves: list, fast: dict[str, str], place: tuple) -> dict[str, str]:
    """``fast`` (the loads of a vector's chunk where nothing broadcasts) with each
    leaf read from its chunk, a slice indexed from 0.  Read at ``j = lo + t``, an
    index Numba cannot prove non-negative is wrapped around in the parallel loop,
    which then ran 2.6x slower on both cores."""
    j, lo, hi, t = place
    load = dict(fast)
    for name, _ in leaves:
        if load[name] == f"{name}[{j}]":
            g.lines.append(f"        {name}_c = {name}[{lo}:{hi}]")
            load[name] = f"{name}_c[{t}]"
    return load


def _epilogue(g: Any, node: Term, passes: list[tuple], row: tuple, indent: str) -> Any:
    """Allocate the epilogue's array and set up its loads (before the row loop); return
    the function that writes its loop for one row (in the loop over a block's rows,
    after the reduction), or None if no region runs in these rows.  The reduced
    operand is read from the row's values in the buffer (``cell``: a template of
    the column) unless a pass mapped the buffer in place (logsumexp's
    ``exp(v - shift)``)."""
    if node not in g.epilogues:
        return None
    root, (i, rows, n, cell), lines = g.epilogues[node], row, g.lines
    x = node.args[0]
    buffered = type(x) is Term and all(mapping is None for _, mapping, _ in passes)
    region = g._region(root, g.materialised | ({x} if buffered else set()))
    name_x = g._name(x) if buffered else None
    leaves = [leaf for leaf in g._leaves(region) if leaf[0] != name_x]
    out, dtype = g._name(root), dtype_expr(typeof(root).dtype)
    shape = f"({rows}, {n})"
    if root in g.slots:  # an output: the caller's buffer when it fits
        buffer = f"o{list(g.slots).index(root)}"
        lines.append(f"{out} = {buffer} if {buffer}.shape == {shape} else "
                     f"np.empty({shape}, {dtype})")  # fmt: skip
    else:
        lines.append(f"{out} = np.empty({shape}, {dtype})")
    j, prefix = f"{out}_j", f"{out}_e_"
    generic, fast, same = g._loads(leaves, [i, j], n, "")

    def write(load: dict[str, str]) -> None:
        if name_x is not None:
            load = {**load, name_x: cell.format(j)}
        lines.append(f"{indent}    for {j} in range({n}):")
        lines.extend(f"{indent}        {line}" for line in g._body(region, load, prefix))
        lines.append(f"{indent}        {out}[{i}, {j}] = {g._local(root, prefix)}")

    return lambda: g.fast_or_generic(same, write, fast, generic, indent)


def _passes(g: Any, passes, names, buf, length, k, indent) -> None:
    for setup, mapping, update in passes:
        g.lines.extend(indent + line.format(**names) for line in setup.split("\n"))
        if mapping:  # a loop of its own, which vectorises
            g.lines.append(f"{indent}for {k} in range({length}):")
            v = mapping.format(v=f"{buf}[{k}]", **names)
            g.lines.append(f"{indent}    {buf}[{k}] = {v}")
        _update(g, update, names, (buf, f"{buf}[{{}}]"), length, k, indent)


def _update(
    g: Any, update: str, names: dict, values: tuple, length: str, k: str, indent: str
) -> None:
    """Fold ``length`` values into ``{acc}`` in order: ``values`` is the array that
    starts with them and a template of the k-th."""
    acc, (array, cell) = names["acc"], values
    if update == "{acc} += {v}":  # a sum: kernels.lane_sum, which vectorises
        g.lines.append(f"{indent}{acc} += kernels.lane_sum({array}, {length})")
    elif update in EXTREMES:  # max or min: kernels.lane_max / lane_min
        g.lines.append(
            f"{indent}{acc} = kernels.lane_{EXTREMES[update]}({array}, {length}, {acc})"
        )
    else:
        g.lines.append(f"{indent}for {k} in range({length}):")
        g.lines.append(f"{indent}    {update.format(v=cell.format(k), **names)}")
