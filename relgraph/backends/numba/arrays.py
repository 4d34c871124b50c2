"""How the Numba backend computes each non-elementwise Op: a statement template
over its operands (``{0}, {1}, ...``) and its result dtype (``{dtype}``), and for
reductions along rows, the loop that fuses them into an elementwise region.

Each rule is registered by Op class, here and not on the Op (another backend keeps
its own rules); :func:`array_code` of an Op without one raises a LoweringError
that names it.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from relgraph.backends.numba.scalars import dtype_expr
from relgraph.exceptions import LoweringError
from relgraph.ops.base import Op
from relgraph.ops.indexing import AddAt, Take, TakeAlong
from relgraph.ops.linalg import Diag, LinalgOp
from relgraph.ops.order import METHODS, OrderStatistic, Sort
from relgraph.ops.reductions import ArgReduce, Reduce, Scan, reduced_dims
from relgraph.ops.shape import (
    BroadcastTo,
    ExpandDims,
    GetItem,
    Join,
    Reshape,
    ReshapeAs,
    ScatterAs,
    Squeeze,
    Transpose,
    entry_text,
)
from relgraph.terms.infer import typeof
from relgraph.terms.term import brief

__all__ = ["kept_twin", "array_code", "row_loop", "parallel_code"]


@functools.singledispatch
def array_code(op: Op, node: Any) -> str:
    """The Numba statement template of a non-elementwise ``node`` whose head is ``op``.

    Examples
    --------
    >>> import relgraph as rg
    >>> A, x = rg.matrix("A"), rg.vector("x")
    >>> array_code(rg.cumsum, rg.cumsum(x))
    'kernels.cumsum_last(np.ascontiguousarray({0}).reshape(({0}.size,)), {dtype})'
    >>> array_code(rg.cholesky, rg.cholesky(A))
    'np.linalg.cholesky(np.ascontiguousarray({0}))'
    """
    raise LoweringError(f"Op {op!r} has no Numba lowering (in {brief(node)})")


@functools.singledispatch
def row_loop(op: Op, node: Any) -> tuple[list[tuple], str, str | None] | None:
    """How a fused loop computes ``node`` along each row (None: not fused)."""
    return None


@functools.singledispatch
def parallel_code(op: Op, node: Any) -> str | None:
    """A parallel kernel's statement template for ``node``, with ``prange`` loops
    (lines after the first fill ``{out}``), or None: :func:`array_code` serves."""
    return None


def _dims(node: Any) -> str:
    """The generated-code tuple of a node's shape, from its operand ``{0}``'s."""
    return "(" + "".join(f"{d}, " for d in node) + ")"


# --- reductions: the kernels module, or fused along rows ------------------------------
# ``<kind>_all`` over everything, ``<kind>_axis`` along one axis of a matrix; any other
# axes are moved last and flattened so that the reduction runs along a matrix's rows.


@array_code.register
def _array_code_reduce(op: Reduce, node: Any) -> str:
    p = op.param_values(node.args)
    code = _reduced_code(op, typeof(node.args[0]).ndim, p["axis"])
    if p["keepdims"]:
        shape = "".join(f"{d}, " for d in _kept_shape(op, node))
        return f"kernels.keep_dims({code}, ({shape}))"
    return code


def _reduced_code(op: Reduce | ArgReduce, ndim: int, axis: Any) -> str:
    axes = sorted(op.axes(axis, ndim))
    if len(axes) == ndim or ndim <= 1:
        return f"kernels.{op.name}_all({{0}}, {{dtype}})"
    if ndim == 2:
        return f"kernels.{op.name}_axis({{0}}, {axes[0]}, {{dtype}})"
    kept = [k for k in range(ndim) if k not in axes]

    def size(group: list[int]) -> str:
        return " * ".join(f"{{0}}.shape[{k}]" for k in group)

    shape = "(" + "".join(f"{{0}}.shape[{k}], " for k in kept) + ")"
    if axes == list(range(len(axes))):  # leading axes: a matrix's columns, no copy
        matrix = f"np.ascontiguousarray({{0}}).reshape(({size(axes)}, {size(kept)}))"
        return f"kernels.{op.name}_axis({matrix}, 0, {{dtype}}).reshape({shape})"
    moved = f"np.ascontiguousarray(np.transpose({{0}}, {tuple(kept + axes)!r}))"
    matrix = f"{moved}.reshape(({size(kept)}, {size(axes)}))"
    return f"kernels.{op.name}_axis({matrix}, 1, {{dtype}}).reshape({shape})"


def kept_twin(node: Any) -> tuple[Any, str] | None:
    """For a reduction with ``keepdims=True``, the same reduction without it and the
    code that reshapes that one's value into this one (so a program that needs both,
    as ``x - x.mean(0)`` and ``x.var(0)`` do, reduces once); None otherwise."""
    op = node.op
    if not isinstance(op, Reduce) or not op.param_values(node.args)["keepdims"]:
        return None
    p = op.param_values(node.args)
    twin = op(node.args[0], axis=p["axis"], keepdims=False)
    shape = "".join(f"{d}, " for d in _kept_shape(op, node))
    return twin, f"kernels.keep_dims({{twin}}, ({shape}))"


def _kept_shape(op: Reduce, node: Any) -> tuple[str, ...]:
    ndim = typeof(node).ndim
    axes = op.axes(op.param_values(node.args)["axis"], ndim)
    return reduced_dims([f"{{0}}.shape[{k}]" for k in range(ndim)], axes, True, one="1")


_EMPTY = "if {n} == 0: raise ValueError('zero-size array to reduction operation {kind}')"
_LARGEST = "if {v} > {acc} or {v} != {v}: {acc} = {v}"  # NaN wins and stays
RowLoop = tuple[list[tuple], str, "str | None"]
_ROW_LOOPS: dict[str, RowLoop] = {
    "sum": ([("{acc} = 0.0", None, "{acc} += {v}")], "{acc}", None),
    "mean": ([("{acc} = 0.0", None, "{acc} += {v}")], "{acc} / {n}", None),
    "prod": ([("{acc} = 1.0", None, "{acc} *= {v}")], "{acc}", None),
    "max": ([("{acc} = -np.inf", None, _LARGEST)], "{acc}", _EMPTY.replace("{kind}", "maximum")),
    "min": ([("{acc} = np.inf", None, _LARGEST.replace(">", "<"))], "{acc}",
            _EMPTY.replace("{kind}", "minimum")),
    "logsumexp": (
        [
            ("{acc} = -np.inf", None, _LARGEST),
            ("{shift} = {acc} if np.isfinite({acc}) else 0.0\n{acc} = 0.0",
             "np.exp({v} - {shift})", "{acc} += {v}"),
        ],
        "np.log({acc}) + {shift}",
        None,
    ),
}  # fmt: skip


def _logsumexp_with(exp: str) -> RowLoop:
    """logsumexp's row loop with ``exp`` (of ``{v} - {shift}``) from vecmath: the loop
    vectorises."""
    (top, (start, _, add)), *rest = _ROW_LOOPS["logsumexp"]
    return ([top, (start, exp, add)], *rest)  # type: ignore[return-value]


_LOGSUMEXP = {
    np.dtype(np.float64): _logsumexp_with("vecmath.exp_term({v} - {shift})"),
    # the difference rounded to float32 as numpy's is, its exp in float32
    np.dtype(np.float32): _logsumexp_with("vecmath32.exp(np.float32({v} - {shift}))"),
}


@row_loop.register
def _row_loop_reduce(op: Reduce, node: Any) -> tuple[list[tuple], str, str | None] | None:
    """How a fused loop reduces each row, if ``node`` reduces the last axis of a 1-d
    or 2-d float operand (or sums a matrix: its rows' sums are summed; or reduces
    every axis but the first of a larger one, a row of its trailing axes): passes of
    (set-up, map of ``{v}`` or None, update by ``{v}``) over a row of length ``{n}``,
    then the result over ``{acc}`` (and ``{shift}``), and a check of the row length
    made once, before the loop.  None
    when the node has no fused form (the kernels in :mod:`relgraph.backends.numba.kernels`
    compute it)."""
    x, p = typeof(node.args[0]), op.param_values(node.args)
    dtype, axes = typeof(node).dtype, op.axes(p["axis"], x.ndim)
    whole = x.ndim == 2 and axes == {0, 1} and op.name == "sum"  # the rows' sums, summed
    trailing = x.ndim > 2 and axes == set(range(1, x.ndim))  # all but the first
    if not trailing and (x.ndim not in (1, 2) or (axes != {x.ndim - 1} and not whole)):
        return None
    if dtype != x.dtype or dtype not in (np.float32, np.float64):
        return None
    if op.name == "logsumexp":
        return _LOGSUMEXP[dtype]
    return _ROW_LOOPS[op.name]


# --- running sums and products, indices of extremes ------------------------------------


@array_code.register
def _array_code_scan(op: Scan, node: Any) -> str:
    """The scanned axis is moved last (a contiguous copy), scanned row by row, and
    moved back; ``axis=None`` scans the flattened array."""
    ndim, axis = typeof(node.args[0]).ndim, op.param_values(node.args)["axis"]
    scan = f"kernels.{op.name}_last({{}}, {{{{dtype}}}})"
    if axis is None:
        return scan.format("np.ascontiguousarray({0}).reshape(({0}.size,))")
    return _along_last(scan, ndim, axis % ndim)


@array_code.register
def _array_code_argreduce(op: ArgReduce, node: Any) -> str:
    p = op.param_values(node.args)
    code = _reduced_code(op, typeof(node.args[0]).ndim, p["axis"])
    if p["keepdims"]:
        x = typeof(node.args[0])
        kept = reduced_dims([f"{{0}}.shape[{k}]" for k in range(x.ndim)],
                            op.axes(p["axis"], x.ndim), True, one="1")  # fmt: skip
        return f"kernels.keep_dims({code}, ({''.join(f'{d}, ' for d in kept)}))"
    return code


# --- order statistics: the axis moved last, each row sorted (kernels.sort_last) -------


def _last(ndim: int, k: int) -> tuple[str, tuple[int, ...]]:
    """Operand ``{0}`` as a C-contiguous array with axis ``k`` last, and the order of
    its axes."""
    if k == ndim - 1:
        return "np.ascontiguousarray({0})", tuple(range(ndim))
    order = tuple(j for j in range(ndim) if j != k) + (k,)
    return f"kernels.moved({{0}}, {order!r})", order


def _flat(shape: str, ndim: int) -> str:
    """Operand ``{0}`` reshaped to ``shape`` (a 0-d operand is a number in the kernel:
    made an array first)."""
    array = "np.asarray({0})" if ndim == 0 else "np.ascontiguousarray({0})"
    return f"{array}.reshape({shape})".replace("{0}.size", "1" if ndim == 0 else "{0}.size")


def _along_last(call: str, ndim: int, k: int) -> str:
    """``call`` (a template of one array, ``{}``) of operand ``{0}`` with axis ``k``
    moved last, its result's axes moved back."""
    moved, order = _last(ndim, k)
    if order == tuple(range(ndim)):
        return call.format(moved)
    return f"np.transpose({call.format(moved)}, {tuple(np.argsort(order).tolist())!r})"


@array_code.register
def _array_code_sort(op: Sort, node: Any) -> str:
    """``sort`` and ``argsort`` (a Sort too): ``kernels.sort_last``, ``argsort_last``."""
    ndim, axis = typeof(node.args[0]).ndim, op.param_values(node.args)["axis"]
    call = f"kernels.{op.name}_last({{}})"
    if axis is None:
        return call.format(_flat("({0}.size,)", ndim))
    return _along_last(call, ndim, axis % ndim)


@array_code.register
def _array_code_order_statistic(op: OrderStatistic, node: Any) -> str:
    """Rows of the reduced axis (one row of everything for ``axis=None``), each row's
    statistic, shaped as the result."""
    x, p = typeof(node.args[0]), op.param_values(node.args)
    # numpy interpolates in the data's float dtype, or in float64 (integers, or a q
    # that is not a weak scalar: np.float64(0.3))
    own = x.dtype.kind == "f" and p.get("weak", True)
    wide = dtype_expr(x.dtype) if own else "np.float64"
    if p["axis"] is None:
        matrix, kept = _flat("(1, {0}.size)", x.ndim), None
    else:
        k = p["axis"] % x.ndim
        kept = [f"{{0}}.shape[{j}]" for j in range(x.ndim) if j != k]
        rows = " * ".join(kept) or "1"
        if k == 0 and x.ndim > 1:  # its columns, read in place (a transposed view)
            matrix = f"np.ascontiguousarray({{0}}).reshape(({{0}}.shape[0], {rows})).T"
        else:
            matrix = f"{_last(x.ndim, k)[0]}.reshape(({rows}, {{0}}.shape[{k}]))"
    skip = op.skips_nan
    if "q" not in p:
        code = f"kernels.median_rows({matrix}, {wide}, {{dtype}}, {skip})"
    else:
        narrow, method = dtype_expr(x.dtype), METHODS.index(p["method"])
        code = (f"kernels.quantile_rows({matrix}, {p['q']!r}, {narrow}, {wide}, {{dtype}}, "
                f"{skip}, {method})")  # fmt: skip
    if p["keepdims"]:
        dims = [f"{{0}}.shape[{j}]" for j in range(x.ndim)]
        kept = list(reduced_dims(dims, op.axes(p["axis"], x.ndim), True, one="1"))
    if not kept:  # a number: the one row's statistic
        return f"{code}[0]"
    return f"{code}.reshape({_dims(kept)})"


@parallel_code.register(Sort)
@parallel_code.register(OrderStatistic)
def _parallel_order(op: Op, node: Any) -> str:
    """The same, its blocks of rows on every core (``kernels.*_parallel``)."""
    code = array_code(op, node)
    for name in ("sort_last", "argsort_last", "median_rows", "quantile_rows"):
        code = code.replace(f"kernels.{name}(", f"kernels.{name}_parallel(")
    return code


# --- integer-array indexing: the indexed axis moved first (last for the "along" forms) --


def _tuple(items: list[str]) -> str:
    return "(" + "".join(f"{i}, " for i in items) + ")"


def _moved(array: str, perm: tuple[int, ...]) -> str:
    if perm == tuple(range(len(perm))):
        return f"np.ascontiguousarray({array})"
    return f"kernels.moved({array}, {perm!r})"


def _product(dims: list[str]) -> str:
    return " * ".join(["1", *dims])


def _back(code: str, perm: tuple[int, ...]) -> str:
    """``code`` (an array in the order ``perm`` of the result's axes) in that order."""
    if perm == tuple(range(len(perm))):
        return code
    return f"np.transpose({code}, {tuple(int(j) for j in np.argsort(perm))!r})"


@array_code.register
def _array_code_take(op: Take, node: Any) -> str:
    nx, ni = typeof(node.args[0]).ndim, typeof(node.args[1]).ndim
    axis = op.param_values(node.args)["axis"]
    flat_idx = "np.ascontiguousarray({1}).reshape(({1}.size,))"
    idx_dims = [f"{{1}}.shape[{j}]" for j in range(ni)]
    if axis is None:
        rows = "np.ascontiguousarray({0}).reshape(({0}.size, 1))"
        return f"kernels.take_rows({rows}, {flat_idx}).reshape({_tuple(idx_dims)})"
    k = axis % nx
    others = [j for j in range(nx) if j != k]
    rest = [f"{{0}}.shape[{j}]" for j in others]
    rows = f"{_moved('{0}', (k, *others))}.reshape(({{0}}.shape[{k}], {_product(rest)}))"
    gathered = f"kernels.take_rows({rows}, {flat_idx}).reshape({_tuple(idx_dims + rest)})"
    # the gathered axes are the index's (result axes k...) and then x's others
    return _back(gathered, (*range(k, k + ni), *(j if j < k else j + ni for j in others)))


@array_code.register
def _array_code_add_at(op: AddAt, node: Any) -> str:
    if op.along:
        return _add_along(op, node)
    nx, ni = typeof(node.args[1]).ndim, typeof(node.args[2]).ndim
    axis = op.param_values(node.args)["axis"]
    flat_idx = "np.ascontiguousarray({2}).reshape(({2}.size,))"
    if axis is None:
        rows = "np.ascontiguousarray({0}).reshape(({0}.size, 1))"
        return f"kernels.add_rows({rows}, {flat_idx}, {{1}}.size).reshape({{1}}.shape)"
    k = axis % nx
    others = [j for j in range(nx) if j != k]
    rest = [f"{{1}}.shape[{j}]" for j in others]
    g_perm = (*range(k, k + ni), *range(k), *range(k + ni, nx - 1 + ni))
    rows = f"{_moved('{0}', g_perm)}.reshape(({{2}}.size, {_product(rest)}))"
    added = f"kernels.add_rows({rows}, {flat_idx}, {{1}}.shape[{k}])"
    return _back(f"{added}.reshape({_tuple([f'{{1}}.shape[{k}]', *rest])})", (k, *others))


@array_code.register
def _array_code_take_along(op: TakeAlong, node: Any) -> str:
    """Rows of ``{0}`` (its own length along the axis) and of the indices ``{1}``."""
    k = op.param_values(node.args)["axis"] % typeof(node.args[0]).ndim
    call = "kernels.take_along_rows({}, {})"
    return _along(k, typeof(node.args[0]).ndim, ("{0}", "{0}"), "{1}", "{1}", call)


def _add_along(op: AddAt, node: Any) -> str:
    """Rows of the cotangent ``{0}`` (shaped as the indices ``{2}``) into ``{1}``'s."""
    k = op.param_values(node.args)["axis"] % typeof(node.args[1]).ndim
    call = "kernels.add_along_rows({}, {}, {{1}}.shape[" + str(k) + "])"
    return _along(k, typeof(node.args[1]).ndim, ("{0}", "{2}"), "{2}", "{1}", call)


def _along(k: int, ndim: int, values: tuple, indices: str, result: str, call: str) -> str:
    """``call`` on ``values[0]`` and ``indices`` with axis ``k`` moved last, as rows (a
    row of values as long as ``values[1]``'s axis ``k``); its rows back in shape, with
    ``result``'s length along ``k``, and axis ``k`` back in place."""
    perm = (*[j for j in range(ndim) if j != k], k)
    lead = [f"{indices}.shape[{j}]" for j in perm[:-1]]

    def rows(array: str, length: str) -> str:
        return f"{_moved(array, perm)}.reshape(({_product(lead)}, {length}.shape[{k}]))"

    out = call.format(rows(*values), rows(indices, indices))
    return _back(f"{out}.reshape({_tuple([*lead, f'{result}.shape[{k}]'])})", perm)


# --- linear algebra: Numba's np.linalg (LAPACK), on contiguous operands in the dtype ----

_LINALG = {
    "cholesky": "np.linalg.cholesky({a})", "inv": "linalg_kernels.inv({a})",
    "solve": "linalg_kernels.solve({a}, {b})", "det": "linalg_kernels.det({a})",
    "logabsdet": "linalg_kernels.slogdet({a})[1]", "det_sign": "linalg_kernels.slogdet({a})[0]",
}  # fmt: skip


@array_code.register
def _array_code_linalg(op: LinalgOp, node: Any) -> str:
    def cast(i: int, keep: str = "np.ascontiguousarray({})") -> str:
        if typeof(node.args[i]).dtype != typeof(node).dtype:  # astype copies, C order
            return f"np.ascontiguousarray({{{i}}}).astype({{dtype}})"
        return keep.format(f"{{{i}}}")  # LAPACK copies again

    if op.name in ("solve_lower", "solve_upper"):  # in place on a copy of b, as n x k
        vector = typeof(node.args[1]).ndim == 1
        b = cast(1, "{}.copy()") + (".reshape((-1, 1))" if vector else "")
        a = cast(0, "{}")  # read as laid out: a transposed factor by columns
        call = f"linalg_kernels.solve_triangular({a}, {b}, {op.name == 'solve_lower'})"
        return f"{call}.ravel()" if vector else call  # n x 1, C order: a view
    if op.name == "solve" and typeof(node.args[1]).ndim == 1:  # as n x 1: a view
        return _LINALG["solve"].format(a=cast(0), b=f"{cast(1)}.reshape((-1, 1))") + ".ravel()"
    b = cast(1) if op.nin == 2 else ""
    return _LINALG[op.name].format(a=cast(0), b=b)


@array_code.register
def _array_code_diag(op: Diag, node: Any) -> str:
    return "np.diag(np.ascontiguousarray({0}))"


# --- shape Ops: numpy's views and copies, which Numba compiles --------------------------


@array_code.register
def _array_code_transpose(op: Transpose, node: Any) -> str:
    axes = op.param_values(node.args)["axes"]
    return _one_value(node) or (
        "np.transpose({0})" if axes is None else f"np.transpose({{0}}, {axes!r})"
    )


@array_code.register
def _array_code_reshape(op: Reshape, node: Any) -> str:
    shape = op.param_values(node.args)["shape"]
    return _one_value(node) or f"np.ascontiguousarray({{0}}).reshape({shape!r})"


def _one_value(node: Any) -> str | None:
    """The code of a shape Op whose result is 0-d (the kernel holds it as a scalar, as
    it holds every 0-d value): its operand's one element; None for another result."""
    if typeof(node).ndim:
        return None
    return "{0}" if typeof(node.args[0]).ndim == 0 else "np.asarray({0}).ravel()[0]"


@array_code.register
def _array_code_expanddims(op: ExpandDims, node: Any) -> str:
    ndim = typeof(node.args[0]).ndim
    new, rest = op.new_axes(ndim, op.param_values(node.args)["axis"]), iter(range(ndim))
    dims = ["1" if k in new else f"{{0}}.shape[{next(rest)}]" for k in range(len(new) + ndim)]
    return f"np.ascontiguousarray({{0}}).reshape({_dims(dims)})"


@array_code.register
def _array_code_squeeze(op: Squeeze, node: Any) -> str:
    x = typeof(node.args[0])
    drop = op.dropped(x.shape, op.param_values(node.args)["axis"])
    dims = [f"{{0}}.shape[{k}]" for k in range(x.ndim) if k not in drop]
    return _one_value(node) or f"np.ascontiguousarray({{0}}).reshape({_dims(dims)})"


@array_code.register
def _array_code_broadcastto(op: BroadcastTo, node: Any) -> str:
    shape = op.param_values(node.args)["shape"]
    return _one_value(node) or f"np.broadcast_to({{0}}, {shape!r})"


@array_code.register
def _array_code_getitem(op: GetItem, node: Any) -> str:
    key = op.param_values(node.args)["key"]
    if None in key and all(k is None or k == _WHOLE for k in key):
        # new axes only: a reshape keeps a contiguous layout, where Numba's x[None]
        # is any-layout, and a loop reading it does not vectorise (LLVM cannot bound
        # its accesses): exp(-(x @ y.T) + sum(y * y, axis=1)[None]) 3.6x slower
        dims = [f"{{0}}.shape[{k}]" for k in range(typeof(node.args[0]).ndim)]
        olds = iter(dims)
        shape = ["1" if k is None else next(olds) for k in key] + list(olds)
        return f"np.ascontiguousarray({{0}}).reshape({_dims(shape)})"
    code = _index(key, "{0}")
    return "{0}[" + code + "]" if code else "{0}"


_WHOLE = (None, None, None)  # ``:``, as GetItem stores it


def _index(key: tuple, array: str) -> str:
    """The code of a basic index into ``array``, integers bounds-checked."""
    parts, axis = [], 0
    for entry in key:
        if entry is None:
            parts.append("None")
            continue
        if type(entry) is int:
            parts.append(f"kernels.index({entry}, {array}.shape[{axis}])")
        else:  # without a step Numba keeps a contiguous layout (its loops vectorise)
            parts.append(entry_text(entry))
        axis += 1
    return ", ".join(parts)


@array_code.register
def _array_code_reshape_as(op: ReshapeAs, node: Any) -> str:
    return _one_value(node) or "np.ascontiguousarray({0}).reshape({1}.shape)"


@array_code.register
def _array_code_scatter_as(op: ScatterAs, node: Any) -> str:
    key = _index(op.param_values(node.args)["key"], "{out}") or "..."
    return "np.zeros({1}.shape, {dtype})\n{out}[" + key + "] = {0}"


@array_code.register
def _array_code_join(op: Join, node: Any) -> str:
    """Each part written into its place of one :func:`~relgraph.backends.numba.kernels.fresh`
    array (converted to the result's dtype as it is written), as numpy's
    ``concatenate`` and ``stack`` do; the call checked the parts' shapes."""
    parts = node.args[:-1]
    ndim = typeof(parts[0]).ndim
    if ndim == 0:  # a stack of numbers
        return f"np.array(({', '.join(f'{{{i}}}' for i in range(len(parts)))},), {{dtype}})"
    axis = node.args[-1] % (ndim + op.new_axis)
    dims = [f"{{0}}.shape[{k}]" for k in range(ndim)]
    lead = ":, " * axis
    if op.new_axis:
        dims.insert(axis, str(len(parts)))
        lines = [f"{{out}}[{lead}{i}] = {{{i}}}" for i in range(len(parts))]
    else:
        dims[axis] = " + ".join(f"{{{i}}}.shape[{axis}]" for i in range(len(parts)))
        lines = ["{out}_at = 0"]
        for i in range(len(parts)):
            end = f"{{out}}_at + {{{i}}}.shape[{axis}]"
            lines += [f"{{out}}[{lead}{{out}}_at:{end}] = {{{i}}}", f"{{out}}_at = {end}"]
    return "\n".join([f"kernels.fresh(({', '.join(dims)},), {{dtype}})", *lines])
