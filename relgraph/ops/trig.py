"""Trigonometric and hyperbolic functions, and angles: numpy's ufuncs, with exact
references at 1000 digits and their derivatives.

>>> import numpy as np, relgraph as rg
>>> x = rg.vector("x")
>>> rg.pprint(rg.grad(rg.sum(rg.sin(x)), x)), float(rg.rad2deg(np.pi))
('cos(x)', 180.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import mpmath
import numpy as np

from relgraph.ops import exact as exact_ref
from relgraph.ops.base import Op, pullback, register_ops
from relgraph.ops.elemwise import Elemwise, reciprocal, spread_times, sqrt, square

__all__ = [
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "hypot", "sinh", "cosh",
    "tanh", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg",
]  # fmt: skip

sin = Elemwise("sin", np.sin, 1, exact=mpmath.sin)
cos = Elemwise("cos", np.cos, 1, exact=mpmath.cos)
tan = Elemwise("tan", np.tan, 1, exact=mpmath.tan, cost=4.0)
arcsin = Elemwise("arcsin", np.arcsin, 1, exact=mpmath.asin, cost=4.0)
arccos = Elemwise("arccos", np.arccos, 1, exact=mpmath.acos, cost=4.0)
arctan = Elemwise("arctan", np.arctan, 1, exact=mpmath.atan, cost=4.0)
arctan2 = Elemwise("arctan2", np.arctan2, 2, exact=exact_ref.atan2, cost=4.0)
hypot = Elemwise("hypot", np.hypot, 2, exact=mpmath.hypot, cost=2.0)
sinh = Elemwise("sinh", np.sinh, 1, exact=mpmath.sinh, cost=4.0)
cosh = Elemwise("cosh", np.cosh, 1, exact=mpmath.cosh, cost=4.0)
tanh = Elemwise("tanh", np.tanh, 1, exact=mpmath.tanh)
arcsinh = Elemwise("arcsinh", np.arcsinh, 1, exact=mpmath.asinh, cost=4.0)
arccosh = Elemwise("arccosh", np.arccosh, 1, exact=mpmath.acosh, cost=4.0)
arctanh = Elemwise("arctanh", np.arctanh, 1, exact=mpmath.atanh, cost=4.0)
deg2rad = Elemwise("deg2rad", np.deg2rad, 1, exact=lambda a: a * mpmath.pi / 180)
rad2deg = Elemwise("rad2deg", np.rad2deg, 1, exact=lambda a: a * 180 / mpmath.pi)

register_ops(
    sin, cos, tan, arcsin, arccos, arctan, arctan2, hypot, sinh, cosh, tanh, arcsinh, arccosh,
    arctanh, deg2rad, rad2deg,
)  # fmt: skip

_SLOPES: dict[Op, Callable[[Any, Any], Any]] = {
    # d y / d x, as terms of the operand ``x`` and the result ``y``.
    sin: lambda x, y: cos(x),
    cos: lambda x, y: -sin(x),
    tan: lambda x, y: 1 + square(y),
    arcsin: lambda x, y: reciprocal(sqrt((1 - x) * (1 + x))),
    arccos: lambda x, y: -reciprocal(sqrt((1 - x) * (1 + x))),
    arctan: lambda x, y: reciprocal(1 + square(x)),
    sinh: lambda x, y: cosh(x),
    cosh: lambda x, y: sinh(x),
    tanh: lambda x, y: square(reciprocal(cosh(x))),  # 1 - y * y is 0 once y rounds to 1
    arcsinh: lambda x, y: reciprocal(hypot(x, 1)),
    arccosh: lambda x, y: reciprocal(sqrt((x - 1) * (x + 1))),
    arctanh: lambda x, y: reciprocal((1 - x) * (1 + x)),
    deg2rad: lambda x, y: math.pi / 180,
    rad2deg: lambda x, y: 180 / math.pi,
}


@pullback(*_SLOPES)
def _unary_pullback(g: Any, y: Any) -> tuple:
    (x,) = y.args
    return (spread_times(g, _SLOPES[y.op](x, y)),)


@pullback(arctan2)
def _arctan2_pullback(g: Any, y: Any) -> tuple:
    a, b = y.args  # arctan2(a, b): the angle of the point (b, a)
    r2 = square(a) + square(b)
    return g * b / r2, -(g * a) / r2


@pullback(hypot)
def _hypot_pullback(g: Any, y: Any) -> tuple:
    a, b = y.args
    return g * a / y, g * b / y
