"""The sorting network that sorts many short rows at once, against numpy's sort.

The network itself is checked by the 0-1 principle (a network of compare-exchanges
sorts every input if it sorts every input of zeros and ones); the kernels that use it
(sort, median, quantile of rows) on every dtype with keys, on NaN, infinities, signed
zeros and subnormals, with row counts around a block's and lengths around the
longest, serial and parallel.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from relgraph.backends.numba import order_kernels as ok
from relgraph.backends.numba.sort_network import FEWEST, LANES, LONGEST, network

DTYPES = [np.float64, np.float32, np.int8, np.uint8, np.int16, np.int64, np.uint64, np.bool_]
SPECIALS = [np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 5e-324, -5e-324, 1e308, -1e308]


@pytest.mark.parametrize("n", range(1, 14))
def test_the_network_sorts_every_row_of_zeros_and_ones(n):
    rows = np.array(list(itertools.product([0, 1], repeat=n)), np.int8)
    for i, j in network(n):
        assert 0 <= i < j < n
        lo, hi = np.minimum(rows[:, i], rows[:, j]), np.maximum(rows[:, i], rows[:, j])
        rows[:, i], rows[:, j] = lo, hi
    assert (np.diff(rows, axis=1) >= 0).all()


def test_the_network_has_no_compare_exchange_past_the_row():
    # a row of 100 needs fewer than the 128's 1471 (those touching the padding go)
    assert len(network(100)) < len(network(128)) == 1471
    assert len(network(1)) == 0


def _data(rng, dtype, shape):
    x = rng.standard_normal(shape) * 100
    if np.dtype(dtype).kind == "f":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # 1e308 in float32 is inf
            special = rng.random(shape) < 0.3
            x[special] = rng.choice(SPECIALS, special.sum())
            return x.astype(dtype)
    if np.dtype(dtype).kind == "u":
        x = np.abs(x)
    x = x.astype(dtype)
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is not None:  # the extremes' keys sort too
        x.flat[::7] = info.max
        x.flat[::11] = info.min
    return x


# each kernel compiles once per dtype: the parallel twins on two dtypes only
SERIAL_AND_PARALLEL = [(d, False) for d in DTYPES] + [(np.float64, True), (np.uint8, True)]


@pytest.mark.parametrize(("dtype", "parallel"), SERIAL_AND_PARALLEL)
def test_sorted_rows_are_numpys_on_every_dtype(dtype, parallel):
    sort = ok.sort_last_parallel if parallel else ok.sort_last
    rng = np.random.default_rng(0)
    shapes = [(FEWEST - 1, 5), (FEWEST, 5), (LANES, 2), (LANES + 1, 33), (2 * LANES + FEWEST, 100)]
    shapes += [(9, 1), (3, 12, 7), (FEWEST, LONGEST), (FEWEST, LONGEST + 1)]
    for shape in shapes:
        x = _data(rng, dtype, shape)
        got = sort(x)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, np.sort(x, axis=-1), err_msg=str(shape))


def test_a_row_keeps_its_nan_and_extremes_with_the_other_rows_of_its_block():
    x = np.zeros((LANES, 6))
    x[3] = [-np.nan, np.inf, -np.inf, -0.0, 5e-324, -1e308]  # a NaN with its sign bit set
    x[4] = np.nan
    got = ok.sort_last(x)
    np.testing.assert_array_equal(got[3], [-np.inf, -1e308, -0.0, 5e-324, np.inf, np.nan])
    assert np.isnan(got[4]).all() and (got[[0, 1, 2, 5]] == 0).all()
    assert np.signbit(got[3, 2])  # bit for bit: -0.0 stays -0.0
    assert np.signbit(got[3, 5])  # and the NaN keeps its sign bit, as numpy's sort keeps it


def test_nans_keep_their_bits_in_sorted_rows():
    rng = np.random.default_rng(3)
    for dtype, kind in ((np.float64, np.uint64), (np.float32, np.uint32)):
        x = rng.standard_normal((LANES, 40)).astype(dtype)
        payloads = rng.integers(1, 1 << 20, x.shape).astype(kind)
        nan_bits = np.float64(np.nan).astype(dtype).view(kind) | payloads
        nan_bits[::2] |= kind(1) << kind(8 * x.itemsize - 1)  # and some with the sign bit
        nans = rng.random(x.shape) < 0.3
        x[nans] = nan_bits.view(dtype)[nans]
        got = ok.sort_last(x)
        np.testing.assert_array_equal(got, np.sort(x, axis=1))
        for out, row in zip(got, x):
            kept, given = out[np.isnan(out)].view(kind), row[np.isnan(row)].view(kind)
            assert sorted(kept) == sorted(given)


@pytest.mark.parametrize(
    ("dtype", "parallel"),
    [(d, False) for d in (np.float64, np.float32, np.int8, np.uint8, np.int64)]
    + [(np.float32, True)],
)
def test_medians_and_quantiles_of_networked_rows_are_numpys(dtype, parallel):
    median = ok.median_rows_parallel if parallel else ok.median_rows
    quantile = ok.quantile_rows_parallel if parallel else ok.quantile_rows
    rng = np.random.default_rng(1)
    wide = np.float64 if np.dtype(dtype).kind in "iu" else dtype
    for shape in [(FEWEST - 1, 10), (LANES + 3, 11), (2 * LANES, 100), (FEWEST, 1)]:
        x = _data(rng, dtype, shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for skip, reference in ((False, np.median), (True, np.nanmedian)):
                expected = reference(x, axis=1)
                np.testing.assert_array_equal(median(x, wide, wide, skip), expected)
            for q, (code, method) in itertools.product(
                [0.0, 0.3, 0.5, 1.0], enumerate(["linear", "lower", "higher"])
            ):
                out = x.dtype.type if code else wide
                expected = np.quantile(x, q, axis=1, method=method)
                got = quantile(x, q, x.dtype.type, wide, out, False, code)
                np.testing.assert_array_equal(got, expected, err_msg=f"{shape} {q} {method}")


@pytest.mark.parametrize(("dtype", "parallel"), SERIAL_AND_PARALLEL)
def test_argsorted_rows_are_numpys_stable_argsort_on_every_dtype(dtype, parallel):
    argsort = ok.argsort_last_parallel if parallel else ok.argsort_last
    rng = np.random.default_rng(4)
    for shape in [(FEWEST - 1, 5), (LANES + 1, 33), (2 * LANES + FEWEST, 100), (9, 1)]:
        x = _data(rng, dtype, shape)
        ties = rng.random(shape) < 0.5  # many equal values, which keep their order
        x[ties] = rng.integers(0, 3, ties.sum()).astype(dtype)
        np.testing.assert_array_equal(
            argsort(x), np.argsort(x, axis=-1, kind="stable"), err_msg=str(shape)
        )


def test_argsort_keeps_both_zeros_and_every_nan_in_their_order():
    x = np.zeros((LANES, 6))
    x[5] = [0.0, np.nan, -0.0, -np.nan, 0.0, -1.0]
    expected = np.argsort(x, axis=1, kind="stable")
    np.testing.assert_array_equal(ok.argsort_last(x), expected)
    assert list(expected[5]) == [5, 0, 2, 4, 1, 3]


@pytest.mark.parametrize(
    "pattern",
    ["random", "sorted", "reversed", "organ pipe", "sawtooth", "few values", "all equal"],
)
def test_long_rows_select_their_medians_and_quantiles_from_any_order(pattern):
    """Rows longer than the network select their statistics (quickselect whose
    partition has no branch): orders that defeat a fixed choice of pivot (an organ
    pipe, a sawtooth, sorted runs, ties) end with numpy's values."""
    n = LONGEST + 901  # odd: one middle value; its even neighbour below
    rng = np.random.default_rng(5)
    base = {
        "random": rng.normal(size=n),
        "sorted": np.sort(rng.normal(size=n)),
        "reversed": np.sort(rng.normal(size=n))[::-1],
        "organ pipe": np.concatenate([np.arange(n // 2), np.arange(n - n // 2)[::-1]]),
        "sawtooth": np.arange(n) % 97,
        "few values": rng.integers(0, 3, n),
        "all equal": np.full(n, 7),
    }[pattern].astype(np.float64)
    rows = np.stack([base, -base, base[: n - 1].tolist() + [np.nan]])
    for a in (rows, rows[:, :-1]):  # odd and even lengths
        np.testing.assert_array_equal(ok.median_rows(a, np.float64, np.float64, False),
                                      np.median(a, axis=1))  # fmt: skip
        np.testing.assert_array_equal(ok.median_rows(a, np.float64, np.float64, True),
                                      np.nanmedian(a, axis=1))  # fmt: skip
        for q, method in ((0.3, 0), (0.9, 1), (0.01, 2)):
            name = ["linear", "lower", "higher"][method]
            got = ok.quantile_rows(a, q, np.float64, np.float64, np.float64, False, method)
            np.testing.assert_array_equal(got, np.quantile(a, q, axis=1, method=name))
