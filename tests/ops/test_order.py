"""sort, median, quantile and percentile: numpy's values, on the numpy tier and in the
compiled kernel, for every dtype, axis and keepdims, with NaN, infinities, signed
zeros, subnormals and integers at their limits; and what is refused, by name.

Zeros are compared as numbers (``-0.0 == 0.0``): which of two equal zeros a sort puts
first numpy leaves to its algorithm (its vector sorts differ by CPU), so the sign of
a zero a median picks from ties is not numpy's to promise either."""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import relgraph as rg
from relgraph.exceptions import TypeCheckError, UnsupportedError
from relgraph.ops.exact import exact_evaluate

DTYPES = ["bool", "int8", "uint8", "int64", "float32", "float64"]
FLOAT_SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, 1e308, -1e308, 1.0, -2.5]


def _data(dtype: str, shape: tuple, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == "bool":
        return (rng.random(n) < 0.5).reshape(shape)
    if dtype[0] in "iu":
        info = np.iinfo(dtype)
        pool = np.array([info.min, info.max, 0, 1, -1, 7, -100, 100]).clip(info.min, info.max)
        return rng.choice(pool, n).astype(dtype).reshape(shape)
    values = np.where(rng.random(n) < 0.3, rng.choice(FLOAT_SPECIALS, n), rng.normal(size=n))
    with np.errstate(over="ignore"):  # 1e308 is inf in float32
        return values.astype(dtype).reshape(shape)


def _programs(x):
    yield "sort", lambda a, axis, keep: np.sort(a, axis=-1 if axis is None else axis)
    yield "sort flat", lambda a, axis, keep: np.sort(a, axis=None)
    # equal values in their order: numpy's stable sort (its default leaves them to it)
    yield "argsort", lambda a, axis, keep: np.argsort(a, -1 if axis is None else axis,
                                                      kind="stable")  # fmt: skip
    yield "median", lambda a, axis, keep: np.median(a, axis=axis, keepdims=keep)
    yield "quantile 0.3", lambda a, axis, keep: np.quantile(a, 0.3, axis=axis, keepdims=keep)
    yield "percentile 100", lambda a, axis, keep: np.percentile(a, 100, axis=axis, keepdims=keep)
    yield "quantile 0", lambda a, axis, keep: np.quantile(a, 0.0, axis=axis, keepdims=keep)
    yield "quantile lower", lambda a, axis, keep: np.quantile(a, 0.6, axis, keepdims=keep,
                                                              method="lower")  # fmt: skip
    yield (
        "nanpercentile higher",
        lambda a, axis, keep: np.nanpercentile(a, 35, axis, keepdims=keep, method="higher"),
    )
    yield "nanmedian", lambda a, axis, keep: np.nanmedian(a, axis=axis, keepdims=keep)
    yield "nanquantile 0.7", lambda a, axis, keep: np.nanquantile(a, 0.7, axis=axis, keepdims=keep)
    yield "nanpercentile 5", lambda a, axis, keep: np.nanpercentile(a, 5, axis, keepdims=keep)


PROGRAMS = list(_programs(None))


def _same(got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)  # NaN matches NaN, -0.0 matches 0.0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, True), (-1, False)])
def test_order_statistics_are_numpys_on_both_tiers(dtype, axis, keepdims):
    """Every program at once: one kernel computes them all (one compile per dtype and
    axis), each output against numpy's."""
    value = _data(dtype, (7, 6))
    x = rg.matrix("x", dtype)
    terms, expected = [], []
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's "All-NaN slice encountered"
        for _, program in PROGRAMS:
            traced = lambda a, program=program: program(a, axis, keepdims)  # noqa: E731
            try:
                want = program(value, axis, keepdims)
            except TypeError:  # numpy's quantile of bools: b - a of bools
                with pytest.raises(TypeCheckError, match="quantile of bools"):
                    rg.trace(traced, x)
                continue
            terms.append(rg.trace(traced, x))
            expected.append(want)
            _same(rg.evaluate(terms[-1], {x: value}), want)
    kernel = rg.function([x], terms, compile="eager")
    for ordered in (value, np.asfortranarray(value)):  # and not C-contiguous
        for got, want in zip(kernel(ordered), expected, strict=True):
            _same(got, want)


@pytest.mark.parametrize(
    "shape, axis",
    [((5, 1), 1), ((1, 4), 0), ((9,), 0), ((2, 3, 4), 1), ((3, 100), 1), ((4, 3, 50), 0)],
)  # rows of 100: longer than insertion sorts; 150 columns of 4: sorted by the network
def test_size_one_axes_vectors_three_axes_and_long_rows(shape, axis):
    value = _data("float64", shape, seed=3)
    t = rg.tensor("t", ndim=len(shape))
    with np.errstate(invalid="ignore"):  # inf - inf in numpy's quantile
        cases = [
            (rg.sort(t, axis), np.sort(value, axis)),
            (rg.median(t, axis), np.median(value, axis)),
            (rg.quantile(t, 0.75, axis, True), np.quantile(value, 0.75, axis, keepdims=True)),
            (rg.median(t), np.median(value)),
        ]
    for term, expected in cases:
        _same(rg.function([t], term, compile="eager")(value), expected)


def test_an_empty_slice_has_a_nan_median_and_no_quantile():
    x = rg.matrix("x")
    value = np.empty((3, 0))
    with pytest.warns(RuntimeWarning):
        expected = np.median(value, axis=1)
    _same(rg.function([x], rg.median(x, 1), compile="eager")(value), expected)
    with pytest.raises(IndexError):
        np.quantile(value, 0.5, axis=1)
    with pytest.raises(IndexError):
        rg.function([x], rg.quantile(x, 0.5, 1), compile="eager")(value)


def test_numpys_own_quirks_come_through():
    """numpy takes ``b - a`` in the array's dtype: int8 wraps around, and ``inf - inf``
    makes the top quantile of ``[1, inf]`` NaN."""
    v = rg.vector("v", "int8")
    wraps = rg.function([v], rg.quantile(v, 0.25), compile="eager")
    assert float(wraps(np.array([-100, 100], np.int8))) == -114.0
    w = rg.vector("w")
    top = rg.function([w], rg.quantile(w, 1.0), compile="eager")
    assert np.isnan(top(np.array([1.0, np.inf])))
    with np.errstate(invalid="ignore"):
        assert np.isnan(np.quantile([1.0, np.inf], 1.0))


def test_numpy_code_with_order_statistics_compiles():
    """Robust scaling (scikit-learn's RobustScaler): centred by the median, scaled by
    the interquartile range, then clipped to the 1st and 99th percentiles."""

    def robust(x):
        q1, q3 = np.percentile(x, 25, axis=0), np.percentile(x, 75, axis=0)
        z = (x - np.median(x, axis=0)) / (q3 - q1)
        return np.clip(z, np.percentile(z, 1), np.percentile(z, 99))

    x = np.random.default_rng(5).standard_t(3, size=(400, 6))
    f = rg.jit(robust)
    f(x)
    f.wait()
    _same(f(x), robust(x))
    assert "median(x, axis=0)" in rg.pprint(f.last.rewritten)


def test_exact_values_sort_nan_last_and_interpolate_exactly():
    x = rg.vector("x")
    value = np.array([3.0, np.nan, -1.0, 2.0, 0.5])
    exact = exact_evaluate(rg.sort(x), {x: value}).astype(float)
    np.testing.assert_array_equal(exact, np.sort(value))
    finite = value[~np.isnan(value)]
    for term, expected in [
        (rg.median(x), np.median(finite)),
        (rg.quantile(x, 0.3), np.quantile(finite, 0.3)),
    ]:
        assert float(exact_evaluate(term, {x: finite})) == pytest.approx(expected, rel=1e-15)
    assert np.isnan(float(exact_evaluate(rg.median(x), {x: value})))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda a: np.median(a, axis=(0, 1)), r"axis=\(0, 1\): one axis or None"),
        (lambda a: np.quantile(a, [0.1, 0.9]), r"q=\[0.1, 0.9\]: one number"),
        (lambda a: np.quantile(a, 0.5, method="nearest"), "method='nearest' is not supported"),
        (lambda a: np.percentile(a, 50, weights=a), "weights="),
        (lambda a: np.sort(a, order="f"), "order='f' is not supported"),
        (lambda a: np.percentile(a, 150), r"q=150 must be in \[0, 100\]"),
        (lambda a: np.quantile(a, np.float32(0.5)), "of dtype float32: numpy interpolates"),
    ],
)
def test_what_is_refused_is_named(call, message):
    with pytest.raises((UnsupportedError, ValueError), match=message):
        rg.trace(call, rg.matrix("x"))


@pytest.mark.parametrize(
    "q", [0.3, np.float64(0.3), 30, np.int64(30)], ids=["float", "float64", "int", "int64"]
)
def test_a_numpy_q_is_not_weak_as_in_numpy(q):
    """numpy treats a Python q as a weak scalar (float32 data gives float32) and a
    numpy scalar not (float64, interpolated in float64)."""
    value = _data("float32", (5, 7), seed=5)
    x = rg.matrix("x", "float32")
    for program in (
        lambda a: np.percentile(a, q, axis=1),
        lambda a: np.nanquantile(a, q / 100, axis=0),
    ):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = program(value)
            term = rg.trace(program, x)
            _same(rg.evaluate(term, {x: value}), expected)
        _same(rg.function([x], term, compile="eager")(value), expected)


def test_quantile_of_bools_and_sort_of_a_number_are_type_errors():
    with pytest.raises(TypeCheckError, match="quantile of bools"):
        rg.quantile(rg.vector("b", "bool"), 0.5)
    with pytest.raises(TypeCheckError, match="sort of a 0-d value"):
        rg.sort(rg.scalar("s"))
    with pytest.raises(TypeCheckError, match=r"q must be in \[0, 1\]"):
        rg.quantile(rg.vector("v"), 1.5)


def test_order_statistics_print_and_parse_back():
    x = rg.matrix("x")
    for term in (rg.sort(x, 0), rg.quantile(x, 0.3, 1, True), rg.median(x), rg.sort(x, None)):
        assert rg.parse(rg.pprint(term), x=x) == term


def test_the_nan_twins_leave_nans_out_and_a_slice_of_nans_is_nan():
    x = rg.matrix("x")
    value = np.array([[np.nan, np.nan, np.nan], [1.0, np.nan, 4.0], [2.0, -1.0, 5.0]])
    for term in (rg.nanmedian(x, 1), rg.nanquantile(x, 0.25, 1), rg.nanpercentile(x, 90, 1)):
        with pytest.warns(RuntimeWarning, match="All-NaN slice"):
            expected = term.op.perform(value, *term.args[1:])
        _same(rg.function([x], term, compile="eager")(value), expected)
        assert np.isnan(expected[0]) and not np.isnan(expected[1:]).any()
    long_rows = _data("float64", (4, 700), seed=7)  # numpy's nanmedian: another path at 600
    _same(rg.function([x], rg.nanmedian(x, 1), compile="eager")(long_rows),
          np.nanmedian(long_rows, 1))  # fmt: skip


def test_the_gradient_goes_to_the_values_around_the_index_split_among_ties():
    """A median's cotangent goes to its middle value, or half to each of the middle
    two; a quantile's to the two sorted values around numpy's index, by the fraction;
    equal values share (as ``max``'s do); a sort's to each element from its place."""
    x = rg.vector("x")
    value = np.array([3.0, 1.0, 2.0, 2.0, 5.0, 4.0])  # sorted: 1 2 2 3 4 5
    grads = {
        "median": rg.grad(rg.median(x), x),  # (2 + 3) / 2
        "quantile": rg.grad(rg.quantile(x, 0.3), x),  # index 1.5: the two 2s
        "lower": rg.grad(rg.quantile(x, 0.9, method="lower"), x),  # index 4.5: the 4
        "nan": rg.grad(rg.nanmedian(x), x),
    }
    got = {name: rg.evaluate(g, {x: value}) for name, g in grads.items()}
    np.testing.assert_allclose(got["median"], [0.5, 0, 0.25, 0.25, 0, 0])
    np.testing.assert_allclose(got["quantile"], [0, 0, 0.5, 0.5, 0, 0])
    np.testing.assert_allclose(got["lower"], [0, 0, 0, 0, 0, 1])
    with_nan = np.array([np.nan, 1.0, 4.0, 2.0])
    np.testing.assert_allclose(rg.evaluate(grads["nan"], {x: with_nan}), [0, 0, 0, 1])
    places = np.array([1.0, 10.0, 100.0, 1000.0, 1e4, 1e5])
    by_place = rg.grad(rg.sum(rg.sort(x) * places), x)  # 3 1 2 2 5 4: places 3 0 1 2 5 4
    np.testing.assert_allclose(rg.evaluate(by_place, {x: value}), places[[3, 0, 1, 2, 5, 4]])


def test_statistics_along_the_first_axis_read_its_columns_in_place():
    """A median or quantile along axis 0 sorts the columns through a transposed view:
    no copy with the axis moved last (a stack's median: ``median_filter_3``)."""
    t = rg.tensor("t", ndim=3)
    for term in (rg.median(t, 0), rg.quantile(t, 0.25, 0, True)):
        f = rg.function([t], term, compile="eager")
        assert "kernels.moved(" not in f.source and ".T," in f.source
    assert "kernels.moved(" in rg.function([t], rg.median(t, 1), compile="eager").source


SPECIALS = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1e308,
                            -1e308, 1.0, -1.0, 0.5, 2.0])  # fmt: skip
KERNELS: dict = {}  # one compiled function per (dtype, program, axis): examples reuse it


@settings(max_examples=100)
@given(
    dtype=st.sampled_from(["float64", "float32", "int64", "int16", "int8", "uint8", "bool"]),
    rows=st.integers(1, 5),
    cols=st.integers(1, 40),
    which=st.integers(0, len(PROGRAMS) - 1),
    axis=st.sampled_from([None, 0, 1]),
    data=st.data(),
)
def test_order_statistics_of_drawn_arrays_are_numpys(dtype, rows, cols, which, axis, data):
    """Arrays drawn from NaN, infinities, signed zeros, subnormals, values near
    overflow and small integers (wrapping around in the small integer dtypes), in
    every dtype; both tiers against numpy."""
    cells = st.one_of(SPECIALS, st.integers(-300, 300).map(float))
    flat = data.draw(st.lists(cells, min_size=rows * cols, max_size=rows * cols))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = np.array(flat).reshape(rows, cols)
        value = value.astype(dtype) if dtype[0] == "f" else np.nan_to_num(value).astype(dtype)
        name, program = PROGRAMS[which]
        try:
            expected = program(value, axis, False)
        except TypeError:  # numpy's quantile of bools (tested above)
            assume(False)
        key = (dtype, name, axis)
        if key not in KERNELS:
            x = rg.matrix("x", dtype)
            term = rg.trace(lambda a: program(a, axis, False), x)
            KERNELS[key] = x, term, rg.function([x], term, compile="eager")
        x, term, kernel = KERNELS[key]
        _same(rg.evaluate(term, {x: value}), expected)
    _same(kernel(value), expected)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_long_rows_sort_as_numpy_sorts(dtype):
    """float64 rows from 4096 long sort by radix over the floats' bits (NaN last as
    they came, subnormals and infinities in place); other dtypes by Numba's sort."""
    value = _data(dtype, (2, 10_000), seed=11)
    if dtype == "float64":
        value[0, :50] = [
            np.nan,
            -0.0,
            0.0,
            5e-324,
            -5e-324,
            np.inf,
            -np.inf,
            1e308,
            -1e308,
            1.0,
        ] * 5
    x = rg.matrix("x", dtype)
    for term, expected in [(rg.sort(x), np.sort(value)), (rg.sort(x, None), np.sort(value, None)),
                           (rg.argsort(x), np.argsort(value, kind="stable"))]:  # fmt: skip
        _same(rg.function([x], term, compile="eager")(value), expected)


def test_a_number_and_an_empty_vector():
    s, e = rg.scalar("s"), rg.vector("e")
    three = np.float64(3.0)
    for term, expected in [
        (rg.median(s), np.median(three)),
        (rg.quantile(s, 0.3), np.quantile(three, 0.3)),
        (rg.nanmedian(s, None, True), np.nanmedian(three, keepdims=True)),
        (rg.sort(s, None), np.sort(three, axis=None)),
        (rg.argsort(s, None), np.argsort(three, axis=None)),
    ]:
        _same(rg.function([s], term, compile="eager")(three), expected)
    for term, expected in [(rg.sort(e), np.sort(np.empty(0))), (rg.argsort(e), np.empty(0, int))]:
        _same(rg.function([e], term, compile="eager")(np.empty(0)), expected)
