"""The array workloads of ``bench_function.py``: softmax, logsumexp, leaky relu, a dense
layer, layer norm, a shifted product, an RBF kernel matrix (a product with 8
features read by one elementwise region), the median of each row, each row sorted and a
sort of 10^6 values, each in relgraph, numpy, numexpr (where it can express it), JAX
(``jax.jit`` on CPU, float64) and PyTensor's NUMBA mode.

Each case gives the relgraph term over its symbols, the numpy reference, builders
for the peers, the inputs and the bytes a kernel must at least move.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import relgraph as rg


@dataclass
class Case:
    name: str
    symbols: list
    term: Any
    numpy: Callable
    jax: Callable  # jnp -> function of the inputs
    pytensor: Callable  # pt -> (inputs, output)
    inputs: list
    numexpr: str | None = None
    bytes_moved: int = 0
    reads_only: bool = False  # writes a vector or a number: the read bandwidth bounds it


def _softmax(lib, x):
    e = lib.exp(x - lib.max(x, axis=1, keepdims=True))
    return e / lib.sum(e, axis=1, keepdims=True)


def _logsumexp(lib, x):
    m = lib.max(x, axis=1, keepdims=True)
    return lib.log(lib.sum(lib.exp(x - m), axis=1)) + m[:, 0]


def _layer_norm(lib, x):
    mu = lib.mean(x, axis=1, keepdims=True)
    var = lib.mean((x - mu) ** 2, axis=1, keepdims=True)
    return (x - mu) / lib.sqrt(var + 1e-5)


def _rbf(lib, x, y):
    """sklearn's rbf_kernel (gamma 0.1) through euclidean_distances."""
    xx = lib.sum(x * x, axis=1)[:, None]
    yy = lib.sum(y * y, axis=1)[None, :]
    return lib.exp(-0.1 * lib.maximum(-2 * (x @ y.T) + xx + yy, 0))


def cases() -> list[Case]:
    rng = np.random.default_rng(0)
    out = []
    for rows in (1000, 10000):
        X = rng.standard_normal((rows, 1000))
        x = rg.matrix("x")
        out.append(Case(
            f"row softmax {rows}x1000", [x], _softmax(rg, x), lambda X=X: _softmax(np, X),
            lambda jnp: functools.partial(_softmax, jnp), lambda pt: _pt1(pt, _softmax),
            [X], bytes_moved=3 * X.nbytes + X.nbytes,
        ))  # fmt: skip
    X = rng.standard_normal((10000, 1000))
    x = rg.matrix("x")
    out.append(Case(
        "logsumexp(x, axis=1) 10000x1000", [x], rg.logsumexp(x, axis=1),
        lambda X=X: _logsumexp(np, X), lambda jnp: _jax_logsumexp,
        lambda pt: _pt1(pt, lambda lib, v: pt.logsumexp(v, axis=1)), [X],
        bytes_moved=X.nbytes, reads_only=True,
    ))  # fmt: skip
    V = rng.standard_normal(10**7)
    v = rg.vector("x")
    out.append(Case(
        "leaky relu 1e7", [v], rg.where(v > 0, v, 0.01 * v),
        lambda V=V: np.where(V > 0, V, 0.01 * V),
        lambda jnp: lambda a: jnp.where(a > 0, a, 0.01 * a),
        lambda pt: _pt1(pt, lambda lib, a: pt.switch(a > 0, a, 0.01 * a), ndim=1), [V],
        numexpr="where(x > 0, x, 0.01 * x)", bytes_moved=2 * V.nbytes,
    ))  # fmt: skip
    Am, xv, bv = (
        rng.standard_normal((1000, 1000)),
        rng.standard_normal(1000),
        rng.standard_normal(1000),
    )
    A, xs, b = rg.matrix("A"), rg.vector("x"), rg.vector("b")
    out.append(Case(
        "sigmoid(A @ x + b) 1000x1000", [A, xs, b], rg.sigmoid(A @ xs + b),
        lambda: 1 / (1 + np.exp(-(Am @ xv + bv))),
        lambda jnp: lambda a, c, d: _jax_sigmoid(a @ c + d),
        lambda pt: _pt_dense(pt), [Am, xv, bv], bytes_moved=Am.nbytes,
    ))  # fmt: skip
    L = rng.standard_normal((10000, 256))
    ln = rg.matrix("x")
    out.append(Case(
        "layer norm 10000x256", [ln], _layer_norm(rg, ln), lambda L=L: _layer_norm(np, L),
        lambda jnp: functools.partial(_layer_norm, jnp), lambda pt: _pt1(pt, _layer_norm),
        [L], bytes_moved=2 * L.nbytes,
    ))  # fmt: skip
    S = rng.standard_normal(10**7)
    s = rg.vector("x")
    out.append(Case(
        "sum(x[1:] * x[:-1]) 1e7", [s], rg.sum(s[1:] * s[:-1]),
        lambda S=S: np.sum(S[1:] * S[:-1]), lambda jnp: lambda a: jnp.sum(a[1:] * a[:-1]),
        lambda pt: _pt1(pt, lambda lib, a: pt.sum(a[1:] * a[:-1]), ndim=1), [S],
        bytes_moved=S.nbytes, reads_only=True,
    ))  # fmt: skip
    P, Q = rng.standard_normal((10000, 8)), rng.standard_normal((100, 8))
    p, q = rg.matrix("x"), rg.matrix("y")
    out.append(Case(
        "RBF kernel 10000x100, 8 features", [p, q], _rbf(rg, p, q), lambda: _rbf(np, P, Q),
        lambda jnp: functools.partial(_rbf, jnp), lambda pt: _pt2(pt, _rbf), [P, Q],
        bytes_moved=8 * 10000 * 100,
    ))  # fmt: skip
    return out + _order_cases(rng)


def _order_cases(rng: Any) -> list[Case]:
    """Order statistics: the median of each row (a selection per row), each row sorted,
    one long sort (radix over the floats' bits in relgraph's kernel) and one long
    median (a selection)."""
    R, V = rng.standard_normal((20000, 100)), rng.standard_normal(10**6)
    r, v = rg.matrix("x"), rg.vector("x")
    return [
        Case("median(x, axis=1) 20000x100", [r], rg.median(r, axis=1),
             lambda: np.median(R, axis=1), lambda jnp: lambda a: jnp.median(a, axis=1),
             lambda pt: _pt1(pt, lambda lib, a: pt.median(a, axis=1)), [R],
             bytes_moved=R.nbytes, reads_only=True),
        Case("sort(x, axis=1) 20000x100", [r], rg.sort(r, axis=1),
             lambda: np.sort(R, axis=1), lambda jnp: lambda a: jnp.sort(a, axis=1),
             lambda pt: _pt1(pt, lambda lib, a: pt.sort(a, axis=1)), [R],
             bytes_moved=2 * R.nbytes),
        Case("sort(x) 1e6", [v], rg.sort(v), lambda: np.sort(V),
             lambda jnp: lambda a: jnp.sort(a),
             lambda pt: _pt1(pt, lambda lib, a: pt.sort(a), ndim=1), [V],
             bytes_moved=2 * V.nbytes),
        Case("median(x) 1e6", [v], rg.median(v), lambda: np.median(V),
             lambda jnp: lambda a: jnp.median(a),
             lambda pt: _pt1(pt, lambda lib, a: pt.median(a), ndim=1), [V],
             bytes_moved=V.nbytes, reads_only=True),
    ]  # fmt: skip


def _jax_logsumexp(a):
    import jax.scipy.special

    return jax.scipy.special.logsumexp(a, axis=1)


def _jax_sigmoid(a):
    import jax

    return jax.nn.sigmoid(a)


def _pt1(pt, build, ndim=2):
    x = pt.matrix("x") if ndim == 2 else pt.vector("x")
    return [x], build(pt, x)


def _pt_dense(pt):
    A, x, b = pt.matrix("A"), pt.vector("x"), pt.vector("b")
    return [A, x, b], pt.sigmoid(A @ x + b)


def _pt2(pt, build):
    x, y = pt.matrix("x"), pt.matrix("y")
    return [x, y], build(pt, x, y)
