"""rg.function and rg.jit on dask arrays: one task per chunk per fused region.

Chunking must not change a result: elementwise regions run the same kernel per
chunk as on the whole array, so they are compared bit for bit (NaN where NaN);
reductions combine partial results and are compared to numpy's.
"""

import pickle

import numpy as np
import pytest
from hypothesis import assume, given, reject, settings, strategies as st

import relgraph as rg
from relgraph.backends.dask.chunked import ChunkKernel
from relgraph.backends.numba import kernel_cache
from relgraph.backends.numba.lowering import LoweringError

da = pytest.importorskip("dask.array")

SPECIAL = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 5e-324, 1e308, -1e308, 700.0, 1e-300]


def chunked(a, chunks):
    return da.from_array(a, chunks=chunks)


def layers(result) -> list[str]:
    return [name.split("-")[0] for name in result.dask.layers]


def test_elementwise_is_one_blockwise_layer(rng):
    x, y, z = (rg.vector(n) for n in "xyz")
    f = rg.function([x, y, z], rg.exp(x) * y + rg.log1p(z * z) - x / y, compile="eager")
    xs = [rng.random(10_000) + 0.5 for _ in range(3)]
    out = f(*(chunked(a, 2_500) for a in xs))
    assert isinstance(out, da.Array) and out.dtype == np.float64
    # three input layers and one region: 4 chunks each, one task per chunk
    assert len(out.dask.layers) == 4 and len(out.dask) == 16
    assert layers(out).count("relgraph") == 1
    np.testing.assert_array_equal(out.compute(), f(*xs))


def test_broadcasting_and_rechunking_follow_dask(rng):
    M, v, s = rg.matrix("M"), rg.vector("v"), rg.scalar("s")
    f = rg.function([M, v, s], rg.tanh(M * v) + s, compile="eager")
    m, vv = rng.standard_normal((60, 50)), rng.standard_normal(50)
    out = f(chunked(m, (20, 25)), chunked(vv, 10), 2.0)  # v's chunks differ from M's
    assert out.shape == (60, 50)
    np.testing.assert_array_equal(out.compute(), f(m, vv, 2.0))
    col = rg.function([M, rg.matrix("C")], M - rg.matrix("C"), compile="eager")
    c = rng.standard_normal((60, 1))  # a size-1 axis broadcasts across M's chunks
    np.testing.assert_array_equal(col(chunked(m, (20, 25)), chunked(c, (30, 1))).compute(), m - c)


def test_numpy_and_dask_arguments_mix(rng):
    x, y = rg.vector("x"), rg.vector("y")
    f = rg.function([x, y], x * y + 1.0, compile="eager")
    a, b = rng.random(100), rng.random(100)
    out = f(chunked(a, 30), b)
    assert isinstance(out, da.Array)
    np.testing.assert_array_equal(out.compute(), a * b + 1.0)


@pytest.mark.parametrize("name", ["sum", "max", "min", "prod", "mean", "logsumexp"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_combine_partial_results(rng, name, axis, keepdims):
    M = rg.matrix("M")
    f = rg.function(
        [M],
        getattr(rg, name)(rg.exp(M * 0.01) - 0.5, axis=axis, keepdims=keepdims),
        compile="eager",
    )
    m = rng.standard_normal((90, 70))
    out = f(chunked(m, (20, 30)))
    assert isinstance(out, da.Array)
    want = f(m)
    assert out.shape == np.shape(want) and out.dtype == want.dtype
    np.testing.assert_allclose(out.compute(), want, rtol=1e-12)
    # one kernel layer: the reduction runs inside the region's kernel, per chunk
    (kernel,) = [n for n in out.dask.layers if n.startswith("relgraph-")]
    assert kernel.startswith(f"relgraph-{'sum' if name == 'mean' else name}-")


def test_logsumexp_stays_stable_and_keeps_infinities():
    M = rg.matrix("M")
    f = rg.function([M], rg.logsumexp(M, axis=1), compile="eager")
    m = np.array([[1000.0, 1000.0, -1000.0, 999.0], [-np.inf] * 4, [0.0, np.inf, 1.0, 2.0],
                  [np.nan, 0.0, 1.0, 2.0], [-800.0, -801.0, -np.inf, -802.0]])  # fmt: skip
    out = f(chunked(m, (2, 1))).compute()
    np.testing.assert_allclose(out, f(m), rtol=1e-14)
    assert out[1] == -np.inf and out[2] == np.inf and np.isnan(out[3])
    assert np.isfinite(out[0]) and np.isfinite(out[4])


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "bool"])
def test_integer_reductions_wrap_as_numpy_does(dtype):
    x = rg.vector("x", dtype)
    values = (np.arange(1, 200) * 37 % 256).astype(dtype)
    for op in (rg.sum, rg.prod, rg.max, rg.min, rg.mean):
        f = rg.function([x], op(x), compile="eager")
        out = f(chunked(values, 17)).compute()
        want = f(values)
        assert out.dtype == want.dtype, op.name
        if op is rg.mean:
            np.testing.assert_allclose(out, want, rtol=1e-12)
        else:
            assert out == want, op.name


def test_row_softmax(rng):
    M = rg.matrix("M")
    e = rg.exp(M - rg.max(M, axis=1, keepdims=True))
    f = rg.function([M], e / rg.sum(e, axis=1, keepdims=True), compile="eager")
    m = rng.standard_normal((200, 300)) * 50
    out = f(chunked(m, (50, 100)))
    np.testing.assert_allclose(out.compute(), f(m), rtol=1e-12)
    np.testing.assert_allclose(out.sum(axis=1).compute(), 1.0)


def test_products_use_dasks_blocked_matmul(rng):
    A, B, v = rg.matrix("A"), rg.matrix("B"), rg.vector("v")
    f = rg.function([A, B, v], rg.exp(A @ B) @ v + 1.0, compile="eager")
    a, b, vv = rng.random((40, 30)), rng.random((30, 20)) / 30, rng.random(20)
    out = f(chunked(a, (10, 15)), chunked(b, (15, 10)), chunked(vv, 10))
    assert any("dot" in n or "tensordot" in n for n in out.dask.layers)
    np.testing.assert_allclose(out.compute(), f(a, b, vv), rtol=1e-12)
    T = rg.tensor("T", ndim=3)
    g = rg.function([T, B], T @ B, compile="eager")
    t = rng.random((4, 40, 30))
    np.testing.assert_allclose(g(chunked(t, (2, 20, 15)), chunked(b, (15, 10))).compute(), t @ b)


def test_shape_ops_and_indexing_stay_lazy(rng):
    M, x, y = rg.matrix("M"), rg.vector("x"), rg.vector("y")
    cases = [
        ([M], rg.transpose(M)[1:, ::2] * 2.0),
        ([M], rg.reshape(M, (-1,)) + 1.0),
        ([x, y], rg.concatenate([x, y * 2.0])),
        ([x, y], rg.stack([x, y]) - 1.0),
        ([x], rg.expand_dims(x, 0) + rg.broadcast_to(x, (3, 12))),
        ([M], rg.squeeze(M[:, 0:1], 1) * M[0]),
    ]
    m, xs, ys = rng.random((12, 12)), rng.random(12), rng.random(12)
    values = {M: m, x: xs, y: ys}
    for inputs, term in cases:
        f = rg.function(inputs, term, compile="eager")
        args = [values[s] for s in inputs]
        out = f(*(chunked(a, 5) for a in args))
        assert isinstance(out, da.Array), term
        np.testing.assert_array_equal(out.compute(), f(*args))


def test_several_outputs(rng):
    x = rg.vector("x")
    f = rg.function([x], [rg.sum(x * x), rg.exp(x), x + 1.0], compile="eager")
    xs = rng.random(50)
    outs = f(chunked(xs, 7))
    assert len(outs) == 3 and all(isinstance(o, da.Array) for o in outs)
    for got, want in zip(da.compute(*outs), f(xs)):
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_bad_arguments_are_named_before_any_work(rng):
    x, A = rg.vector("x"), rg.matrix("A", shape=(None, 3))
    f = rg.function([x], rg.exp(x), compile="eager")
    with pytest.raises(rg.TypeCheckError, match="'x' must be 1-d"):
        f(chunked(rng.random((4, 4)), 2))
    with pytest.raises(rg.TypeCheckError, match="cannot safely cast float64"):
        rg.function([rg.vector("i", "int32")], rg.vector("i", "int32") + 1, compile="eager")(
            chunked(np.ones(4), 2)
        )
    with pytest.raises(rg.TypeCheckError, match="axis 1 is 4"):
        rg.function([A], A * 2.0, compile="eager")(chunked(np.ones((2, 4)), 2))
    y = rg.vector("y")
    g = rg.function([x, y], x + y, compile="eager")
    with pytest.raises(rg.TypeCheckError, match="shapes do not fit"):
        g(chunked(np.ones(4), 2), chunked(np.ones(5), 2))
    with pytest.raises(TypeError, match="expected 2 arguments"):
        g(chunked(np.ones(4), 2))
    with pytest.raises(TypeError, match="out= takes numpy arrays"):
        f(chunked(np.ones(4), 2), out=np.empty(4))


def test_jit_takes_dask_arrays_without_computing_them(rng):
    @rg.jit(compile="eager")
    def f(x, y):
        return np.exp(x) * y + np.log1p(y * y) - x / y

    xs, ys = rng.random(1_000) + 0.5, rng.random(1_000) + 0.5
    dx, dy = chunked(xs, 250), chunked(ys, 250)
    out = f(dx, dy)
    assert isinstance(out, da.Array)
    np.testing.assert_array_equal(out.compute(), f(xs, ys))


def test_a_chunk_kernel_pickles_as_its_term():
    x = rg.vector("in0")
    kernel = ChunkKernel((x,), rg.exp(x) + 1.0)
    blob = pickle.dumps(kernel)
    assert len(blob) < 2_000 and b"numba" not in blob.lower()
    again = pickle.loads(blob)
    want = rg.function([x], rg.exp(x) + 1.0, compile="eager")(np.arange(3.0))
    np.testing.assert_array_equal(again(np.arange(3.0)), want)


def test_workers_compile_each_region_once(dask_client, rng):
    x, y = rg.vector("x"), rg.vector("y")
    f = rg.function([x, y], rg.sqrt(x * x + y * y) + rg.sum(rg.exp(-x)), compile="eager")
    xs, ys = rng.random(40_000), rng.random(40_000)
    out = f(chunked(xs, 1_000), chunked(ys, 1_000))  # 40 chunks, two regions
    np.testing.assert_allclose(out.compute(), f(xs, ys), rtol=1e-12)

    def compiled() -> int:
        return len(kernel_cache._KERNELS)

    first = dask_client.run(compiled)
    assert len(first) == 2 and all(1 <= n <= 2 for n in first.values()), first
    np.testing.assert_allclose(f(chunked(xs, 500), chunked(ys, 500)).compute(), f(xs, ys))
    assert dask_client.run(compiled) == first  # more chunks, no new kernel


DTYPES = ["float64", "float32", "int8", "uint8", "int16", "int32", "int64", "bool"]


@st.composite
def elementwise(draw):
    dx, dy = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    x, y = rg.vector("x", dx), rg.vector("y", dy)
    binary = [rg.add, rg.mul, rg.sub, rg.maximum, lambda a, b: rg.where(a > b, a, b)]
    try:  # numpy refuses some dtypes (bool - bool, -bool): so do terms
        t = draw(st.sampled_from(binary))(x, y)
        for _ in range(draw(st.integers(0, 3))):
            f = draw(st.sampled_from([rg.exp, rg.log1p, rg.abs, rg.sqrt, rg.neg, rg.square]))
            t = f(t) if draw(st.booleans()) else f(t) * x
    except rg.TypeCheckError:
        reject()
    return x, y, t


@settings(max_examples=40)  # each program compiles a kernel
@given(elementwise(), st.data())
def test_chunking_never_changes_an_elementwise_result(program, data):
    x, y, t = program
    n = data.draw(st.integers(1, 12))
    values = [
        np.array(data.draw(st.lists(st.sampled_from(SPECIAL), min_size=n, max_size=n)))
        for _ in range(2)
    ]
    with np.errstate(all="ignore"):
        args = [v.astype(s.type.dtype) for v, s in zip(values, (x, y))]
    try:
        f = rg.function([x, y], t, compile="eager")  # chunks and whole: one kernel
    except LoweringError:  # a float16 result (exp of int8): compiled kernels refuse it
        assume(False)
    chunks = data.draw(st.integers(1, n))
    with np.errstate(all="ignore"):
        got = f(*(chunked(a, chunks) for a in args)).compute()
        want = f(*args)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_a_float16_program_runs_its_chunks_with_numpy_and_says_so():
    """numpy computes sqrt of uint8 and exp of int8 in float16, which compiled kernels
    lack: on dask arrays the chunks run with numpy (as the numpy tier does on numpy
    arrays), with numpy's values and dtype, and a warning says so."""
    u, i = rg.vector("u", "uint8"), rg.vector("i", "int8")
    f = rg.function([u, i], [rg.sqrt(u) * 2, rg.exp(i) + u])
    a = np.arange(0, 250, dtype=np.uint8)
    b = np.arange(-125, 125, dtype=np.int8)
    with pytest.warns(RuntimeWarning, match="run with numpy"), np.errstate(over="ignore"):
        got = [r.compute() for r in f(chunked(a, 64), chunked(b, 64))]
        want = [np.sqrt(a) * 2, np.exp(b) + a]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.float16
        np.testing.assert_array_equal(g, w)


def test_medians_along_an_axis_are_dasks_and_quantiles_say_why_not(rng):
    x = rg.matrix("x")
    value = rng.normal(size=(40, 6))
    value[3, 2] = np.nan
    chunked = da.from_array(value, chunks=(10, 3))
    for term, expected in [
        (rg.median(x, 1) + 1.0, np.median(value, 1) + 1.0),
        (rg.nanmedian(x, 0, True) * 2.0, np.nanmedian(value, 0, keepdims=True) * 2.0),
    ]:
        out = rg.function([x], term, compile="eager")(chunked)
        assert isinstance(out, da.Array)
        np.testing.assert_array_equal(out.compute(), expected)
    with pytest.raises(rg.UnsupportedError, match="quantile has no form on dask arrays"):
        rg.function([x], rg.quantile(x, 0.3, 1), compile="eager")(chunked)
