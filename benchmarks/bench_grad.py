"""rg.value_and_grad side by side with jax.jit(jax.value_and_grad) and numpy by hand.

Run from the repository root after ``pip install -e ".[bench]"``::

    python benchmarks/bench_grad.py [--repeat 10] [--rows 1000000] [--scale 1]

Two functions, written once as numpy code (the way a user writes the loss):

- the logistic log-likelihood ``sum(y * z - log(1 + exp(z)))`` with ``z = X @ w``
  (X is rows x 8), differentiated with respect to ``w``;
- the softmax cross-entropy ``sum(log(sum(exp(Z), 1)) - sum(Y * Z, 1))`` of logits
  ``Z`` (10,000 x 1,000) and one-hot ``Y``, with respect to ``Z``.

``rg.value_and_grad`` traces the numpy function, rewrites it (``log(1 + exp(z))``
becomes ``softplus(z)``), differentiates and compiles value and gradient into one
kernel; ``jax.value_and_grad`` differentiates the ``jax.numpy`` twin (CPU, float64);
numpy computes value and gradient written out by hand, in their stable forms.
Reported: the best of ``--repeat`` calls, ratios peer / relgraph (above 1: relgraph
is faster), first-call times, and whether each gradient is finite and matches the
exact one (``--scale 30`` draws the data so that ``z`` reaches the thousands).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from scipy.special import expit, logsumexp

os.environ.setdefault("RELGRAPH_CACHE_DIR", tempfile.mkdtemp(prefix="bench-grad-"))

import relgraph as rg  # noqa: E402


def log_likelihood(X, w, y):
    z = X @ w
    return np.sum(y * z - np.log(1 + np.exp(z)))


def cross_entropy(Z, Y):
    return np.sum(np.log(np.sum(np.exp(Z), axis=1)) - np.sum(Y * Z, axis=1))


def by_hand_log_likelihood(X, w, y):
    z = X @ w
    return np.sum(y * z - np.logaddexp(0.0, z)), X.T @ (y - expit(z))


def by_hand_cross_entropy(Z, Y):
    lse = logsumexp(Z, axis=1, keepdims=True)
    return np.sum(lse[:, 0] - np.sum(Y * Z, axis=1)), np.exp(Z - lse) - Y


def jax_twins():
    import jax  # lazy: a peer, in the bench extra
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")

    def ll(w, X, y):
        z = X @ w
        return jnp.sum(y * z - jnp.log(1 + jnp.exp(z)))

    def ce(Z, Y):
        return jnp.sum(jnp.log(jnp.sum(jnp.exp(Z), axis=1)) - jnp.sum(Y * Z, axis=1))

    vg_ll = jax.jit(jax.value_and_grad(ll))
    vg_ce = jax.jit(jax.value_and_grad(ce))
    return (
        lambda X, w, y: tuple(np.asarray(a) for a in vg_ll(w, X, y)),
        lambda Z, Y: tuple(np.asarray(a) for a in vg_ce(Z, Y)),
    )


def timed(fn, args, repeat):
    start = time.perf_counter()
    out = fn(*args)
    first = time.perf_counter() - start
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return out, first, min(times, default=first)


def error(got, exact):
    got = np.asarray(got)
    if not np.isfinite(got).all():
        return "not finite"
    scale = np.maximum(np.abs(exact), 1e-300)
    return f"{np.max(np.abs(got - exact) / scale):.1e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    X = rng.normal(0, args.scale, (args.rows, 8))
    w = rng.normal(0, args.scale, 8)
    y = (rng.random(args.rows) < 0.5).astype(np.float64)
    Z = rng.normal(0, 3 * args.scale, (10_000, 1_000))
    Y = np.eye(1_000)[rng.integers(0, 1_000, 10_000)]
    cases = {
        f"log-likelihood, X {args.rows}x8, d/dw": (
            log_likelihood, 1, by_hand_log_likelihood, (X, w, y), X.T @ (y - expit(X @ w))
        ),
        "softmax cross-entropy, Z 10000x1000, d/dZ": (
            cross_entropy, 0, by_hand_cross_entropy, (Z, Y), by_hand_cross_entropy(Z, Y)[1]
        ),
    }  # fmt: skip
    jax_fns = jax_twins()
    print(f"value and gradient, best of {args.repeat} calls; ratio = peer / relgraph\n")
    header = "| function | relgraph | jax.jit | numpy by hand | vs jax | vs numpy |"
    print(header + "\n|" + "---|" * 6)
    notes = []
    for (name, (fn, argnum, hand, data, exact)), jax_fn in zip(cases.items(), jax_fns):
        vg = rg.value_and_grad(fn, argnums=argnum)
        (_, g_rg), first_rg, _ = timed(vg, data, 0)
        vg.wait()
        (_, g_rg), _, t_rg = timed(vg, data, args.repeat)
        (_, g_jax), first_jax, t_jax = timed(jax_fn, data, args.repeat)
        with np.errstate(all="ignore"):
            (_, g_np), _, t_np = timed(hand, data, args.repeat)
        print(
            f"| {name} | {t_rg * 1e3:.1f} ms | {t_jax * 1e3:.1f} ms | {t_np * 1e3:.1f} ms "
            f"| {t_jax / t_rg:.2f}x | {t_np / t_rg:.2f}x |"
        )
        notes.append(
            f"{name}: first result relgraph {first_rg:.2f} s, jax {first_jax:.2f} s; "
            f"gradient vs exact: relgraph {error(g_rg, exact)}, jax {error(g_jax, exact)}, "
            f"numpy by hand {error(g_np, exact)}"
        )
    print("\n" + "\n".join(notes))


if __name__ == "__main__":
    main()
