"""Random well-typed programs whose every operation stays in its domain.

Each generated node carries an interval that bounds its values for every input
in ``[0.5, 2]`` (interval arithmetic), and an Op is only applied where its
domain allows (``log`` of positive values, ``exp`` of values <= 5, division by
values away from 0) and magnitudes stay below ``BOUND``.  So the program's
value is finite on every input, and a rewrite that changes it is a real bug,
not overflow noise.  Junk that relations simplify is spliced in at random.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

import relgraph as rg

N = 4  # vector length and matrix size
LO, HI = 0.5, 2.0  # every input value is in [LO, HI]
BOUND = 1e3

SCALARS = (rg.scalar("a"), rg.scalar("b"))
VECTORS = (rg.vector("x"), rg.vector("y"), rg.vector("z"))
MATRICES = (rg.matrix("A"), rg.matrix("B"))
SYMBOLS = SCALARS + VECTORS + MATRICES


@dataclass(frozen=True)
class E:
    """A generated term with its value interval and ndim."""

    term: object
    lo: float
    hi: float
    ndim: int


def inputs(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    values = {s: rng.uniform(LO, HI) for s in SCALARS}
    values.update({v: rng.uniform(LO, HI, N) for v in VECTORS})
    values.update({m: rng.uniform(LO, HI, (N, N)) for m in MATRICES})
    return values


def leaf(draw) -> E:
    sym = draw(st.sampled_from(SYMBOLS))
    return E(sym, LO, HI, rg.typeof(sym).ndim)


def _ok(lo: float, hi: float) -> bool:
    return -BOUND <= lo <= hi <= BOUND


def _products(a: E, b: E) -> tuple[float, float]:
    ps = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return min(ps), max(ps)


def binary(op: str, a: E, b: E) -> E | None:
    """``op(a, b)`` with its interval, or None outside the domain or bounds."""
    ndim = max(a.ndim, b.ndim)
    if op == "add":
        lo, hi, t = a.lo + b.lo, a.hi + b.hi, a.term + b.term
    elif op == "sub":
        lo, hi, t = a.lo - b.hi, a.hi - b.lo, a.term - b.term
    elif op == "mul":
        (lo, hi), t = _products(a, b), a.term * b.term
    elif op == "div":
        if b.lo <= 0.25 and b.hi >= -0.25:
            return None
        lo, hi = _products(a, E(None, 1 / b.hi, 1 / b.lo, 0))
        t = a.term / b.term
    elif op == "maximum":
        lo, hi, t = max(a.lo, b.lo), max(a.hi, b.hi), rg.maximum(a.term, b.term)
    elif op == "dot":
        if a.ndim == 0 or b.ndim == 0 or (a.ndim, b.ndim) == (1, 2):
            return None
        plo, phi = _products(a, b)  # each output is a sum of N such products
        lo, hi, t = N * plo, N * phi, a.term @ b.term
        ndim = a.ndim + b.ndim - 2
    else:
        raise ValueError(op)
    return E(t, lo, hi, ndim) if _ok(lo, hi) else None


def unary(op: str, a: E) -> E | None:
    lo, hi = a.lo, a.hi
    if op == "neg":
        return E(-a.term, -hi, -lo, a.ndim)
    if op == "exp" and hi <= 5:
        return E(rg.exp(a.term), math.exp(lo), math.exp(hi), a.ndim)
    if op == "expm1" and hi <= 5:
        return E(rg.expm1(a.term), math.expm1(lo), math.expm1(hi), a.ndim)
    if op == "log" and lo >= 0.1:
        return E(rg.log(a.term), math.log(lo), math.log(hi), a.ndim)
    if op == "log1p" and lo >= -0.9:
        return E(rg.log1p(a.term), math.log1p(lo), math.log1p(hi), a.ndim)
    if op == "sqrt" and lo >= 0:
        return E(rg.sqrt(a.term), math.sqrt(lo), math.sqrt(hi), a.ndim)
    if op == "abs":
        top = max(abs(lo), abs(hi))
        return E(abs(a.term), 0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), top, a.ndim)
    if op == "square" and max(abs(lo), abs(hi)) <= 30:
        sq = sorted([lo * lo, hi * hi])
        return E(a.term**2, 0.0 if lo <= 0 <= hi else sq[0], sq[1], a.ndim)
    if op == "sum" and a.ndim > 0:
        n = N**a.ndim
        s_lo, s_hi = n * lo if lo < 0 else lo, n * hi if hi > 0 else hi
        return E(rg.sum(a.term), s_lo, s_hi, 0) if _ok(s_lo, s_hi) else None
    if op == "max" and a.ndim > 0:
        return E(rg.max(a.term), lo, hi, 0)
    if op == "T" and a.ndim == 2:
        return E(a.term.T, lo, hi, 2)
    return None


def junk(kind: str, a: E, b: E) -> E | None:
    """``a`` wrapped in something the standard relations simplify."""
    t = a.term
    patterns = {
        "mul1": (lambda: t * 1, a.lo, a.hi),
        "add0": (lambda: t + 0, a.lo, a.hi),
        "sub0": (lambda: t - 0, a.lo, a.hi),
        "div1": (lambda: t / 1, a.lo, a.hi),
        "pow1": (lambda: t**1, a.lo, a.hi),
        "negneg": (lambda: -(-t), a.lo, a.hi),
        "twice": (lambda: t + t, 2 * a.lo, 2 * a.hi),
        "fold": (lambda: t * rg.Term((rg.add, 1.0, 1.0)), 2 * a.lo, 2 * a.hi),
        "swap": (lambda: b.term * t + t * b.term, None, None),
        "distribute": (lambda: (b.term + t) * 2.0, None, None),
    }
    if kind == "log1p" and a.lo >= -0.9:
        return E(rg.log(1 + t), math.log1p(a.lo), math.log1p(a.hi), a.ndim)
    if kind == "expm1" and a.hi <= 5:
        return E(rg.exp(t) - 1, math.expm1(a.lo), math.expm1(a.hi), a.ndim)
    if kind == "logexp" and a.hi <= 5:
        return E(rg.log(rg.exp(t)), a.lo, a.hi, a.ndim)
    if kind == "sqrtsq" and max(abs(a.lo), abs(a.hi)) <= 30:
        return E(rg.sqrt(t**2), 0.0, max(abs(a.lo), abs(a.hi)), a.ndim)
    if kind == "lse" and a.ndim == 1 and a.hi <= 5:
        return E(rg.log(rg.sum(rg.exp(t))), a.lo, a.hi + math.log(N), 0)
    if kind in ("swap", "distribute"):
        fn = {"swap": lambda: binary("mul", a, b), "distribute": lambda: binary("add", a, b)}
        inner = fn[kind]()
        if inner is None:
            return None
        lo, hi = (2 * inner.lo, 2 * inner.hi)
        return E(patterns[kind][0](), lo, hi, inner.ndim) if _ok(lo, hi) else None
    if kind in patterns:
        make, lo, hi = patterns[kind]
        return E(make(), lo, hi, a.ndim) if _ok(lo, hi) else None
    return None


BINARY = ["add", "sub", "mul", "div", "maximum", "dot"]
UNARY = ["neg", "exp", "expm1", "log", "log1p", "sqrt", "abs", "square", "sum", "max", "T"]
JUNK = [
    "mul1", "add0", "sub0", "div1", "pow1", "negneg", "twice", "fold", "swap",
    "distribute", "log1p", "expm1", "logexp", "sqrtsq", "lse",
]  # fmt: skip


@st.composite
def programs(draw, depth: int = 6) -> E:
    """A random program of the given depth (lower where a domain forbids an Op)."""
    if depth == 0:
        return leaf(draw)
    a = draw(programs(depth - 1))
    kind = draw(st.sampled_from(["binary"] * 5 + ["unary"] * 3 + ["junk"] * 3))
    if kind == "unary":
        out = unary(draw(st.sampled_from(UNARY)), a)
    else:
        b = draw(programs(draw(st.integers(max(0, depth - 3), depth - 1))))
        if draw(st.booleans()):
            a, b = b, a
        op = draw(st.sampled_from(BINARY if kind == "binary" else JUNK))
        out = binary(op, a, b) if kind == "binary" else junk(op, a, b)
    return out if out is not None else a
