"""Reductions along the last axis fuse with the elementwise region that feeds them:
row softmax, logsumexp and layer norm read their input at most three times and
allocate nothing of its size but the output; values match numpy at the specials."""

import re

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
    """How many 2-d arrays the kernel allocates (row results are columns: (rows, 1))."""
    shapes = re.findall(r"np\.empty\(\((\w+), (\w+)\)", source)
    return sum(1 for _, columns in shapes if columns != "1")


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


def test_softmax_reads_x_twice_and_allocates_only_its_output():
    x = rg.matrix("x")
    source = lower([x], [softmax(x)]).source
    assert full_size_arrays(source) == 1  # the output; exp(x - m) is never stored
    # pass 1: the row maxima; pass 2: the row sums of exp(x - m) and the quotients
    assert source.count("_acc = -np.inf") == 1 and source.count("kernels.lane_sum(") == 1
    assert "kernels.max_axis" not in source and "kernels.sum_axis" not in source


def test_softmax_divides_in_the_rows_of_its_sum_reading_exp_from_the_row_buffer():
    x = rg.matrix("x")
    source = lower([x], [softmax(x)], broadcast=False).source  # the loops without strides
    assert source.count("vecmath.exp(") == 1  # exp(x - m) once per element
    assert source.count("_buf[t4_j] / t2[") == 1 and "for i0 in" not in source  # no 3rd pass
    # a region of the row sums' shape (rows, 1) is not one: it stays a loop of its own
    lse = rg.log(rg.sum(rg.exp(x), axis=1, keepdims=True)) + 1.0
    assert "for i0 in" in lower([x], [lse]).source


def epilogue_cases(dtype="float64"):
    x, v = rg.matrix("x", dtype), rg.vector("v", dtype)
    c = rg.matrix("c", dtype, shape=(None, 1))
    shifted = x - rg.max(x, axis=1, keepdims=True)
    return {
        # exp(shifted) in the rows' buffer; the division by the column of sums
        "softmax": ([x], softmax(x)),
        # the operand is computed again (logsumexp maps the buffer in place)
        "log_softmax": ([x], shifted - rg.logsumexp(shifted, axis=1, keepdims=True)),
        "layer_norm": ([x], layer_norm(x)),
        # a vector and a column broadcast in both the reduction and the epilogue
        "broadcast": ([x, v, c], rg.exp(x * v + c) / rg.sum(rg.exp(x * v + c), axis=1,
                                                              keepdims=True)),
        # two outputs: the row sums themselves, and the region reading them
        "two_outputs": ([x], (rg.sum(x * x, axis=1, keepdims=True),
                              x / rg.sum(x * x, axis=1, keepdims=True))),
    }  # fmt: skip


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", sorted(epilogue_cases()))
def test_regions_in_the_rows_of_a_reduction_match_numpy(case, dtype, parallel, rng):
    inputs, outputs = epilogue_cases(dtype)[case]
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    source = lower(inputs, list(outputs), parallel=parallel).source
    assert "for i0 in" not in source  # the region ran in the rows
    a = (rng.standard_normal((7, 9)) * 3).astype(dtype)
    a[1, 2], a[2, :], a[3, 4], a[4, 0], a[5, :] = np.nan, -np.inf, np.inf, -0.0, 700.0
    args = [a, rng.standard_normal(9).astype(dtype), rng.standard_normal((7, 1)).astype(dtype)]
    values = dict(zip(inputs, args))
    f = rg.function(inputs, list(outputs), compile="eager")
    with np.errstate(all="ignore"):
        got = f(*args[: len(inputs)])
        for out, result in zip(outputs, got):
            expected = np.asarray(rg.evaluate(out, values), dtype=result.dtype)
            rtol = 1e-5 if dtype == "float32" else 1e-12
            np.testing.assert_allclose(result, expected, rtol=rtol, atol=1e-300)
    one_row = f(*(arg[:1] if arg.shape[0] == 7 else arg for arg in args[: len(inputs)]))
    assert all(r.shape[0] == 1 for r in one_row)


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("n", [1, 3, 4, 17, 2049])
def test_logsumexp_rows_run_a_block_of_rows_at_a_time(n, parallel, rng):
    """A row logsumexp maps a block of rows (2048 elements) in one loop: rows of every
    length, a last block that is not full, rows of NaN, +-inf and all -inf, and the
    region in its rows (log-softmax), as numpy computes them."""
    x = rg.matrix("x")
    shifted = x - rg.max(x, axis=1, keepdims=True)
    terms = [rg.logsumexp(x * 2.0, axis=1), shifted - rg.logsumexp(shifted, axis=1, keepdims=True)]
    source = lower([x], terms, parallel=parallel).source
    assert "_per = max(1, 2048 // max(" in source and source.count("vecmath.exp_term(") == 2
    f = rg.function([x], terms, compile="eager")
    for rows in (0, 1, 700, 1100):
        a = rng.standard_normal((rows, n)) * 300
        if rows:
            a[0, :], a[-1, 0], a[rows // 2, -1] = -np.inf, np.nan, np.inf
        with np.errstate(all="ignore"):
            got = f(a)
            for term, result in zip(terms, got):
                expected = rg.evaluate(term, {x: a})
                # rounding of the sums: log-softmax near 0 cancels (1 ulp of |x| ~ 1e3)
                np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["sum", "max", "logsumexp"])
def test_a_product_s_rows_are_reduced_in_a_row_loop(kind, rng):
    """``logsumexp(X @ W, axis=1)`` reads the product's rows in a row loop (the kernel
    over the product read each row again), with the region reading it back in its rows
    (log-softmax of a product), as numpy computes them."""
    X, W = rg.matrix("X"), rg.matrix("W")
    p = X @ W
    reduced = getattr(rg, kind)(p, axis=1, keepdims=True)
    terms = [p - reduced, getattr(rg, kind)(p, axis=1)]
    source = lower([X, W], terms).source
    assert f"kernels.{kind}_axis" not in source and "for i0 in" not in source
    f = rg.function([X, W], terms, compile="eager")
    x, w = rng.standard_normal((301, 4)) * 100, rng.standard_normal((4, 3))
    x[3, 1], x[7] = np.nan, np.inf
    with np.errstate(all="ignore"):
        for term, result in zip(terms, f(x, w)):
            expected = rg.evaluate(term, {X: x, W: w})
            np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("keepdims", [False, True])
def test_the_sum_of_a_matrix_region_is_folded_a_block_at_a_time(keepdims, parallel, rng):
    """``sum(x * v + 1)`` over every element: no array of the region's size, each block
    of rows folded at once and then the blocks' sums, for rows of any length (empty,
    1, longer than a block), a vector broadcast along the rows, and special values."""
    x, v = rg.matrix("x"), rg.vector("v")
    term = rg.sum(x * v + 1.0, keepdims=keepdims)
    source = lower([x, v], [term], parallel=parallel).source
    assert "kernels.sum_all" not in source and full_size_arrays(source) == 0
    f = rg.function([x, v], term, compile="eager")
    for shape in ((0, 5), (5, 0), (3000, 1), (700, 3), (3, 5000)):
        w = rng.standard_normal(shape[1])
        for special in (None, np.inf, np.nan, 1e308):
            a = rng.standard_normal(shape)
            if a.size and special is not None:
                a[-1, -1] = a[0, 0] = special
            with np.errstate(all="ignore"):
                want = rg.evaluate(term, {x: a, v: w})
                got = f(a, w)
            assert np.shape(got) == np.shape(want)
            np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("parallel", [False, True])
def test_the_sum_of_a_region_of_same_shape_leaves_folds_its_elements_in_one_run(parallel, rng):
    """Where every matrix the region reads has its shape and is C-contiguous, a block
    is one run of elements (a tall column as fast as a vector): the same values in the
    same order as row by row, so the same sum bit for bit; a row broadcast or a
    transposed view takes the rows."""
    x, y = rg.matrix("x"), rg.matrix("y")
    term = rg.sum(x * y + 1.0)
    source = lower([x, y], [term], parallel=parallel).source
    assert "_flat" in source and full_size_arrays(source) == 0
    f = rg.function([x, y], term, compile="eager")
    g = rg.function([x, y], rg.sum(x * y.T + 1.0), compile="eager")  # a view: by rows
    for shape in ((0, 3), (3, 0), (5000, 1), (1, 5000), (700, 3), (2049, 2)):
        a, b = rng.standard_normal(shape), rng.standard_normal(shape)
        if a.size:
            a[0, 0], b[-1, -1] = np.inf, 1e308
        row = b[:1] if shape[0] else b
        with np.errstate(all="ignore"):
            got, by_rows = f(a, np.broadcast_to(row, shape).copy()), f(a, row)
            np.testing.assert_allclose(got, np.sum(a * row + 1.0), rtol=1e-12)
            assert got == by_rows or (np.isnan(got) and np.isnan(by_rows))
            np.testing.assert_allclose(g(a, b.T.copy()), np.sum(a * b + 1.0), rtol=1e-12)


def test_a_region_reading_a_value_computed_after_the_rows_runs_after_it(rng):
    x, v = rg.matrix("x"), rg.vector("v")
    term = x / rg.sum(x, axis=1, keepdims=True) * rg.max(v)  # max(v) comes after the sums
    a, b = rng.standard_normal((4, 5)), rng.standard_normal(3)
    got = rg.function([x, v], term, compile="eager")(a, b)
    np.testing.assert_allclose(got, a / a.sum(1, keepdims=True) * b.max(), rtol=1e-12)


def test_a_region_reading_a_constant_matrix_of_other_rows_stays_a_loop_of_its_own(rng):
    x, c = rg.matrix("x"), np.arange(12.0).reshape(3, 4)
    term = x / rg.sum(x, axis=1, keepdims=True) * rg.Constant(c)  # 1 row of x: 3 out
    assert "for i0 in" in lower([x], [term]).source
    a = rng.random((1, 4)) + 0.5
    got = rg.function([x], term, compile="eager")(a)
    np.testing.assert_allclose(got, a / a.sum(1, keepdims=True) * c, rtol=1e-12)


def test_a_region_in_the_rows_writes_into_out(rng):
    x = rg.matrix("x")
    f = rg.function([x], softmax(x), compile="eager")
    a, out = rng.standard_normal((5, 6)), np.empty((5, 6))
    assert f(a, out=out) is out
    np.testing.assert_allclose(out, np.exp(a) / np.exp(a).sum(1, keepdims=True), rtol=1e-12)


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
    np.testing.assert_allclose(f(a), expected, rtol=1e-12)
    assert f._parallel is not None  # 180,000 elements, a second time: the prange kernel
    assert "prange((t" in lower([x], [softmax(x)], parallel=True).source  # chunks of rows


def test_short_rows_run_in_parallel_chunks_with_a_buffer_each(rng):
    """A prange loop folding each row on its own runs chunks of ROW_CHUNK rows, each
    allocating its row buffer once (rows of 8: one allocation per row was slower
    than the serial kernel), with the serial kernel's values bit for bit: row counts
    around a chunk's, an epilogue in the rows, special values."""
    x = rg.matrix("x")
    term = x / rg.sqrt(rg.sum(x * x, axis=1, keepdims=True))
    source = lower([x], [term], parallel=True).source
    body = source[source.index("prange(") :]
    assert "prange((t" in source and body.count("np.empty(") == 1
    f = rg.function([x], term, compile="eager")
    for rows in (1, 63, 64, 65, 70_001):
        a = rng.standard_normal((rows, 8))
        a[0, :2] = np.inf, np.nan
        with np.errstate(all="ignore"):
            got = f.parallel_kernel(a, np.empty_like(a))[0]
            serial = f.kernel(a, np.empty_like(a))[0]
            want = a / np.sqrt(np.sum(a * a, axis=1, keepdims=True))
        np.testing.assert_array_equal(got, serial)
        np.testing.assert_allclose(got, want, rtol=1e-13, equal_nan=True)


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


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("k", [1, 8, 16, 17])
def test_serial_kernel_products_agree_with_numpy_in_blocks_of_rows(k, dtype):
    """The serial kernel's matrix times vector (on blocks of rows, on threads, for a
    large call) is its own loop up to 16 columns and BLAS past it or for a transpose;
    NaN and inf propagate as in BLAS."""
    A, x, B = rg.matrix("A", dtype), rg.vector("x", dtype), rg.matrix("B", dtype)
    f = rg.function([A, x], rg.tanh(A @ x) + 1.0, compile="eager")
    transposed = rg.function([B, x], B.T @ x, compile="eager")
    assert f.rows is not None and "kernels.matvec(" in f.source
    rng = np.random.default_rng(k)
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    for rows in (5, 70_000):  # one call, then blocks of rows
        An, xn = rng.normal(size=(rows, k)).astype(dtype), rng.normal(size=k).astype(dtype)
        An[0, 0], An[-1, -1] = np.nan, np.inf
        Bn = rng.normal(size=(k, rows)).astype(dtype)
        for got, want in [(f(An, xn), np.tanh(An @ xn) + 1), (transposed(Bn, xn), Bn.T @ xn)]:
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


def test_a_product_is_written_into_the_output_its_region_computes(rng):
    """``x @ y.T`` read only by the output's region is computed into the output's
    buffer by BLAS and the region runs in place; where the buffer does not fit (the
    product broadcasts, or has another dtype) or another node reads the product, it
    gets an array of its own.  Values as numpy's."""
    X, Y, v = rg.matrix("X"), rg.matrix("Y"), rg.vector("v")
    distances = rg.sum(X * X, axis=1)[:, None] + rg.sum(Y * Y, axis=1)[None, :] - 2 * (X @ Y.T)
    f = rg.function([X, Y], distances, compile="eager")
    assert "np.dot(a0, t" in f.source  # BLAS into the output's buffer
    for rows in (7, 3000):  # one call, then blocks of rows
        x, y = rng.normal(size=(rows, 5)), rng.normal(size=(6, 5))
        x[0, 0], y[1, 1] = np.nan, np.inf
        want = np.sum(x * x, 1)[:, None] + np.sum(y * y, 1)[None, :] - 2 * (x @ y.T)
        np.testing.assert_allclose(f(x, y), want, rtol=1e-12, atol=1e-12, equal_nan=True)
    broadcast = rg.function([X, Y, v], rg.exp(X @ Y) + v[None, :], compile="eager")
    assert "np.dot(a0, a1, " in broadcast.source
    x, y, w = rng.normal(size=(3, 2)), rng.normal(size=(2, 1)), rng.normal(size=4)
    np.testing.assert_allclose(broadcast(x, y, w), np.exp(x @ y) + w[None, :], rtol=1e-13)
    two = rg.function([X, Y], rg.tanh(X @ Y) + Y @ X, compile="eager")  # one into the output
    assert two.source.count("kernels.disjoint(") == 2  # the second product only
    x, y = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    np.testing.assert_allclose(two(x, y), np.tanh(x @ y) + y @ x, rtol=1e-13)
    both = rg.function([X, Y], [rg.tanh(X @ Y), rg.sum(X @ Y, axis=1)], compile="eager")
    assert "np.dot(a0, a1, " not in both.source  # a reduction reads it too
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(3, 4))
    for got, want in zip(both(x, y), [np.tanh(x @ y), np.sum(x @ y, axis=1)]):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    X32, Y32, gamma = rg.matrix("X32", "float32"), rg.matrix("Y32", "float32"), rg.scalar("g")
    wider = rg.function([X32, Y32, gamma], rg.exp(-gamma * (X32 @ Y32.T)), compile="eager")
    assert "np.dot(a0, t" not in wider.source  # a float32 product, a float64 output
    x, y = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(4, 3)).astype(np.float32)
    want = np.exp(-np.float64(0.5) * (x @ y.T))
    got = wider(x, y, np.float64(0.5))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_disjoint_spans_of_memory():
    """The kernels' overlap test (a product is not written into an operand)."""
    from relgraph.backends.numba.kernels import disjoint

    a = np.zeros((4, 6))
    assert not disjoint(a, a[1:2]) and not disjoint(a[::-1], a[3])
    assert disjoint(a[:2], a[2:]) and disjoint(a[:, :0], a) and disjoint(a, np.zeros(3))
    assert not disjoint(a.T, a[2:, 5])


@pytest.mark.parametrize("where", [None, 0, 5, 17, 35, 36])
@pytest.mark.parametrize("n", [1, 8, 37])
def test_lane_max_and_min_match_numpy_with_a_nan_anywhere(where, n, rng):
    """The row loops' max and min (a vectorised loop over ``llvm.maximum``): NaN
    anywhere wins, as in numpy; infinities and signed zeros keep their values."""
    from relgraph.backends.numba import kernels

    for fill in (None, -np.inf, np.inf, -0.0):
        buf = rng.standard_normal(n) * 1e300 if fill is None else np.full(n, fill)
        buf[-1] = 0.0 if fill == -0.0 else buf[-1]
        if where is not None and where < n:
            buf[where] = np.nan
        for lane, reference, start in ((kernels.lane_max, np.max, -np.inf),
                                       (kernels.lane_min, np.min, np.inf)):  # fmt: skip
            got = lane(buf, n, start)
            assert got == reference(buf) or (np.isnan(got) and np.isnan(reference(buf)))
            assert lane(buf, 0, start) == start  # nothing to reduce: the start
    assert kernels.lane_max(np.array([1.0, 2.0], np.float32), 2, -np.inf) == 2.0


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_region_over_a_product_runs_in_place_a_row_at_a_time(dtype, rng):
    """A region that alone reads a product writes into the product's array (no second
    array of its size), and an output's region into the output's buffer; each row is
    computed into a row of its own first (or, for a fused product, the product's row
    is copied first), so that the loop vectorises.  Values as numpy's, with NaN and
    infinities, serial and parallel, on rows of any length."""
    X, W, V = (rg.matrix(n, dtype) for n in "XWV")
    b = rg.vector("b", dtype)
    hidden = rg.function([X, W, b, V], rg.tanh(X @ W + b) @ V, compile="eager")
    assert "    t5 = t4\n" in hidden.source and "t5_row = np.empty(" in hidden.source
    kernel = rg.function([X, W], rg.exp(-0.5 * (X @ W.T)) + rg.sum(W * W, axis=1)[None],
                         compile="eager")  # fmt: skip
    # its product's rows, computed or copied from BLAS's product in the output's buffer
    assert "np.dot(a0, t" in kernel.source and "kernels.row_copy(" in kernel.source
    assert "[None]" not in kernel.source  # a reshape: a contiguous layout
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    # features: the kernel's product rows (8), BLAS's product copied a row at a time (40)
    for rows, cols, k in ((1, 1, 8), (5, 3, 40), (300, 17, 8), (300, 17, 40), (0, 4, 8)):
        x = rng.normal(size=(rows, k)).astype(dtype)
        m, bias = rng.normal(size=(k, cols)).astype(dtype), rng.normal(size=cols).astype(dtype)
        v = rng.normal(size=(cols, 2)).astype(dtype)
        if rows > 1:
            x[0, 0], x[1, 1] = np.nan, np.inf
        with np.errstate(all="ignore"):
            want = np.tanh(x @ m + bias) @ v
            want_k = np.exp(-0.5 * (x @ m)) + np.sum(m.T * m.T, axis=1)[None]
            np.testing.assert_allclose(hidden(x, m, bias, v), want, rtol=tolerance, atol=tolerance)
            (got,) = hidden.parallel_kernel(x, m, bias, v, np.empty((0, 0), dtype))
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
            got = kernel(x, m.T.copy())
        assert got.dtype == want_k.dtype
        np.testing.assert_allclose(got, want_k, rtol=tolerance, atol=tolerance)


def test_new_axes_are_reshapes_with_numpy_values(rng):
    """``x[None]``, ``x[:, None]`` and ``x[None, :, None]`` lower to reshapes, which
    keep a contiguous layout (Numba's ``x[None]`` is any-layout, and loops reading it
    do not vectorise); a transposed operand is copied first.  Values as numpy's."""
    x, M = rg.vector("x"), rg.matrix("M", "int8")
    f = rg.function(
        [x, M], [rg.exp(x[None]) + 1.0, x[:, None] * x[None, :], x[None, :, None] * 2.0,
                 M.T[None] + M.T[:, None]],
        compile="eager",
    )  # fmt: skip
    assert "[None" not in f.source and ", None]" not in f.source
    v = np.array([np.nan, -np.inf, np.inf, -0.0, 1e308, 5e-324])
    m = rng.integers(-128, 128, (3, 2), dtype=np.int8)
    with np.errstate(all="ignore"):
        want = [np.exp(v[None]) + 1.0, v[:, None] * v[None, :], v[None, :, None] * 2.0,
                m.T[None] + m.T[:, None]]  # fmt: skip
        for got, w in zip(f(v, m), want):
            assert got.dtype == w.dtype and got.shape == w.shape
            np.testing.assert_allclose(got, w, rtol=1e-15)


def test_a_product_that_is_an_output_is_written_into_its_buffer(rng):
    """BLAS writes an output product into the output's buffer (planned by the caller,
    from memory earlier results gave back), on blocks of rows too; ``out=`` that is
    an operand is refused, naming it; each call's result is its own."""
    X, Y = rg.matrix("X"), rg.matrix("Y")
    f = rg.function([X, Y], X @ Y.T, compile="eager")
    assert f.out_slots == (0,) and "np.dot(a0, t2, t3)" in f.source
    for rows in (6, 70_000):  # one call, then blocks of rows
        x, y = rng.normal(size=(rows, 6)), rng.normal(size=(6, 6))
        x[0, 0], y[1, 1] = np.nan, np.inf
        with np.errstate(invalid="ignore"):
            want = x @ y.T
            first, second = f(x, y), f(x, y)
        assert first is not second and not np.shares_memory(first, second)
        np.testing.assert_allclose(first, want, rtol=1e-13, equal_nan=True)
        np.testing.assert_array_equal(first, second)
    x = rng.normal(size=(6, 6))
    kept, out = x.copy(), np.empty((6, 6))
    with pytest.raises(rg.TypeCheckError, match="out.0. shares memory with argument 'X'"):
        f(x, x, out=x)
    np.testing.assert_array_equal(x, kept)  # refused, nothing written
    assert f(x, x, out=out) is out
    np.testing.assert_allclose(out, x @ x.T, rtol=1e-13)


@pytest.mark.parametrize("parallel", [False, True])
def test_a_scalar_that_a_loop_reads_is_computed_once_before_it(parallel, rng):
    """``gammaln(nu / 2)`` of a scalar ``nu`` inside an elementwise loop: LLVM hoists
    no libm call, so the lowering computes it before the loop (a Student-t
    log-density per element was 4x slower than numpy with it inside)."""
    x, nu = rg.vector("x"), rg.scalar("nu")
    term = rg.gammaln((nu + 1.0) / 2.0) - rg.gammaln(nu / 2.0) - rg.log1p(x * x / nu)
    source = lower([x, nu], [term], parallel=parallel).source
    loop = source[source.index("range(") :]
    assert source.count("math.lgamma(") == 2 and "math.lgamma(" not in loop
    f = rg.function([x, nu], term, compile="eager")
    values = np.array([0.0, -0.0, 1.5, np.inf, -np.inf, np.nan, 5e-324, 1e308])
    for n in (3.0, 0.5, np.inf, -1.0, 0.0, np.nan):
        with np.errstate(all="ignore"):
            want = rg.evaluate(term, {x: values, nu: np.float64(n)})
            got = f(values, np.float64(n))
        np.testing.assert_allclose(got, want, rtol=1e-14, equal_nan=True)
    assert f(values[:0], np.float64(3.0)).shape == (0,)


def test_a_vector_that_a_matrix_loop_reads_is_computed_once_before_it(rng):
    """``log(w)`` of a vector beside a matrix: one ``log`` per element of ``w``, in a
    loop of its own, not one per element of the matrix (a Gaussian mixture's
    log-likelihood computed ``log(sigma)`` and ``log(w)`` for every row)."""
    X, w = rg.matrix("X"), rg.vector("w")
    term = rg.logsumexp(X * 2.0 - rg.log(w), axis=1)
    source = lower([X, w], [term]).source
    rows = source.index("_blocks):")  # the loop over blocks of rows
    assert "vecmath.log(" in source[:rows] and "vecmath.log(" not in source[rows:]
    f = rg.function([X, w], term, compile="eager")
    x = rng.normal(size=(9, 4)) * 300
    x[1, 2], x[3, 0], x[5] = np.nan, np.inf, -np.inf
    for v in ([0.5, 1.0, 2.0, 4.0], [0.0, -1.0, np.inf, 5e-324], [np.nan, 1.0, 1.0, 1.0]):
        with np.errstate(all="ignore"):
            want = rg.evaluate(term, {X: x, w: np.array(v)})
            got = f(x, np.array(v))
        np.testing.assert_allclose(got, want, rtol=1e-13, equal_nan=True)
