"""Array functions as people write them with numpy, for ``bench_jit.py``.

``functions(xp, erf)`` writes each once against an array namespace: ``numpy`` for
numpy, ``numba.njit`` and ``rg.jit``, ``jax.numpy`` for ``jax.jit``.  ``inputs(n, rng)``
gives float64 data with about ``n`` elements per array.
"""

from __future__ import annotations

import math

import numpy as np


def functions(xp, erf):
    def logsumexp(a):  # scipy.special.logsumexp's formula, over the rows
        a_max = xp.max(a, axis=1, keepdims=True)
        tmp = xp.exp(a - a_max)
        s = xp.sum(tmp, axis=1, keepdims=True)
        return xp.log(s) + a_max

    def logsumexp_columns(a):  # the same over axis 0 (an n x 256 array)
        a_max = xp.max(a, axis=0, keepdims=True)
        return xp.log(xp.sum(xp.exp(a - a_max), axis=0, keepdims=True)) + a_max

    def standardize(x):  # scikit-learn's StandardScaler: column means and deviations
        return (x - xp.mean(x, axis=0)) / xp.std(x, axis=0)

    def softmax(x):
        e = xp.exp(x - xp.max(x, axis=1, keepdims=True))
        return e / xp.sum(e, axis=1, keepdims=True)

    def log_softmax(x):
        shifted = x - xp.max(x, axis=1, keepdims=True)
        return shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))

    def gelu(x):  # the tanh approximation
        return 0.5 * x * (1.0 + xp.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))

    def layer_norm(x):
        mean = xp.mean(x, axis=1, keepdims=True)
        var = xp.mean((x - mean) ** 2, axis=1, keepdims=True)
        return (x - mean) / xp.sqrt(var + 1e-5)

    def pairwise(x, y):  # squared Euclidean distances
        return xp.sum(x**2, 1)[:, None] + xp.sum(y**2, 1)[None, :] - 2 * x @ y.T

    def black_scholes(s, k, t):  # call prices, rate 2%, volatility 30%
        r, v = 0.02, 0.3
        d1 = (xp.log(s / k) + (r + 0.5 * v * v) * t) / (v * xp.sqrt(t))
        d2 = d1 - v * xp.sqrt(t)
        cdf1 = 0.5 * (1.0 + erf(d1 / math.sqrt(2.0)))
        cdf2 = 0.5 * (1.0 + erf(d2 / math.sqrt(2.0)))
        return s * cdf1 - k * xp.exp(-r * t) * cdf2

    def log_likelihood(z, y):  # logistic regression; exp(z) overflows for z > 709
        return xp.sum(y * z - xp.log(1.0 + xp.exp(z)))

    def perceptron(x, w1, b, w2):  # two layers: 8 features, 16 hidden units, 4 outputs
        return xp.tanh(x @ w1 + b) @ w2

    return {
        "logsumexp rows": logsumexp,
        "logsumexp columns": logsumexp_columns,
        "standardize columns": standardize,
        "softmax rows": softmax,
        "log-softmax rows": log_softmax,
        "gelu (tanh)": gelu,
        "layer norm rows": layer_norm,
        "pairwise sq. distances": pairwise,
        "black-scholes (erf)": black_scholes,
        "log-likelihood log(1+exp z)": log_likelihood,
        "two-layer perceptron": perceptron,
    }


def inputs(n: int, rng: np.random.Generator) -> dict[str, tuple]:
    rows = int(math.sqrt(n))
    m = rng.normal(size=(rows, n // rows))
    return {
        "logsumexp rows": (m * 10,),
        "logsumexp columns": (rng.normal(size=(n // 256, 256)) * 10,),
        "standardize columns": (rng.normal(size=(n // 8, 8)),),
        "softmax rows": (m * 10,),
        "log-softmax rows": (m * 10,),
        "gelu (tanh)": (rng.normal(size=n),),
        "layer norm rows": (m,),
        "pairwise sq. distances": (rng.normal(size=(rows, 64)), rng.normal(size=(rows, 64))),
        "black-scholes (erf)": (
            rng.uniform(10, 200, n),
            rng.uniform(10, 200, n),
            rng.uniform(0.1, 5, n),
        ),
        "log-likelihood log(1+exp z)": (rng.normal(0, 300, n), (rng.random(n) < 0.5) * 1.0),
        "two-layer perceptron": (
            rng.normal(size=(n // 8, 8)),
            rng.normal(size=(8, 16)),
            rng.normal(size=16),
            rng.normal(size=(16, 4)),
        ),
    }
