"""The compiler: ``rg.function`` turns terms into one Numba kernel and calls it safely.

Arguments are checked against the symbols' types before any kernel runs (count,
safe dtype casts, ndim, known shapes, and the shape relations the graph implies,
e.g. the inner dimensions of a product).  Kernels are cached by their generated
source, in memory and on disk (:mod:`relgraph.backends.numba.kernel_cache`).
"""

from __future__ import annotations

import math
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relgraph.backends.numba import buffers
from relgraph.backends.numba.background import COMPILER
from relgraph.backends.numba.fastcall import entry_point, fast_call
from relgraph.backends.numba.kernel_cache import cache_dir, compile_kernel, signature
from relgraph.backends.numba.lowering import PARALLEL_MIN, Lowered, LoweringError, lower
from relgraph.backends.numba.products import (
    ONE_CALL,
    calls_blas,
    matvec_matrices,
    own_loop,
    row_products,
)
from relgraph.backends.numba.rowblocks import row_split
from relgraph.backends.numba.shapes import (
    check_shapes,
    checked_out,
    checked_value,
    copied_into,
    planned_shape,
    shape_checks,
)
from relgraph.backends.numba.tiers import Tiers
from relgraph.exceptions import TypeCheckError, UnsupportedError
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Symbol
from relgraph.terms.printing import brief
from relgraph.terms.traverse import checked_term, free_symbols, subterms

__all__ = ["function", "Function", "cache_dir"]

# Functions by (inputs, outputs): held weakly, so a Function the caller drops is freed
# (its kernel stays in _KERNELS, shared by every graph of the same structure).
_FUNCTIONS: weakref.WeakValueDictionary[tuple, Function] = weakref.WeakValueDictionary()
FAST_CALLS = 8  # fast calls a function keeps (for as many argument shapes)


MAX_NODES = 4_000  # Numba compiles about 300 nodes a second, in one function
TIERS = ("background", "eager", "never")


def function(
    inputs: Sequence[Symbol],
    outputs: Any,
    *,
    max_nodes: int = MAX_NODES,
    lazy: bool = False,
    compile: str = "background",
) -> Function:
    """Compile ``outputs`` (a term or a list of terms) as a function of ``inputs``.

    Parameters
    ----------
    inputs : sequence of Symbol
    outputs : Term or list of Terms
    max_nodes : int
        Graphs with more distinct nodes are refused with :class:`LoweringError`:
        Numba compiles the whole graph as one function, at about 300 nodes a second.
        Raise it to compile a larger graph anyway.
    lazy : bool
        With ``compile="eager"``: compile each kernel on the first call that needs
        it, rather than the serial kernel now.
    compile : {"background", "eager", "never"}
        ``"background"`` (the default): calls never wait for Numba; until a kernel
        is ready they run the evaluation tier (the same program with numpy, the same
        values to rounding), and the kernels compile on one background thread.
        ``"eager"``: compile now and when a call first needs a kernel, and wait.
        ``"never"``: numpy only.  :attr:`Function.ready` and :meth:`Function.wait`
        say when the compiled kernel has taken over.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> f = rg.function([A, x, y], A @ x + rg.exp(y))
    >>> f(np.eye(2), np.array([1.0, 2.0]), np.zeros(2))
    array([2., 3.])
    >>> f(np.eye(2), np.array([1.0, 2.0]), np.zeros(3))
    Traceback (most recent call last):
    ...
    relgraph.exceptions.TypeCheckError: shapes do not fit ...: axis 0 of A is 2, axis 0 of y is 3
    """
    if compile not in TIERS:
        raise ValueError(f"compile must be one of {TIERS}, got {compile!r}")
    single = not isinstance(outputs, (list, tuple))
    outs = tuple(checked_term(o, "compile") for o in ([outputs] if single else outputs))
    if not outs:
        raise TypeError("rg.function needs at least one output; the output list is empty")
    ins = tuple(inputs)
    for s in ins:
        if not isinstance(s, Symbol):
            raise TypeError(f"inputs must be symbols, got {s!r}")
    if len(set(ins)) != len(ins):
        raise TypeError(f"an input symbol is listed twice: {[s.name for s in ins]}")
    key = (ins, outs, single, compile)
    found = _FUNCTIONS.get(key)
    if found is None:
        nodes = len({node for out in outs for node in subterms(out)})
        if nodes > max_nodes:
            raise LoweringError(
                f"the graph has {nodes} nodes, more than max_nodes={max_nodes}: Numba "
                f"would compile it as one function for about {nodes // 300} s; pass "
                "rg.function(..., max_nodes=...) to compile it anyway"
            )
        found = _FUNCTIONS[key] = Function(ins, outs, single, lazy, compile)
    return found


class Function(Tiers):
    """A compiled function of some symbols; call it with numpy arrays."""

    def __init__(
        self,
        inputs: tuple[Symbol, ...],
        outputs: tuple[Any, ...],
        single: bool,
        lazy: bool,
        compile: str = "eager",
    ):
        missing = free_symbols(outputs) - set(inputs)
        if missing:
            names = ", ".join(sorted(s.name for s in missing))
            raise TypeCheckError(f"the outputs use symbols that are not inputs: {names}")
        self.inputs, self.outputs, self.single = inputs, outputs, single
        # The first kernel has flat loops only (half the compile time); calls whose
        # shapes broadcast fall back to general_kernel, built on first need.
        # A program Numba cannot compute (a float16 result: numpy's exp of int8) has no
        # kernel: "eager" raises why now, "background" says it once and keeps numpy.
        try:
            lowered, self._unlowered = lower(inputs, outputs, broadcast=False), None
        except LoweringError as exc:
            if compile == "eager":
                raise
            lowered, self._unlowered = Lowered("", (), ()), exc
        self.source, self.loop_inputs = lowered.source, lowered.loop_inputs
        # Outputs the kernel can write into a caller's ``out=`` array; the others are
        # copied into it.  Without ``out=`` every call returns fresh arrays: a result
        # the caller holds is never written again.
        out_types = [typeof(o) for o in outputs]
        self.out_types = out_types
        self.out_slots = lowered.out_slots
        # A kernel returns the buffer it is given when its shape fits: so that an
        # empty result is a new array, not one shared by every call, each call gets
        # its own placeholders.
        self._placeholder_types = [(out_types[k].ndim, out_types[k].dtype) for k in self.out_slots]
        # An output whose shape follows from the arguments' is allocated here, by
        # numpy: numpy puts a large array on huge pages, which the kernel then writes
        # two to three times as fast as memory it allocates itself (page faults).
        self.groups, self.equalities, plans = shape_checks(inputs, outputs)
        self._shape_of = [plans[k] for k in self.out_slots]
        # The last call's argument shapes and the shapes planned for the slots: calls
        # in a loop, all of one shape, check and plan them once.
        self._last: tuple[list, list, bool, bool, int | None] | None = None
        # The last such call as one generated function (fastcall: ``repeat_call(args)``
        # is the results, or None for arguments of other types, shapes or dtypes),
        # and shapes the flat kernel refused (they broadcast).
        self.repeat_call: Callable[..., Any] | None = None
        self._fast_calls: dict[tuple, Callable[..., Any]] = {}  # by shapes and dtypes
        self._refused: list | None = None
        # An output listed twice comes back as its own array each time, not as one
        # array twice: changing one result must not change another.
        self.repeated = tuple(k for k, o in enumerate(outputs) if o in outputs[:k])
        self.signature = signature(inputs, outputs, self.out_slots)
        self._kernel: Callable | None = None
        # Large calls run the serial kernel on blocks of rows where the graph allows;
        # else a prange kernel, built when a large input first arrives.
        self.rows = row_split(inputs, outputs)
        # Matrices cut into blocks of rows that only a matrix-vector product reads (X in
        # sum(softplus(X @ w))): their sizes too say whether a call is large.
        cut = self.rows.inputs if self.rows is not None else ()
        nodes = [n for out in outputs for n in subterms(out)]
        matrices = matvec_matrices(nodes)
        self.product_inputs = tuple(
            i for i in cut if i not in self.loop_inputs and inputs[i] in matrices
        )
        # Outputs larger than their inputs (an outer sum) make a call large too.
        self.blas = calls_blas(nodes, lowered.fused)
        self.by_outputs = self.rows is not None and not self.blas
        # Products fused into regions, which run BLAS where their inner dimension is
        # wide, else the regions' loops, which their size makes large: the plans of
        # their left operands and of their shapes (None: only the kernel knows).
        fused = list(lowered.fused)
        plans = shape_checks(inputs, [p.args[0] for p in fused] + fused)[2]
        self._inner = list(zip(plans[: len(fused)], plans[len(fused) :]))
        # Products of rows by matrices: the plans of their operands, whose sizes say
        # how many rows a kernel call takes so that BLAS stays on the calling thread.
        by_rows = row_products(nodes, {inputs[i] for i in cut})
        self._widths = by_rows and shape_checks(inputs, [t for p in by_rows for t in p])[2]
        self._parallel: Callable | None = None
        self._large = 0  # large calls on blocks so far: the second wants the prange kernel
        self._general: Callable | None = None  # built when shapes first broadcast
        self.compile = compile
        self._ready = threading.Event()  # the serial kernel is built, or failed
        self._jobs: dict[str, int] = {}  # kernel -> the compiler generation it went to
        self.failed: dict[str, Exception] = {}  # kernels that did not compile, and why
        self._wanted: list[str] = []  # kernels a call wants compiled (in the background)
        if compile == "eager" and not lazy:
            _ = self.kernel
        # Numba returns 0-d results as Python scalars: restore their dtype.
        self.scalar_dtypes = [t.dtype if t.ndim == 0 else None for t in out_types]
        self.has_scalars = any(d is not None for d in self.scalar_dtypes)
        self.expected = [
            (
                # a 0-d input's fast form is a numpy scalar of its dtype (np.float64(1.0))
                s.type.dtype.type if s.type.ndim == 0 else s.type.dtype,
                s.type.ndim,
                s.type.ndim > 0 and s.type.shape.count(None) == s.type.ndim,
            )
            for s in inputs
        ]

    @property
    def kernel(self) -> Callable:
        """The serial kernel with flat loops (compiled on first need when ``lazy``)."""
        if self._kernel is None:
            if self._unlowered is not None:
                raise LoweringError(str(self._unlowered))
            self._kernel = compile_kernel(self.source, self.signature)
            self._ready.set()
        return self._kernel

    @property
    def ready(self) -> bool:
        """Whether calls run the compiled kernel (else the numpy evaluation tier)."""
        return self._kernel is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the compiled kernel is ready (or failed to build); returns
        :attr:`ready`.  ``compile="never"`` returns False at once.

        Examples
        --------
        >>> import numpy as np, relgraph as rg
        >>> x = rg.vector("x")
        >>> f = rg.function([x], rg.exp(x) + 1.0)
        >>> f(np.zeros(2))          # at once: numpy runs it until the kernel is ready
        array([2., 2.])
        >>> f.wait(), f(np.zeros(2))
        (True, array([2., 2.]))
        """
        if self.compile == "never":
            return False
        if self.compile == "eager":
            _ = self.kernel
        else:
            self._submit("kernel")  # once per compiler generation
            self._ready.wait(timeout)
        return self.ready

    def _submit(self, which: str) -> None:
        """Compile kernel ``which`` (a property's name) on the background thread, once
        per compiler generation (a forked child's compiler lost its parent's jobs)."""
        generation = COMPILER.generation
        failed = which in self.failed or "kernel" in self.failed  # no kernel: none of them
        if self._jobs.get(which) == generation or failed:
            return
        self._jobs[which] = generation
        ref = weakref.ref(self)

        def job() -> None:
            f = ref()
            if f is not None:
                f._build(which)

        if not COMPILER.submit(job) and which == "kernel":
            self._ready.set()  # the interpreter is exiting: nobody waits for a kernel

    def _build(self, which: str) -> None:
        try:
            getattr(self, which)
        except Exception as exc:  # it stays on numpy, and says why once
            self.failed[which] = exc
            warnings.warn(
                f"relgraph: {self!r} keeps running with numpy: its {which.replace('_', ' ')} "
                f"did not compile ({type(exc).__name__}: {exc})",
                RuntimeWarning,
                stacklevel=1,
            )
        finally:
            if which == "kernel":
                self._ready.set()

    @property
    def general_kernel(self) -> Callable:
        """The serial kernel with strided loops for broadcasting shapes too."""
        if self._general is None:
            source = lower(self.inputs, self.outputs).source
            self._general = compile_kernel(source, self.signature)
        return self._general

    @property
    def parallel_kernel(self) -> Callable:
        """The same kernel with its outer loops spread over all cores."""
        if self._parallel is None:
            source = lower(self.inputs, self.outputs, parallel=True).source
            self._parallel = compile_kernel(source, self.signature)
        return self._parallel

    def __repr__(self) -> str:
        args = ", ".join(s.name for s in self.inputs)
        outs = ", ".join(brief(o, 60) for o in self.outputs)
        return f"Function(({args}) -> {outs})"

    def __call__(self, *args: Any, out: Any = None) -> Any:
        """Run the kernel on ``args``; ``out`` (an array, or one per output, None for
        "allocate") receives the results in place, as numpy's ``out=`` does."""
        fast = self.repeat_call
        if fast is not None:
            found = fast(args, out)
            if found is not None:
                return found
        if len(args) != len(self.inputs):
            names = ", ".join(s.name for s in self.inputs)
            raise TypeError(f"expected {len(self.inputs)} arguments ({names}), got {len(args)}")
        # The common case costs a few comparisons per argument: arrays that already
        # have the symbol's dtype and ndim, and no fixed sizes to check.
        values = list(args)
        for i, (dtype, ndim, free) in enumerate(self.expected):
            v = values[i]
            if type(v) is dtype:  # a numpy scalar of a 0-d input's dtype
                continue
            if not (free and type(v) is np.ndarray and v.dtype == dtype and v.ndim == ndim):
                if any(hasattr(a, "__dask_graph__") for a in args):
                    return self._lazy_call(values, out)
                values[i] = checked_value(self.inputs[i], v)
        shapes = _shapes(values)
        last = self._last
        repeated = last is not None and last[0] == shapes
        if last is None or not repeated:
            if self.groups or self.equalities:
                check_shapes(self.groups, self.equalities, shapes, self.inputs)
            planned = self._planned(shapes)
            # an output (or a fused product) larger than its inputs: a large call
            blas, own, chunk = self._products(shapes)
            wide = any(math.prod(s or (0,)) >= PARALLEL_MIN for s in planned)
            if chunk and self.rows:  # products of rows: large by the rows read too
                wide = wide or any(math.prod(shapes[i]) >= PARALLEL_MIN for i in self.rows.inputs)
            large = not blas and (own or wide and self.by_outputs) or bool(chunk and wide)
            last = self._last = (shapes, planned, large, blas, chunk)
        # Threads pay off only when the loops are long.
        planned = last[1]
        large = last[4] != ONE_CALL and (
            last[2]
            or any(values[i].size >= PARALLEL_MIN for i in self.loop_inputs)
            or any(
                values[i].size >= PARALLEL_MIN and own_loop(values[i]) for i in self.product_inputs
            )
        )
        outs = (
            None
            if out is None
            else checked_out(out, values, self.inputs, self.out_types, self.single)
        )
        values += self._new_buffers(planned) if outs is None else self._slot_buffers(outs, planned)
        results = self._run(values, large, *last[3:])
        if outs is not None:
            results = copied_into(outs, results)
        if repeated and not large:  # a second call in a row with these shapes
            self._keep_fast(shapes, values, planned)
        return results[0] if self.single else results

    def _keep_fast(self, shapes: list, values: list, planned: list) -> None:
        """After a call that could run the serial kernel: the fast call for arguments
        of these shapes and dtypes (:mod:`~relgraph.backends.numba.fastcall`), where no
        step of the checked call is needed again: every input an array of one or more
        axes or a numpy scalar, outputs that are new small arrays, each its own.
        Generating one costs about 100 us: each is kept (a few), so shapes that
        alternate, or a view passed every time (which takes the checked call), do not
        generate it again."""
        key = (tuple(shapes), tuple(v.dtype for v in values[: len(self.inputs)]))
        made = self._fast_calls.get(key)
        if made is not None:
            self.repeat_call = made
            return
        if self._kernel is None or self.compile == "never" or shapes == self._refused:
            return
        zero_d = any(s == () and type(v) is np.ndarray for s, v in zip(shapes, values))
        if self.repeated or zero_d:  # the fast call takes numpy scalars, no 0-d arrays
            return
        outputs = []
        for (ndim, dtype), shape in zip(self._placeholder_types, planned):
            shape = (0,) * ndim if shape is None else shape
            if np.dtype(dtype).itemsize * math.prod(shape) >= buffers.MIN_BYTES:
                return  # a large output comes from the pool of released blocks
            outputs.append((shape, dtype))

        def refuse() -> None:  # the kernel raised: shapes that broadcast
            self.repeat_call, self._refused = None, shapes
            self._fast_calls.pop(key, None)

        known = all(shape is not None for shape in planned)  # else the kernel's shape
        if len(self._fast_calls) >= FAST_CALLS:
            self._fast_calls.clear()
        self.repeat_call = self._fast_calls[key] = fast_call(
            entry_point(self._kernel, values), shapes, key[1], outputs, self.single, refuse, known,
            scalars=self.scalar_dtypes,
        )  # fmt: skip

    def _lazy_call(self, values: list, out: Any) -> Any:
        """Called with dask arrays: a dask array, built by the Dask backend."""
        if out is not None:
            raise TypeError("out= takes numpy arrays; with dask arrays the result is lazy")
        if "dask" not in LAZY_CALLS:
            raise UnsupportedError("dask arrays need relgraph's Dask backend: import relgraph")
        return LAZY_CALLS["dask"](self, values)

    def check_shapes(self, shapes: list) -> None:
        """Raise :class:`TypeCheckError` if arguments of these shapes do not fit."""
        if self.groups or self.equalities:
            check_shapes(self.groups, self.equalities, shapes, self.inputs)

    def run_serial(self, values: list, out: Any = None) -> Any:
        """The serial kernel on checked arrays (a chunk of a dask array: the workers
        are the parallelism), writing a single output into ``out`` if it fits."""
        if out is None:
            buffers = self._no_buffer()
        else:
            buffers = self._slot_buffers([out], self._planned(_shapes(values)))
        results = self._run(values + buffers, False)
        return results[0] if self.single else results

    def __reduce__(self) -> tuple:
        """Pickled as its terms: unpickling compiles again (from the kernel cache)."""
        return (_rebuilt, (self.inputs, self.outputs, self.single))

    def _new_buffers(self, planned: list) -> list:
        return self._slot_buffers([None] * len(self.outputs), planned)

    def _planned(self, shapes: list) -> list:
        """Per slot, its output's shape for arguments of these (checked) shapes, or
        None where only the kernel knows it."""
        return [None if plan is None else planned_shape(plan, shapes) for plan in self._shape_of]

    def _buffer(self, j: int, shape: tuple | None) -> Any:
        """Slot ``j``'s output array, or a placeholder the kernel replaces."""
        ndim, dtype = self._placeholder_types[j]
        if shape is None:
            return np.empty((0,) * ndim, dtype)
        return buffers.empty(shape, dtype)  # no fresh pages

    def _no_buffer(self) -> list:
        return [np.empty((0,) * ndim, dtype) for ndim, dtype in self._placeholder_types]

    def _slot_buffers(self, outs: list, planned: list) -> list:
        return [
            self._buffer(j, planned[j]) if outs[k] is None else outs[k]
            for j, k in enumerate(self.out_slots)
        ]


def _shapes(values: list) -> list:
    """The arguments' shapes (an array's attribute: ``np.shape`` costs a call each)."""
    return [v.shape if type(v) is np.ndarray else np.shape(v) for v in values]


def _rebuilt(inputs: tuple, outputs: tuple, single: bool) -> Function:
    return function(inputs, outputs[0] if single else list(outputs), max_nodes=10**9)


#: How a Function runs on lazy (dask) arrays: the Dask backend registers itself here,
#: as it builds on this one (relgraph.backends.dask.chunked).
LAZY_CALLS: dict[str, Callable[[Function, list], Any]] = {}
