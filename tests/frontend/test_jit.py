"""rg.trace and rg.jit: numpy functions as people write them, traced, rewritten and
compiled, giving numpy's values (or closer ones where numpy overflows)."""

import itertools
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import scipy.special
import scipy.stats
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import relgraph as rg
from relgraph.ops.exact import agrees, exact_evaluate

pytestmark = pytest.mark.usefixtures("kernel_cache")

SPECIAL = [-np.inf, -1e308, -745.5, -710.0, -30.0, -1.0, -1e-20, -5e-324, -0.0, 0.0, 5e-324,
           1e-20, 0.5, 1.0, 30.0, 709.0, 710.0, 1e308, np.inf, np.nan]  # fmt: skip


def softplus_loglik(z, y):
    return np.sum(y * z - np.log(1 + np.exp(z)))


def logsumexp_rows(a):
    a_max = np.max(a, axis=1, keepdims=True)
    return np.log(np.sum(np.exp(a - a_max), axis=1, keepdims=True)) + a_max


def log_softmax(x):
    return x - np.log(np.sum(np.exp(x), axis=1, keepdims=True))


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def layer_norm(x):
    mean = x.mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)


def black_scholes(s, k, t):
    d1 = (np.log(s / k) + 0.5 * 0.04 * t) / (0.2 * np.sqrt(t))
    d2 = d1 - 0.2 * np.sqrt(t)
    cdf = lambda d: 0.5 * (1 + scipy.special.erf(d / np.sqrt(2)))  # noqa: E731
    return s * cdf(d1) - k * np.exp(-0.02 * t) * cdf(d2)


def pairwise(x, y):
    return np.sum(x**2, 1)[:, None] + np.sum(y**2, 1)[None, :] - 2 * x @ y.T


def values(shape):
    special = st.sampled_from(SPECIAL)
    elements = st.one_of(special, st.floats(-50, 50), st.floats(-1e3, 1e3))
    return hnp.arrays(np.float64, shape, elements=elements)


def check_against_numpy(fn, *args):
    """The jitted function gives numpy's dtype and shape, and values that agree
    with numpy's (or are closer to the exact ones)."""
    jitted = rg.jit(fn, compile="eager")
    got = jitted(*args)
    with np.errstate(all="ignore"):
        want = fn(*args)
    assert np.result_type(got) == np.result_type(want) and np.shape(got) == np.shape(want)
    inputs = dict(zip(jitted.last.inputs, args))
    exact = exact_evaluate(jitted.traced, inputs)
    ok = agrees(want, got, exact)
    # Where the function cancels (x - logsumexp(x) near 0), any order of its roundings
    # is off by a few ulp of the inputs: a difference that small is rounding, not a
    # different program.
    finite = [np.abs(a[np.isfinite(a)]) for a in args]
    scale = max([np.max(f, initial=0.0) for f in finite] + [1.0])
    with np.errstate(invalid="ignore"):
        ok |= np.abs(np.asarray(got) - want) <= 16 * np.finfo(np.float64).eps * scale
    assert ok.all(), (args, got, want)
    return jitted


@settings(max_examples=40, derandomize=True)  # the same examples in every run: no flaky CI
@given(values(5), values(5))
def test_log_likelihood_agrees_with_numpy(z, y):
    check_against_numpy(softplus_loglik, z, y)


@settings(max_examples=40, derandomize=True)  # the same examples in every run: no flaky CI
@given(values((2, 3)))
def test_logsumexp_and_log_softmax_agree_with_numpy(a):
    check_against_numpy(logsumexp_rows, a)
    check_against_numpy(log_softmax, a)


@settings(max_examples=40, derandomize=True)  # the same examples in every run: no flaky CI
@given(values(6))
def test_gelu_agrees_with_numpy(x):
    check_against_numpy(gelu, x)


@settings(max_examples=40, derandomize=True)  # the same examples in every run: no flaky CI
@given(values((2, 3)), values((3, 3)))
def test_layer_norm_and_distances_agree_with_numpy(x, y):
    check_against_numpy(layer_norm, x)
    check_against_numpy(pairwise, x, y)


@settings(max_examples=40, derandomize=True)  # the same examples in every run: no flaky CI
@given(st.floats(1, 200), st.floats(1, 200), st.floats(0.01, 5))
def test_black_scholes_agrees_with_numpy(s, k, t):
    args = [np.full(3, v) for v in (s, k, t)]
    check_against_numpy(black_scholes, *args)


def test_the_rewrite_makes_numpy_overflow_finite():
    loglik = rg.jit(softplus_loglik, compile="eager")
    z, y = np.array([800.0, -800.0, 0.0]), np.array([1.0, 0.0, 1.0])
    with np.errstate(over="ignore"):
        assert np.isneginf(softplus_loglik(z, y))  # numpy: exp(800) overflows
    assert loglik(z, y) == pytest.approx(-np.log(2))
    assert "softplus" in rg.pprint(loglik.rewritten)
    assert loglik.last.cost_after < loglik.last.cost_before


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "bool", "float32"])
def test_small_dtypes_wrap_and_promote_as_numpy_does(dtype, rng):
    def fn(a, b):
        return a * b + a - 3

    a = rng.integers(0, 120, 16).astype(dtype)
    b = rng.integers(0, 120, 16).astype(dtype)
    with np.errstate(all="ignore"):
        want = fn(a, b)
    got = rg.jit(fn, compile="eager")(a, b)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_one_jitted_function_serves_each_signature(rng):
    f = rg.jit(lambda x: np.exp(x).sum(axis=-1), compile="eager")
    m, v32 = rng.normal(size=(3, 4)), rng.normal(size=4).astype("float32")
    np.testing.assert_allclose(f(m), np.exp(m).sum(-1))
    assert f(v32).dtype == np.float32
    np.testing.assert_allclose(f(v32), np.exp(v32).sum(-1), rtol=1e-6)
    assert len(f.specializations) == 2 and f.last.inputs[0].type.dtype == np.float32
    f(m + 1)
    assert len(f.specializations) == 2  # the same signature: traced once


def test_several_results_keep_their_structure(rng):
    @rg.jit(compile="eager")
    def stats(x, y):
        return x + y, (x * y, [x - y, np.float64(2.0)])

    x, y = rng.normal(size=3), rng.normal(size=3)
    s, (p, [d, two]) = stats(x, y)
    np.testing.assert_allclose(s, x + y)
    np.testing.assert_allclose(p, x * y)
    np.testing.assert_allclose(d, x - y)
    assert two == 2.0


SCALAR_RESULTS = [
    lambda x, s: np.sum(x),
    lambda x, s: x @ x,
    lambda x, s: x.mean() + s,
    lambda x, s: x[0] * 2,
    lambda x, s: np.all(x > 0),
    lambda x, s: np.argmax(x),
    lambda x, s: np.sum(x > 0).astype(np.int8),
    lambda x, s: np.where(s > 0, s, 0.0),  # numpy: a 0-d array
    lambda x, s: (np.nanmax(x), np.nanmean(x), np.where(x > 0, x, 0.0).sum()),
    lambda x, s: np.reshape(s, ()) * 1,
    lambda x, s: np.reshape(s, ()).astype(np.float32),  # a 0-d array in numpy
    lambda x, s: (np.reshape(x[:1], ()), np.broadcast_to(s, ()), s.T, x[2:3].reshape(())),
    lambda x, s: (np.sum(x), x * 2, [np.exp(s), np.where(s > 0, x[0], s)]),
]


def same_types_and_values(got, want):
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            same_types_and_values(g, w)
        return
    assert type(got) is type(want), (got, want)
    assert np.result_type(got) == np.result_type(want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fn", SCALAR_RESULTS, ids=range(len(SCALAR_RESULTS)))
def test_results_have_numpys_types(fn, rng):
    """A 0-d result is a numpy scalar where numpy gives one (a loss, ``x @ y``,
    ``x[0]``: ``json.dumps`` and ``isinstance(r, float)`` take it) and a 0-d array where
    numpy gives that (``np.where``, a reshape of an array), on the numpy tier, the kernel
    and its fast call.  A shape Op's 0-d result is its operand's one element in the
    kernel (a 0-d reshape failed to compile)."""
    x, s = rng.normal(size=5), np.array(0.5)
    want = fn(x, s)
    for compile in ("never", "eager"):
        f = rg.jit(fn, compile=compile)
        for _ in range(3):  # the checked call, then the fast call
            same_types_and_values(f(x, s), want)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: 1 / (x + 0),
        lambda x: 1 / (0 - x),
        lambda x: np.arctan2(-(x - x), -1.0),
        lambda x: 1 / np.log(1 + x),
        lambda x: 1 / (np.exp(x) - 1),
        lambda x: np.copysign(1.0, np.log(np.exp(x))),
        lambda x: 1 / np.log(1 / (1 + np.exp(-x))),
        lambda x: 1 / np.sum(-2.0 * x[:1]),
    ],
    ids=["x + 0", "0 - x", "-(a - b)", "log1p", "expm1", "log(exp(x))", "log(sigmoid)", "sum"],
)
def test_the_sign_of_a_zero_as_numpy(fn):
    """Rewrites keep the sign of every zero: ``1 / z`` and ``copysign`` read it."""
    x = np.array([-0.0, 0.0, 1.0, -1.0, np.inf, 800.0])
    with np.errstate(divide="ignore", over="ignore"):
        want = fn(x)
        for compile in ("never", "eager"):
            got = rg.jit(fn, compile=compile)(x)
            np.testing.assert_allclose(got, want, rtol=1e-15)  # stabilised: closer
            zeros = want == 0
            np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]))


def test_static_keyword_and_default_arguments(rng):
    @rg.jit(static_argnames=["axis"], compile="eager")
    def softmax(x, axis=-1, shift=True):
        e = np.exp(x - x.max(axis=axis, keepdims=True)) if shift else np.exp(x)
        return e / e.sum(axis=axis, keepdims=True)

    x = rng.normal(size=(3, 4))
    np.testing.assert_allclose(softmax(x, axis=0).sum(0), 1.0)
    np.testing.assert_allclose(softmax(x).sum(1), 1.0)
    np.testing.assert_allclose(softmax(x=x, axis=1).sum(1), 1.0)
    assert len(softmax.specializations) == 3  # axis=0, -1 and 1: one each
    with pytest.raises(TypeError, match="has no parameter"):
        rg.jit(softmax.fn, static_argnames=["axes"], compile="eager")
    with pytest.raises(TypeError, match="not hashable"):
        softmax(x, axis=[0])


def test_a_result_the_caller_holds_never_changes(rng):
    f = rg.jit(lambda x: x * 2.0, compile="eager")
    x = rng.normal(size=5)
    first = f(x)
    kept = first.copy()
    second = f(x + 1)
    assert first is not second and first is not x
    np.testing.assert_array_equal(first, kept)
    np.testing.assert_array_equal(x * 2.0, first)


def test_closed_over_arrays_are_constants_up_to_a_limit(rng):
    weights = rng.normal(size=(4, 4))
    f = rg.jit(lambda x: np.tanh(weights @ x), compile="eager")
    x = rng.normal(size=4)
    np.testing.assert_allclose(f(x), np.tanh(weights @ x))
    big = np.zeros(300_000)
    g = rg.jit(lambda x: x + big, compile="eager")
    with pytest.raises(rg.UnsupportedError, match=r"\(2,400,000 bytes\) would become a const"):
        g(np.zeros(300_000))
    h = rg.jit(lambda x: x + big, max_constant_bytes=10**7, compile="eager")
    np.testing.assert_array_equal(h(np.ones(300_000)), np.ones(300_000))


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda x: x if x.sum() > 0 else -x, "the truth value of (sum(x) > 0) is not known"),
        (lambda x: x[x > 0], "x[mask]: the result's shape depends on the values"),
        (lambda x: np.asarray(x) + 1, "was converted to a numpy array"),
        (lambda x: float(x.sum()), "float() of sum(x)"),
        (lambda x: np.partition(x, 1), "numpy.partition is not supported on relgraph terms"),
        (lambda x: scipy.stats.zscore(x), "scipy.stats._stats_py.zscore called numpy.result_type"),
        (lambda x: scipy.special.logsumexp(x, b=x), "logsumexp with b= is not supported when"),
        (lambda x: np.spacing(x), "numpy.spacing is not supported"),
        (lambda x: "text", "returned a str"),
        (lambda x: x.searchsorted(1.0), "x.searchsorted: ndarray.searchsorted is not traced"),
        (lambda x: x.sort(), "x.sort: ndarray.sort is not traced; it sorts in place: np.sort"),
        (lambda x: x.sum().item(), "sum(x).item(): a traced value has no values yet"),
        (lambda x: x * hasattr(x, "flat") + x.flat[0], "x.flat: ndarray.flat is not traced"),
    ],
)
def test_what_a_term_cannot_follow_is_a_clear_error(fn, message):
    with pytest.raises((rg.TraceError, rg.UnsupportedError)) as info:
        rg.jit(fn, compile="eager")(np.ones(3))
    assert message in str(info.value)


def test_the_sizes_the_code_reads_specialise_the_function(rng):
    def normalised(x, w):
        n, d = x.shape
        return (x @ w) / np.sqrt(d) - np.sum(w) / len(w) + n

    f = rg.jit(normalised, compile="eager")
    for shape in ((3, 4), (5, 4), (3, 4), (2, 6)):
        x, w = rng.normal(size=shape), rng.normal(size=shape[1])
        np.testing.assert_allclose(f(x, w), normalised(x, w), rtol=1e-13)
    assert len(f.specializations) == 3  # one per distinct pair of shapes
    assert rg.typeof(f.last.inputs[0]).shape == (2, 6)
    g = rg.jit(lambda x, y: x * len(y), compile="eager")  # reads y's size, not x's
    g(np.ones(3), np.ones(2)), g(np.ones(5), np.ones(2))
    assert len(g.specializations) == 1
    h = rg.jit(lambda x: np.exp(x) * 2)
    h(np.ones(3)), h(np.ones(5))
    assert len(h.specializations) == 1  # reads no size


def test_a_size_the_trace_cannot_know_names_the_axis_and_the_remedy():
    with pytest.raises(rg.TraceError, match=r"\.shape of M: the size of axis 0 .*np\.zeros"):
        rg.trace(lambda M: M.shape[1] * M, rg.matrix("M"))
    assert rg.pprint(rg.trace(lambda M: M.shape[1] * M, np.zeros((2, 3)))) == "(3 * M)"


def test_writing_into_a_traced_array_is_an_error():
    def fn(x):
        x[0] = 1.0
        return x

    with pytest.raises(rg.TraceError, match="it is an argument or a view of one"):
        rg.trace(fn, rg.vector("x"))


def test_writes_into_arrays_the_function_made_are_traced():
    def clean(x, y):
        out = x.copy()
        out[np.isnan(out)] = 0.0
        z = np.exp(y)
        z[0] = -1
        z[1:, 2] = out[1:, 2] * 2
        return out + z

    x, y = np.array([[1, np.nan, 3.0], [4, 5, np.nan]]), np.ones((2, 3))
    np.testing.assert_allclose(
        rg.jit(clean, compile="eager")(x, y), clean(x.copy(), y), rtol=1e-15
    )
    assert np.isnan(x).sum() == 2  # the caller's array is untouched

    def through_a_view(x):
        y = x * 2
        v = y[1:]
        y[1] = 5  # numpy changes v too
        v[1] = 7  # and y
        return y, v

    x = np.arange(3.0)
    same_types_and_values(rg.jit(through_a_view, compile="eager")(x), through_a_view(x))

    def through_a_transpose(x):
        y = x * 2
        t = y.T
        y[0] = 5  # numpy changes t too: not followed
        return t

    with pytest.raises(rg.TraceError, match="a view of it .a transpose or a reshape. is alive"):
        rg.jit(through_a_transpose)(np.ones((2, 2)))


def in_place_arithmetic(x):
    y = x.copy()
    alias = y
    alias *= 2  # y too
    y[1:] += y[:-1]  # numpy reads the old values where they overlap
    row = y[0]
    row -= 1  # a view: y's first row too
    tail = row[1:]
    tail **= 2  # a view of a view
    y[0, 0] += 10  # an element: y[0, 0] is a number, written back
    y[y < 0] *= 0.5  # a mask: np.where(y < 0, y * 0.5, y)
    total = y.sum()
    kept = total
    total += 1  # a number: bound anew, ``kept`` stays
    ints = (x > 0).astype(np.int8)
    ints *= 100  # wraps around in int8, as numpy's
    ints[ints > 50] += 100
    mask = x > 1
    mask &= x < 3
    return y, kept, total, ints, mask


def test_in_place_operators_write_as_numpy_writes(rng):
    """``y += v`` writes into ``y`` (and whatever aliases or views it), as numpy does:
    through views of views, in the array's dtype; a numpy scalar is bound anew."""
    x = rng.normal(size=(3, 4)) * 3
    for compile in ("never", "eager"):
        f = rg.jit(in_place_arithmetic, compile=compile)
        for _ in range(2):
            same_types_and_values(f(x), in_place_arithmetic(x.copy()))


IN_PLACE_VALUES = {
    "bool": [True, False, True, True],
    "int8": [-128, 127, 0, -1],
    "uint8": [0, 255, 1, 128],
    "int64": [-(2**63), 2**63 - 1, 7, -3],
    "float32": [np.inf, -0.0, 1e-45, np.nan],
    "float64": [-np.inf, -0.0, 5e-324, 1.7e308],
}


def in_place_by_dtype(x):
    y = x.copy()
    if y.dtype == np.bool_:
        y |= x[::-1]
        y &= x[[1, 0, 3, 2]]
        y ^= True
    elif y.dtype.kind in "iu":
        y += x[::-1]  # wraps around
        y *= 3
        y -= 1  # a Python int: weak, y's dtype
        y //= 2
        y <<= 1
    else:
        y += x[::-1]  # inf - inf, -0.0 + x, subnormals
        y *= 2.5  # a Python float: weak, float32 stays
        y /= -0.0
        y **= 0.5
    return y


@pytest.mark.parametrize("dtype", list(IN_PLACE_VALUES))
def test_in_place_operators_follow_numpy_in_every_dtype(dtype):
    x = np.array(IN_PLACE_VALUES[dtype], dtype=dtype)
    with np.errstate(all="ignore"):
        want = in_place_by_dtype(x)
        for compile in ("never", "eager"):
            same_types_and_values(rg.jit(in_place_by_dtype, compile=compile)(x), want)


def written_copies(x):
    flat, same, joined, picked = x.flatten(), x.astype(x.dtype), np.concatenate([x, x]), x[[0, 2]]
    flat[0], same[1], joined[2] = 5.0, 6.0, 7.0
    picked += 1  # numpy's copies: the argument stays as it is
    return flat, same, joined, picked, x


def test_numpys_copies_take_writes_and_the_argument_stays(rng):
    x = rng.normal(size=4)
    same_types_and_values(rg.jit(written_copies, compile="eager")(x), written_copies(x.copy()))


def masked_by_an_array(x):
    y = x.copy()
    y[x > 0] += x  # numpy: a size error unless every element is positive
    return y


@pytest.mark.parametrize(
    "fn, error, message",
    [
        (lambda x: x.__iadd__(1), rg.TraceError, "it is an argument"),  # the caller's array
        (lambda x: x[1:].__imul__(2), rg.TraceError, "it is an argument"),
        (lambda x: x.copy().T.__isub__(1), rg.TraceError, "it is an argument or a view"),
        (lambda x: x.astype(np.int64).__iadd__(1.5), TypeError, "Cannot cast ufunc output"),
        (lambda x: x.copy().__iadd__(np.ones((2, 3))), ValueError, "non-broadcastable output"),
        (masked_by_an_array, rg.TraceError, "only a number combines with x.mask. in place"),
        (lambda x: np.sum(x[x > 0]), rg.TraceError, "x.mask.: the result's shape depends"),
    ],
)
def test_in_place_writes_a_term_cannot_follow_are_errors(fn, error, message):
    """numpy would change the caller's array, or a transposed view: refused, never a
    different program; numpy's casting and shape errors are numpy's."""
    with pytest.raises(error, match=message):
        rg.jit(fn)(np.ones(3))


def test_trace_names_symbols_after_parameters():
    def fn(a, b, *rest):
        return a @ b + rest[0]

    t = rg.trace(fn, rg.TensorType("float32", 2), np.ones(3, "float32"), rg.vector("c", "float32"))
    assert rg.pprint(t) == "((a @ b) + c)"
    assert rg.typeof(t).dtype == np.float32 and rg.typeof(t).shape == (None,)
    assert rg.pprint(rg.trace(lambda z: z.T @ z, np.ones((3, 2)))) == "(z.T @ z)"
    with pytest.raises(rg.TraceError, match="takes 1 positional arguments, given 2"):
        rg.trace(lambda z: z, rg.vector("x"), rg.vector("y"))
    with pytest.raises(rg.TraceError, match="must be a symbol, a TensorType"):
        rg.trace(lambda z: z, "float64")


def test_a_bad_query_fails_when_jitting():
    with pytest.raises(rg.QueryError, match="no entry has the tag"):
        rg.jit(lambda x: x, include=["fastrun"], compile="eager")
    no_rewrite = rg.jit(lambda x: np.log(1 + x), include=(), compile="eager")
    no_rewrite(np.ones(2))
    assert no_rewrite.rewritten == no_rewrite.traced and no_rewrite.report is None
    with pytest.raises(rg.TraceError, match="has not been called yet"):
        _ = rg.jit(lambda x: x, compile="eager").traced


def test_threads_share_one_specialization(rng):
    f = rg.jit(lambda x: np.exp(x) + 1, compile="eager")
    x = rng.normal(size=100)
    results, errors = [], []

    def call():
        try:
            results.append(f(x))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(f.specializations) == 1
    for r in results:
        np.testing.assert_allclose(r, np.exp(x) + 1)


def test_display_shows_what_jit_did(rng):
    f = rg.jit(softplus_loglik, compile="eager")
    assert "not called yet" in f._repr_html_()
    f(rng.normal(size=3), rng.normal(size=3))
    page = f._repr_html_()
    assert "softplus" in page and "cost" in page and "log(1 + exp(z))" in page
    assert "cost" in repr(f.last) and "1 signature" in repr(f)


PROGRAM = textwrap.dedent(
    """
    import numpy as np, relgraph as rg

    @rg.jit(compile="eager")
    def f(z):
        return np.log(1 + np.exp(z)) * 2

    print(f(np.array([0.0, 800.0])).tolist(), f.last.from_disk, rg.pprint(f.rewritten))
    """
)


def test_cache_hits_across_processes(tmp_path):
    env = dict(os.environ, RELGRAPH_CACHE_DIR=str(tmp_path))
    run = [sys.executable, "-c", PROGRAM]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    later = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    expected = "[1.3862943611198906, 1600.0]"
    assert first.startswith(expected + " False") and later.startswith(expected + " True")
    assert "softplus(z)" in later
    entries = [p for p in (tmp_path / "rewrites").rglob("*") if p.is_file()]
    assert entries
    for entry in entries:  # a damaged entry is not trusted
        entry.write_bytes(b"not a pickle")
    again = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    assert again == first


EVERYDAY = [
    lambda x: np.cumsum(x, axis=1) - np.cumprod(x[:, :3], axis=1).sum(),
    lambda x: np.cumsum(x) + 0.0,
    lambda x: np.diff(x, axis=0) * np.diff(x, n=2)[:-1, :1],
    lambda x: np.argmax(x, axis=1) + np.argmin(x) * 10,
    lambda x: np.argmax(x, axis=0, keepdims=True) + 0 * x[:1],
    lambda x: np.where(np.isnan(x), np.zeros_like(x), x) + np.isinf(x) + np.isfinite(x),
    lambda x: np.arctan2(x, x[::-1]) + np.hypot(x, 2.0) + np.sinh(x) / np.cosh(x),
    lambda x: np.arcsinh(x) + np.arctan(x) + np.tan(x) + np.full_like(x, 3),
    lambda x: np.count_nonzero(x, axis=0) + np.count_nonzero(x > 1) * 10,
    lambda x: np.flip(x, 0) + np.fliplr(x) * 2 + np.ptp(x, axis=0) + np.tril(x) - np.triu(x, 1),
    lambda x: np.hstack([x, x[:, :1]])[:, 1:] + np.vstack([x[:1], x[1:]]).sum(1, keepdims=True),
    lambda x: np.polyval([1.0, -2.0, 0.5], x) + x.cumsum(axis=1) + x.swapaxes(0, 1).T + x.mT.T,
    lambda x: x.real - x.imag + x.conj() + x[:, :4].trace() + x.nbytes / x.itemsize,
    lambda x: np.column_stack([x[:, 0], x[:, 1]]) * np.atleast_2d(x[0, :2]) + x.argmax(1)[:, None],
]


@pytest.mark.parametrize("fn", EVERYDAY, ids=range(len(EVERYDAY)))
def test_everyday_numpy_functions_give_numpys_values(fn):
    values = np.array(
        [[0.5, -1.0, np.nan, 2.0, 7.0], [np.inf, -0.0, 0.0, -3.5, 1e-310],
         [1.0, 2.0, 3.0, -np.inf, 0.25], [-1.0, 1.0, 0.5, 0.5, -2.0]]
    )  # fmt: skip
    f = rg.jit(fn, compile="eager")
    with np.errstate(all="ignore"):
        expected = fn(values)
        got = f(values)
        numpy_tier = rg.jit(fn, compile="never")(values)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-13, equal_nan=True)
    np.testing.assert_allclose(numpy_tier, expected, rtol=1e-13, equal_nan=True)


def test_scipy_normal_distribution_functions_are_traced():
    from scipy.special import log_ndtr, ndtr

    x = np.array([-50.0, -20.0, -5.0, -1.0, 0.0, 1.0, 8.0, np.inf, -np.inf, np.nan])
    f = rg.jit(lambda x: (ndtr(x), log_ndtr(x)), compile="eager")
    for got, expected in zip(f(x), (ndtr(x), log_ndtr(x))):
        np.testing.assert_allclose(got, expected, rtol=1e-13, equal_nan=True)


def test_linear_algebra_gives_numpys_values_and_gradients(rng):
    def gaussian_logpdf(x, mu, S):
        d = x.shape[0]
        sign, logdet = np.linalg.slogdet(S)
        r = np.linalg.solve(S, x - mu)
        return -0.5 * (d * np.log(2 * np.pi) + logdet + (x - mu) @ r)

    def others(S, v):
        L = np.linalg.cholesky(S)
        return L @ v + np.linalg.inv(S) @ v * np.linalg.det(S), np.trace(S) + np.linalg.norm(v)

    A = rng.normal(size=(4, 4))
    S, x, mu = A @ A.T + 4 * np.eye(4), rng.normal(size=4), rng.normal(size=4)
    np.testing.assert_allclose(rg.jit(gaussian_logpdf, compile="eager")(x, mu, S),
                               gaussian_logpdf(x, mu, S), rtol=1e-13)  # fmt: skip
    for got, want in zip(rg.jit(others, compile="eager")(S, x), others(S, x)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    dS = rg.grad(gaussian_logpdf, argnums=2, compile="eager")(x, mu, S)
    inv, r = np.linalg.inv(S), np.linalg.solve(S, x - mu)
    np.testing.assert_allclose(dS, -0.5 * (inv - np.outer(r, r)), rtol=1e-10)
    with pytest.raises(np.linalg.LinAlgError):
        rg.jit(others, compile="eager")(-S, x)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_linear_algebra_of_infinities_and_nans_as_numpy(dtype, rng):
    """numpy computes inv, solve, det and slogdet of a matrix holding an infinity or
    a NaN (Numba's np.linalg refuses them): the compiled function gives numpy's values,
    on the first call and on the repeated ones, and zeros of numpy's sign."""

    def fn(S, b):
        sign, logdet = np.linalg.slogdet(S)
        return np.linalg.inv(S), np.linalg.solve(S, b), np.linalg.det(S), sign * logdet

    f = rg.jit(fn, compile="eager")
    A = rng.normal(size=(4, 4))
    S, b = (A @ A.T + 4 * np.eye(4)).astype(dtype), np.ones(4, dtype)
    for value, (i, j) in itertools.product([np.inf, -np.inf, np.nan], [(0, 0), (2, 1), (3, 3)]):
        bad = S.copy()
        bad[i, j] = value
        for args in ((bad, b), (S, np.where(np.arange(4) == i, value, b).astype(dtype))):
            with np.errstate(all="ignore"):
                want = fn(*args)
                for got in (f(*args), f(*args)):
                    for g, w in zip(got, want):
                        np.testing.assert_allclose(g, w, rtol=1e-5, equal_nan=True)
    eye = np.eye(4, dtype=dtype)  # numpy's inverse by its algorithm: no -0.0 here
    np.testing.assert_array_equal(np.signbit(f(eye, b)[0]), np.signbit(np.linalg.inv(eye)))


def test_integer_array_indexing_as_numpy(rng):
    def cross_entropy(z, labels):
        n = z.shape[0]
        logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
        return -np.mean(logp[np.arange(n), labels])

    z, labels = rng.normal(size=(6, 5)), np.array([0, 4, 1, 1, -1, 2])
    f = rg.jit(cross_entropy, compile="eager")
    np.testing.assert_allclose(f(z, labels), cross_entropy(z, labels), rtol=1e-13)
    big = 300 * z  # numpy: inf - inf; the rewrite made it logsumexp
    from scipy.special import log_softmax, softmax

    np.testing.assert_allclose(
        f(big, labels), -np.mean(log_softmax(big, 1)[np.arange(6), labels]), rtol=1e-13
    )
    dz = rg.grad(cross_entropy, compile="eager")(big, labels)
    np.testing.assert_allclose(dz, (softmax(big, 1) - np.eye(5)[labels]) / 6, atol=1e-15)

    def gathers(x, i):
        return x[i] * 2 + x[:, i].sum() + np.take(x, i)[:, None] + x[..., i][:, :1]

    x, i = rng.normal(size=(3, 3)), np.array([0, 2, -1])
    np.testing.assert_array_equal(rg.jit(gathers, compile="eager")(x, i), gathers(x, i))
    with pytest.raises(IndexError):
        rg.jit(gathers, compile="eager")(x, np.array([0, 3, 1]))
    with pytest.raises(rg.TraceError, match=r"x\[mask\]: the result's shape depends"):
        rg.jit(lambda x: x[x > 0])(x)
    with pytest.raises(rg.TraceError, match="one element per row"):
        rg.jit(lambda x, i: x[i, i])(x, i)


def test_a_users_relations_join_the_query():
    x = rg.lvar("x")
    squared = rg.rule(rg.log(rg.exp(x) * rg.exp(x)), 2 * x, name="log_exp_squaredo")

    def fn(z):
        return np.log(np.exp(z) * np.exp(z))

    z = np.array([1.0, 400.0])
    mine = rg.jit(fn, relations=[squared], compile="eager")
    assert mine(z).tolist() == [2.0, 800.0] and rg.pprint(mine.rewritten) == "(2 * z)"
    with np.errstate(over="ignore"):
        assert np.isinf(rg.jit(fn, compile="eager")(z)[1])  # the library alone has no such rule
    db = rg.EquilibriumDB("mine")
    db.register("log_exp_squaredo", squared, "mine", position=1)
    assert (
        rg.pprint(rg.jit(fn, relations=[db], include=(), compile="eager").specialize(z).rewritten)
        == "(2 * z)"
    )
    with pytest.raises(TypeError, match="a relation must be a goal constructor"):
        rg.jit(fn, relations=[42])


def test_python_scalar_arguments_are_constants_found_by_value(rng):
    """A Python number passed positionally is a constant of the program (numpy's weak
    scalar): each value its own specialization, found again without binding the
    signature; 0.0 and -0.0, 1.0 and True stay apart; with a size read, each size too."""

    def moving(x, w, scale):
        c = np.cumsum(x)
        return (c[w:] - c[:-w]) / scale

    f = rg.jit(moving, compile="eager")
    x = rng.normal(size=20)
    for w, scale in ((3, 2.0), (5, 2.0), (3, 2.0), (3, -0.0), (3, 0.0), (1, 1.0), (1, True)):
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(f(x, w, scale), moving(x, w, scale))
    assert len(f._runs) == 6 and len(f.specializations) == 6  # (3, 2.0) found again
    assert len(f(rng.normal(size=7), 3, 2.0)) == 4  # another length: the same kernel
    g = rg.jit(lambda x, k: x[: x.shape[0] - k] * k, compile="eager")  # reads a size
    for n, k in ((6, 2), (9, 2), (6, 2), (6, 4)):
        v = rng.normal(size=n)
        np.testing.assert_array_equal(g(v, k), v[: n - k] * k)
    assert len(g.specializations) == 3


def test_a_call_like_the_last_runs_without_a_lookup(rng, monkeypatch):
    """A call with the last call's types, shapes and dtypes goes straight to its
    kernel's checked fast call (no key, no lookup); any other call still finds its
    own specialization: sizes read, tuples returned, Python scalars, a missing
    argument, other dtypes."""
    from relgraph.frontend import jit as jit_module

    keys = []
    signature_of = jit_module._SIGNATURE_OF
    monkeypatch.setattr(jit_module, "_SIGNATURE_OF", lambda a: keys.append(1) or signature_of(a))
    f = rg.jit(lambda x, y: (x[: x.shape[0] - 1] * y[0], [np.sum(x)]), compile="eager")
    x3, x4, y = rng.normal(size=3), rng.normal(size=4), np.array([2.0])
    for x in (x3, x3, x4, x3, x3, x3.astype(np.float32), x3):
        got = f(x, y)
        assert type(got) is tuple and type(got[1]) is list
        np.testing.assert_array_equal(got[0], x[:-1] * 2.0)
        np.testing.assert_allclose(got[1][0], np.sum(x), rtol=1e-6)
        assert f.last.function.inputs[0].dtype == x.dtype
        assert len(f.last.function.outputs[0].shape) == 1
    calls = len(keys)
    again = f(x3, y)
    assert len(keys) == calls and again[0] is not got[0]  # no lookup; a fresh result
    g = rg.jit(lambda x, s: x * s, compile="eager")
    v = rng.normal(size=5)
    for s in (2.0, 3.0, 2.0, np.float64(4.0), np.float64(5.0), 3.0):
        np.testing.assert_array_equal(g(v, s), v * s)
    with pytest.raises(TypeError):
        g(v)  # a Python scalar was a constant of the last call: not taken for granted
