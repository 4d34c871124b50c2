"""Which code runs a call of a compiled function: its tiers.

A :class:`~relgraph.backends.numba.function.Function` answers every call, from the
first: with numpy (the evaluation tier) until the kernel it wants is compiled, then
with a kernel.  A large call runs the serial kernel on blocks of rows on threads
(:mod:`~relgraph.backends.numba.rowblocks`) or the ``prange`` kernel; a call whose
products go to BLAS is large only where BLAS stays on each block's thread (its rows
in chunks, :func:`~relgraph.backends.numba.products.chunk_rows`), else it runs whole,
BLAS computing its products on BLAS's threads.  :class:`Tiers` is that choice, for
``Function`` to inherit.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from relgraph.backends.numba.lowering import BROADCAST, PARALLEL_MIN
from relgraph.backends.numba.products import SKINNY, chunk_rows
from relgraph.backends.numba.rowblocks import RowSplit, run_blocks
from relgraph.backends.numba.shapes import planned_shape
from relgraph.terms.evaluate import evaluate_all
from relgraph.terms.leaves import Symbol

__all__ = ["Tiers"]


class Tiers(ABC):
    """How a :class:`~relgraph.backends.numba.function.Function` runs a call whose
    arguments are checked (its attributes, declared here, are set by ``Function``)."""

    inputs: tuple[Symbol, ...]
    outputs: tuple[Any, ...]
    out_types: list
    out_slots: tuple[int, ...]
    compile: str
    rows: RowSplit | None
    blas: bool
    repeated: tuple[int, ...]
    scalar_dtypes: list
    has_scalars: bool
    _inner: list
    _widths: Any
    _wanted: list[str]
    _large: int
    _kernel: Callable | None
    _parallel: Callable | None
    _general: Callable | None

    @property
    @abstractmethod
    def kernel(self) -> Callable:
        """The serial kernel (compiled on first use)."""

    @property
    @abstractmethod
    def parallel_kernel(self) -> Callable:
        """The ``prange`` kernel (compiled on first use)."""

    @property
    @abstractmethod
    def general_kernel(self) -> Callable:
        """The serial kernel for shapes that broadcast (compiled on first use)."""

    @abstractmethod
    def _submit(self, which: str) -> None:
        """Compile kernel ``which`` in the background."""

    def _products(self, shapes: list) -> tuple[bool, bool, int | None]:
        """Whether a call with arguments of these (checked) shapes runs BLAS, whether
        it computes a large product in the kernel's loops, and how many rows a kernel
        call on blocks takes (None: the blocks are not cut)."""
        blas, own = self.blas, False
        for left, shape in self._inner:
            if left is None or shape is None or planned_shape(left, shapes)[1] > SKINNY:
                blas = True
            else:
                own = own or math.prod(planned_shape(shape, shapes)) >= PARALLEL_MIN
        cut = self.rows.inputs if self.rows else ()
        return blas, own, chunk_rows(self._widths, shapes, cut) if blas else None

    def _run(
        self, values: list, large: bool, blas: bool = False, chunk: int | None = None
    ) -> list:
        results = self._compiled(values, large, blas, chunk) if self.compile != "never" else None
        if results is None:  # no kernel for this call yet: the evaluation tier
            results = self._evaluate_tier(values, large)
        # Kernels this call wanted compile after it has its results: a compile running
        # meanwhile would take the GIL from the numpy tier.
        while self._wanted:
            try:
                which = self._wanted.pop()
            except IndexError:  # another thread took the last
                break
            self._submit(which)
        results = list(results)
        for k in self.repeated:
            results[k] = results[k].copy()
        if self.has_scalars:
            for k, dtype in enumerate(self.scalar_dtypes):
                if dtype is not None:
                    results[k] = np.asarray(results[k], dtype)
        return results

    def _compiled(self, values: list, large: bool, blas: bool, chunk: int | None) -> Any:
        """The kernels' results, or None where a kernel this call needs is not ready
        (with ``compile="background"``; ``"eager"`` compiles it now and waits).

        A large call runs the ``prange`` kernel, compiled when a second large call
        comes; until it is ready (and always where BLAS or LAPACK runs: their own
        threads would spin against the kernel's), the serial kernel on blocks of rows,
        on threads, where the graph allows it (:mod:`~relgraph.backends.numba.rowblocks`;
        else the ``prange`` kernel from the first large call).  A call whose products
        BLAS cannot compute on each block's thread is not large
        (:data:`~relgraph.backends.numba.products.ONE_CALL`).
        The ``prange`` kernel folds its sums in the serial kernel's order and needs no
        Python between threads: a map over 10^6 elements (``log(lam) - lam * x``) took
        0.59 ms on two blocks, 0.32 ms so."""
        eager = self.compile == "eager"
        for i, v in enumerate(values):  # the one signature the kernels are compiled for
            if type(v) is np.ndarray:
                if v.ndim == 0 and i < len(self.inputs):
                    values[i] = v[()]  # a scalar's chunk: its value
                elif not v.flags.c_contiguous:
                    values[i] = np.ascontiguousarray(v)
        if large and self.rows is not None and self._on_blocks(eager, blas):
            if not blas and self._large > 1:
                self._wanted.append("parallel_kernel")
            if eager or self._kernel is not None:
                kernel = self.kernel
                return run_blocks(
                    self.rows, lambda v: self._serial(v, kernel), values, len(self.inputs),
                    self.out_slots, chunk,
                )  # fmt: skip
        elif large:
            if eager or self._parallel is not None:
                return self.parallel_kernel(*values)
            self._wanted.append("parallel_kernel")
        if not eager and self._kernel is None:
            self._wanted.append("kernel")
            return None
        return self._serial(values, self._kernel or self.kernel)

    def _on_blocks(self, eager: bool, blas: bool) -> bool:
        """Whether a large call (which the graph lets run on blocks of rows) runs the
        serial kernel on blocks: where BLAS runs, on the first large call (a function
        called once at that scale pays for no second kernel), and until the prange
        kernel is ready."""
        if blas or self._parallel is not None:
            return blas
        self._large += 1
        return self._large == 1 or not eager

    def _serial(self, values: list, kernel: Callable) -> Any:
        """A serial kernel's results (the general kernel's where shapes broadcast), or
        None where that kernel is not ready yet."""
        try:
            return kernel(*values)
        except ValueError as exc:
            if exc.args != (BROADCAST,):
                raise
        if self.compile == "eager" or self._general is not None:
            return self.general_kernel(*values)
        self._wanted.append("general_kernel")
        return None

    def _evaluate_tier(self, values: list, large: bool) -> list:
        """The evaluation tier; a large call on blocks of rows, as a kernel would run
        (numpy releases the GIL in its loops)."""
        n = len(self.inputs)
        if not (large and self.rows is not None):
            return self._evaluate(values[:n])
        results = run_blocks(self.rows, lambda args: self._evaluate(args[:n]), values, n,
                             self.out_slots)  # fmt: skip
        assert results is not None  # numpy always has a result
        return results

    def _evaluate(self, values: list) -> list:
        """The outputs computed with numpy: the evaluation tier, with the kernels'
        result dtypes, and arrays of their own (never a view of an argument)."""
        computed = evaluate_all(self.outputs, dict(zip(self.inputs, values)))
        results = []
        for value, t in zip(computed, self.out_types):
            r = np.asarray(value, dtype=t.dtype)
            if r.ndim and any(np.may_share_memory(r, v) for v in values):
                r = r.copy()
            results.append(r)
        return results
