"""Elementwise Ops: numpy ufuncs (and numpy references for the rest) with numpy's
broadcasting and dtype promotion, lowered to scalar code inside fused loops.

An elementwise Op is one declaration (see the "Adding an Op" page of the docs).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
from kanren import fact
from kanren.assoccomm import associative, commutative

from relgraph.exceptions import TypeCheckError
from relgraph.ops import special
from relgraph.ops.base import Op, dtype_key, register_ops, result_dtype
from relgraph.terms.types import TensorType, broadcast_shapes

__all__ = [
    "Elemwise", "Power", "Cast", "add", "sub", "mul", "true_div", "neg", "pow", "exp", "log",
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
        ufunc: np.ufunc,
        nin: int | None,
        symbol: str | None = None,
        code: str | None = None,
        code_f64: str | None = None,
        code_int: str | None = None,
        code_wrap: str | None = None,
    ):
        self.name = name
        self.ufunc = ufunc
        self.nin = nin
        self.symbol = symbol
        # The Numba lowering of one element: a format string over the arguments'
        # scalar expressions (variadic Ops fold it left to right); code_f64, if
        # given, is used when the result is float64 (a vectorisable version).
        self.code = code
        self.code_f64 = code_f64
        # For an integer result, if the semantics differ; "" when there is no compiled
        # form (numpy's integer reciprocal of 0 is platform-defined).
        self.code_int = code_int
        # For an int64 result, where arithmetic may overflow: Numba marks signed
        # arithmetic "no signed wrap" and LLVM then folds ``(x + 1) > x`` to True, so
        # it is computed in uint64, which wraps as numpy's int64 does.
        self.code_wrap = code_wrap

    def scalar_code(self, dtype: np.dtype, operands: Sequence[Any] = ()) -> str | None:
        """The lowering template for a result of ``dtype`` (None: not compiled)."""
        if self.code_f64 and dtype == np.float64:
            return self.code_f64
        if self.code_wrap and dtype == np.int64:
            return self.code_wrap
        if self.code_int is not None and dtype.kind in "iu":
            return self.code_int or None
        return self.code

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


class Power(Elemwise):
    """``pow``: a float to a constant power 2, 3 or 4 is lowered as products, as
    ``x * x * x`` (within an ulp of ``pow``, which is a libm call that blocks
    vectorisation and costs ~30x more).

    >>> import numpy as np
    >>> pow.scalar_code(np.dtype("float64"), ("x", 3)), pow.scalar_code(np.dtype("int8"))
    ('({0} * {0} * {0})', 'kernels.ipow({0}, {1})')
    """

    PRODUCTS = {2: "({0} * {0})", 3: "({0} * {0} * {0})", 4: "(({0} * {0}) * ({0} * {0}))"}

    def scalar_code(self, dtype: np.dtype, operands: Sequence[Any] = ()) -> str | None:
        if dtype.kind == "f" and len(operands) == 2:
            n = operands[1]
            if isinstance(n, (int, float, np.integer, np.floating)) and not isinstance(n, bool):
                if n in self.PRODUCTS:
                    return self.PRODUCTS[int(n)]
                if (
                    n == 0.5
                ):  # numpy's power takes sqrt for a scalar 0.5: nan at -inf, -0.0 at -0.0
                    return "np.sqrt({0})"
        return super().scalar_code(dtype, operands)


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

    def scalar_code(self, dtype: np.dtype, operands: Sequence[Any] = ()) -> str:
        return "({0} != 0)" if dtype == np.bool_ else f"np.{dtype.name}({{0}})"

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        return args[0]

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        t, dtype = types[0], self._dtype(args[1])
        return TensorType(dtype, t.ndim, t.shape)


def _wrapping(operator: str) -> str:
    return f"np.int64(np.uint64({{0}}) {operator} np.uint64({{1}}))"


add = Elemwise("add", np.add, None, "+", code="({0} + {1})", code_wrap=_wrapping("+"))
sub = Elemwise("sub", np.subtract, 2, "-", code="({0} - {1})", code_wrap=_wrapping("-"))
mul = Elemwise("mul", np.multiply, None, "*", code="({0} * {1})", code_wrap=_wrapping("*"))
true_div = Elemwise("true_div", np.true_divide, 2, "/", code="({0} / {1})")
pow = Power("pow", np.power, 2, "**", code="({0} ** {1})", code_int="kernels.ipow({0}, {1})")
neg = Elemwise(
    "neg", np.negative, 1, "-", code="(-{0})", code_wrap="np.int64(np.uint64(0) - np.uint64({0}))"
)
exp = Elemwise("exp", np.exp, 1, code="np.exp({0})", code_f64="vecmath.exp(np.float64({0}))")
log = Elemwise("log", np.log, 1, code="np.log({0})", code_f64="vecmath.log(np.float64({0}))")
log1p = Elemwise(
    "log1p", np.log1p, 1, code="np.log1p({0})", code_f64="vecmath.log1p(np.float64({0}))"
)
expm1 = Elemwise("expm1", np.expm1, 1, code="np.expm1({0})")
sqrt = Elemwise("sqrt", np.sqrt, 1, code="np.sqrt({0})")
abs = Elemwise("abs", np.absolute, 1, code="np.abs({0})")
maximum = Elemwise("maximum", np.maximum, 2, code="np.maximum({0}, {1})")
minimum = Elemwise("minimum", np.minimum, 2, code="np.minimum({0}, {1})")
tanh = Elemwise("tanh", np.tanh, 1, code="np.tanh({0})", code_f64="vecmath.tanh(np.float64({0}))")
sin = Elemwise("sin", np.sin, 1, code="np.sin({0})")
cos = Elemwise("cos", np.cos, 1, code="np.cos({0})")
# Numba's sign of an unsigned int is -1 for values with the top bit set, and its sign
# of -0.0 is -0.0 (numpy's is 0.0).
sign = Elemwise(
    "sign",
    np.sign,
    1,
    code="(np.nan if {0} != {0} else (1.0 * ({0} > 0) - 1.0 * ({0} < 0)))",
    code_int="(({0} > 0) - ({0} < 0))",
)
square = Elemwise(
    "square",
    np.square,
    1,
    code="({0} * {0})",
    code_wrap="np.int64(np.uint64({0}) * np.uint64({0}))",
)
reciprocal = Elemwise("reciprocal", np.reciprocal, 1, code="(1.0 / {0})", code_int="")
log2 = Elemwise("log2", np.log2, 1, code="np.log2({0})")
log10 = Elemwise("log10", np.log10, 1, code="np.log10({0})")
exp2 = Elemwise("exp2", np.exp2, 1, code="np.exp2({0})")
floor = Elemwise("floor", np.floor, 1, code="np.floor({0})")
ceil = Elemwise("ceil", np.ceil, 1, code="np.ceil({0})")
sigmoid = Elemwise(
    "sigmoid",
    special.sigmoid,
    1,
    code="kernels.scalar_sigmoid(np.float64({0}))",
    code_f64="vecmath.sigmoid(np.float64({0}))",
)
softplus = Elemwise(
    "softplus",
    special.softplus,
    1,
    code="kernels.scalar_softplus(np.float64({0}))",
    code_f64="vecmath.softplus(np.float64({0}))",
)
log1mexp = Elemwise(
    "log1mexp", special.log1mexp, 1, code="kernels.scalar_log1mexp(np.float64({0}))"
)
logaddexp = Elemwise("logaddexp", np.logaddexp, 2, code="np.logaddexp({0}, {1})")
erf = Elemwise(
    "erf", special.erf, 1, code="math.erf({0})", code_f64="vecmath.erf(np.float64({0}))"
)
# Comparisons and logic give bool results; ``x > y`` on terms builds them (``==`` and
# ``!=`` stay structural equality of terms: use ``rg.equal``, ``rg.not_equal``).
less = Elemwise("less", np.less, 2, "<", code="({0} < {1})")
less_equal = Elemwise("less_equal", np.less_equal, 2, "<=", code="({0} <= {1})")
greater = Elemwise("greater", np.greater, 2, ">", code="({0} > {1})")
greater_equal = Elemwise("greater_equal", np.greater_equal, 2, ">=", code="({0} >= {1})")
equal = Elemwise("equal", np.equal, 2, "==", code="({0} == {1})")
not_equal = Elemwise("not_equal", np.not_equal, 2, "!=", code="({0} != {1})")
logical_and = Elemwise("logical_and", np.logical_and, 2, code="(({0} != 0) & ({1} != 0))")
logical_or = Elemwise("logical_or", np.logical_or, 2, code="(({0} != 0) | ({1} != 0))")
logical_not = Elemwise("logical_not", np.logical_not, 1, code="({0} == 0)")
where = Elemwise("where", np.where, 3, code="({1} if {0} else {2})")
clip = Elemwise("clip", np.clip, 3, code="np.minimum(np.maximum({0}, {1}), {2})")
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
