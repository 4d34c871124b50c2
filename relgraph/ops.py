"""Ops: the heads of terms.

Called on concrete values an Op computes with numpy; called on terms (or logic
variables) it builds a term, type-checked when it is ground.  So
``etuple(add, 1, 2).evaled_obj == 3`` and constant folding is evaluation.

Each Op carries its type rule (:meth:`Op.infer_type`), its numpy
implementation (:meth:`Op.perform`) and how it prints.  Algebraic facts for
kanren (``associative``, ``commutative``) are declared next to the Ops.
"""

from __future__ import annotations

import builtins  # this module defines Ops named max and sum
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
from cons.core import ConsPair
from etuples.core import ExpressionTuple
from kanren import fact
from kanren.assoccomm import associative, commutative
from unification.variable import Var

from relgraph import special
from relgraph.exceptions import TypeCheckError
from relgraph.infer import typeof
from relgraph.leaves import Constant, Symbol
from relgraph.term import Term
from relgraph.types import TensorType, broadcast_shapes

__all__ = [
    "Op",
    "Elemwise",
    "Dot",
    "Transpose",
    "Reduce",
    "add",
    "sub",
    "mul",
    "true_div",
    "neg",
    "pow",
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "abs",
    "maximum",
    "minimum",
    "tanh",
    "sin",
    "cos",
    "sign",
    "square",
    "reciprocal",
    "log2",
    "log10",
    "exp2",
    "floor",
    "ceil",
    "sigmoid",
    "softplus",
    "log1mexp",
    "erf",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "equal",
    "not_equal",
    "logical_and",
    "logical_or",
    "logical_not",
    "where",
    "clip",
    "dot",
    "transpose",
    "sum",
    "max",
    "min",
    "prod",
    "mean",
    "ALL_OPS",
]

# Arguments that make a call build a term: a Constant too, which is a leaf of terms
# (numpy would hand it back to Constant.__mul__ and recurse).
_SYMBOLIC = (Term, Symbol, Constant, Var, ExpressionTuple)


class Op:
    """Base class of Ops.  Subclasses define the type rule and numpy semantics.

    Attributes
    ----------
    name : str
        The name used by the printer and the parser.
    nin : int or None
        Number of inputs; ``None`` for variadic (two or more).
    """

    name: str = "op"
    nin: int | None = None
    #: Whether the Op is computed element by element (fused into loops when compiled).
    elementwise: bool = False
    #: Keyword parameters the parser accepts, passed as trailing arguments.
    keywords: tuple[str, ...] = ()
    #: Whether the Op only moves values (a transpose), so it computes in no dtype.
    moves_only: bool = False

    def __call__(self, *args: Any) -> Any:
        if any(isinstance(a, _SYMBOLIC) or issubclass(type(a), ConsPair) for a in args):
            return self.make_term(*args)
        return self.perform(*args)

    def make_term(self, *args: Any) -> Term:
        """Build ``(self, *args)``; ground terms are type-checked at once."""
        self.check_arity(len(args))
        term = Term((self, *args))
        if term._ground:
            typeof(term)
        return term

    def check_arity(self, n: int) -> None:
        """Raise :class:`TypeCheckError` if ``n`` arguments do not fit this Op."""
        if self.nin is None:
            if n < 2:
                raise TypeCheckError(f"{self.name} needs at least 2 arguments, got {n}")
        elif n != self.nin:
            raise TypeCheckError(f"{self.name} takes {self.nin} argument(s), got {n}")

    def perform(self, *values: Any) -> Any:
        """Compute the Op on concrete numpy values."""
        raise NotImplementedError

    def operands(self, args: Sequence[Any]) -> Sequence[Any]:
        """The arguments that are values (not parameters such as an axis)."""
        return args

    def layout(self, args: Sequence[Any]) -> list[Any]:
        """How a node prints: strings, and the arguments still to print, in order.

        The default is function form, ``name(a, b)``.
        """
        pieces: list[Any] = [f"{self.name}("]
        for i, a in enumerate(args):
            pieces += [", ", a] if i else [a]
        return [*pieces, ")"]

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        """The node's shape as symbolic dimensions, given its arguments' (``args``);
        ``shapes`` records the equalities the Op implies (see the compiler)."""
        return shapes.from_type(node)

    def array_code(self, node: Any) -> str:
        """The Numba statement template of a non-elementwise node: ``{0}, {1}, ...`` are
        its operands and ``{dtype}`` its result dtype."""
        from relgraph.lowering import LoweringError
        from relgraph.printing import brief

        raise LoweringError(f"Op {self!r} has no Numba lowering (in {brief(node)})")

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        """The output type, given the argument types (and the raw arguments)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        # Ops are singletons: pickle them by their module-level name.
        return self.name if self.name in globals() else object.__reduce__(self)


def _dtype_key(arg: Any, tp: TensorType) -> Any:
    # Python scalars are "weak" in numpy promotion (2.0 * float32 -> float32):
    # keep their Python type, not their default dtype.
    if isinstance(arg, (bool, int, float, complex)) and not isinstance(arg, np.generic):
        return type(arg)
    return tp.dtype


_WEAK_SAMPLE = {bool: False, int: 0, float: 0.0, complex: 0j}


def _result_dtype(fn: Any, keys: tuple) -> np.dtype:
    """The dtype numpy gives ``fn`` on arguments of these dtypes (or weak scalar types);
    :class:`TypeCheckError` where numpy refuses them (``-`` of bools)."""
    dtype = _numpy_result_dtype(fn, keys)
    if isinstance(dtype, str):
        raise TypeCheckError(dtype)
    return dtype


@functools.lru_cache(maxsize=4096)
def _numpy_result_dtype(fn: Any, keys: tuple) -> np.dtype | str:
    samples = [_WEAK_SAMPLE[k] if k in _WEAK_SAMPLE else np.zeros(1, k) for k in keys]
    with np.errstate(all="ignore"):
        try:
            return np.asarray(fn(*samples)).dtype
        except TypeError as exc:  # cached as its message: numpy's refusal is the answer
            names = ", ".join(getattr(k, "__name__", str(k)) for k in keys)
            return f"numpy's {getattr(fn, '__name__', fn)} does not take ({names}): {exc}"


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

    def scalar_code(self, dtype: np.dtype) -> str | None:
        """The lowering template for a result of ``dtype`` (None: not compiled)."""
        if self.code_f64 and dtype == np.float64:
            return self.code_f64
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
        # numpy broadcasting: dimensions aligned from the right join one group.
        ndim = builtins.max(len(a) for a in args)
        out = []
        for k in range(ndim):
            dims = [a[k - ndim + len(a)] for a in args if k - ndim + len(a) >= 0]
            for other in dims[1:]:
                shapes.join(dims[0], other, node)
            out.append(dims[0])
        return tuple(out)

    def perform(self, *values: Any) -> Any:
        self.check_arity(len(values))
        return functools.reduce(self.ufunc, values) if self.nin is None else self.ufunc(*values)

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        self.check_arity(len(types))
        try:
            shape = broadcast_shapes(*(t.shape for t in types))
        except ValueError as exc:
            raise TypeCheckError(f"{self.name}: {exc}") from None
        keys = tuple(_dtype_key(a, t) for a, t in zip(args, types))
        if self.nin is None:
            dtype = _result_dtype(self.ufunc, keys[:2])
            for key in keys[2:]:
                dtype = _result_dtype(self.ufunc, (dtype, key))
        else:
            dtype = _result_dtype(self.ufunc, keys)
        return TensorType(dtype, len(shape), shape)


class Dot(Op):
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
    nin = 2

    def perform(self, a: Any, b: Any) -> Any:
        return np.dot(a, b)

    def layout(self, args: Sequence[Any]) -> list[Any]:
        return ["(", args[0], " @ ", args[1], ")"]

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        a, b = args
        shapes.equal(a[-1], b[0], node)  # the inner dimensions
        return a[:-1] + b[1:]

    def array_code(self, node: Any) -> str:
        return "kernels.dot({0}, {1}, {dtype})"  # BLAS for floats

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


class Transpose(Op):
    """Reverse the axes, as ``x.T`` (the identity on vectors and scalars)."""

    name = "transpose"
    nin = 1
    moves_only = True

    def perform(self, x: Any) -> Any:
        return np.transpose(x)

    def layout(self, args: Sequence[Any]) -> list[Any]:
        return [args[0], ".T"]

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        return args[0][::-1]

    def array_code(self, node: Any) -> str:
        return "np.transpose({0})"

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        self.check_arity(len(types))
        (t,) = types
        return TensorType(t.dtype, t.ndim, t.shape[::-1])


class Reduce(Op):
    """A reduction over all axes, or the axes given as a second argument.

    Examples
    --------
    >>> import relgraph as rg
    >>> rg.typeof(rg.sum(rg.matrix("A", shape=(2, 3)), 0))
    TensorType(float64, shape=(3,))
    """

    keywords = ("axis",)

    def __init__(self, name: str, fn: Any):
        self.name = name
        self.fn = fn

    def __call__(self, x: Any, axis: Any = None) -> Any:
        return super().__call__(x) if axis is None else super().__call__(x, axis)

    def check_arity(self, n: int) -> None:
        if n not in (1, 2):
            raise TypeCheckError(f"{self.name} takes 1 or 2 arguments (x, axis), got {n}")

    def perform(self, x: Any, axis: Any = None) -> Any:
        return self.fn(x, axis=axis)

    def operands(self, args: Sequence[Any]) -> Sequence[Any]:
        return args[:1]

    def layout(self, args: Sequence[Any]) -> list[Any]:
        if len(args) == 2:
            return [f"{self.name}(", args[0], f", axis={args[1]!r})"]
        return super().layout(args)

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        if len(node.args) == 1 or typeof(node).ndim == 0:
            return ()
        axes = self._axes(node.args[1], len(args[0]))
        return tuple(d for k, d in enumerate(args[0]) if k not in axes)

    def array_code(self, node: Any) -> str:
        # kernels.<name>_all(x, dtype) over everything; kernels.<name>_axis over one
        # axis of a matrix; any other axes: the kept axes moved first and the reduced
        # ones last, flattened to a matrix, reduced along its rows, shaped back.
        x, *axis = node.args
        ndim = typeof(x).ndim
        if not axis or ndim <= 1 or typeof(node).ndim == 0:
            return f"kernels.{self.name}_all({{0}}, {{dtype}})"
        reduced = sorted(self._axes(axis[0], ndim))
        if ndim == 2:
            return f"kernels.{self.name}_axis({{0}}, {reduced[0]}, {{dtype}})"
        kept = [k for k in range(ndim) if k not in reduced]

        def size(axes: list[int]) -> str:
            return " * ".join(f"{{0}}.shape[{k}]" for k in axes)

        moved = f"np.ascontiguousarray(np.transpose({{0}}, {tuple(kept + reduced)!r}))"
        matrix = f"{moved}.reshape(({size(kept)}, {size(reduced)}))"
        shape = "(" + "".join(f"{{0}}.shape[{k}], " for k in kept) + ")"
        return f"kernels.{self.name}_axis({matrix}, 1, {{dtype}}).reshape({shape})"

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        self.check_arity(len(types))
        t = types[0]
        axes = self._axes(args[1] if len(args) > 1 else None, t.ndim)
        shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
        dtype = _result_dtype(self.fn, (t.dtype,))
        return TensorType(dtype, len(shape), shape)

    def _axes(self, axis: Any, ndim: int) -> set[int]:
        if axis is None:
            return set(range(ndim))
        axes = axis if isinstance(axis, tuple) else (axis,)
        if not all(isinstance(a, int) and -ndim <= a < ndim for a in axes):
            raise TypeCheckError(f"{self.name}: axis {axis!r} is invalid for ndim {ndim}")
        return {a % ndim for a in axes}


add = Elemwise("add", np.add, None, "+", code="({0} + {1})")
sub = Elemwise("sub", np.subtract, 2, "-", code="({0} - {1})")
mul = Elemwise("mul", np.multiply, None, "*", code="({0} * {1})")
true_div = Elemwise("true_div", np.true_divide, 2, "/", code="({0} / {1})")
pow = Elemwise("pow", np.power, 2, "**", code="({0} ** {1})", code_int="kernels.ipow({0}, {1})")
neg = Elemwise("neg", np.negative, 1, "-", code="(-{0})")
exp = Elemwise("exp", np.exp, 1, code="np.exp({0})", code_f64="vecmath.exp(np.float64({0}))")
log = Elemwise("log", np.log, 1, code="np.log({0})")
log1p = Elemwise(
    "log1p", np.log1p, 1, code="np.log1p({0})", code_f64="vecmath.log1p(np.float64({0}))"
)
expm1 = Elemwise("expm1", np.expm1, 1, code="np.expm1({0})")
sqrt = Elemwise("sqrt", np.sqrt, 1, code="np.sqrt({0})")
abs = Elemwise("abs", np.absolute, 1, code="np.abs({0})")
maximum = Elemwise("maximum", np.maximum, 2, code="np.maximum({0}, {1})")
minimum = Elemwise("minimum", np.minimum, 2, code="np.minimum({0}, {1})")
tanh = Elemwise("tanh", np.tanh, 1, code="np.tanh({0})")
sin = Elemwise("sin", np.sin, 1, code="np.sin({0})")
cos = Elemwise("cos", np.cos, 1, code="np.cos({0})")
sign = Elemwise("sign", np.sign, 1, code="np.sign({0})")
square = Elemwise("square", np.square, 1, code="({0} * {0})")
reciprocal = Elemwise("reciprocal", np.reciprocal, 1, code="(1.0 / {0})", code_int="")
log2 = Elemwise("log2", np.log2, 1, code="np.log2({0})")
log10 = Elemwise("log10", np.log10, 1, code="np.log10({0})")
exp2 = Elemwise("exp2", np.exp2, 1, code="np.exp2({0})")
floor = Elemwise("floor", np.floor, 1, code="np.floor({0})")
ceil = Elemwise("ceil", np.ceil, 1, code="np.ceil({0})")
sigmoid = Elemwise("sigmoid", special.sigmoid, 1, code="kernels.scalar_sigmoid(np.float64({0}))")
softplus = Elemwise(
    "softplus", special.softplus, 1, code="kernels.scalar_softplus(np.float64({0}))"
)
log1mexp = Elemwise(
    "log1mexp", special.log1mexp, 1, code="kernels.scalar_log1mexp(np.float64({0}))"
)
erf = Elemwise("erf", special.erf, 1, code="math.erf({0})")
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
dot = Dot()
transpose = Transpose()
sum = Reduce("sum", np.sum)
max = Reduce("max", np.max)
min = Reduce("min", np.min)
prod = Reduce("prod", np.prod)
mean = Reduce("mean", np.mean)

ALL_OPS: dict[str, Op] = {
    op.name: op
    for op in (
        add, sub, mul, true_div, pow, neg, exp, log, log1p, expm1, sqrt, abs, maximum,
        minimum, tanh, sin, cos, sign, square, reciprocal, log2, log10, exp2, floor, ceil,
        sigmoid, softplus, log1mexp, erf, less, less_equal, greater, greater_equal, equal,
        not_equal, logical_and, logical_or, logical_not, where, clip, dot, transpose, sum, max,
        min, prod, mean,
    )
}  # fmt: skip

# The facts kanren's assoc_flatten / eq_assoccomm consult.
for _op in (add, mul):
    fact(associative, _op)
    fact(commutative, _op)
