"""Reductions along every axis, compiled, against numpy: layouts (C, Fortran,
strided, transposed), keepdims, dtypes, NaN and infinities, empty and size-1 axes."""

import re
import warnings

import numpy as np
import pytest
from numba.core.errors import NumbaPerformanceWarning

import relgraph as rg
from relgraph.backends.numba.lowering import lower

KINDS = ["sum", "max", "min", "prod", "mean", "logsumexp"]


def layouts(rng, shape):
    base = rng.normal(size=shape) * 3
    base.flat[::7] = np.nan
    base.flat[3::11] = np.inf
    base.flat[5::13] = -np.inf
    return {
        "C": base,
        "F": np.asfortranarray(base),
        "strided": np.repeat(base, 2, axis=-1)[..., ::2],
        "transposed": np.ascontiguousarray(np.swapaxes(base, 0, -1)).swapaxes(0, -1),
    }


def agree(term, symbol, value):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's mean of an empty axis
        try:
            want = rg.evaluate(term, {symbol: value})
        except ValueError:
            with pytest.raises(ValueError):
                rg.function([symbol], term, compile="eager")(value)
            return
        got = rg.function([symbol], term, compile="eager")(value)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrices(kind, axis, keepdims, rng):
    M = rg.matrix("M")
    term = getattr(rg, kind)(M, axis=axis, keepdims=keepdims)
    for shape in ((9, 5), (1, 5), (9, 1), (0, 5), (5, 0)):
        for value in layouts(rng, shape).values():
            agree(term, M, value)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("axis", [(0,), (0, 1), (1, 2), (0, 2), (2,)])
def test_three_axes(kind, axis, rng):
    T = rg.tensor("T", ndim=3)
    for keepdims in (False, True):
        term = getattr(rg, kind)(T, axis=axis, keepdims=keepdims)
        for value in layouts(rng, (4, 3, 5)).values():
            agree(term, T, value)


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint16", "float32", "bool"])
def test_dtypes_accumulate_as_numpy(dtype, rng):
    M = rg.matrix("M", dtype)
    value = (rng.normal(size=(300, 7)) * 100).astype(dtype)
    for kind in ("sum", "max", "min", "prod", "mean"):
        term = getattr(rg, kind)(M, axis=0)
        want = rg.evaluate(term, {M: value})
        got = rg.function([M], term, compile="eager")(value)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == "float32" else 1e-12)


def test_both_keepdims_forms_reduce_once(rng):
    X = rg.matrix("X")
    scaled = (X - rg.mean(X, 0)) / rg.sqrt(rg.mean((X - rg.mean(X, 0, True)) ** 2, 0))
    f = rg.function([X], scaled, compile="eager")
    value = rng.normal(size=(200, 8))
    np.testing.assert_allclose(f(value), (value - value.mean(0)) / value.std(0), rtol=1e-12)
    # two column folds: the mean of X (its keepdims twin a reshape of it), the variance
    assert f.source.count("_part = np.empty(") == 2


@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod", "mean", "logsumexp"])
@pytest.mark.parametrize("rows", [0, 1, 7, 40_000])  # 40,000 x 3: the parallel kernel
def test_a_region_reduced_along_axis_0_is_one_pass(kind, rows, rng):
    X, v = rg.matrix("X"), rg.vector("v")
    region = rg.exp(X * 0.01) - v if kind != "prod" else 1.0 + X * 1e-6
    for keepdims in (False, True):
        term = getattr(rg, kind)(region, axis=0, keepdims=keepdims)
        f = rg.function([X, v], term, compile="eager")
        assert f"{kind}_axis" not in f.source  # folded in the loop, no array for the region
        x = rng.normal(size=(rows, 3)) * 10
        if rows > 2:
            x[1, 0], x[2, 1] = np.nan, np.inf
        for vv in (rng.normal(size=3), rng.normal(size=1)):  # v broadcast too
            agree_with(f, term, {X: x, v: vv})


_EXACT = ("sum", "prod", "mean")  # folds of any dtype; max, min, logsumexp: floats


@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod", "mean", "logsumexp"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "uint8", "int64", "bool"])
@pytest.mark.parametrize("rows", [0, 1, 7, 40_000])  # 40,000 x 3: the parallel kernel
def test_an_array_reduced_along_axis_0_is_a_column_loop(kind, dtype, rows, rng):
    if not dtype.startswith("float") and kind not in _EXACT:
        pytest.skip("max, min and logsumexp of integers go to the kernels module")
    X = rg.matrix("X", dtype)
    x = (rng.normal(size=(rows, 3)) * 40).astype(dtype)
    if rows > 2 and dtype.startswith("float"):
        x[1, 0], x[2, 1], x[0, 2] = np.nan, np.inf, -0.0
    for keepdims in (False, True):
        term = getattr(rg, kind)(X, axis=0, keepdims=keepdims)
        f = rg.function([X], term, compile="eager")
        assert f"{kind}_axis" not in f.source  # one pass over X in memory order
        # float32 sums of 40,000 values: blocks add in another order than numpy's rows
        agree_with(f, term, {X: x}, rtol=1e-4 if dtype == "float32" else 1e-11)


@pytest.mark.parametrize("axis", [None, 0])
def test_a_product_that_reaches_zero_stays_zero_as_in_numpy(axis):
    """numpy multiplies in order: after a 0, values that overflow leave it 0.  Parallel
    chunks or blocks would give 0 * inf = nan."""
    x = np.full(100_000, 40.0)
    x[0] = -0.0
    m = rg.vector("m") if axis is None else rg.matrix("m")
    value = x if axis is None else x.reshape(-1, 4)
    f = rg.function([m], rg.prod(m, axis=axis), compile="eager")
    with np.errstate(over="ignore"):
        want = np.prod(value, axis=axis)
    np.testing.assert_array_equal(f(value), want)
    assert np.all(np.signbit(f(value)) == np.signbit(want))


def agree_with(f, term, values, rtol=1e-11):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # Numba warns when a prange kernel ends up with nothing parallel in it
        warnings.simplefilter("error", NumbaPerformanceWarning)
        try:
            want = rg.evaluate(term, values)
        except ValueError:
            with pytest.raises(ValueError):
                f(*values.values())
            return
        got = f(*values.values())
    assert got.shape == want.shape and got.dtype == want.dtype
    # sums add in another order than numpy's pairwise sum: rounding, relative to the
    # operands (x - mean(x) cancels to far below them)
    scale = max(1.0, float(np.max(np.abs(want[np.isfinite(want)]), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol / 10 * scale, equal_nan=True)


def test_integer_regions_fold_in_the_result_dtype(rng):
    X = rg.matrix("X", "int8")
    term = rg.sum(X * 3, axis=0)  # int8 products wrap; the sum is int64, as numpy
    x = rng.integers(-128, 127, size=(5000, 4)).astype(np.int8)
    got = rg.function([X], term, compile="eager")(x)
    np.testing.assert_array_equal(got, np.sum(x * np.int8(3), axis=0))


@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod", "mean", "logsumexp"])
def test_column_loops_in_the_parallel_kernel(kind, rng):
    """``x - reduce(x, 0)`` needs every row before any output row: the prange kernel."""
    X = rg.matrix("X")
    region = rg.exp(X * 0.01) if kind != "prod" else 1.0 + X * 1e-6
    term = region - getattr(rg, kind)(region, axis=0, keepdims=True)
    f = rg.function([X], term, compile="eager")
    assert f.rows is None  # no split into row blocks: the parallel kernel runs it
    x = rng.normal(size=(40_000, 3)) * 10
    x[1, 0], x[2, 1] = np.nan, np.inf
    agree_with(f, term, {X: x})


@pytest.mark.parametrize("kind", ["sum", "max", "min", "mean", "logsumexp"])
def test_vector_chunks_in_the_parallel_kernel(kind, rng):
    """A vector's reduction runs in parallel chunks (but logsumexp's two passes), each
    chunk's operands read as slices from 0: shifted and strided views, a length that
    ends a chunk early, a broadcast operand (read at its stride), specials."""
    x, s = rg.vector("x"), rg.vector("s")
    shifted = getattr(rg, kind)(x[1:] * x[:-1] + s)
    f = rg.function([x, s], shifted, compile="eager")
    base = rng.normal(size=2 * (40 * 4096 + 7)) * 5
    base[[3, 9000]] = np.nan, np.inf
    for value in (base, base[::2], base[:4097]):
        for offset in (np.full(1, 0.5), rng.normal(size=value.size - 1)):
            agree_with(f, shifted, {x: value, s: offset})
    assert f._parallel is not None
    source = lower([x, s], [shifted], parallel=True).source
    if kind != "logsumexp":  # two passes over the vector: one chunk
        assert re.search(r"(\w+)_c = \1\[(\w+)_lo:\2_hi\]", source)  # a chunk, as a slice


@pytest.mark.parametrize("kind", KINDS)
def test_a_strided_line_is_reduced_in_place(kind, rng):
    """The kernels reduce each line of a matrix's rows as a 1-d view: no copy per line
    (a copy per row of 4 made ``logsumexp(X @ W, axis=1)`` four times slower), and
    numpy's values over a product's rows."""
    from numba import njit

    from relgraph.backends.numba.reduce_kernels import elements

    x = rng.normal(size=12)
    assert np.shares_memory(njit(lambda a: elements(a))(x[::3]), x)
    X, W = rg.matrix("X"), rg.matrix("W")
    x, w = rng.normal(size=(50, 4)) * 30, rng.normal(size=(4, 4))
    x[3, 1], x[7, 2] = np.nan, np.inf
    term = getattr(rg, kind)(X @ W, axis=1)
    with np.errstate(all="ignore"):
        got = rg.function([X, W], term, compile="eager")(x, w)
        want = rg.evaluate(term, {X: x, W: w})
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_arg_reductions_give_numpys_first_index(kind, rng):
    """argmax and argmin along either axis of a matrix (and of a 3-d array, reshaped
    to one), every layout: lines shorter than ``ARG_SHORT`` compared in blocks of
    ``ARG_BLOCK`` lines (one block, several, a part of one), longer lines and lines
    across memory.  The first best wins; NaN wins over anything, inf and ties as
    numpy; small ints, bool and float32 as numpy; an empty axis raises."""
    from relgraph.backends.numba.reduce_kernels import ARG_BLOCK, ARG_SHORT

    M, T = rg.matrix("M"), rg.tensor("T", ndim=3)
    fn = getattr(rg, kind)
    terms = [fn(M, axis=a, keepdims=k) for a in (0, 1, -1) for k in (False, True)]
    terms.append(fn(M))
    for rows, cols in ((9, 5), (1, 5), (9, 1), (0, 5), (5, 0), (2 * ARG_BLOCK + 3, 4),
                       (7, ARG_SHORT), (7, ARG_SHORT - 1), (3, 40)):  # fmt: skip
        for value in layouts(rng, (rows, cols)).values():
            value = np.round(value)  # ties
            for term in terms:
                agree(term, M, value)
    for dtype in ("int8", "uint8", "bool", "float32"):
        value = (rng.normal(size=(300, 6)) * 200).astype(dtype)
        for term in terms:
            agree(term, M, value)
    for axis in (0, 1, 2):
        for value in layouts(rng, (4, 3, 5)).values():
            agree(fn(T, axis=axis), T, value)
    signed = np.array([[0.0, -0.0, 1e-310, -np.inf], [np.nan, np.inf, np.nan, 1.0]])
    for term in terms:
        agree(term, M, signed)


@pytest.mark.parametrize("kind", KINDS)
def test_a_region_reduced_over_its_trailing_axes_is_one_loop(kind, rng):
    """``einsum("ij,jk,ik->i", x, A, x)`` is the sum over the last two axes of
    ``x[:, :, None] * A * x[:, None, :]``: each row's elements go to a buffer in the
    region's own loops (no (n, 8, 8) array), serial and in parallel blocks; numpy's
    values with keepdims, broadcast and strided operands, 4-d regions, empty and
    size-1 axes, NaN and infinities; float32 in float32."""
    x, A = rg.matrix("x"), rg.matrix("A")
    reduce = getattr(rg, kind)
    product = x[:, :, None] * A * x[:, None, :]
    terms = [reduce(product, axis=(1, 2)), reduce(product, axis=(-1, 1), keepdims=True)]
    for term in terms:
        source = lower([x, A], [term]).source
        assert not re.search(r"np\.empty\(\(\w+, \w+, \w+\)", source)  # no (n, 8, 8) array
        f = rg.function([x, A], term, compile="eager")
        for rows, cols in ((50, 8), (1, 3), (3, 1), (0, 4), (4, 0), (600, 4)):
            xv, av = rng.normal(size=(rows, cols)) * 3, rng.normal(size=(cols, cols))
            if xv.size > 5:
                xv[2, 0], xv[-1, -1] = np.nan, np.inf
            for value in (xv, np.asfortranarray(xv), np.repeat(xv, 2, axis=1)[:, ::2]):
                agree_with(f, term, {x: value, A: av})
            agree_with(f, term, {x: xv, A: av[:1]})  # A broadcast along its first axis
        assert "prange" in lower([x, A], [term], parallel=True).source
        big = rng.normal(size=(40_000, 8))  # the parallel kernel, or blocks of rows
        agree_with(f, term, {x: big, A: rng.normal(size=(8, 8))})
    T = rg.tensor("T", ndim=4)
    four = reduce(rg.exp(T) - 1.0, axis=(1, 2, 3))
    agree_with(rg.function([T], four, compile="eager"), four, {T: rng.normal(size=(5, 2, 3, 4))})
    x32 = rg.matrix("x32", "float32")
    single = reduce(x32[:, :, None] * x32[:, None, :], axis=(1, 2))
    f = rg.function([x32], single, compile="eager")
    value = rng.normal(size=(20, 5)).astype(np.float32)
    got, want = f(value), rg.evaluate(single, {x32: value})
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5)
