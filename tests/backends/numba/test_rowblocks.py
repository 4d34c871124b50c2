"""Large calls run the one serial kernel on blocks of rows, on threads (until their
prange kernel is ready, and where BLAS runs): the same values, dtypes and shapes as
the whole call, and as numpy."""

import os
import threading

import numpy as np
import pytest

import relgraph as rg
from relgraph.backends.numba import products, rowblocks, tiers
from relgraph.backends.numba.function import Function
from relgraph.backends.numba.rowblocks import row_split, run_blocks

X, Z = rg.matrix("X"), rg.matrix("Z")
w, v = rg.vector("w"), rg.vector("v")
I8 = rg.matrix("I8", "int8")
N = 1 << 16  # rows: enough elements for several blocks


def softmax(m):
    e = rg.exp(m - rg.max(m, axis=1, keepdims=True))
    return e / rg.sum(e, axis=1, keepdims=True)


# name: (inputs, outputs, the row split's combinations, or None where it must not split)
GRAPHS = {
    "elementwise": ([w, v], [rg.tanh(w) * v + 1.0], (None,)),
    "softmax rows": ([X], [softmax(X)], (None,)),
    "reductions": (
        [X, w],
        [
            rg.sum(rg.softplus(X @ w)),
            rg.mean(X, axis=0),
            rg.max(X @ w),
            rg.min(X, axis=0),
            rg.logsumexp(X @ w),
        ],
        ("sum", "mean", "max", "min", "logsumexp"),
    ),  # fmt: skip
    # in blocks, a 0 in one could meet another's overflow: 0 * inf = nan, not numpy's 0
    "a product": ([X], [rg.prod(rg.tanh(X[:, 0]) * 0.5 + 1.0)], None),
    "pairwise": (
        [X, Z],
        [
            rg.sum(X * X, axis=1)[:, None] + rg.sum(Z * Z, axis=1)[None] - 2.0 * (X @ Z.T)
        ],  # Z: 5 rows
        (None,),
    ),
    "a whole output beside": (
        [X, w, Z],
        [rg.exp(X) + w, rg.sum(w * w), rg.sum(Z.T, axis=0), rg.sum(X, axis=1)],
        (None, None, None, None),
    ),
    "int8 wraps": ([I8], [I8 * 3 + 100, rg.sum(I8, axis=0), rg.max(I8)], (None, "sum", "max")),
    "expand dims": ([w], [rg.expand_dims(rg.sqrt(rg.abs(w)), 1) * 2.0], (None,)),
    # blocks give -s1 and -s2: combined as -(s1 + s2), for floats and for ints that wrap
    "negated sums": (
        [X, w, I8],
        [-rg.sum(X * rg.log1p(rg.exp(X @ w))[:, None]), -rg.mean(X, axis=0), -rg.sum(I8)],
        ("-sum", "-mean", "-sum"),
    ),  # fmt: skip
    # int8: -max is not min(-x) where a block's max is -128 (its negation wraps to -128)
    "negated max": ([I8], [-rg.max(I8)], None),
    "mean feeds arithmetic": ([w], [w - rg.mean(w)], None),
    "transpose": ([X], [X.T + 1.0], None),
    "full reduction reused": ([w], [rg.sum(w), rg.sum(w) * 2.0], None),
    # each row's own statistic; along the rows' axis, a statistic of every row
    "row statistics": (
        [X],
        [rg.median(X, 1), rg.sort(X, -1) * 2.0, rg.nanquantile(X, 0.3, 1, True) - X],
        (None, None, None),
    ),
    "column median": ([X], [rg.median(X, 0)], None),
    "sort of everything": ([X], [rg.sort(X, None)], None),
}


def arguments(inputs, rng):
    """Values with the special points in every column: +-inf, NaN, +-0, extremes."""
    special = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 5e-324, 1e308, -700.0, 700.0])
    out = []
    for s in inputs:
        if s.type.dtype == np.int8:
            out.append(rng.integers(-128, 128, (N, 3), dtype=np.int8))
        elif s.type.ndim == 2:
            a = rng.standard_normal((5 if s is Z else N, 4))
            a[rng.integers(0, len(a), 40), rng.integers(0, 4, 40)] = rng.choice(special, 40)
            out.append(a)
        else:  # beside a matrix, a vector broadcasts along its rows
            cols = any(t.type.ndim == 2 for t in inputs)
            out.append(rng.standard_normal(4 if cols else N))
    return out


@pytest.fixture(autouse=True)
def on_blocks(monkeypatch):
    """Every large call here runs on blocks, as it does while its prange kernel is
    compiling (the prange kernels have tests of their own)."""
    monkeypatch.setattr(Function, "_on_blocks", lambda self, eager, blas: True)


@pytest.fixture
def threads(monkeypatch):
    """Four blocks whatever the machine's cores (a one-core CI runner included)."""
    monkeypatch.setattr(rowblocks, "THREADS", 4)


def one_block_and_four(f, args, monkeypatch):
    """``f(*args)`` as one whole call, and on four blocks of rows."""
    with np.errstate(all="ignore"):
        monkeypatch.setattr(rowblocks, "THREADS", 1)
        whole = f(*args)
        monkeypatch.setattr(rowblocks, "THREADS", 4)
        assert len(rowblocks.blocks(N, N * 4)) == 4
        return whole, f(*args)


@pytest.mark.parametrize("name", list(GRAPHS))
def test_the_split_is_found_where_it_is_safe(name):
    inputs, outputs, combine = GRAPHS[name]
    split = row_split(inputs, outputs)
    assert (split.combine if split else None) == combine


@pytest.mark.parametrize("name", [n for n, g in GRAPHS.items() if g[2] is not None])
def test_blocks_agree_with_one_block_and_numpy(name, rng, monkeypatch):
    """Row outputs are the very values of one whole call (the same code per row);
    combined reductions agree to rounding."""
    inputs, outputs, combine = GRAPHS[name]
    args = arguments(inputs, rng)
    f = rg.function(inputs, outputs, compile="eager")
    ran = []
    monkeypatch.setattr(tiers, "run_blocks", lambda *a: ran.append(1) or run_blocks(*a))
    whole, got = one_block_and_four(f, args, monkeypatch)
    assert len(ran) == 2  # both calls on blocks (one of them a single block)
    with np.errstate(all="ignore"):
        want = rg.function(inputs, outputs, compile="never")(*args)
    for g, one, e, how in zip(got, whole, want, combine):
        assert g.dtype == e.dtype and g.shape == e.shape
        if how is None:
            np.testing.assert_array_equal(g, one)
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_a_row_of_length_one_broadcasts(rng, threads):
    f = rg.function([X, Z], rg.exp(X) * Z, compile="eager")
    a, b = rng.standard_normal((N, 3)), rng.standard_normal((1, 3))
    np.testing.assert_allclose(f(a, b), np.exp(a) * b, rtol=1e-15)
    np.testing.assert_allclose(f(b, a), np.exp(b) * a, rtol=1e-15)


def test_out_is_written_in_place(rng, threads):
    f = rg.function([X], softmax(X), compile="eager")
    a = rng.standard_normal((N, 3))
    out = np.empty_like(a)
    assert f(a, out=out) is out
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-13)


def test_the_kernel_releases_the_gil():
    f = rg.function([w], rg.exp(w), compile="eager")
    assert f.kernel.targetoptions["nogil"]


def test_eight_threads_at_once(rng, threads):
    f = rg.function([X, w], [softmax(X), rg.sum(rg.softplus(X @ w))], compile="eager")
    cases = [(rng.standard_normal((N, 4)), rng.standard_normal(4)) for _ in range(8)]
    want = [rg.function([X, w], f.outputs, compile="never")(*c) for c in cases]
    got: list = [None] * 8

    def call(k):
        got[k] = f(*cases[k])

    workers = [threading.Thread(target=call, args=(k,)) for k in range(8)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    for g, e in zip(got, want):
        np.testing.assert_allclose(g[0], e[0], rtol=1e-13)
        np.testing.assert_allclose(g[1], e[1], rtol=1e-12)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_gets_threads_of_its_own(rng, threads):
    f = rg.function([w], rg.tanh(w) * 2.0, compile="eager")
    a = rng.standard_normal(N)
    f(a)  # the parent's pool exists
    pid = os.fork()
    if pid == 0:  # the child: the parent's pool threads do not exist here
        ok = np.allclose(f(a), np.tanh(a) * 2.0, rtol=1e-14)
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_an_error_in_one_block_is_the_call_s_error(threads):
    a, k = rg.vector("a", "int64"), rg.vector("k", "int64")
    f = rg.function([a, k], a**k, compile="eager")
    base, power = np.full(N, 3, np.int64), np.ones(N, np.int64)
    power[-1] = -1  # in the last block only
    with pytest.raises(ValueError, match="negative integer powers"):
        f(base, power)
    power[-1] = 2
    assert f(base, power)[-1] == 9


@pytest.mark.parametrize("name", [n for n, g in GRAPHS.items() if g[2] is not None])
def test_the_numpy_tier_runs_on_blocks_too(name, rng, monkeypatch):
    """Until its kernel is ready, a large call runs numpy on the same blocks of rows:
    row outputs equal to numpy on the whole arrays, combined reductions to rounding."""
    inputs, outputs, combine = GRAPHS[name]
    args = arguments(inputs, rng)
    whole, got = one_block_and_four(rg.function(inputs, outputs, compile="never"), args,
                                    monkeypatch)  # fmt: skip
    for g, one, how in zip(got, whole, combine):
        assert g.dtype == one.dtype and g.shape == one.shape
        if how is None:
            np.testing.assert_array_equal(g, one)
        np.testing.assert_allclose(g, one, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_a_large_output_of_small_inputs_runs_on_blocks(rng, threads, monkeypatch):
    """An outer sum reads 2,000 + 64 elements and writes 128,000: the output's size
    makes the call large, and its blocks give the whole call's values.  A function
    that calls BLAS on its rows stays one call (BLAS's threads would run against the
    blocks'), and a product whose rows the kernel computes runs on blocks."""
    calls = []

    def counted(*args):
        calls.append(args[0])
        return rowblocks.run_blocks(*args)

    monkeypatch.setattr(tiers, "run_blocks", counted)
    outer = rg.function([w, v], rg.exp(-((w[:, None] - v[None, :]) ** 2)), compile="eager")
    a, b = rng.standard_normal(2000), rng.standard_normal(64)
    a[:4], b[:3] = [np.inf, -np.inf, np.nan, -0.0], [np.inf, 1e308, -1e308]
    with np.errstate(all="ignore"):
        want = np.exp(-((a[:, None] - b[None, :]) ** 2))
        got = outer(a, b)
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)  # exp: 2 ulp of numpy's
    assert outer.by_outputs and len(calls) == 1
    assert outer(a[:10], b).shape == (10, 64) and len(calls) == 1  # small: one call
    product = rg.function([X, Z], rg.exp(X @ Z.T), compile="eager")
    x, z = rng.standard_normal((2000, 40)), rng.standard_normal((64, 40))
    np.testing.assert_allclose(product(x, z), np.exp(x @ z.T), rtol=1e-13)
    assert len(calls) == 1  # 40 features: BLAS computes the product, in one call
    x, z = x[:, :8].copy(), z[:, :8].copy()
    np.testing.assert_allclose(product(x, z), np.exp(x @ z.T), rtol=1e-13)
    assert len(calls) == 2  # 8 features: the kernel's rows, on blocks


def test_a_negated_sum_keeps_the_sign_of_a_zero(threads):
    """Blocks summing to 1 and -1: ``-sum`` is -0.0, as numpy's ``-(1 + -1)``; the sum
    of the blocks' negations would be +0.0."""
    half = np.ones(N // 2)
    x = np.concatenate([half, -half])
    f = rg.function([w], [-rg.sum(w), -rg.mean(w)], compile="eager")
    assert row_split([w], [-rg.sum(w), -rg.mean(w)]).combine == ("-sum", "-mean")
    assert len(rowblocks.blocks(N, N)) > 1
    for got in f(x):
        assert got == 0.0 and np.signbit(got), got


def test_products_of_rows_by_matrices_run_on_blocks_in_chunks(rng, threads, monkeypatch):
    """A two-layer perceptron runs BLAS on its rows: a large call runs its blocks in
    chunks of rows that keep BLAS on the calling thread, with numpy's values (specials
    in rows stay in their rows), and its reductions combine every chunk's part (a
    mean weighted by each chunk's rows); a sum of it, one number, is large by the
    rows it reads.  A product of whole matrices, which each chunk would compute
    again, keeps the call whole."""
    W1, W2, b = rg.matrix("W1"), rg.matrix("W2"), rg.vector("b")
    hidden = rg.tanh(X @ W1 + b) @ W2
    mlp = rg.function([X, W1, b, W2], [hidden, rg.mean(hidden, axis=0), rg.sum(X @ W1)],
                      compile="eager")  # fmt: skip
    chunks = []
    monkeypatch.setattr(tiers, "run_blocks",
                        lambda *a: chunks.append(a[5]) or run_blocks(*a))  # fmt: skip
    monkeypatch.setattr(products, "ONE_THREAD", 256 * (8 * 16 + 16 * 4))  # 256 rows a chunk
    monkeypatch.setattr(products, "MIN_CHUNK", 16)
    x, w1, w2 = (
        rng.standard_normal((N // 4, 8)),
        rng.standard_normal((8, 16)),
        rng.standard_normal((16, 4)),
    )
    x[7, 3], x[100, 0], x[5000] = np.nan, np.inf, -0.0
    bias = rng.standard_normal(16)
    with np.errstate(all="ignore"):
        got = mlp(x, w1, bias, w2)
        want = np.tanh(x @ w1 + bias) @ w2
    assert chunks == [256]
    np.testing.assert_allclose(got[0], want, rtol=1e-13, atol=1e-13)
    assert np.isnan(got[0][7]).all() and np.isfinite(np.delete(got[0], 7, 0)).all()
    np.testing.assert_allclose(got[1], np.mean(want, axis=0), rtol=1e-12)
    np.testing.assert_allclose(got[2], np.sum(x @ w1), rtol=1e-12)
    loss = rg.function([X, W1, b, W2], rg.sum(hidden), compile="eager")  # large by its rows
    np.testing.assert_allclose(loss(x[8:], w1, bias, w2), np.sum(want[8:]), rtol=1e-12)
    assert chunks == [256, 256]
    A = rg.matrix("A")
    whole = rg.function([X, W1, A], rg.tanh(X @ (W1 @ A)), compile="eager")
    a = rng.standard_normal((16, 4))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(whole(x, w1, a), np.tanh(x @ (w1 @ a)), rtol=1e-13)
    assert chunks == [256, 256]  # one call, BLAS on its own threads
    big = rg.vector("big")  # read whole by every chunk: too much to read 64 times
    shifted = rg.function([X, W1, b, W2, big], hidden + rg.sum(big), compile="eager")
    many = rng.standard_normal(N)
    np.testing.assert_allclose(shifted(x[8:], w1, bias, w2, many), want[8:] + np.sum(many),
                               rtol=1e-12)  # fmt: skip
    assert chunks[-1] is None
    M8 = rg.matrix("M8", "int8")  # integers wrap around in every chunk as in numpy
    wrapped = rg.function([I8, M8], (I8 @ M8) * 3, compile="eager")
    i8, m8 = (
        rng.integers(-128, 128, (N // 4, 8), np.int8),
        rng.integers(-128, 128, (8, 16), np.int8),
    )
    got8 = wrapped(i8, m8)
    assert got8.dtype == np.int8 and np.array_equal(got8, (i8 @ m8) * np.int8(3))
    assert chunks[-1] == 256 * 192 // (8 * 16)  # the budget above, over 8 x 16 per row


def test_products_too_wide_to_chunk_run_as_one_call(rng, threads, monkeypatch):
    """Squared distances from 2,048 rows to 2,000 points of 64 features: each row's
    product is 128,000 multiply-adds, so no chunk of rows keeps BLAS on one thread.
    The call runs whole, BLAS's threads computing the product (blocks would each start
    them and take turns), in the kernel and in the numpy tier, with numpy's values;
    the same function on 8 points runs on blocks in chunks."""
    blocks = []
    monkeypatch.setattr(tiers, "run_blocks", lambda *a: blocks.append(a[5]) or run_blocks(*a))
    distances = rg.sum(X * X, axis=1)[:, None] + rg.sum(Z * Z, axis=1)[None, :] - 2 * X @ Z.T
    x, z = rng.standard_normal((2048, 64)), rng.standard_normal((2000, 64))
    x[3, 5], x[9, 0], z[7, 1], x[11] = np.nan, np.inf, -np.inf, -0.0
    with np.errstate(all="ignore"):
        want = np.sum(x * x, axis=1)[:, None] + np.sum(z * z, axis=1)[None, :] - 2 * x @ z.T
    for compile in ("never", "eager"):
        f = rg.function([X, Z], distances, compile=compile)
        for _ in range(3):  # the first large call, the prange kernel's, the fast call's
            with np.errstate(all="ignore"):
                np.testing.assert_allclose(f(x, z), want, rtol=1e-12, atol=1e-9)
    assert blocks == []
    with np.errstate(all="ignore"):
        got = f(x, z[:8])
    np.testing.assert_allclose(got, want[:, :8], rtol=1e-12, atol=1e-9)
    assert blocks == [products.ONE_THREAD // (64 * 8)]
