"""Large calls on blocks of rows, on threads, with the serial kernel: a function's
first, those until its ``prange`` kernel is compiled, and where BLAS or LAPACK runs
(their own threads would spin against ``prange``'s).

A function whose outputs are computed row by row (``softmax`` over axis 1, an
elementwise expression, ``X @ w``) gives the same values when its row-aligned inputs
are cut into blocks of rows and the kernel runs on each block; a full reduction of
such rows (``sum(y * log(p))``) combines the blocks' partial results (``sum``,
``max``, ``min`` and ``logsumexp`` with themselves, ``mean`` weighted by rows; not
``prod``, whose order decides whether a 0 meets an overflow: numpy's 0 would be
``0 * inf = nan``).  The kernels release the GIL, so the blocks run at once on a
thread pool with as many threads as Numba would use (``NUMBA_NUM_THREADS``, else the
cores this process may run on): a large call runs at once, while the ``prange``
kernel, whose compile costs about three times the serial one's, is built in the
background (it then runs large calls: no Python between its threads, and its sums
fold in the serial kernel's order).

:func:`row_split` finds which inputs are cut, and proves the cut safe: every node
whose axis 0 is the rows' axis gets it only from row-aligned operands, and every
other operand is the same for all blocks (a lower rank that broadcasts, a length-1
axis 0, or nothing that is cut).  A graph it cannot prove (a full reduction that
feeds more arithmetic, a transpose of a cut array) returns None, and such a function
keeps the ``prange`` kernel.

>>> import relgraph as rg
>>> X, w, b = rg.matrix("X"), rg.vector("w"), rg.vector("b")
>>> row_split([X, w, b], [rg.tanh(X @ w) + 1.0]).inputs
(0,)
>>> row_split([X, w], [rg.sum(rg.log1p(rg.exp(X @ w)))]).combine
('sum',)
>>> row_split([X, w], [-rg.sum(X @ w)]).combine  # a negated sum: the blocks' sum
('-sum',)
>>> row_split([w], [w - rg.mean(w)]) is None  # the mean needs every row first
True
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import numpy as np

from relgraph.backends.numba import buffers as pool
from relgraph.ops import special
from relgraph.ops.elemwise import neg
from relgraph.ops.order import OrderStatistic, Sort
from relgraph.ops.products import Dot, Matmul
from relgraph.ops.reductions import Reduce
from relgraph.ops.shape import ExpandDims, GetItem
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Symbol
from relgraph.terms.term import Term
from relgraph.terms.traverse import free_symbols

__all__ = ["RowSplit", "row_split", "run_blocks", "BLOCK_MIN"]

BLOCK_MIN = 1 << 15  # elements read and written per block: below, a thread costs more
# Read as Numba reads it, without importing Numba (the numpy tier runs blocks too).
THREADS = int(os.environ.get("NUMBA_NUM_THREADS") or len(os.sched_getaffinity(0)))
ROWS, WHOLE = "rows", "whole"
_FULL = (None, None, None)  # a whole axis, as GetItem stores ``:``
_COMBINE: dict[str, Callable[[np.ndarray], Any]] = {
    "sum": lambda parts: np.sum(parts, axis=0),
    "max": lambda parts: np.max(parts, axis=0),
    "min": lambda parts: np.min(parts, axis=0),
    "logsumexp": lambda parts: special.logsumexp(parts, axis=0),
}
_COMBINED = (*_COMBINE, "mean")  # mean: the blocks' means, weighted by their rows


@dataclass(frozen=True)
class RowSplit:
    """How a function's calls split into blocks of rows."""

    inputs: tuple[int, ...]  # positions of the inputs cut along axis 0
    combine: tuple[str | None, ...]  # per output: the reduction combining blocks (negated:
    # "-sum"), or None
    whole: tuple[bool, ...]  # per output: the same in every block (taken from the first)


def row_split(inputs: Sequence[Symbol], outputs: Sequence[Any]) -> RowSplit | None:
    """The row split of a function of ``inputs`` computing ``outputs``, or None."""
    need: dict[Any, str] = {}
    # Outputs that reduce axis 0 last: such a reduction combines blocks where what it
    # reduces can be cut (and is not already known to be the same in every block).
    order = sorted(range(len(outputs)), key=lambda k: _partial_reduction(outputs[k]) is not None)
    combine: list[str | None] = [None] * len(outputs)
    for k in order:
        out, partial = outputs[k], _partial_reduction(outputs[k])
        if partial is not None:
            trial = dict(need)
            known = {s for s, n in need.items() if n == WHOLE}
            if not free_symbols(out) <= known and _require([(partial[1], ROWS)], trial):
                need, combine[k] = trial, partial[0]
                continue
        by_rows = partial is None and typeof(out).ndim > 0
        if not _require([(out, ROWS if by_rows else WHOLE)], need):
            return None
    cut = tuple(i for i, s in enumerate(inputs) if need.get(s) == ROWS)
    if not cut:
        return None
    same = tuple(c is None and need.get(o) == WHOLE for o, c in zip(outputs, combine))
    return RowSplit(cut, tuple(combine), same)


def _require(stack: list[tuple[Any, str]], need: dict[Any, str]) -> bool:
    """Record what each node must be (cut with the rows, or whole), from ``stack``
    down to the inputs; False on a contradiction."""
    while stack:
        node, kind = stack.pop()
        if node in need:
            if need[node] != kind:
                return False
            continue
        if not isinstance(node, (Term, Symbol)):  # a constant: never cut
            if kind == ROWS:
                return False
            continue
        need[node] = kind
        operands = _operands(node, kind)
        if operands is None:
            return False
        stack.extend(operands)
    return True


def _partial_reduction(out: Any) -> tuple[str, Any] | None:
    """The reduction whose per-block results combine into ``out``, and the operand it
    reduces, if ``out`` reduces axis 0 of an array: the reduction itself, or the
    negation of a sum or mean (``"-sum"``: the blocks' results are negated back, which
    is exact for floats and for integers that wrap, summed, and negated; not a max,
    whose negation wraps at an integer's minimum)."""
    if type(out) is Term and out.op is neg and type(out.args[0]) is Term:
        inner = _partial_reduction(out.args[0])
        if inner is None or inner[0] not in ("sum", "mean"):
            return None
        return "-" + inner[0], inner[1]
    if type(out) is not Term or not isinstance(out.op, Reduce) or out.op.name not in _COMBINED:
        return None
    ndim = typeof(out.args[0]).ndim
    axes = out.op.axes(out.op.param_values(out.args)["axis"], ndim)
    return (out.op.name, out.args[0]) if ndim > 0 and 0 in axes else None


def _operands(node: Any, kind: str) -> list[tuple[Any, str]] | None:
    """What ``node`` needs of its operands to be ``kind``; None if it cannot be."""
    if isinstance(node, Symbol):
        return [] if kind == WHOLE or node.type.ndim > 0 else None
    args = node.op.operands(node.args)
    if kind == WHOLE:
        return [(a, WHOLE) for a in args]
    ndim = typeof(node).ndim
    if ndim == 0:
        return None
    op = node.op
    if op.elementwise:
        return [(a, _broadcast_kind(a, ndim)) for a in args]
    if isinstance(op, (Dot, Matmul)):
        return [(args[0], ROWS), (args[1], WHOLE)] if _nd(args[0]) == 2 >= _nd(args[1]) else None
    p = op.param_values(node.args)
    if isinstance(op, (Reduce, OrderStatistic)):
        keeps_rows = 0 not in op.axes(p["axis"], _nd(args[0]))
    elif isinstance(op, Sort):  # each row's own values, sorted
        keeps_rows = p["axis"] is not None and p["axis"] % _nd(args[0]) != 0
    elif isinstance(op, GetItem):
        keeps_rows = not p["key"] or p["key"][0] == _FULL
    elif isinstance(op, ExpandDims):
        keeps_rows = 0 not in op.new_axes(_nd(args[0]), p["axis"])
    else:
        keeps_rows = False
    return [(args[0], ROWS)] if keeps_rows else None


def _nd(x: Any) -> int:
    return typeof(x).ndim


def _broadcast_kind(operand: Any, ndim: int) -> str:
    """An elementwise operand is cut with the rows unless numpy broadcasts it along
    axis 0: a lower rank, or a length of 1 known from its type."""
    t = typeof(operand)
    return WHOLE if t.ndim < ndim or t.shape[0] == 1 else ROWS


# --- running ---------------------------------------------------------------------------

_POOL: dict[int, ThreadPoolExecutor] = {}  # by process id: a forked child makes its own
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    pid = os.getpid()
    with _POOL_LOCK:
        pool = _POOL.get(pid)
        if pool is None:
            _POOL.clear()  # a parent's pool has no threads in this process
            pool = _POOL[pid] = ThreadPoolExecutor(THREADS, thread_name_prefix="relgraph-rows")
        return pool


def blocks(rows: int, elements: int) -> list[tuple[int, int]]:
    """Row ranges for one call: one per thread, each at least :data:`BLOCK_MIN`
    elements, as even as rows allow."""
    parts = max(1, min(THREADS, rows, elements // BLOCK_MIN))
    edges = [rows * k // parts for k in range(parts + 1)]
    return list(zip(edges[:-1], edges[1:]))


def run_blocks(
    split: RowSplit,
    call: Callable[[list], Any],
    values: list,
    n_inputs: int,
    slots: Sequence[int],
    chunk: int | None = None,
) -> list | None:
    """The outputs of ``call`` (a serial kernel: inputs, then one buffer per slot)
    computed block by block; None where ``call`` returned None for a block (its kernel
    is not ready).  Buffers of the full result's shape are written in place.  With
    ``chunk``, each thread calls the kernel on ``chunk`` rows of its block at a time
    (:func:`~relgraph.backends.numba.products.chunk_rows`)."""
    args, buffers = values[:n_inputs], values[n_inputs:]
    rows = args[split.inputs[0]].shape[0]
    if any(args[i].shape[0] != rows for i in split.inputs):  # axis 0 broadcasts
        return call(values)
    # the work grows with what is read and what is written (an outer sum: 10^4 + 100
    # elements in, 10^6 out)
    ranges = blocks(rows, sum(args[i].size for i in split.inputs) + sum(b.size for b in buffers))
    if len(ranges) == 1:
        return call(values)
    finals = _finals(split, call, args, buffers, slots, rows)
    if finals is None:
        return None

    def block(lo: int, hi: int) -> Any:
        cut = [v[lo:hi] if i in split.inputs else v for i, v in enumerate(args)]
        into = [
            finals[k][lo:hi] if finals[k] is not None else _empty(b)
            for b, k in zip(buffers, slots)
        ]
        results = call(cut + into)
        if results is not None:
            for k, final in enumerate(finals):
                if final is not None and not _written(results[k], final[lo:hi]):
                    final[lo:hi] = results[k]
        return results

    def run(spans: list[tuple[int, int]]) -> list:
        return [block(lo, hi) for lo, hi in spans]

    step = chunk or rows  # each thread's block, in chunks of ``step`` rows
    spans = [[(a, min(a + step, hi)) for a in range(lo, hi, step)] for lo, hi in ranges]
    pool = _pool()
    futures: list[Future] = [pool.submit(run, s) for s in spans[1:]]
    try:
        parts = run(spans[0]) + [p for f in futures for p in f.result()]
    finally:  # on an error, no block writes on after the caller has it
        for f in futures:
            f.cancel()
        wait(futures)
    if any(p is None for p in parts):
        return None
    return _assembled(split, finals, parts, [r for s in spans for r in s], rows)


def _finals(
    split: RowSplit, call: Callable, args: list, buffers: list, slots: Sequence[int], rows: int
) -> list | None:
    """Per output: the array its blocks are written into (None for outputs that are
    whole or combined).  A buffer of the right shape is used as it is; other shapes
    come from the kernel run on one row."""
    outs = len(split.combine)
    row_outputs = [k for k in range(outs) if split.combine[k] is None and not split.whole[k]]
    finals: list[Any] = [None] * outs
    given = dict(zip(slots, buffers))
    probe = None
    for k in row_outputs:
        buffer = given.get(k)
        if buffer is not None and buffer.ndim and buffer.shape[0] == rows and buffer.size:
            finals[k] = buffer
            continue
        if probe is None:
            one = [v[:1] if i in split.inputs else v for i, v in enumerate(args)]
            probe = call(one + [_empty(b) for b in buffers])
            if probe is None:
                return None
        r = np.asarray(probe[k])
        finals[k] = pool.empty((rows, *r.shape[1:]), r.dtype)
    return finals


def _assembled(split: RowSplit, finals: list, parts: list, ranges: list, rows: int) -> list:
    results = []
    for k, (name, final) in enumerate(zip(split.combine, finals)):
        if final is not None:
            results.append(final)
        elif name is None:  # the same in every block
            results.append(parts[0][k])
        else:
            partials = np.stack([np.asarray(p[k]) for p in parts])
            dtype, negated = partials.dtype, name.startswith("-")
            if negated:  # -(s1 + s2), as one block computes it: not (-s1) + (-s2)
                partials, name = -partials, name[1:]
            if name == "mean":
                weights = np.array([hi - lo for lo, hi in ranges], dtype).reshape(
                    (-1,) + (1,) * (partials.ndim - 1)
                )
                value = np.sum(partials * weights, axis=0) / dtype.type(rows)
            else:
                value = _COMBINE[name](partials)
            results.append(np.asarray(-value if negated else value, dtype))
    return results


def _empty(buffer: np.ndarray) -> np.ndarray:
    return np.empty((0,) * buffer.ndim, buffer.dtype)


def _written(result: Any, view: np.ndarray) -> bool:
    """Whether the kernel returned the buffer it was given (it wrote in place)."""
    return (
        isinstance(result, np.ndarray)
        and result.shape == view.shape
        and result.ctypes.data == view.ctypes.data
    )
