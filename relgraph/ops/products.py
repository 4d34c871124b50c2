"""Products: ``dot`` of vectors and matrices (BLAS), and ``matmul`` of stacks of
matrices with numpy's batching rules.  ``a @ b`` builds whichever numpy would compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relgraph.exceptions import TypeCheckError
from relgraph.ops.base import PERFORM, Op, pullback, register_ops
from relgraph.ops.shape import expand_dims, transpose
from relgraph.terms.infer import typeof
from relgraph.terms.operators import register_operator
from relgraph.terms.types import TensorType, broadcast_shapes

__all__ = ["Dot", "Matmul", "dot", "matmul", "product_op"]


class _Product(Op):
    """Both products print as ``a @ b``."""

    nin = 2
    exact = PERFORM  # numpy's products of mpmath numbers sum at mpmath's precision

    def layout(self, args: Sequence[Any]) -> list[Any]:
        return ["(", args[0], " @ ", args[1], ")"]

    def work(self, out: TensorType, ins: Sequence[TensorType]) -> float | None:
        """A multiply and an add per element of the result and of the inner dimension."""
        a = ins[0]
        inner = a.shape[-1] if a.ndim else 1
        if out.size is None or inner is None:
            return None
        return 2.0 * out.size * inner


class Dot(_Product):
    """Matrix/vector product ``a @ b`` (operands of ndim 1 or 2), as ``np.dot``.

    >>> import relgraph as rg
    >>> rg.typeof(rg.matrix("A", shape=(2, 3)) @ rg.matrix("B", shape=(3, 5)))
    TensorType(float64, shape=(2, 5))
    >>> rg.matrix("A", shape=(2, 3)) @ rg.vector("x", shape=4)
    Traceback (most recent call last):
    ...
    relgraph.exceptions.TypeCheckError: ill-typed term (A @ x): dot: inner dimensions differ: ...
    """

    name = "dot"
    cost = 10.0  # per element of the result: a reduction over the inner dimension

    def perform(self, a: Any, b: Any) -> Any:
        return np.dot(a, b)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        a, b = args
        shapes.equal(a[-1], b[0], node)  # the inner dimensions
        return a[:-1] + b[1:]

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        self.check_arity(len(types))
        (ta, tb), (a, b) = types, args
        for t, arg in ((ta, a), (tb, b)):
            if t.ndim not in (1, 2):
                raise TypeCheckError(f"dot needs vectors or matrices, but {arg} has ndim {t.ndim}")
        ka, kb = ta.shape[-1], tb.shape[0]
        if ka is not None and kb is not None and ka != kb:
            raise TypeCheckError(f"dot: inner dimensions differ: {ka} ({a}) vs {kb} ({b})")
        shape = ta.shape[:-1] + tb.shape[1:]
        return TensorType(np.result_type(ta.dtype, tb.dtype), len(shape), shape)


class Matmul(_Product):
    """``a @ b`` on stacks of matrices (ndim >= 3 on either side), as ``np.matmul``: the
    leading axes broadcast, each pair of matrices is a BLAS product.

    >>> import relgraph as rg
    >>> T, U = rg.tensor("T", shape=(5, 2, 3)), rg.matrix("U", shape=(3, 4))
    >>> rg.typeof(T @ U)
    TensorType(float64, shape=(5, 2, 4))
    """

    name = "matmul"

    def perform(self, a: Any, b: Any) -> Any:
        return np.matmul(a, b)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        a, b = args
        shapes.equal(a[-1], b[-2], node)
        return (*shapes.broadcast([a[:-2], b[:-2]], node), a[-2], b[-1])

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        (ta, tb), (a, b) = types, args
        for t, arg in ((ta, a), (tb, b)):
            if t.ndim < 2:
                raise TypeCheckError(
                    f"matmul of stacks needs matrices on both sides, but {arg} has ndim "
                    f"{t.ndim}: add an axis with expand_dims"
                )
        ka, kb = ta.shape[-1], tb.shape[-2]
        if ka is not None and kb is not None and ka != kb:
            raise TypeCheckError(f"matmul: inner dimensions differ: {ka} ({a}) vs {kb} ({b})")
        try:
            lead = broadcast_shapes(ta.shape[:-2], tb.shape[:-2])
        except ValueError as exc:
            raise TypeCheckError(f"matmul: the stacks do not broadcast: {exc}") from None
        shape = (*lead, ta.shape[-2], tb.shape[-1])
        return TensorType(np.result_type(ta.dtype, tb.dtype), len(shape), shape)


dot = Dot()
matmul = Matmul()
register_ops(dot, matmul)


def product_op(a: Any, b: Any) -> Op:
    """The Op numpy's ``a @ b`` means: ``matmul`` when either side is known to have
    ndim above 2, else ``dot``."""
    for x in (a, b):
        try:
            if typeof(x).ndim > 2:
                return matmul
        except TypeCheckError:
            pass  # a pattern: dot
    return dot


@register_operator("@")
def _matmul_operator(a: Any, b: Any) -> Any:
    return product_op(a, b)(a, b)


# --- pullbacks (rg.grad) ------------------------------------------------------------


@pullback(dot)
def _dot_pullback(g: Any, y: Any) -> tuple:
    a, b = y.args
    kind = (typeof(a).ndim, typeof(b).ndim)
    if kind == (1, 1):
        return g * b, g * a
    if kind == (2, 1):
        return expand_dims(g, 1) * expand_dims(b, 0), transpose(a) @ g
    if kind == (1, 2):
        return b @ g, expand_dims(a, 1) * expand_dims(g, 0)
    return g @ transpose(b), transpose(a) @ g


def _swapped(t: Any) -> Any:
    n = typeof(t).ndim
    return transpose(t, (*range(n - 2), n - 1, n - 2))


@pullback(matmul)
def _matmul_pullback(g: Any, y: Any) -> tuple:
    a, b = y.args  # the caller sums the stacks' broadcast axes
    return g @ _swapped(b), _swapped(a) @ g
