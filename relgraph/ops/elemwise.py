"""Elementwise Ops: numpy ufuncs (and numpy references for the rest) with numpy's
broadcasting and dtype promotion.  Each is one declaration: its numpy reference, its
exact reference (for ``rg.check``), its cost; backends keep their code for it
(:mod:`relgraph.backends.numba.elementwise`).

An elementwise Op is one declaration (see the "Adding an Op" page of the docs).
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import mpmath
import numpy as np
from kanren import fact
from kanren.assoccomm import associative, commutative

from relgraph.exceptions import GradientError, TypeCheckError
from relgraph.ops import exact as exact_ref, special
from relgraph.ops.base import PERFORM, Op, dtype_key, pullback, register_ops, result_dtype
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.lvars import is_lvar
from relgraph.terms.term import Term, memoized
from relgraph.terms.traverse import subterms
from relgraph.terms.types import TensorType, broadcast_shapes

__all__ = [
    "Elemwise", "Cast", "add", "sub", "mul", "true_div", "neg", "pow", "exp", "log", "log1p",
    "expm1", "sqrt", "abs", "maximum", "minimum", "fmax", "fmin", "sign", "heaviside",
    "square", "reciprocal", "log2", "log10", "exp2", "floor", "ceil", "sigmoid", "softplus",
    "log1mexp", "logaddexp", "erf", "less", "less_equal", "greater", "greater_equal", "equal",
    "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "where", "clip",
    "astype", "ExpandAs", "expand_as", "array_leaves", "spread_times", "times", "isnan",
    "isinf", "isfinite", "ndtr", "log_ndtr", "xlogy", "gammaln", "erfc", "erfcx", "full_like",
    "zeros_like", "ones_like", "constant_pullback", "cbrt", "copysign", "signbit",
    "float_power", "logaddexp2",
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
        sees_nan: bool = False,
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
        self.sees_nan = sees_nan or compares  # nan < 1 is False, nan != 1 True
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
        keys = tuple(dtype_key(a, t) for a, t in zip(args, types))
        return _elementwise_type(self, keys, tuple(t.shape for t in types))


@functools.lru_cache(maxsize=4096)
def _elementwise_type(op: Elemwise, keys: tuple, shapes: tuple) -> TensorType:
    """The result type of ``op`` on operands of these dtype keys and shapes: the same
    few combinations recur in every rewrite, so they are computed once."""
    try:
        shape = broadcast_shapes(*shapes)
    except ValueError as exc:
        raise TypeCheckError(f"{op.name}: {exc}") from None
    if op.nin is None:
        dtype = result_dtype(op.ufunc, keys[:2])
        for key in keys[2:]:
            dtype = result_dtype(op.ufunc, (dtype, key))
    else:
        dtype = result_dtype(op.ufunc, keys)
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


class ExpandAs(Elemwise):
    """``expand_as(g, x)``: the values of ``g`` at ``x``'s shape, as
    ``np.broadcast_to(g, x.shape)``: an axis of ``g`` of size 1 (or missing) repeats;
    every other axis must equal ``x``'s exactly (a compiled function checks it before
    its kernel runs).  Gradients spread a reduction's cotangent over its operand with
    it, and check that a gradient has its argument's shape.

    >>> import numpy as np, relgraph as rg
    >>> rg.expand_as(np.float64(2.0), np.zeros((2, 3))).tolist()
    [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
    >>> rg.typeof(rg.expand_as(rg.scalar("g", "float32"), rg.matrix("x")))
    TensorType(float32, shape=(?, ?))
    """

    def __init__(self) -> None:
        super().__init__("expand_as", self.perform, 2, exact=lambda g, x: g)

    def perform(self, *values: Any) -> Any:
        g, x = values
        if np.ndim(g) > np.ndim(x) or any(
            a not in (1, b) for a, b in zip(np.shape(g)[::-1], np.shape(x)[::-1])
        ):
            raise TypeCheckError(f"expand_as: shape {np.shape(g)} does not fit {np.shape(x)}")
        return np.array(np.broadcast_to(g, np.shape(x)))[()]

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        g, x = args
        for k, d in enumerate(g):
            if d != ("size", 1):  # the shape checker's fixed size 1
                shapes.exact(d, x[k - len(g) + len(x)], node)
        return x

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        g, x = types
        if g.ndim > x.ndim:
            raise TypeCheckError(
                f"expand_as: {args[0]} has {g.ndim} axes, more than {args[1]} ({x.ndim})"
            )
        shape = list(x.shape)
        for k, d in enumerate(g.shape):
            j = k - g.ndim + x.ndim
            if d is not None and d != 1:
                if shape[j] not in (None, d):
                    raise TypeCheckError(f"expand_as: axis {j} is {d} in {args[0]}, {shape[j]} "
                                         f"in {args[1]}")  # fmt: skip
                shape[j] = d
        return TensorType(g.dtype, x.ndim, tuple(shape))


# Exact references (rg.check) compute on mpmath numbers at 1000 digits.
_ex = exact_ref

add = Elemwise("add", np.add, None, "+", exact=lambda a, b: a + b)
sub = Elemwise("sub", np.subtract, 2, "-", exact=lambda a, b: a - b)
mul = Elemwise("mul", np.multiply, None, "*", exact=lambda a, b: a * b)
true_div = Elemwise("true_div", np.true_divide, 2, "/", exact=_ex.div, cost=2.0)
# 1 ** nan and nan ** 0 are 1: the exact reference sees NaN as numpy does
pow = Elemwise("pow", np.power, 2, "**", exact=_ex.power, cost=4.0, sees_nan=True)
float_power = Elemwise("float_power", np.float_power, 2, exact=_ex.power, cost=4.0,
                       sees_nan=True)  # fmt: skip
neg = Elemwise("neg", np.negative, 1, "-", exact=lambda a: -a)
exp = Elemwise("exp", np.exp, 1, exact=_ex.exp, cost=4.0)
log = Elemwise("log", np.log, 1, exact=mpmath.log, cost=4.0)
log1p = Elemwise("log1p", np.log1p, 1, exact=mpmath.log1p, cost=4.0)
expm1 = Elemwise("expm1", np.expm1, 1, exact=_ex.expm1, cost=4.0)
sqrt = Elemwise("sqrt", np.sqrt, 1, exact=mpmath.sqrt, cost=2.0)
cbrt = Elemwise("cbrt", np.cbrt, 1, exact=lambda a: mpmath.sign(a) * mpmath.cbrt(builtins.abs(a)),
                cost=4.0)  # fmt: skip
abs = Elemwise("abs", np.absolute, 1, exact=builtins.abs)
maximum = Elemwise("maximum", np.maximum, 2, exact=builtins.max)
minimum = Elemwise("minimum", np.minimum, 2, exact=builtins.min)
# fmax and fmin ignore a NaN operand, and so do their exact references.
fmax = Elemwise("fmax", np.fmax, 2, exact=functools.partial(exact_ref.ignoring_nan, builtins.max),
                sees_nan=True)  # fmt: skip
fmin = Elemwise("fmin", np.fmin, 2, exact=functools.partial(exact_ref.ignoring_nan, builtins.min),
                sees_nan=True)  # fmt: skip
heaviside = Elemwise(
    "heaviside", np.heaviside, 2, exact=lambda x, h: 0 if x < 0 else h if x == 0 else 1
)
sign = Elemwise("sign", np.sign, 1, exact=mpmath.sign)
# The sign bit (mpmath has no -0.0: the references see zeros as positive).
copysign = Elemwise("copysign", np.copysign, 2,
                    exact=lambda a, b: -builtins.abs(a) if b < 0 else builtins.abs(a))  # fmt: skip
signbit = Elemwise("signbit", np.signbit, 1, exact=lambda a: a < 0)
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
logaddexp2 = Elemwise("logaddexp2", np.logaddexp2, 2,
                      exact=lambda a, b: _ex.log_add_exp([a * mpmath.ln2, b * mpmath.ln2])
                      / mpmath.ln2)  # fmt: skip
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
logical_xor = Elemwise("logical_xor", np.logical_xor, 2, exact=lambda a, b: bool(a) != bool(b))
logical_not = Elemwise("logical_not", np.logical_not, 1, exact=lambda a: not a)
where = Elemwise("where", np.where, 3, exact=lambda c, a, b: a if c else b, selects=True)
clip = Elemwise("clip", np.clip, 3, exact=lambda a, lo, hi: builtins.min(builtins.max(a, lo), hi))
astype = Cast()
expand_as = ExpandAs()
xlogy = Elemwise("xlogy", special.xlogy, 2, exact=exact_ref.xlogy, cost=4.0, scipy="xlogy")
gammaln = Elemwise("gammaln", special.gammaln, 1, exact=exact_ref.gammaln, cost=8.0,
                   scipy="gammaln")  # fmt: skip
erfc = Elemwise("erfc", special.erfc, 1, exact=mpmath.erfc, cost=4.0, scipy="erfc")
erfcx = Elemwise("erfcx", special.erfcx, 1, exact=exact_ref.erfcx, cost=4.0, scipy="erfcx")
isnan = Elemwise("isnan", np.isnan, 1, exact=mpmath.isnan, sees_nan=True)
isinf = Elemwise("isinf", np.isinf, 1, exact=mpmath.isinf, sees_nan=True)
isfinite = Elemwise("isfinite", np.isfinite, 1, exact=mpmath.isfinite, sees_nan=True)
ndtr = Elemwise("ndtr", special.ndtr, 1, exact=mpmath.ncdf, cost=4.0, scipy="ndtr")
log_ndtr = Elemwise(
    "log_ndtr", special.log_ndtr, 1, exact=exact_ref.log_ndtr, cost=4.0, scipy="log_ndtr"
)

register_ops(
    add, sub, mul, true_div, pow, neg, exp, log, log1p, expm1, sqrt, abs, maximum,
    minimum, fmax, fmin, sign, heaviside, square, reciprocal, log2, log10, exp2, floor, ceil,
    sigmoid, softplus, log1mexp, logaddexp, erf, less, less_equal, greater, greater_equal,
    equal, not_equal, logical_and, logical_or, logical_xor, logical_not, where, clip, astype,
    expand_as, isnan, isinf, isfinite, ndtr, log_ndtr, xlogy, gammaln, erfc, erfcx, cbrt,
    copysign, signbit, float_power, logaddexp2,
)  # fmt: skip

# The facts kanren's assoc_flatten / eq_assoccomm consult.
for _op in (add, mul):
    fact(associative, _op)
    fact(commutative, _op)


def full_like(x: Any, fill_value: Any, dtype: Any = None) -> Any:
    """numpy's ``full_like``: ``fill_value`` (a number) at ``x``'s shape, in ``x``'s dtype
    or ``dtype``; on a term, ``expand_as`` of the number (fused, nothing allocated
    before the kernel).

    >>> import relgraph as rg
    >>> rg.pprint(rg.zeros_like(rg.vector("x"))), rg.ones_like(rg.vector("n", "int8"))
    ('expand_as(0.0, x)', Term(expand_as(1, n)))
    """
    if is_lvar(x):  # numpy would hand it back here: no dtype to fill with
        raise TypeError(
            f"full_like, zeros_like and ones_like need a term or an array; {x} is a "
            "pattern variable, whose dtype is known only once a rule matches it"
        )
    symbolic = isinstance(x, (Term, Symbol, Constant))
    target = np.dtype(dtype or (typeof(x).dtype if symbolic else np.asarray(x).dtype))
    value = np.asarray(fill_value).astype(target)[()]
    return expand_as(value, x) if symbolic else np.full_like(x, value, dtype=target)


def zeros_like(x: Any, dtype: Any = None) -> Any:
    """numpy's ``zeros_like`` (see :func:`full_like`)."""
    return full_like(x, 0, dtype)


def ones_like(x: Any, dtype: Any = None) -> Any:
    """numpy's ``ones_like`` (see :func:`full_like`)."""
    return full_like(x, 1, dtype)


# --- pullbacks: how a cotangent ``g`` flows back to the operands (rg.grad) -------------
# ``y`` is the node itself: reusing it (exp's ``g * y``) shares the forward value.


def array_leaves(t: Any) -> frozenset:
    """The arrays an elementwise term broadcasts together (symbols, constants and
    non-elementwise subterms of ndim >= 1), so its shape is theirs broadcast: two terms
    with the same array leaves have the same shape whatever the sizes.

    >>> import relgraph as rg
    >>> x, y = rg.vector("x"), rg.vector("y")
    >>> array_leaves(2 * rg.exp(x)) == array_leaves(x * x), array_leaves(x + y) == {x}
    (True, False)
    """
    if type(t) is not Term:
        return frozenset([t]) if isinstance(t, (Symbol, Constant)) and t.type.ndim else frozenset()
    if not t.op.elementwise:
        return frozenset([t]) if typeof(t).ndim else frozenset()
    if not (t._memo and _node_leaves in t._memo):
        for node in subterms(t):  # children first: each step reads its operands' memos
            _node_leaves(node)
    return _node_leaves(t)


@memoized
def _node_leaves(node: Term) -> frozenset:
    if not node.op.elementwise:
        return frozenset([node]) if typeof(node).ndim else frozenset()
    return frozenset().union(*(array_leaves(a) for a in node.op.operands(node.args)))


def spread_times(g: Any, t: Any) -> Any:
    """``g * t`` for a cotangent ``g``, where ``t`` has the node's shape: a cotangent
    spread over the node (``expand_as(c, node)`` with ``c`` of size 1, a reduction's)
    multiplies ``t`` as ``c`` when ``t`` surely has that node's shape."""
    if type(g) is Term and g.op is expand_as:
        c, node = g.args
        if (
            array_leaves(t) == array_leaves(node)
            and all(d == 1 for d in typeof(c).shape)
            and typeof(c).ndim <= typeof(t).ndim
        ):
            return times(c, t)
    return times(g, t)


def times(g: Any, t: Any) -> Any:
    """``g * t``, or ``t`` where ``g`` is a number 1 (of size 1, no more axes than ``t``)."""
    value = g.value if isinstance(g, Constant) else g
    if not isinstance(value, (Term, Symbol)) and np.size(value) == 1 and np.all(value == 1):
        if np.ndim(value) <= typeof(t).ndim:
            return t
    return g * t


def _negated(g: Any) -> Any:
    if type(g) is Term and g.op is expand_as and not isinstance(g.args[0], (Term, Symbol)):
        return expand_as(-g.args[0], g.args[1])  # stays spread (a constant)
    return -g


@pullback(add)
def _add_pullback(g: Any, y: Any) -> tuple:
    return (g,) * len(y.args)


@pullback(sub)
def _sub_pullback(g: Any, y: Any) -> tuple:
    return g, _negated(g)


@pullback(mul)
def _mul_pullback(g: Any, y: Any) -> tuple:
    args = y.args
    others = [args[:k] + args[k + 1 :] for k in range(len(args))]
    return tuple(spread_times(g, rest[0] if len(rest) == 1 else mul(*rest)) for rest in others)


@pullback(true_div)
def _div_pullback(g: Any, y: Any) -> tuple:
    _, b = y.args
    return g / b, -(g * y) / b


@pullback(pow, float_power)
def _pow_pullback(g: Any, y: Any) -> tuple:
    a, b = y.args
    return g * b * y.op(a, b - 1), g * y * log(a)


@pullback(maximum, minimum, fmax, fmin)
def _extremum_pullback(g: Any, y: Any) -> tuple:
    """The larger (smaller) operand takes the cotangent; ties split it evenly, as JAX.
    For fmax and fmin a number wins over NaN."""
    a, b = y.args
    wins = greater if y.op in (maximum, fmax) else less
    a_wins, b_wins = wins(a, b), wins(b, a)
    if y.op in (fmax, fmin):
        a_wins, b_wins = logical_or(a_wins, isnan(b)), logical_or(b_wins, isnan(a))
    tie = where(equal(a, b), 0.5 * g, 0.0)
    return where(a_wins, g, tie), where(b_wins, g, tie)


@pullback(heaviside)
def _heaviside_pullback(g: Any, y: Any) -> tuple:
    x, _ = y.args
    return None, where(equal(x, 0), g, 0.0)  # the value at 0 is the second operand


@pullback(where)
def _where_pullback(g: Any, y: Any) -> tuple:
    c, _, _ = y.args
    return None, where(c, g, 0.0), where(c, 0.0, g)


@pullback(clip)
def _clip_pullback(g: Any, y: Any) -> tuple:
    """As ``minimum(maximum(x, lo), hi)`` with ties going to ``x``: the cotangent
    reaches ``x`` where ``lo <= x`` and ``max(x, lo) <= hi``."""
    a, lo, hi = y.args
    under = less_equal(maximum(a, lo), hi)
    return (
        where(logical_and(under, greater_equal(a, lo)), g, 0.0),
        where(logical_and(under, less(a, lo)), g, 0.0),
        where(under, 0.0, g),
    )


@pullback(astype)
def _astype_pullback(g: Any, y: Any) -> tuple:
    return (g,)  # the caller casts it to the operand's dtype


@pullback(expand_as)
def _expand_as_pullback(g: Any, y: Any) -> tuple:
    return g, None  # the caller sums it over the axes ``g`` was repeated along


@pullback(sign, signbit, floor, ceil, less, less_equal, greater, greater_equal, equal, not_equal,
          logical_and, logical_or, logical_xor, logical_not, isnan, isinf, isfinite)  # fmt: skip
def constant_pullback(g: Any, y: Any) -> tuple:
    """Piecewise constant: no cotangent flows (zero almost everywhere), as in JAX."""
    return (None,) * len(y.args)


_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_LOCAL: dict[Op, Callable[[Any, Any], Any]] = {
    # d y / d x of one-operand Ops, as terms of the operand ``x`` and the result ``y``.
    neg: lambda x, y: -1,
    exp: lambda x, y: y,
    log: lambda x, y: reciprocal(x),
    log1p: lambda x, y: reciprocal(1 + x),
    expm1: lambda x, y: y + 1,
    sqrt: lambda x, y: 0.5 / y,
    cbrt: lambda x, y: reciprocal(3 * square(y)),
    abs: lambda x, y: sign(x),
    square: lambda x, y: 2 * x,
    reciprocal: lambda x, y: -square(y),
    log2: lambda x, y: reciprocal(x * math.log(2)),
    log10: lambda x, y: reciprocal(x * math.log(10)),
    exp2: lambda x, y: y * math.log(2),
    sigmoid: lambda x, y: y * (1 - y),
    softplus: lambda x, y: sigmoid(x),
    log1mexp: lambda x, y: -reciprocal(expm1(-x)),
    erf: lambda x, y: (2 / _SQRT_PI) * exp(-square(x)),
    ndtr: lambda x, y: exp(-0.5 * square(x)) / _SQRT_2PI,
    log_ndtr: lambda x, y: _log_ndtr_slope(x, y),
    erfc: lambda x, y: (-2 / _SQRT_PI) * exp(-square(x)),
    erfcx: lambda x, y: _erfcx_slope(x, y),
}


def _log_ndtr_slope(x: Any, y: Any) -> Any:
    """pdf(x) / ndtr(x): through erfcx below 0 (the Mills ratio, no cancellation of
    -x * x / 2 against log_ndtr), directly above."""
    low = math.sqrt(2 / math.pi) / erfcx(-x * math.sqrt(0.5))
    return where(less(x, 0.0), low, exp(-0.5 * square(x) - y) / _SQRT_2PI)


def _erfcx_slope(x: Any, y: Any) -> Any:
    """2 x erfcx(x) - 2 / sqrt(pi), from the asymptotic series above 25, where the
    two terms cancel."""
    r = 0.5 * reciprocal(square(x))
    far = (-2 / _SQRT_PI) * r * (1 - 3 * r * (1 - 5 * r * (1 - 7 * r)))
    return where(less(x, 25.0), 2 * x * y - 2 / _SQRT_PI, far)


def _unary_pullback(g: Any, y: Any) -> tuple:
    (x,) = y.args
    if y.op is neg:
        return (_negated(g),)
    return (spread_times(g, _LOCAL[y.op](x, y)),)


pullback(*_LOCAL)(_unary_pullback)


@pullback(copysign)
def _copysign_pullback(g: Any, y: Any) -> tuple:
    """``abs(a)`` with ``b``'s sign: the cotangent's sign flips where the sign bits
    differ; none reaches ``b``."""
    a, b = y.args
    return where(logical_xor(signbit(a), signbit(b)), -g, g), None


@pullback(logaddexp)
def _logaddexp_pullback(g: Any, y: Any) -> tuple:
    a, b = y.args
    return g * exp(a - y), g * exp(b - y)


@pullback(logaddexp2)
def _logaddexp2_pullback(g: Any, y: Any) -> tuple:
    a, b = y.args
    return g * exp2(a - y), g * exp2(b - y)


@pullback(xlogy)
def _xlogy_pullback(g: Any, y: Any) -> tuple:
    a, b = y.args
    return xlogy(g, b), g * a / b


@pullback(gammaln)
def _gammaln_pullback(g: Any, y: Any) -> tuple:
    raise GradientError(f"gammaln has no gradient yet (in {y}): its derivative, digamma, "
                        "is not an Op of relgraph yet")  # fmt: skip
