"""A float matrix product that only elementwise regions read is computed a row at a
time inside them where its inner dimension is small (an RBF kernel, a distance
matrix), and by BLAS where it is wide: the values are numpy's either way, for every
path a call can take (serial, parallel, broadcasting), at the specials."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relgraph as rg
from relgraph.backends.numba.lowering import lower
from relgraph.backends.numba.products import SKINNY

pytestmark = pytest.mark.usefixtures("kernel_cache")

X, Y, Z = rg.matrix("X"), rg.matrix("Y"), rg.matrix("Z")
gamma = rg.scalar("gamma")


def rbf(x, y, g, xp):
    """sklearn's rbf_kernel through euclidean_distances, for relgraph and numpy."""
    xx = xp.sum(x * x, axis=1)[:, None]
    yy = xp.sum(y * y, axis=1)[None, :]
    return xp.exp(-g * xp.maximum(-2 * (x @ y.T) + xx + yy, 0))


def specials(a):
    """NaN, infinities and signed zeros in the first rows of ``a``."""
    flat = a.reshape(-1)
    with np.errstate(over="ignore"):  # 1e300 is inf in float32
        for i, v in enumerate([np.nan, np.inf, -np.inf, -0.0, 5e-324, 1e300][: flat.size]):
            flat[i * 7 % flat.size] = v
    return a


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("features", [0, 1, 8, SKINNY, SKINNY + 1, 40])
def test_rbf_kernel_matches_numpy_on_every_path(features, dtype, rng):
    """Serial and parallel kernels, large calls (on threads), empty and one-row
    inputs, non-contiguous operands, with the kernel's rows or BLAS's product."""
    x_, y_ = rg.matrix("x", dtype), rg.matrix("y", dtype)
    f = rg.function([x_, y_, gamma], rbf(x_, y_, gamma, rg), compile="eager")
    assert "kernels.product_row(" in f.source and not f.blas
    tolerance = 2e-5 if dtype == "float32" else 1e-12
    for rows, cols in ((0, 3), (1, 1), (7, 5), (3000, 40)):
        x = specials(rng.normal(size=(rows, features)).astype(dtype))
        y = rng.normal(size=(cols, 2 * features)).astype(dtype)[:, ::2]  # a strided view
        parallel = f.parallel_kernel(x, y.copy(), 0.5, np.empty((0, 0), np.float64))[0]
        with np.errstate(all="ignore"):
            want = rbf(x, y, np.float64(0.5), np)
            for got in (f(x, y, 0.5), parallel):
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("features", [3, 40])
def test_a_product_that_broadcasts_is_read_at_its_one_row_or_column(features, rng):
    """A product of one row (or one column) broadcasts against the region's other
    operands, in the general kernel; a call whose shapes do not broadcast runs the flat
    kernel.  Values as numpy's."""
    f = rg.function([X, Y, Z], rg.tanh(X @ Y) * Z, compile="eager")
    for xs, ys, zs in [((1, features), (features, 6), (5, 6)),  # one row
                       ((5, features), (features, 1), (5, 6)),  # one column
                       ((5, features), (features, 6), (5, 6))]:  # fmt: skip
        x, y, z = (rng.normal(size=s) for s in (xs, ys, zs))
        np.testing.assert_allclose(f(x, y, z), np.tanh(x @ y) * z, rtol=1e-13, atol=1e-15)


def test_a_call_with_a_small_inner_dimension_runs_no_blas_and_a_wide_one_does(rng):
    """Whether a call runs BLAS follows from its shapes: with 8 features the large call
    runs the parallel kernel (no BLAS threads to spin against its loops), with 40 the
    serial kernel on blocks of rows, as for any product BLAS computes."""
    f = rg.function([X, Y, gamma], rbf(X, Y, gamma, rg), compile="eager")
    small = rng.normal(size=(20_000, 8)), rng.normal(size=(50, 8))
    wide = rng.normal(size=(20_000, 40)), rng.normal(size=(50, 40))
    for _ in range(2):
        np.testing.assert_allclose(f(*small, 0.1), rbf(*small, 0.1, np), rtol=1e-12)
    assert f._last is not None and f._last[3] is False and f._parallel is not None
    np.testing.assert_allclose(f(*wide, 0.1), rbf(*wide, 0.1, np), rtol=1e-12)
    assert f._last[3] is True


def test_products_other_nodes_read_or_beside_blas_are_not_fused():
    """A product that is an output, that a reduction reads, or in a kernel that calls
    BLAS anyway (where it runs on one thread: BLAS's product on every core is faster)
    stays BLAS's."""
    fused = lower([X, Y], [rg.exp(X @ Y)])
    assert len(fused.fused) == 1 and "kernels.product_row(" in fused.source
    W1, b, W2 = rg.matrix("W1"), rg.vector("b"), rg.matrix("W2")
    for outputs in ([X @ Y], [rg.sum(X @ Y, axis=1)], [rg.tanh(X @ W1 + b) @ W2],
                    [rg.exp(X @ Y), X @ Y]):  # fmt: skip
        lowered = lower([X, Y, W1, b, W2], outputs)
        assert lowered.fused == () and "product_row" not in lowered.source


@pytest.mark.parametrize("features", [4, 40])
def test_fused_products_of_computed_operands_read_by_two_regions_and_into_out(features, rng):
    """A product of a computed matrix, read by two output regions (each computes its
    rows), written into the caller's ``out=`` arrays: numpy's values, and the caller's
    arrays hold them."""
    prod = rg.exp(X * 0.5) @ Y
    f = rg.function([X, Y, Z], [rg.tanh(prod) + Z, prod * Z], compile="eager")
    assert f.source.count("kernels.product_row(") == 4  # two regions, two loops each
    x, y = rng.normal(size=(300, features)), rng.normal(size=(features, 7))
    z = rng.normal(size=(300, 7))
    p = np.exp(x * 0.5) @ y
    outs = [np.empty((300, 7)), np.empty((300, 7))]
    got = f(x, y, z, out=outs)
    for g, o, want in zip(got, outs, [np.tanh(p) + z, p * z]):
        assert g is o
        np.testing.assert_allclose(g, want, rtol=1e-13, atol=1e-13)


# Products of these stay finite in any order of summation (BLAS's and the kernel's
# orders differ), except where an infinity or a NaN makes them not finite in both.
VALUES = [0.0, -0.0, 1.0, -2.5, 3e-3, 1e150, -1e150, 5e-324, -1e-310, np.inf, -np.inf, np.nan]
X32, Y32 = rg.matrix("x32", "float32"), rg.matrix("y32", "float32")
PROGRAMS = {
    "float64": (X, Y, rg.function([X, Y, Z], rg.exp(-(X @ Y.T)) * Z + rg.tanh(X @ Y.T))),
    "float32": (X32, Y32, rg.function([X32, Y32, Z], rg.exp(-(X32 @ Y32.T)) * Z)),
}


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(sorted(PROGRAMS)),
    rows=st.integers(0, 70),  # across a parallel block of 64 rows
    cols=st.integers(1, 9),
    features=st.sampled_from([0, 1, 3, 16, 17, 24]),
    data=st.data(),
)
def test_fused_products_agree_with_numpy_at_the_specials(dtype, rows, cols, features, data):
    """Drawn shapes on both sides of the inner-dimension threshold and values from
    the specials: the compiled program (the kernel's rows, or BLAS's product) gives
    numpy's values, NaN and infinities where numpy has them."""
    _, _, f = PROGRAMS[dtype]
    assert "kernels.product_row(" in f.source

    def draw(*shape):
        size = int(np.prod(shape))
        drawn = data.draw(st.lists(st.sampled_from(VALUES), min_size=size, max_size=size))
        return np.array(drawn, dtype=np.float64).reshape(shape)

    with np.errstate(all="ignore"):
        x, y = draw(rows, features).astype(dtype), draw(cols, features).astype(dtype)
        z = draw(rows, cols)
        p = x @ y.T
        want = np.exp(-p) * z + np.tanh(p) if dtype == "float64" else np.exp(-p) * z
        for got in (f(x, y, z), f.kernel(x, y, z, np.empty((0, 0)))[0]):
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_allclose(got, want, rtol=2e-5 if dtype == "float32" else 1e-12,
                                       atol=1e-300)  # fmt: skip
