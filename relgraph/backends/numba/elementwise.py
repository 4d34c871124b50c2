"""How the Numba backend computes one element of each elementwise Op.

A rule is a format string over the operands' scalar expressions (a variadic Op
folds it left to right), registered by Op here, beside the others and not on the
Op: another backend keeps its own.  A rule may give other forms for some result
dtypes: a vectorising one for float64 (:mod:`relgraph.backends.numba.vecmath`,
:mod:`~relgraph.backends.numba.vecspecial`),
integer semantics where numpy's differ, and int64 arithmetic that must wrap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from relgraph import ops
from relgraph.backends.numba.scalars import dtype_expr
from relgraph.exceptions import RegistrationError
from relgraph.ops.base import Op

__all__ = ["ScalarCode", "scalar_code", "libm_code", "register_scalar_code"]


@dataclass(frozen=True)
class ScalarCode:
    """The code of one element of an Op's result.

    Attributes
    ----------
    code : str
        The form for any result dtype, calling numpy's (libm's) functions.
    f64 : str or None
        For a float64 result: a vectorising version, inlined.  A float32 result without
        an ``f32`` form is computed with it in float64 and rounded: within an ulp of
        float32's exact value, where libm's float32 functions (one call per element)
        keep the loop from vectorising, and numpy's own SIMD ones are a few ulp off.
    f32 : str or None
        For a float32 result: a vectorising version in float32
        (:mod:`relgraph.backends.numba.vecmath32`), twice the lanes of float64's.
    int : str or None
        For an integer result, where numpy's semantics differ; ``""`` when there is
        no compiled form (numpy's integer reciprocal of 0 is platform-defined).
    wrap : str or None
        For an int64 result that may overflow: Numba marks signed arithmetic "no
        signed wrap" and LLVM then folds ``(x + 1) > x`` to True, so it is computed
        in uint64, which wraps as numpy's int64 does.
    special : callable or None
        ``special(dtype, operands)``: a form for particular operands, or None.
    """

    code: str
    f64: str | None = None
    f32: str | None = None
    int: str | None = None
    wrap: str | None = None
    special: Callable[[np.dtype, Sequence[Any]], str | None] | None = None


_RULES: dict[Op, ScalarCode] = {}


def register_scalar_code(op: Op, code: str, **forms: Any) -> None:
    """Register the Numba code of one element of ``op`` (see :class:`ScalarCode`)."""
    if not op.elementwise:
        raise RegistrationError(f"{op.name} is not elementwise: its Numba rule is an array rule")
    _RULES[op] = ScalarCode(code, **forms)


def scalar_code(op: Op, dtype: np.dtype, operands: Sequence[Any] = ()) -> str | None:
    """The code template of one element of ``op`` for a result of ``dtype``; None: no
    compiled form.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> scalar_code(rg.pow, np.dtype("float64"), ("x", 3)), scalar_code(rg.pow, np.dtype("int8"))
    ('({0} * {0} * {0})', 'kernels.ipow({0}, {1})')
    """
    rule = _RULES.get(op)
    if rule is None:
        return None
    if rule.special is not None:
        code = rule.special(dtype, operands)
        if code is not None:
            return code
    if rule.f64 and dtype == np.float64:
        return rule.f64
    if rule.f32 and dtype == np.float32:
        return rule.f32
    if rule.f64 and dtype == np.float32:  # in float64, rounded once: a loop that vectorises
        return f"np.float32({rule.f64})"
    if rule.wrap and dtype == np.int64:
        return rule.wrap
    if rule.int is not None and dtype.kind in "iu":
        return rule.int or None
    return rule.code


def libm_code(op: Op) -> str | None:
    """The form calling numpy's (libm's) functions, which inlines nothing."""
    rule = _RULES.get(op)
    return None if rule is None else rule.code


def _wrapping(operator: str) -> str:
    return f"np.int64(np.uint64({{0}}) {operator} np.uint64({{1}}))"


# A float to a constant power 2, 3 or 4 is products, as ``x * x * x`` (within an ulp
# of ``pow``, a libm call that blocks vectorisation and costs ~30x more); a power
# 0.5 is np.sqrt, numpy's own fast path (NaN at -inf, -0.0 at -0.0).
_PRODUCTS = {2: "({0} * {0})", 3: "({0} * {0} * {0})", 4: "(({0} * {0}) * ({0} * {0}))"}


def _power(dtype: np.dtype, operands: Sequence[Any]) -> str | None:
    if dtype.kind != "f" or len(operands) != 2:
        return None
    n = operands[1]
    if not isinstance(n, (int, float, np.integer, np.floating)) or isinstance(n, bool):
        return None
    if n in _PRODUCTS:
        return _PRODUCTS[int(n)]
    return "np.sqrt({0})" if n == 0.5 else None


def _cast(dtype: np.dtype, operands: Sequence[Any]) -> str:
    return "({0} != 0)" if dtype == np.bool_ else f"np.{dtype.name}({{0}})"


def _same_dtype(template: str) -> Callable[[np.dtype, Sequence[Any]], str]:
    """``template`` over operands cast to the result dtype: the helpers of
    :mod:`relgraph.backends.numba.intmath` take two scalars of one dtype."""

    def code(dtype: np.dtype, operands: Sequence[Any]) -> str:
        d = dtype_expr(dtype)
        return template.format(f"{d}({{0}})", f"{d}({{1}})")

    return code


def _invert(dtype: np.dtype, operands: Sequence[Any]) -> str:
    return "({0} == 0)" if dtype == np.bool_ else f"(~{dtype_expr(dtype)}({{0}}))"


def _scaled(numerator: float, denominator: float) -> Callable[[np.dtype, Sequence[Any]], str]:
    """A product with ``numerator / denominator`` computed in the result dtype, as
    numpy's loops compute ``deg2rad`` and ``rad2deg`` (Numba's compute in float64)."""

    def code(dtype: np.dtype, operands: Sequence[Any]) -> str:
        factor = dtype.type(numerator) / dtype.type(denominator)
        return f"({{0}} * {dtype_expr(dtype)}({float(factor)!r}))"

    return code


def _vec(name: str, module: str = "vecmath") -> str:
    return f"{module}.{name}(np.float64({{0}}))"


_ = register_scalar_code
_(ops.add, "({0} + {1})", wrap=_wrapping("+"))
_(ops.sub, "({0} - {1})", wrap=_wrapping("-"))
_(ops.mul, "({0} * {1})", wrap=_wrapping("*"))
_(ops.true_div, "({0} / {1})")
_(ops.pow, "({0} ** {1})", int="kernels.ipow({0}, {1})", special=_power)
_(ops.neg, "(-{0})", wrap="np.int64(np.uint64(0) - np.uint64({0}))")
_(ops.exp, "np.exp({0})", f64=_vec("exp"), f32="vecmath32.exp(np.float32({0}))")
_(ops.log, "np.log({0})", f64=_vec("log"), f32="vecmath32.log(np.float32({0}))")
_(ops.log1p, "np.log1p({0})", f64=_vec("log1p"), f32="vecmath32.log1p(np.float32({0}))")
_(ops.expm1, "np.expm1({0})")
_(ops.sqrt, "np.sqrt({0})")
_(ops.abs, "np.abs({0})")
_(ops.maximum, "np.maximum({0}, {1})")
_(ops.minimum, "np.minimum({0}, {1})")
_(ops.tanh, "np.tanh({0})", f64=_vec("tanh"), f32="vecmath32.tanh(np.float32({0}))")
_(ops.sin, "np.sin({0})")
_(ops.cos, "np.cos({0})")
# Numba's sign of an unsigned int is -1 for values with the top bit set, and its sign
# of -0.0 is -0.0 (numpy's is 0.0).
_(
    ops.sign,
    "(np.nan if {0} != {0} else (1.0 * ({0} > 0) - 1.0 * ({0} < 0)))",
    int="(({0} > 0) - ({0} < 0))",
)
_(ops.square, "({0} * {0})", wrap="np.int64(np.uint64({0}) * np.uint64({0}))")
_(ops.reciprocal, "(1.0 / {0})", int="")
_(ops.log2, "np.log2({0})")
_(ops.log10, "np.log10({0})")
_(ops.exp2, "np.exp2({0})")
_(ops.cbrt, "kernels.cbrt({0})")  # libm's: Numba's is a power of 1/3
_(ops.copysign, "np.copysign({0}, {1})")
_(ops.signbit, "np.signbit({0})")
_(ops.float_power, "(np.float64({0}) ** np.float64({1}))")  # in float64, as numpy
_(ops.logaddexp2, "np.logaddexp2({0}, {1})")  # numpy's algorithm (Numba's: the same bits)
_(ops.floor, "np.floor({0})")
_(ops.ceil, "np.ceil({0})")
_(ops.sigmoid, "kernels.scalar_sigmoid(np.float64({0}))", f64=_vec("sigmoid"))
_(ops.softplus, "kernels.scalar_softplus(np.float64({0}))", f64=_vec("softplus"),
  f32="vecmath32.softplus(np.float32({0}))")  # fmt: skip
_(ops.log1mexp, "kernels.scalar_log1mexp(np.float64({0}))")
_(ops.logaddexp, "np.logaddexp({0}, {1})",
  f64="vecmath.logaddexp(np.float64({0}), np.float64({1}))")  # fmt: skip
_(ops.erf, "math.erf({0})", f64=_vec("erf", "vecspecial"), f32="vecmath32.erf(np.float32({0}))")
_(ops.less, "({0} < {1})")
_(ops.less_equal, "({0} <= {1})")
_(ops.greater, "({0} > {1})")
_(ops.greater_equal, "({0} >= {1})")
_(ops.equal, "({0} == {1})")
_(ops.not_equal, "({0} != {1})")
_(ops.logical_and, "(({0} != 0) & ({1} != 0))")
_(ops.logical_or, "(({0} != 0) | ({1} != 0))")
_(ops.logical_not, "({0} == 0)")
_(ops.where, "({1} if {0} else {2})")
_(ops.clip, "np.minimum(np.maximum({0}, {1}), {2})")
_(ops.astype, "np.{dtype}({0})", special=_cast)
_(ops.sinh, "np.sinh({0})")
_(ops.cosh, "np.cosh({0})")
_(ops.tan, "np.tan({0})")
_(ops.arcsin, "np.arcsin({0})")
_(ops.arccos, "np.arccos({0})")
_(ops.arctan, "np.arctan({0})")
_(ops.arcsinh, "np.arcsinh({0})")
_(ops.arccosh, "np.arccosh({0})")
_(ops.arctanh, "np.arctanh({0})")
_(ops.arctan2, "np.arctan2({0}, {1})",
  f64="vecmath.arctan2(np.float64({0}), np.float64({1}))")  # fmt: skip
_(ops.hypot, "np.hypot({0}, {1})", f64="vecmath.hypot(np.float64({0}), np.float64({1}))")
_(ops.isnan, "np.isnan({0})", int="False")
_(ops.isinf, "np.isinf({0})", int="False")
_(ops.isfinite, "np.isfinite({0})", int="True")
_(ops.ndtr, "kernels.scalar_ndtr(np.float64({0}))",
  f64="(0.5 * vecspecial.erfc(np.float64({0}) * -0.7071067811865476))")  # fmt: skip
_(ops.log_ndtr, "kernels.scalar_log_ndtr(np.float64({0}))", f64=_vec("log_ndtr", "vecspecial"))
_(ops.xlogy, "(0.0 if ({0} == 0 and {1} == {1}) else {0} * np.log({1}))")
_(ops.gammaln, "(-np.inf if {0} == -np.inf else math.lgamma({0}))")
_(ops.erfc, "math.erfc({0})", f64=_vec("erfc", "vecspecial"))
_(ops.erfcx, "kernels.scalar_erfcx(np.float64({0}))")
for _op, _template in (
    *((ops.ALL_OPS[n], f"intmath.{n}({{0}}, {{1}})")
      for n in ("floor_divide", "remainder", "fmod", "left_shift", "right_shift", "gcd",
                "lcm")),
    (ops.bitwise_and, "({0} & {1})"), (ops.bitwise_or, "({0} | {1})"),
    (ops.bitwise_xor, "({0} ^ {1})"),
):  # fmt: skip
    _(_op, _template, special=_same_dtype(_template))
_(ops.invert, "(~{0})", special=_invert)
# A NaN operand loses; a tie gives the second operand, as numpy's loops do (its sign
# of zero: fmax(-0.0, 0.0) is 0.0).
_(ops.fmax, "({0} if ({0} > {1} or {1} != {1}) else {1})")
_(ops.fmin, "({0} if ({0} < {1} or {1} != {1}) else {1})")
_(ops.heaviside, "(np.nan if {0} != {0} else (0.0 if {0} < 0 else ({1} if {0} == 0 else 1.0)))")
_(ops.logical_xor, "(({0} != 0) != ({1} != 0))")
_(ops.deg2rad, "np.deg2rad({0})", special=_scaled(math.pi, 180.0))
_(ops.rad2deg, "np.rad2deg({0})", special=_scaled(180.0, math.pi))
_(ops.rint, "np.rint({0})")
_(ops.trunc, "np.trunc({0})")
_(ops.expand_as, "{0}")  # the loop runs over x's shape; the value is g's
