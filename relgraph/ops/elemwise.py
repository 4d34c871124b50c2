"""Elementwise Ops: numpy ufuncs (and numpy references for the rest) with numpy's
broadcasting and dtype promotion.  Each is one declaration: its numpy reference, its
exact reference (for ``rg.check``), its cost; backends keep their code for it
(:mod:`relgraph.backends.numba.elementwise`).

An elementwise Op is one declaration (see the "Adding an Op" page of the docs).
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Sequence
from typing import Any

import mpmath
import numpy as np
from kanren import fact
from kanren.assoccomm import associative, commutative

from relgraph.exceptions import TypeCheckError
from relgraph.ops import exact as exact_ref, special
from relgraph.ops.base import PERFORM, Op, dtype_key, register_ops, result_dtype
from relgraph.terms.types import TensorType, broadcast_shapes

__all__ = [
    "Elemwise", "Cast", "add", "sub", "mul", "true_div", "neg", "pow", "exp", "log",
    "log1p", "expm1", "sqrt", "abs", "maximum", "minimum", "tanh", "sin", "cos", "sign", "square",
    "reciprocal", "log2", "log10", "exp2", "floor", "ceil", "sigmoid", "softplus", "log1mexp",
    "logaddexp", "erf", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    "logical_and", "logical_or", "logical_not", "where", "clip", "astype",
]  # fmt: skip


class Elemwise(Op):
    """An elementwise Op from a numpy ufunc, with numpy broadcasting and promotion.

    ``nin=None`` makes it variadic, folding the binary ufunc left to right.

    Examples
    --------
    >>> import relgraph as rg
    >>> float(rg.add(1.0, 2.0, 3.0))
    6.0
    >>> rg.typeof(rg.exp(rg.vector("n", "int64")))
    TensorType(float64, shape=(?,))
    """

    elementwise = True

    def __init__(
        self,
        name: str,
        ufunc: Callable[..., Any],
        nin: int | None,
        symbol: str | None = None,
        *,
        exact: Callable[..., Any] | None = None,
        cost: float = 1.0,
        compares: bool = False,
        selects: bool = False,
        scipy: str | None = None,
    ):
        self.name = name
        self.ufunc = ufunc
        self.nin = nin
        self.symbol = symbol
        self.exact = exact
        self.cost = cost
        self.compares = compares
        self.selects = selects
        self.scipy = scipy

    def layout(self, args: Sequence[Any]) -> list[Any]:
        if self.symbol is None:
            return super().layout(args)
        if len(args) == 1:
            return [self.symbol, args[0]]
        pieces: list[Any] = ["("]
        for i, a in enumerate(args):
            pieces += [f" {self.symbol} ", a] if i else [a]
        return [*pieces, ")"]

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        return shapes.broadcast(args, node)

    def perform(self, *values: Any) -> Any:
        self.check_arity(len(values))
        return functools.reduce(self.ufunc, values) if self.nin is None else self.ufunc(*values)

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        self.check_arity(len(types))
        try:
            shape = broadcast_shapes(*(t.shape for t in types))
        except ValueError as exc:
            raise TypeCheckError(f"{self.name}: {exc}") from None
        keys = tuple(dtype_key(a, t) for a, t in zip(args, types))
        if self.nin is None:
            dtype = result_dtype(self.ufunc, keys[:2])
            for key in keys[2:]:
                dtype = result_dtype(self.ufunc, (dtype, key))
        else:
            dtype = result_dtype(self.ufunc, keys)
        return TensorType(dtype, len(shape), shape)


class Cast(Op):
    """``astype(x, dtype)``: numpy's ``x.astype(dtype)``, elementwise.

    Float to integer casts of NaN, infinities or out-of-range values are undefined
    in numpy (it warns), and compiled kernels need not give the same integers.

    >>> import numpy as np, relgraph as rg
    >>> rg.typeof(rg.astype(rg.vector("x"), "float32"))
    TensorType(float32, shape=(?,))
    >>> rg.astype(np.array([1.7, -0.5]), "int8")
    array([1, 0], dtype=int8)
    """

    name = "astype"
    exact = PERFORM  # numpy's conversion rounds as the program does
    nin = 1
    params = (("dtype", None),)
    elementwise = True

    def bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple:
        x, *rest = super().bind(args, kwargs)
        if not rest:
            raise TypeCheckError("astype needs a dtype, as in astype(x, 'float32')")
        return (x, self._dtype(rest[0]).name)  # always stored, by its name

    def _dtype(self, dtype: Any) -> np.dtype:
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise TypeCheckError(f"astype: {dtype!r} is not a numpy dtype") from None
        if dt.kind not in "biufc":
            raise TypeCheckError(f"astype: {dt} is not a numeric dtype")
        return dt

    def perform(self, x: Any, dtype: str) -> Any:
        return np.asarray(x).astype(dtype)[()]

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        return args[0]

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        t, dtype = types[0], self._dtype(args[1])
        return TensorType(dtype, t.ndim, t.shape)


# Exact references (rg.check) compute on mpmath numbers at 1000 digits.
_ex = exact_ref

add = Elemwise("add", np.add, None, "+", exact=lambda a, b: a + b)
sub = Elemwise("sub", np.subtract, 2, "-", exact=lambda a, b: a - b)
mul = Elemwise("mul", np.multiply, None, "*", exact=lambda a, b: a * b)
true_div = Elemwise("true_div", np.true_divide, 2, "/", exact=_ex.div, cost=2.0)
pow = Elemwise("pow", np.power, 2, "**", exact=_ex.power, cost=4.0)
neg = Elemwise("neg", np.negative, 1, "-", exact=lambda a: -a)
exp = Elemwise("exp", np.exp, 1, exact=_ex.exp, cost=4.0)
log = Elemwise("log", np.log, 1, exact=mpmath.log, cost=4.0)
log1p = Elemwise("log1p", np.log1p, 1, exact=mpmath.log1p, cost=4.0)
expm1 = Elemwise("expm1", np.expm1, 1, exact=_ex.expm1, cost=4.0)
sqrt = Elemwise("sqrt", np.sqrt, 1, exact=mpmath.sqrt, cost=2.0)
abs = Elemwise("abs", np.absolute, 1, exact=builtins.abs)
maximum = Elemwise("maximum", np.maximum, 2, exact=builtins.max)
minimum = Elemwise("minimum", np.minimum, 2, exact=builtins.min)
tanh = Elemwise("tanh", np.tanh, 1, exact=mpmath.tanh)
sin = Elemwise("sin", np.sin, 1, exact=mpmath.sin)
cos = Elemwise("cos", np.cos, 1, exact=mpmath.cos)
sign = Elemwise("sign", np.sign, 1, exact=mpmath.sign)
square = Elemwise("square", np.square, 1, exact=lambda a: a * a)
reciprocal = Elemwise("reciprocal", np.reciprocal, 1, exact=lambda a: _ex.div(1, a))
log2 = Elemwise("log2", np.log2, 1, exact=lambda a: mpmath.log(a, 2))
log10 = Elemwise("log10", np.log10, 1, exact=mpmath.log10)
exp2 = Elemwise("exp2", np.exp2, 1, exact=lambda a: _ex.power(2, a))
floor = Elemwise("floor", np.floor, 1, exact=mpmath.floor)
ceil = Elemwise("ceil", np.ceil, 1, exact=mpmath.ceil)
sigmoid = Elemwise(
    "sigmoid", special.sigmoid, 1, exact=lambda a: 1 / (1 + _ex.exp(-a)), scipy="expit"
)
softplus = Elemwise("softplus", special.softplus, 1, exact=lambda a: _ex.log_add_exp([0, a]))
log1mexp = Elemwise("log1mexp", special.log1mexp, 1, exact=_ex.log1mexp)
logaddexp = Elemwise("logaddexp", np.logaddexp, 2, exact=lambda a, b: _ex.log_add_exp([a, b]))
erf = Elemwise("erf", special.erf, 1, exact=mpmath.erf, scipy="erf")
# Comparisons and logic give bool results; ``x > y`` on terms builds them (``==`` and
# ``!=`` stay structural equality of terms: use ``rg.equal``, ``rg.not_equal``).
less = Elemwise("less", np.less, 2, "<", exact=lambda a, b: a < b, compares=True)
less_equal = Elemwise(
    "less_equal", np.less_equal, 2, "<=", exact=lambda a, b: a <= b, compares=True
)
greater = Elemwise("greater", np.greater, 2, ">", exact=lambda a, b: a > b, compares=True)
greater_equal = Elemwise(
    "greater_equal", np.greater_equal, 2, ">=", exact=lambda a, b: a >= b, compares=True
)
equal = Elemwise("equal", np.equal, 2, "==", exact=lambda a, b: a == b, compares=True)
not_equal = Elemwise("not_equal", np.not_equal, 2, "!=", exact=lambda a, b: a != b, compares=True)
logical_and = Elemwise("logical_and", np.logical_and, 2, exact=lambda a, b: bool(a) and bool(b))
logical_or = Elemwise("logical_or", np.logical_or, 2, exact=lambda a, b: bool(a) or bool(b))
logical_not = Elemwise("logical_not", np.logical_not, 1, exact=lambda a: not a)
where = Elemwise("where", np.where, 3, exact=lambda c, a, b: a if c else b, selects=True)
clip = Elemwise("clip", np.clip, 3, exact=lambda a, lo, hi: builtins.min(builtins.max(a, lo), hi))
astype = Cast()

register_ops(
    add, sub, mul, true_div, pow, neg, exp, log, log1p, expm1, sqrt, abs, maximum, minimum,
    tanh, sin, cos, sign, square, reciprocal, log2, log10, exp2, floor, ceil, sigmoid, softplus,
    log1mexp, logaddexp, erf, less, less_equal, greater, greater_equal, equal, not_equal,
    logical_and, logical_or, logical_not, where, clip, astype,
)  # fmt: skip

# The facts kanren's assoc_flatten / eq_assoccomm consult.
for _op in (add, mul):
    fact(associative, _op)
    fact(commutative, _op)
