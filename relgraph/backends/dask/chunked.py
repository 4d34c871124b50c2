"""Compiled functions on dask arrays: one task per chunk per fused region.

A :class:`~relgraph.backends.numba.function.Function` called with dask arrays returns a dask array.
Its graph is cut where a fused loop must end:

* each maximal *elementwise region* (the Ops the compiler fuses into one loop)
  becomes one ``dask.array.blockwise`` layer whose task, on each chunk, runs that
  region compiled as one kernel (chunks aligned, broadcast and rechunked by dask's
  own rules);
* a *reduction* runs its region and the reduction itself as one kernel per chunk,
  keeping the reduced axes, and dask's tree reduction combines the partial results:
  ``sum``, ``prod``, ``max``, ``min`` and ``logsumexp`` combine with themselves (a
  ``logsumexp`` of partial ``logsumexp`` values is exact and stable), ``mean`` sums
  in numpy's accumulator dtype and divides once;
* products (``@``), shape Ops, indexing and joins are dask's own (blocked matmul,
  ``reshape``, slicing, ``concatenate``).

The task's function is a :class:`ChunkKernel`: it pickles as the region's term, and
each worker process lowers it once and takes the kernel from the kernel cache (in
memory, or Numba's compiled code on disk), never once per task.  Per chunk it runs
the serial kernel: dask's workers are the parallelism.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections import OrderedDict
from typing import Any

import numpy as np

from relgraph import ops
from relgraph.backends.dask.rules import lazy
from relgraph.backends.numba.function import LAZY_CALLS, function
from relgraph.backends.numba.shapes import checked_array
from relgraph.exceptions import LoweringError, UnsupportedError
from relgraph.ops import special
from relgraph.ops.reductions import Reduce
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term
from relgraph.terms.traverse import subterms
from relgraph.terms.types import TensorType

__all__ = ["is_dask", "call", "ChunkKernel"]

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def is_dask(x: Any) -> bool:
    """Whether ``x`` is a dask array (tested without importing dask)."""
    return hasattr(x, "__dask_graph__") and hasattr(x, "chunks")


def _dask_array() -> Any:
    try:
        import dask.array as da  # lazy: dask is optional (the dask extra)
    except ImportError:  # pragma: no cover - the dask extra is part of the test install
        raise UnsupportedError(
            "dask arrays need the dask extra: pip install 'relgraph[dask]'"
        ) from None
    return da


# --- calls ---------------------------------------------------------------------------


def call(fn: Any, args: list) -> Any:
    """``fn(*args)`` where some arguments are dask arrays: a dask array (or a list)."""
    da = _dask_array()
    if len(args) != len(fn.inputs):
        names = ", ".join(s.name for s in fn.inputs)
        raise TypeError(f"expected {len(fn.inputs)} arguments ({names}), got {len(args)}")
    values = [_checked(s, v, da) for s, v in zip(fn.inputs, args)]
    shapes = [v.shape for v in values]
    if not any(np.isnan(d) for s in shapes for d in s):  # unknown chunk sizes: dask checks
        fn.check_shapes(shapes)
    plan = _plan_of(fn)
    results = plan.run(values, da)
    return results[0] if fn.single else results


LAZY_CALLS["dask"] = call


def _checked(symbol: Symbol, value: Any, da: Any) -> Any:
    """``value`` as a dask array of the symbol's dtype (a safe cast) and rank."""
    return checked_array(symbol, value if is_dask(value) else da.asarray(np.asarray(value)))


# --- plans: where the graph is cut -----------------------------------------------------

_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _plan_of(fn: Any) -> Plan:
    plan = _PLANS.get(fn)
    if plan is None:
        plan = _PLANS[fn] = Plan(fn.inputs, fn.outputs)
    return plan


class Plan:
    """The nodes a dask graph is built from, in order: region roots and other Ops."""

    def __init__(self, inputs: tuple[Symbol, ...], outputs: tuple[Any, ...]):
        self.inputs, self.outputs = inputs, outputs
        # Cut at outputs, at every Op that is not elementwise and at the operands of
        # those other than reductions (a reduction runs fused with its operand).
        cuts: set[Term] = {o for o in outputs if type(o) is Term}
        for node in {n for o in outputs for n in subterms(o)}:
            if not node.op.elementwise:
                cuts.add(node)
                if not isinstance(node.op, Reduce):
                    cuts.update(a for a in node.op.operands(node.args) if type(a) is Term)
        self.order = [n for o in outputs for n in subterms(o) if n in cuts]
        self.regions: dict[Term, Region] = {}
        for node in self.order:
            if node.op.elementwise:
                self.regions[node] = Region(node, cuts)
            elif isinstance(node.op, Reduce):
                self.regions[node] = Region(node, cuts, reduce=True)

    def run(self, values: list, da: Any) -> list:
        """The outputs as dask arrays, given the inputs as dask arrays."""
        known: dict[Any, Any] = dict(zip(self.inputs, values))
        for node in self.order:
            if node in known:
                continue
            region = self.regions.get(node)
            if region is None:
                operands = node.op.operands(node.args)
                args = [_value(a, known, da) for a in operands]
                known[node] = _lazy(node, args + list(node.args[len(operands) :]), da)
            else:
                known[node] = region.run([_value(a, known, da) for a in region.inputs], da)
        return [_value(o, known, da) for o in self.outputs]


def _value(x: Any, known: dict, da: Any) -> Any:
    if type(x) is Term or isinstance(x, Symbol):
        return known[x]
    value = x.value if isinstance(x, Constant) else np.asarray(x)
    return da.asarray(value)


def _lazy(node: Term, args: list, da: Any) -> Any:
    """A product, shape Op, index or join on dask arrays: dask's own form."""
    result = lazy(node.op, *args)
    if not is_dask(result):  # pragma: no cover - a lazy rule must stay lazy
        raise UnsupportedError(f"{node.op.name} did not give a dask array")
    return result


class Region:
    """An elementwise region (or a reduction of one) over placeholders, one per input.

    Its inputs are the region's leaves: symbols, array constants, and the nodes the
    graph is cut at; scalars stay in the kernel.
    """

    def __init__(self, root: Term, cuts: set[Term], reduce: bool = False):
        self.inputs: list[Any] = []
        placeholders: dict[Any, Symbol] = {}

        def leaf(x: Any) -> Any:
            if x not in placeholders:
                # A chunk's sizes are unknown, but an axis of length 1 stays 1: the
                # kernel then broadcasts it in its fused loops.
                t = typeof(x)
                shape = tuple(1 if d == 1 else None for d in t.shape)
                placeholders[x] = Symbol(
                    f"in{len(self.inputs)}", TensorType(t.dtype, t.ndim, shape)
                )
                self.inputs.append(x)
            return placeholders[x]

        top = root.args[0] if reduce else root
        body = _rebuilt(top, lambda n: n in cuts and (n is not top or not n.op.elementwise), leaf)
        self.ndim = typeof(top).ndim
        self.reduction = root.op if reduce else None
        self.axes: tuple[int, ...] = ()
        if reduce:
            p = root.op.param_values(root.args)
            self.axes = tuple(sorted(root.op.axes(p["axis"], self.ndim)))
            self.keepdims = p["keepdims"]
            self.dtype = typeof(root).dtype
            self.kernel = ChunkKernel(tuple(placeholders.values()), _partial(root.op, body, self))
        else:
            self.kernel = ChunkKernel(tuple(placeholders.values()), body)
        self.out_dtype = typeof(self.kernel.output).dtype
        _function(self.kernel.key)  # lowered here: what cannot compile fails now, not per chunk

    def run(self, args: list, da: Any) -> Any:
        from dask.base import tokenize  # lazy: dask is optional

        out = _LETTERS[: self.ndim]
        pairs = []
        for a in args:
            pairs += [a, out[self.ndim - a.ndim :]]
        adjust = {out[k]: 1 for k in self.axes} if self.reduction is not None else None
        block = da.blockwise(
            self.kernel,
            out,
            *pairs,
            dtype=self.out_dtype,
            meta=np.empty((0,) * self.ndim, self.out_dtype),
            adjust_chunks=adjust,
            name=f"relgraph-{self.kernel.name}-" + tokenize(self.kernel, *args),
        )
        if self.reduction is None:
            return block
        shape = np.broadcast_shapes(*(a.shape for a in args))
        return _combine(self, block, int(np.prod([shape[k] for k in self.axes])), da)


def _rebuilt(top: Any, is_cut: Any, leaf: Any) -> Any:
    """``top`` with every cut node, symbol and array constant replaced by ``leaf(x)``."""
    if type(top) is not Term:
        return leaf(top) if _is_input(top) else top
    done: dict[Term, Any] = {}
    stack: list[tuple[Term, bool]] = [(top, False)]
    while stack:
        node, ready = stack.pop()
        if node in done:
            continue
        if is_cut(node):
            done[node] = leaf(node)
            continue
        kids = [a for a in node._tuple[1:] if type(a) is Term and a not in done]
        if not ready and kids:
            stack.append((node, True))
            stack.extend((k, False) for k in kids)
            continue
        args = [done[a] if type(a) is Term else (leaf(a) if _is_input(a) else a)
                for a in node._tuple[1:]]  # fmt: skip
        done[node] = Term((node.op, *args))
    return done[top]


def _is_input(x: Any) -> bool:
    return isinstance(x, Symbol) or (isinstance(x, Constant) and x.value.ndim > 0)


# --- reductions: a partial result per chunk, combined by dask's tree reduction -------


def _partial(op: Reduce, body: Any, region: Region) -> Term:
    """The kernel's output per chunk: the reduction, keeping the reduced axes."""

    axis = region.axes
    if op.name == "mean":  # summed in numpy's accumulator dtype, divided once at the end
        return ops.sum(ops.astype(body, _accumulator(typeof(body).dtype)), axis, True)
    return op(body, axis, True)


def _accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype ``np.mean`` sums in: float64 for integers and bools, else the dtype."""
    return np.dtype(np.float64) if dtype.kind in "biu" else dtype


def _combine(region: Region, partial: Any, count: int, da: Any) -> Any:
    """The partial results reduced by dask's tree reduction (``count`` elements
    were reduced into each result)."""
    op, axis, keep = region.reduction, region.axes, region.keepdims
    if op is None:
        raise ValueError("a region without a reduction has nothing to combine")
    if op.name in ("sum", "prod", "max", "min"):
        return getattr(da, op.name)(partial, axis=axis, keepdims=keep)
    if op.name == "mean":
        total = da.sum(partial, axis=axis, keepdims=keep)
        return (total / partial.dtype.type(count)).astype(region.dtype)
    return da.reduction(  # logsumexp: of the partial logsumexps, exact and stable
        partial,
        chunk=special.logsumexp,
        combine=special.logsumexp,
        aggregate=special.logsumexp,
        axis=axis,
        keepdims=keep,
        dtype=region.dtype,
        meta=np.empty((0,) * (region.ndim if keep else region.ndim - len(axis)), region.dtype),
    )


# --- kernels on workers --------------------------------------------------------------

# Functions by (inputs, output), per process: a worker lowers each region once.
_BUILT: OrderedDict[tuple, Any] = OrderedDict()
_BUILT_LOCK = threading.Lock()
_MAX_BUILT = 256


class ChunkKernel:
    """One region's kernel as a dask task function: ``kernel(*chunks) -> chunk``.

    It pickles as its term, not as compiled code; a process builds the
    :class:`~relgraph.backends.numba.function.Function` once and keeps it (the compiled kernel
    comes from the kernel cache, on disk across processes).
    """

    def __init__(self, inputs: tuple[Symbol, ...], output: Any):
        self.inputs, self.output = inputs, output
        self.key = (inputs, output)
        self.name = getattr(getattr(output, "op", None), "name", "region")
        # An elementwise region's chunk has its inputs' broadcast shape.  Allocated
        # by numpy (large arrays on huge pages) it is written twice as fast as when
        # the kernel allocates it (4 KiB pages, a fault each).
        op = getattr(output, "op", None)
        self.dtype = typeof(output).dtype if op is not None and op.elementwise else None

    def __reduce__(self) -> tuple:
        return (ChunkKernel, (self.inputs, self.output))

    def __dask_tokenize__(self) -> Any:
        return ("relgraph.ChunkKernel", hash(self.key), str(self.output))

    def __repr__(self) -> str:
        return f"ChunkKernel({self.output})"

    def __call__(self, *chunks: Any) -> Any:
        fn = _function(self.key)
        if self.dtype is None:
            return fn.run_serial(list(chunks))
        out = np.empty(np.broadcast_shapes(*(np.shape(c) for c in chunks)), self.dtype)
        return fn.run_serial(list(chunks), out)


def _function(key: tuple) -> Any:
    with _BUILT_LOCK:
        found = _BUILT.get(key)
        if found is not None:
            _BUILT.move_to_end(key)
            return found
    # On a worker the chunks are the work: one kernel, compiled at the first chunk
    # that needs it, serves all of them (no numpy tier in between).  A region Numba
    # cannot compute (a float16 result: numpy's sqrt of uint8) runs with numpy, as
    # the numpy tier does on numpy arrays, and says so once.
    try:
        built = function(*key, lazy=True, compile="eager")
    except LoweringError as exc:
        warnings.warn(f"relgraph: the chunks of {key[1]} run with numpy: {exc}",
                      RuntimeWarning, stacklevel=2)  # fmt: skip
        built = function(*key, compile="never")
    with _BUILT_LOCK:
        _BUILT[key] = built
        while len(_BUILT) > _MAX_BUILT:
            _BUILT.popitem(last=False)
    return built
