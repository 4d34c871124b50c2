"""Linear algebra of one matrix, as ``numpy.linalg``: ``cholesky``, ``inv``, ``solve``,
``det``, ``slogdet``, and ``diag``; ``trace`` and ``norm`` are built of other Ops.

Each takes 2-d operands (a stack of matrices is refused by name) of a float dtype;
integers and booleans compute in float64, as numpy does.  Compiled kernels call
Numba's ``np.linalg`` (LAPACK through scipy); ``rg.check``'s exact reference computes
with mpmath's matrices at its working precision.  A singular or non positive-definite
matrix raises numpy's ``LinAlgError`` in both tiers; an infinity or a NaN gives
numpy's values in both (Numba's ``np.linalg`` refuses them: kernels hand such
operands to numpy's).

>>> import numpy as np, relgraph as rg
>>> S, b = rg.matrix("S"), rg.vector("b")
>>> rg.pprint(rg.solve(S, b)), rg.typeof(rg.cholesky(rg.matrix("C", shape=(3, 3))))
('solve(S, b)', TensorType(float64, shape=(3, 3)))
>>> sign, logdet = rg.slogdet(S)
>>> f = rg.function([S], [sign, logdet])
>>> s, d = f(np.array([[2.0, 1.0], [1.0, 3.0]]))
>>> float(s), round(float(d), 12)
(1.0, 1.609437912434)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mpmath
import numpy as np
import scipy.linalg

from relgraph.exceptions import GradientError, TypeCheckError
from relgraph.ops.base import PERFORM, Op, pullback, register_ops
from relgraph.ops.elemwise import astype, sqrt
from relgraph.ops.products import dot
from relgraph.ops.reductions import sum as sum_
from relgraph.ops.shape import expand_dims, transpose
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term
from relgraph.terms.types import TensorType

__all__ = [
    "LinalgOp", "cholesky", "inv", "solve", "solve_lower", "solve_upper", "solve_triangular",
    "det", "slogdet", "logabsdet", "det_sign", "diag",
    "trace", "norm",
]  # fmt: skip


def linalg_dtype(t: TensorType, name: str) -> np.dtype:
    """The dtype numpy.linalg computes ``t`` in: float32 stays, else float64."""
    if t.dtype == np.float32:
        return t.dtype
    if t.dtype.kind in "biuf" and t.dtype != np.float16:
        return np.dtype(np.float64)
    raise TypeCheckError(f"{name}: numpy.linalg does not take {t.dtype}")


def _square(t: TensorType, name: str, arg: Any) -> None:
    if t.ndim != 2:
        raise TypeCheckError(f"{name} takes a matrix, but {arg} has ndim {t.ndim}")
    n, m = t.shape
    if n is not None and m is not None and n != m:
        raise TypeCheckError(f"{name} takes a square matrix, but {arg} is {n} x {m}")


def _mp(x: Any) -> Any:
    return mpmath.matrix(np.asarray(x).tolist())


def _objects(m: Any) -> np.ndarray:
    return np.array(m.tolist(), dtype=object)


class LinalgOp(Op):
    """An Op of ``numpy.linalg`` on a square matrix (and a right-hand side)."""

    def __init__(self, name: str, nin: int, fn: Any, exact: Any, cost: float):
        self.name, self.nin, self.fn, self.exact_fn, self.cost = name, nin, fn, exact, cost
        self.exact = PERFORM  # perform computes with mpmath on mpmath numbers

    def perform(self, *values: Any) -> Any:
        if any(np.asarray(v).dtype == object for v in values):
            return self.exact_fn(*values)
        return self.fn(*values)

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        a = types[0]
        _square(a, self.name, args[0])
        dtype = linalg_dtype(a, self.name)
        if self.nin == 2:  # a solve
            b, name = types[1], self.name
            if b.ndim not in (1, 2):
                raise TypeCheckError(f"{name}: the right-hand side {args[1]} has ndim {b.ndim}")
            n, k = a.shape[0], b.shape[0]
            if n is not None and k is not None and n != k:
                raise TypeCheckError(f"{name}: {args[0]} is {n} x {n}, {args[1]} has {k} rows")
            return TensorType(np.promote_types(dtype, linalg_dtype(b, name)), b.ndim, b.shape)
        if self.name in ("det", "logabsdet", "det_sign"):
            return TensorType(dtype, 0, ())
        return TensorType(dtype, 2, a.shape)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        a = args[0]
        shapes.equal(a[0], a[1], node)
        if self.nin == 2:
            shapes.equal(a[0], args[1][0], node)
            return args[1]
        return () if self.name in ("det", "logabsdet", "det_sign") else a


def _exact_slogdet(a: Any) -> tuple:
    d = mpmath.det(_mp(a))
    return mpmath.sign(d), (mpmath.log(abs(d)) if d != 0 else -mpmath.inf)


cholesky = LinalgOp("cholesky", 1, np.linalg.cholesky,
                    lambda a: _objects(mpmath.cholesky(_mp(a))), cost=30.0)  # fmt: skip
inv = LinalgOp("inv", 1, np.linalg.inv, lambda a: _objects(mpmath.inverse(_mp(a))), cost=60.0)
solve = LinalgOp(
    "solve", 2, np.linalg.solve,
    lambda a, b: _objects(mpmath.lu_solve(_mp(a), _mp(b))).reshape(np.shape(b)), cost=60.0,
)  # fmt: skip


def _triangular(lower: bool) -> LinalgOp:
    side = np.tril if lower else np.triu
    return LinalgOp(
        "solve_lower" if lower else "solve_upper", 2,
        lambda a, b: scipy.linalg.solve_triangular(a, b, lower=lower, check_finite=False),
        lambda a, b: _objects(mpmath.lu_solve(_mp(side(a)), _mp(b))).reshape(np.shape(b)),
        cost=20.0,
    )  # fmt: skip


# scipy.linalg.solve_triangular: the triangle of ``a`` on the side named, the rest unread.
solve_lower, solve_upper = _triangular(lower=True), _triangular(lower=False)
det = LinalgOp("det", 1, np.linalg.det, lambda a: mpmath.det(_mp(a)), cost=30.0)
logabsdet = LinalgOp("logabsdet", 1, lambda a: np.linalg.slogdet(a)[1],
                     lambda a: _exact_slogdet(a)[1], cost=30.0)  # fmt: skip
det_sign = LinalgOp("det_sign", 1, lambda a: np.linalg.slogdet(a)[0],
                    lambda a: _exact_slogdet(a)[0], cost=30.0)  # fmt: skip


class Diag(Op):
    """numpy's ``diag``: the diagonal of a matrix, or the matrix with a vector on its
    diagonal.

    >>> import relgraph as rg
    >>> rg.typeof(rg.diag(rg.matrix("M", shape=(2, 3)))), rg.diag([1.0, 2.0]).tolist()
    (TensorType(float64, shape=(2,)), [[1.0, 0.0], [0.0, 2.0]])
    """

    name = "diag"
    nin = 1
    exact = PERFORM

    def perform(self, x: Any) -> Any:
        return np.diag(x)

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        t = types[0]
        if t.ndim == 1:
            return TensorType(t.dtype, 2, (t.shape[0], t.shape[0]))
        if t.ndim == 2:
            n, m = t.shape
            k = None if n is None or m is None else min(n, m)
            return TensorType(t.dtype, 1, (n if n == m else k,))
        raise TypeCheckError(f"diag takes a vector or a matrix, but {args[0]} has ndim {t.ndim}")

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        if len(args[0]) == 1:
            return (args[0][0], args[0][0])
        return shapes.from_type(node)


diag = Diag()
register_ops(cholesky, inv, solve, solve_lower, solve_upper, det, logabsdet, det_sign, diag)


def slogdet(a: Any) -> tuple[Any, Any]:
    """numpy's ``slogdet``: ``(sign, log(abs(det)))`` of a square matrix, two terms."""
    return det_sign(a), logabsdet(a)


def solve_triangular(a: Any, b: Any, lower: bool = False) -> Any:
    """scipy.linalg's ``solve_triangular(a, b, lower=lower)``: ``solve_lower`` or
    ``solve_upper``, which read only that triangle of ``a``.

    >>> import relgraph as rg
    >>> rg.pprint(rg.solve_triangular(rg.matrix("L"), rg.vector("b"), lower=True))
    'solve_lower(L, b)'
    """
    return (solve_lower if lower else solve_upper)(a, b)


def trace(a: Any) -> Any:
    """numpy's ``trace`` of a matrix: the sum of its diagonal."""
    return sum_(diag(a))


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """numpy's ``linalg.norm`` for ``ord=None``: the 2-norm of a vector, the Frobenius
    norm of a matrix, or 2-norms along ``axis``, as ``sqrt(sum(x * x))``; integers and
    bools in float64, as numpy (``x * x`` of int8 would wrap around).

    >>> import relgraph as rg
    >>> rg.pprint(rg.norm(rg.vector("i", "int8")))
    "sqrt(sum(astype(i, dtype='float64') * astype(i, dtype='float64')))"
    """
    if ord is not None:
        raise TypeCheckError(f"norm: ord={ord!r} is not supported (only the default, None)")
    if not isinstance(x, (Term, Symbol, Constant)):
        return np.linalg.norm(x, axis=axis, keepdims=keepdims)
    if typeof(x).dtype.kind in "biu":
        x = astype(x, "float64")
    return sqrt(sum_(x * x, axis, keepdims))


# --- pullbacks (rg.grad) ------------------------------------------------------------


@pullback(inv)
def _inv_pullback(g: Any, y: Any) -> tuple:
    t = transpose(y)
    return (-dot(dot(t, g), t),)


@pullback(solve)
def _solve_pullback(g: Any, y: Any) -> tuple:
    a, b = y.args
    back = solve(transpose(a), g)
    if typeof(b).ndim == 1:
        return -(expand_dims(back, 1) * expand_dims(y, 0)), back
    return -dot(back, transpose(y)), back


@pullback(det)
def _det_pullback(g: Any, y: Any) -> tuple:
    return (g * y * transpose(inv(y.args[0])),)


@pullback(logabsdet)
def _logabsdet_pullback(g: Any, y: Any) -> tuple:
    return (g * transpose(inv(y.args[0])),)


@pullback(det_sign)
def _det_sign_pullback(g: Any, y: Any) -> tuple:
    return (None,)  # piecewise constant


@pullback(diag)
def _diag_pullback(g: Any, y: Any) -> tuple:
    return (diag(g),)  # a matrix's: square matrices only (the shape check says so)


@pullback(cholesky)
def _cholesky_pullback(g: Any, y: Any) -> tuple:
    raise GradientError(f"cholesky has no gradient yet (in {y})")


@pullback(solve_lower, solve_upper)
def _triangular_pullback(g: Any, y: Any) -> tuple:
    raise GradientError(f"{y._tuple[0].name} has no gradient yet (in {y}): use np.linalg.solve")
