"""Scalars in kernel source, as numpy computes with them.

A Python scalar beside arrays is "weak" (NEP 50): it takes the dtype of the ufunc
loop numpy picks for the operands (``x > 0.5`` compares in float64 for an int64 ``x``;
``int8 + 1000`` is refused with numpy's OverflowError), and a few Ops treat an
out-of-range int as numpy does (``clip`` saturates a bound, a comparison compares the
true values).  A numpy scalar keeps its own dtype.

>>> import relgraph as rg
>>> xi = rg.vector("xi", "int64")
>>> scalar_source(0.5, xi > 0.5, 1)
'np.float64(0.5)'
>>> scalar_source(float("-inf"), rg.maximum(rg.vector("x"), float("-inf")), 1)
'np.float64(-np.inf)'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term

__all__ = [
    "scalar_source", "strong_scalar_source", "literal", "dtype_expr", "is_integral", "is_weak",
]  # fmt: skip


def dtype_expr(dtype: np.dtype) -> str:
    """The source naming ``dtype``'s scalar type (``np.float64``)."""
    return "np.bool_" if dtype == np.bool_ else f"np.{dtype.name}"


def scalar_source(a: Any, node: Term, k: int) -> str:
    """Source for the scalar ``a``, operand ``k`` of ``node``."""
    if is_weak(a):
        dtype = _weak_dtype(node)
        if dtype.kind in "iu" and type(a) is int and not _fits(a, dtype):
            info = np.iinfo(dtype)
            if node.op.name == "clip" and (a < info.min if k == 1 else a > info.max):
                a = min(max(a, int(info.min)), int(info.max))  # numpy saturates it
            elif node.op.compares:  # numpy compares the true values
                dtype = next(d for d in _WIDE if d.kind == "f" or _fits(a, d))
            elif node.op.name == "where" and _fits(a, _WIDE[0]):
                a = int(np.array(a, _WIDE[0]).astype(dtype))  # numpy wraps it: -1 -> 255
        return literal(a, dtype)
    return strong_scalar_source(a)


def strong_scalar_source(a: Any) -> str:
    """Source for a numpy scalar or 0-d array ``a`` (not weak: its dtype counts)."""
    dtype = np.asarray(a).dtype
    if dtype == np.float16:  # Numba has no float16: numpy computes it wider anyway
        dtype = np.dtype(np.float32)
    return literal(a.item(), dtype)


_WIDE = [np.dtype(np.int64), np.dtype(np.uint64), np.dtype(np.float64)]


def _fits(value: int, dtype: np.dtype) -> bool:
    info = np.iinfo(dtype)
    return int(info.min) <= value <= int(info.max)


def is_integral(a: Any) -> bool:
    """Whether ``a`` is an array value of an integer or bool dtype."""
    return isinstance(a, (Term, Symbol, Constant)) and typeof(a).dtype.kind in "biu"


def is_weak(a: Any) -> bool:
    """Whether ``a`` is a Python scalar, which numpy treats as weak."""
    return isinstance(a, (bool, int, float, complex)) and not isinstance(a, np.generic)


def _weak_dtype(node: Term) -> np.dtype:
    """The dtype numpy gives a Python scalar operand of ``node``: that of the ufunc
    loop numpy picks (``int8 / 300`` divides in float64, ``int8 + 300`` is refused in
    int8), else the promotion of the operands (``where``'s values, not its condition)."""
    operands = list(node.op.operands(node.args))
    if node.op.name == "where":
        operands = operands[1:]
    keys = [type(a) if is_weak(a) else typeof(a).dtype for a in operands]
    ufunc = getattr(node.op, "ufunc", None)
    if isinstance(ufunc, np.ufunc) and ufunc.nin == len(keys) and ufunc.nout == 1:
        try:
            loop = ufunc.resolve_dtypes((*keys, None))
            return loop[next(i for i, a in enumerate(operands) if is_weak(a))]
        except (TypeError, ValueError, StopIteration):
            pass
    return np.result_type(*(a if is_weak(a) else typeof(a).dtype for a in operands))


def literal(value: Any, dtype: np.dtype) -> str:
    """Source for ``value`` as a scalar of ``dtype``; OverflowError, as numpy's, for a
    Python int that does not fit (``int8 + 1000``)."""
    if dtype.kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        np.array(value, dtype)  # numpy's OverflowError, with its message
    if isinstance(value, float) and not np.isfinite(value):
        text = "np.nan" if np.isnan(value) else ("np.inf" if value > 0 else "-np.inf")
        return f"{dtype_expr(dtype)}({text})"
    return f"{dtype_expr(dtype)}({value!r})"
