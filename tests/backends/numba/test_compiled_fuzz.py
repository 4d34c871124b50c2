"""Differential fuzz of compiled kernels against numpy: random programs over every
integer, bool and float dtype, with Python scalars of every kind beside the arrays
(weak, as numpy treats them), inf and NaN constants, and inputs at the edges (the
wrap-around points of each integer dtype; +-inf, NaN, -0.0, subnormals and values
near overflow for floats).  The kernel must give numpy's dtype and values: bit for
bit for ints and bools, NaN and infinities in the same places and finite values
within a few roundings for floats (vectorised exp and log are within an ulp)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from test_dtype_fuzz import computes, edges as integer_edges

import relgraph as rg
from relgraph.backends.numba.lowering import LoweringError
from relgraph.terms.traverse import free_symbols

pytestmark = pytest.mark.usefixtures("kernel_cache")

DTYPES = ["bool", "int8", "uint8", "int16", "uint32", "int64", "uint64", "float32", "float64"]
SYMBOLS = [rg.vector(f"v_{d}", d) for d in DTYPES]
SCALARS = [0, 1, -1, 2, 7, 300, True, False, 0.5, -0.0, 2.5, float("inf"), float("-inf"),
           float("nan"), 1e300, -1e-310]  # fmt: skip
BINARY = {"add": rg.add, "sub": rg.sub, "mul": rg.mul, "div": rg.true_div,
          "maximum": rg.maximum, "minimum": rg.minimum, "greater": rg.greater,
          "less_equal": rg.less_equal, "equal": rg.equal, "not_equal": rg.not_equal}  # fmt: skip
UNARY = {"neg": rg.neg, "abs": rg.abs, "sign": rg.sign, "exp": rg.exp, "sqrt": rg.sqrt,
         "square": rg.square}  # fmt: skip


def edges(dtype: str) -> list:
    """The fast_run fuzz's edges for bools and ints; floats add the specials."""
    dt = np.dtype(dtype)
    if dt.kind in "biu":
        return [int(v) if dt.kind != "b" else v for v in integer_edges(dtype)]
    info = np.finfo(dt)
    big = float(info.max)
    return [0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, float(info.smallest_subnormal),
            big, -big, big / 3, 1e-3]  # fmt: skip


@st.composite
def programs(draw):
    def build(level: int):
        if level == 0 or draw(st.integers(0, 3)) == 0:
            if draw(st.integers(0, 3)) == 0:
                return draw(st.sampled_from(SCALARS))
            return draw(st.sampled_from(SYMBOLS))
        kind = draw(st.sampled_from([*BINARY, *UNARY, "where", "clip"]))
        a = build(level - 1)
        try:
            if kind in UNARY:
                return UNARY[kind](a)
            b = build(level - 1)
            if kind == "where":
                return rg.where(rg.greater(a, draw(st.sampled_from(SCALARS))), a, b)
            if kind == "clip":
                lo, hi = sorted(draw(st.lists(st.sampled_from([-1, 0, 1, 5, 300]), min_size=2,
                                              max_size=2)))  # fmt: skip
                return rg.clip(a, lo, hi)
            return BINARY[kind](a, b)
        except (rg.TypeCheckError, TypeError, ValueError, OverflowError):
            return a

    term = build(3)
    if not isinstance(term, rg.Term) or not free_symbols(term):
        term = rg.add(draw(st.sampled_from(SYMBOLS)), term)
    return term


def compiled_value(term, values):
    inputs = sorted(free_symbols(term), key=lambda s: s.name)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            f = rg.function(inputs, term, compile="eager")
        except (rg.TypeCheckError, LoweringError):
            return None  # not compiled (float16 results): said so, not wrong
        except OverflowError as exc:
            return type(exc)
        return f(*(values[s] for s in inputs))


def agree(want, got) -> bool:
    if isinstance(want, type) or isinstance(got, type):
        return want is got
    want, got = np.asarray(want), np.asarray(got)
    if want.dtype != got.dtype or want.shape != got.shape:
        return False
    if want.dtype.kind != "f":
        return bool(np.array_equal(want, got))
    if not np.array_equal(np.isnan(want), np.isnan(got)):
        return False
    finite = np.isfinite(want)
    if not np.array_equal(want[~finite & ~np.isnan(want)], got[~finite & ~np.isnan(got)]):
        return False
    # Each Op is within an ulp or two of numpy's, and a chain (exp of exp) magnifies
    # a difference by the size of what it feeds: a relative tolerance of about the
    # square root of the dtype's precision.
    rtol = 1e-4 if want.dtype == np.float32 else 1e-10
    w, g = want[finite].astype(float), got[finite].astype(float)
    tiny = np.finfo(want.dtype).tiny
    return bool(np.all(np.abs(w - g) <= rtol * np.maximum(np.abs(w), tiny)))


@settings(max_examples=40, deadline=None)  # each example compiles a kernel
@given(term=programs(), shift=st.integers(0, 50))
def test_compiled_kernels_compute_what_numpy_computes(term, shift):
    values = {}
    for k, s in enumerate(SYMBOLS):
        pool = edges(s.type.dtype.name)
        values[s] = np.array([pool[(shift + k + 3 * j) % len(pool)] for j in range(16)],
                             dtype=s.type.dtype)  # fmt: skip
    want = computes(term, values)  # numpy's value, or the error it raises
    got = compiled_value(term, values)
    if got is None:
        return
    assert agree(want, got), f"{rg.pprint(term)}: numpy {want!r}, compiled {got!r}"
