"""Products: ``dot`` of vectors and matrices (BLAS), and ``matmul`` of stacks of
matrices with numpy's batching rules.  ``a @ b`` builds whichever numpy would compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relgraph.exceptions import TypeCheckError
from relgraph.ops.base import PERFORM, Op, pullback, register_ops
from relgraph.ops.elemwise import astype, mul
from relgraph.ops.reductions import sum as sum_
from relgraph.ops.shape import expand_dims, transpose
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.operators import register_operator
from relgraph.terms.term import Term
from relgraph.terms.types import TensorType, broadcast_shapes

__all__ = ["Dot", "Matmul", "dot", "matmul", "product_op", "einsum"]


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
        return TensorType(_result_dtype(ta, tb), len(shape), shape)


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
        return TensorType(_result_dtype(ta, tb), len(shape), shape)


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


def einsum(subscripts: str, *operands: Any) -> Any:
    """numpy's ``einsum`` with explicit letters (no ``...``, no letter twice in one
    operand): a matrix product where it is one (BLAS), else the operands' axes lined
    up, multiplied elementwise and summed over the contracted letters (one fused
    loop).

    >>> import numpy as np, relgraph as rg
    >>> A, B, x = rg.matrix("A"), rg.matrix("B"), rg.vector("x")
    >>> rg.pprint(rg.einsum("ij,jk->ik", A, B)), rg.pprint(rg.einsum("ij,ij->i", A, B))
    ('(A @ B)', 'sum(A * B, axis=1)')
    >>> rg.pprint(rg.einsum("ij,i", A, x))
    '(A.T @ x)'
    >>> float(rg.einsum("i,i", np.arange(3.0), np.arange(3.0)))
    5.0
    >>> rg.pprint(rg.einsum("ij->i", rg.matrix("M", "int8")))
    "astype(sum(M, axis=1), dtype='int8')"
    """
    if not any(isinstance(a, (Term, Symbol, Constant)) for a in operands):
        return np.einsum(subscripts, *operands)
    inputs, output = _parsed(subscripts, operands)
    if len(operands) == 2:
        product = _as_product(inputs, output, operands)
        if product is not None:
            return product
    order = output + "".join(sorted(set("".join(inputs)) - set(output)))
    lined = [_lined_up(a, letters, order) for a, letters in zip(operands, inputs)]
    total = lined[0] if len(lined) == 1 else mul(*lined)
    contracted = tuple(range(len(output), len(order)))
    if not contracted:
        return total
    # numpy's einsum sums in the operands' dtype (an int8 sum wraps, a bool sum is
    # "any"), where sum widens: summing wider and casting back gives those values.
    dtype, summed = typeof(total).dtype, sum_(total, contracted)
    return summed if typeof(summed).dtype == dtype else astype(summed, dtype)


def _parsed(subscripts: str, operands: Sequence[Any]) -> tuple[list[str], str]:
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise TypeCheckError(f"einsum {subscripts!r}: '...' is not supported; name every axis")
    left, arrow, output = spec.partition("->")
    inputs = left.split(",")
    if len(inputs) != len(operands):
        raise TypeCheckError(
            f"einsum {subscripts!r} names {len(inputs)} operands, {len(operands)} were given"
        )
    for letters, a in zip(inputs, operands):
        if not letters.isalpha() and letters:
            raise TypeCheckError(f"einsum {subscripts!r}: {letters!r} is not a list of letters")
        if len(set(letters)) != len(letters):
            raise TypeCheckError(f"einsum {subscripts!r}: a letter twice in {letters!r}")
        if len(letters) != typeof(a).ndim:
            raise TypeCheckError(
                f"einsum {subscripts!r}: {letters!r} has {len(letters)} axes, the operand "
                f"{typeof(a).ndim}"
            )
    every = "".join(inputs)
    if not arrow:
        output = "".join(sorted(c for c in set(every) if every.count(c) == 1))
    if set(output) - set(every) or len(set(output)) != len(output):
        raise TypeCheckError(f"einsum {subscripts!r}: the output {output!r} is not valid")
    return inputs, output


def _lined_up(a: Any, letters: str, order: str) -> Any:
    """``a`` with its axes in ``order`` (those it has), and length-1 axes for the rest."""
    mine = [c for c in order if c in letters]
    perm = tuple(letters.index(c) for c in mine)
    if perm != tuple(range(len(perm))):
        a = transpose(a, perm)
    missing = tuple(k for k, c in enumerate(order) if c not in letters)
    return expand_dims(a, missing) if missing else a


def _as_product(inputs: list[str], output: str, operands: Sequence[Any]) -> Any:
    """The einsum as ``a @ b`` (operands transposed as needed), if it is one: one
    contracted letter, each operand a vector or a matrix, no letter kept from both."""
    (la, lb), (a, b) = inputs, operands
    shared = set(la) & set(lb)
    if len(shared) != 1 or shared & set(output) or not {len(la), len(lb)} <= {1, 2}:
        return None
    (k,) = shared
    if set(la) | set(lb) != set(output) | shared:
        return None  # another letter is summed over alone
    if len(la) == 2 and la[1] != k:
        a, la = transpose(a), la[::-1]
    if len(lb) == 2 and lb[0] != k:
        b, lb = transpose(b), lb[::-1]
    out = la.replace(k, "") + lb.replace(k, "")
    product = dot(a, b)
    return product if out == output else transpose(product)


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


def _result_dtype(ta: TensorType, tb: TensorType) -> np.dtype:
    """numpy's result dtype of a product of these operands (one dtype: itself, with no
    call into numpy; products of one dtype are most of what inference sees)."""
    return ta.dtype if ta.dtype == tb.dtype else np.result_type(ta.dtype, tb.dtype)
