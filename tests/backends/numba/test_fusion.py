"""Reductions along the last axis fuse with the elementwise region that feeds them:
row softmax, logsumexp and layer norm read their input at most three times and
allocate nothing of its size but the output; values match numpy at the specials."""

import numpy as np
import pytest

import relgraph as rg
from relgraph.backends.numba.lowering import lower

pytestmark = pytest.mark.usefixtures("kernel_cache")


def softmax(x):
    e = rg.exp(x - rg.max(x, axis=1, keepdims=True))
    return e / rg.sum(e, axis=1, keepdims=True)


def layer_norm(x):
    mu = rg.mean(x, axis=1, keepdims=True)
    var = rg.mean((x - mu) ** 2, axis=1, keepdims=True)
    return (x - mu) / rg.sqrt(var + 1e-5)


def full_size_arrays(source: str) -> int:
    """How many 2-d arrays the kernel allocates (row results are 1-d)."""
    return sum(1 for line in source.splitlines() if "np.empty((" in line and "_n1)" in line)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    "build, reference",
    [
        (softmax, lambda a: np.exp(a - a.max(1, keepdims=True))
         / np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True)),
        (layer_norm, lambda a: (a - a.mean(1, keepdims=True))
         / np.sqrt(((a - a.mean(1, keepdims=True)) ** 2).mean(1, keepdims=True) + 1e-5)),
        (lambda x: rg.logsumexp(x * 2.0, axis=1), None),
        (lambda x: rg.max(rg.abs(x), axis=-1) + rg.min(x + 1.0, axis=1), lambda a:
         np.abs(a).max(-1) + (a + 1.0).min(1)),
        (lambda x: rg.prod(x * 0.5, axis=1, keepdims=True) - rg.sum(x[0] * 2.0, axis=0),
         lambda a: (a * 0.5).prod(1, keepdims=True) - (a[0] * 2.0).sum(0)),
    ],
    ids=["softmax", "layer_norm", "logsumexp", "max_min", "prod_keepdims"],
)  # fmt: skip
def test_fused_reductions_match_numpy(build, reference, dtype, rng):
    from scipy.special import logsumexp

    x = rg.matrix("x", dtype)
    a = (rng.standard_normal((7, 9)) * 3).astype(dtype)
    a[1, 2], a[2, :], a[3, 4], a[4, 0] = np.nan, -np.inf, np.inf, -0.0
    a[5, :] = 700.0
    reference = reference or (lambda a: logsumexp(a * np.asarray(2.0, a.dtype), axis=1))
    term = build(x)
    with np.errstate(all="ignore"):
        expected = np.asarray(reference(a)).astype(rg.typeof(term).dtype)
        got = rg.function([x], term, compile="eager")(a)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=0)


def test_softmax_reads_x_three_times_and_allocates_only_its_output():
    x = rg.matrix("x")
    source = lower([x], [softmax(x)]).source
    assert full_size_arrays(source) == 1  # the output; exp(x - m) is never stored
    # pass 1: the row maxima; pass 2: the row sums of exp(x - m), each in a row loop
    assert source.count("_acc = -np.inf") == 1 and source.count("kernels.lane_sum(") == 1
    assert "kernels.max_axis" not in source and "kernels.sum_axis" not in source


def test_empty_rows_raise_as_numpy_does():
    x = rg.matrix("x")
    f = rg.function([x], rg.max(x * 2.0, axis=1), compile="eager")
    with pytest.raises(ValueError, match="zero-size array"):
        f(np.zeros((3, 0)))
    assert rg.function([x], rg.sum(x * 2.0, axis=1), compile="eager")(
        np.zeros((3, 0))
    ).tolist() == [0, 0, 0]


def test_large_inputs_run_the_rows_in_parallel(rng):
    x = rg.matrix("x")
    a = rng.standard_normal((600, 300))
    f = rg.function([x], softmax(x), compile="eager")
    expected = np.exp(a - a.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(f(a), expected, rtol=1e-12)
    assert "prange(t" in lower([x], [softmax(x)], parallel=True).source


@pytest.mark.parametrize("k", [1, 3, 16, 17])
def test_parallel_kernel_skinny_products_agree_with_numpy(k):
    """A matrix with a small side times a vector runs in the parallel kernel's own
    loop (rows, or blocks of rows' partial sums for the transposed matrix); BLAS past
    the limit."""
    A, x = rg.matrix("A"), rg.vector("x")
    outputs = [A @ x, A.T @ rg.tanh(A @ x), rg.transpose(A[:k]) @ x]
    assert "prange(a0.shape[0])" in lower([A, x], outputs, parallel=True).source
    rng = np.random.default_rng(k)
    An, xn = rng.normal(size=(70_000, k)), rng.normal(size=k)
    f = rg.function([A, x], outputs, compile="eager")
    got = f(An, xn)  # 70,000 rows: the parallel kernel
    want = [An @ xn, An.T @ np.tanh(An @ xn), An[:k].T @ xn]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-11)
