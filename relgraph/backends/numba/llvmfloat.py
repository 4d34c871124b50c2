"""Python's float operators over LLVM floats being built: the pieces that
:mod:`relgraph.backends.numba.vecmath`, :mod:`~relgraph.backends.numba.vecmath32` and
:mod:`~relgraph.backends.numba.vecspecial` write their branch-free functions with (and
only they: the names are private to those modules).

:class:`_F` gives an LLVM double or float Python's operators, evaluated in Python's
order, without fast-math flags; :func:`_if` is a select (both sides computed), so a
loop over the result vectorises; :func:`_horner` evaluates a polynomial with fused
multiply-adds (one rounding per step); :class:`_Layout` is a float type's bits, for the
bit tricks that replace ``frexp``/``ldexp``.  :func:`_vectorised` turns a function of
such floats into a Numba ``intrinsic``: a call emits its LLVM instructions in place, at
the cost of building them.  (As ``njit(inline="always")`` functions they were inlined
as Numba IR, typed and lowered again at every call: about half of a transcendental
kernel's compile time.)

A function that calls one of these intrinsics is marked to prefer 512-bit vectors, so
on an AVX-512 CPU its loops run eight doubles at a time instead of LLVM's default four
(the same instructions, wider: the same values).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__: list[str] = []

_DOUBLE, _FLOAT = ir.DoubleType(), ir.FloatType()


def _arithmetic(instruction: str, reflected: bool = False) -> Callable[[_F, Any], _F]:
    """``self <op> o`` (``o <op> self`` when ``reflected``) as one LLVM instruction."""

    def method(self: _F, o: Any) -> _F:
        a, b = (self._of(o), self.v) if reflected else (self.v, self._of(o))
        return _F(self.b, getattr(self.b, instruction)(a, b))

    return method


def _comparison(op: str) -> Callable[[_F, Any], _B]:
    """Python's comparison: ordered (False with a NaN), ``!=`` unordered (True)."""

    def method(self: _F, o: Any) -> _B:
        compare = self.b.fcmp_unordered if op == "!=" else self.b.fcmp_ordered
        return _B(self.b, compare(op, self.v, self._of(o)))

    return method


class _F:
    """An LLVM double (or float: a Python number's constant takes the given type) being
    built, with Python's float operators."""

    v: ir.Value

    def __init__(self, b: ir.IRBuilder, value: Any, type_: ir.Type = _DOUBLE):
        self.b = b
        if isinstance(value, _F):
            value = value.v
        self.v = value if isinstance(value, ir.Value) else ir.Constant(type_, float(value))

    def _of(self, other: Any) -> ir.Value:
        """An operand: an LLVM value, or a Python number as a constant of this type."""
        return other.v if isinstance(other, _F) else ir.Constant(self.v.type, float(other))

    __add__, __radd__ = _arithmetic("fadd"), _arithmetic("fadd", reflected=True)
    __sub__, __rsub__ = _arithmetic("fsub"), _arithmetic("fsub", reflected=True)
    __mul__, __rmul__ = _arithmetic("fmul"), _arithmetic("fmul", reflected=True)
    __truediv__, __rtruediv__ = _arithmetic("fdiv"), _arithmetic("fdiv", reflected=True)
    __lt__, __le__ = _comparison("<"), _comparison("<=")
    __gt__, __ge__ = _comparison(">"), _comparison(">=")
    __eq__ = _comparison("==")  # type: ignore[assignment]
    __ne__ = _comparison("!=")  # type: ignore[assignment]
    __hash__ = None  # type: ignore[assignment]

    def __neg__(self) -> _F:
        return _F(self.b, self.b.fneg(self.v))


class _B:
    """An LLVM i1 being built: ``&`` is Python's ``and`` of two bools."""

    def __init__(self, b: ir.IRBuilder, value: ir.Value):
        self.b, self.v = b, value

    def __and__(self, o: _B) -> _B:
        return _B(self.b, self.b.and_(self.v, o.v))

    def __or__(self, o: _B) -> _B:
        return _B(self.b, self.b.or_(self.v, o.v))


def _if(cond: _B, then: Any, other: Any) -> _F:
    """``then if cond else other``, both computed (they have no side effects)."""
    b = cond.b
    known = then if isinstance(then, _F) else other
    type_ = known.v.type if isinstance(known, _F) else _DOUBLE
    return _F(b, b.select(cond.v, _F(b, then, type_).v, _F(b, other, type_).v))


def _call(name: str, x: _F) -> _F:
    fn = x.b.module.declare_intrinsic(name, [x.v.type])
    return _F(x.b, x.b.call(fn, [x.v]))


def _floor(x: _F) -> _F:
    return _call("llvm.floor", x)


def _fma(x: _F, y: Any, z: Any) -> _F:
    """``x * y + z`` rounded once (the CPU's fused multiply-add where it has one)."""
    return _F(x.b, x.b.fma(x.v, x._of(y), x._of(z)))


def _horner(r: _F, coefficients: tuple) -> _F:
    """``c0 + r (c1 + r (c2 + ...))`` for ``coefficients = (..., c2, c1, c0)``, highest
    first, each step one fused multiply-add."""
    p = _F(r.b, coefficients[0], r.v.type)
    for c in coefficients[1:]:
        p = _fma(p, r, c)
    return p


def _abs(x: _F) -> _F:
    return _call("llvm.fabs", x)


def _sqrt(x: _F) -> _F:
    return _call("llvm.sqrt", x)


def _negative(x: _F) -> _B:
    """Whether ``x``'s sign bit is set (-0.0 and -NaN too)."""
    return _B(x.b, x.b.icmp_signed("<", _bits(x), _layout(x).int(0)))


class _Layout(NamedTuple):
    """The bits of an IEEE float type: the integer type of its width, the mantissa's
    width, the exponent's bias, and the bits of about sqrt(1/2) (``log``'s lower bound
    for the mantissa: fdlibm's, rounded down to 20 bits, for doubles; Cephes' for
    floats)."""

    int_type: ir.IntType
    mantissa: int
    bias: int
    sqrt_half_bits: int

    @property
    def rounder(self) -> float:
        """``2^m + 2^(m-1)`` for an ``m``-bit mantissa: an integer-valued float below
        ``2^(m-1)`` in magnitude plus this holds the integer in the sum's low bits (the
        sum's ulp is 1), and subtracting it from such a sum gives the integer back."""
        return 1.5 * 2.0**self.mantissa

    @property
    def rounder_bits(self) -> int:
        """The bits of :attr:`rounder`."""
        return (self.bias + self.mantissa) << self.mantissa | 1 << (self.mantissa - 1)

    def int(self, value: int) -> ir.Constant:
        return ir.Constant(self.int_type, value)


_LAYOUTS = {
    str(_DOUBLE): _Layout(ir.IntType(64), 52, 1023, 0x3FE6A09E00000000),
    str(_FLOAT): _Layout(ir.IntType(32), 23, 127, 0x3F3504F3),
}


def _layout(x: _F) -> _Layout:
    return _LAYOUTS[str(x.v.type)]


def _bits(x: _F) -> ir.Value:
    return x.b.bitcast(x.v, _layout(x).int_type)


def _with_bits(x: _F, bits: ir.Value) -> _F:
    """The float of ``x``'s type with the given bits."""
    return _F(x.b, x.b.bitcast(bits, x.v.type))


def _like(x: _F, value: float) -> _F:
    """``value`` as a constant of ``x``'s type."""
    return _F(x.b, value, x.v.type)


# LLVM's string attribute: the loop vectoriser of the function that carries it may use
# 512-bit registers.  On AVX-512 CPUs LLVM prefers 256 bits by default (older chips
# slowed their clocks for 512); a transcendental loop here runs 1.4x faster with 512.
# A CPU without AVX-512 has no wider registers than 256, so there it changes nothing.
_WIDE = '"prefer-vector-width"="512"'


def _prefer_wide_vectors(builder: ir.IRBuilder) -> None:
    """Mark the function being built (the loop, or the parallel loop's body, that
    calls the intrinsic) with :data:`_WIDE`.  Only that function: Numba's own target
    options, which every compiled function in the process shares, stay as they are.
    llvmlite's ``FunctionAttributes.add`` accepts only enum attributes, hence
    ``set.add``; the attribute is printed into the function's definition as given."""
    set.add(builder.function.attributes, _WIDE)


def _vectorised(emit: Callable[..., _F], type_: types.Float = types.float64) -> Callable:
    """The Numba intrinsic computing ``emit`` of one float64 (or two: ``logaddexp``;
    or of ``type_``)."""

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: Any) -> Any:
        _prefer_wide_vectors(builder)
        return emit(*(_F(builder, a) for a in args)).v

    def typed(*args: Any) -> Any:
        if any(a != type_ for a in args):
            return None
        return type_(*args), codegen

    if emit.__code__.co_argcount == 1:

        def typer(typingctx: Any, x: Any) -> Any:
            return typed(x)

    else:

        def typer(typingctx: Any, x: Any, y: Any) -> Any:  # type: ignore[misc]
            return typed(x, y)

    typer.__name__ = emit.__name__.lstrip("_")
    typer.__doc__ = emit.__doc__
    return intrinsic(typer)
