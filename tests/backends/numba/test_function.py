"""rg.function: compiled kernels agree with numpy; bad arguments fail before they run."""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relgraph as rg
from relgraph.backends.numba import products, tiers
from relgraph.backends.numba.function import cache_dir
from relgraph.backends.numba.lowering import LoweringError, lower
from relgraph.exceptions import TypeCheckError

DTYPES = ["float32", "float64", "int64"]
UNARY = [rg.neg, rg.exp, rg.log, rg.log1p, rg.expm1, rg.sqrt, rg.abs]
BINARY = [rg.add, rg.sub, rg.mul, rg.true_div, rg.maximum, rg.pow]


pytestmark = pytest.mark.usefixtures("kernel_cache")  # a fresh kernel cache per module


def data(rng, shape, dtype):
    values = rng.standard_normal(shape) * 3
    return values.astype(dtype)


def close(got, expected, dtype):
    # libm and numpy's own exp/log may differ in the last bit: tolerances by result dtype
    kind = np.asarray(expected).dtype
    tol = {"float32": 2e-6, "float64": 1e-12}.get(str(kind), 0)
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)
    assert np.asarray(got).dtype == kind


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_elementwise_op_in_one_kernel(dtype, rng):
    # one kernel per dtype keeps compile time down; every op is in it
    x, y = rg.vector("x", dtype), rg.vector("y", dtype)
    outs = [op(x) for op in UNARY] + [op(x, y) for op in BINARY if op is not rg.pow]
    outs.append(rg.pow(rg.abs(x), 2))
    X, Y = data(rng, 17, dtype), data(rng, 17, dtype)
    env = {x: X, y: Y}
    got = rg.function([x, y], outs, compile="eager")(X, Y)
    for term, value in zip(outs, got):
        close(value, rg.evaluate(term, env), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_algebra_reductions_transpose(dtype, rng):
    A, B, v = rg.matrix("A", dtype), rg.matrix("B", dtype), rg.vector("v", dtype)
    outs = [A @ v, A @ B.T, v @ v, rg.sum(A), rg.sum(A, 0), rg.sum(A, 1), rg.max(A, 0),
            rg.max(A.T, 1), rg.max(v), rg.sum(A @ v) * 2]  # fmt: skip
    a, b, vv = data(rng, (4, 3), dtype), data(rng, (5, 3), dtype), data(rng, 3, dtype)
    env = {A: a, B: b, v: vv}
    got = rg.function([A, B, v], outs, compile="eager")(a, b, vv)
    for term, value in zip(outs, got):
        close(value, rg.evaluate(term, env), dtype)


def test_broadcasting_scalars_and_constants(rng):
    A, x, s = rg.matrix("A"), rg.vector("x"), rg.scalar("s")
    t = rg.exp(A * x) + s - np.arange(3.0) + 2.0 * x
    a, v = rng.standard_normal((4, 3)), rng.standard_normal(3)
    f = rg.function([A, x, s], t, compile="eager")
    np.testing.assert_allclose(f(a, v, 1.5), rg.evaluate(t, {A: a, x: v, s: 1.5}), rtol=1e-12)
    # a column against a row: the general (strided) loop
    col = rg.matrix("col")
    g = rg.function([col, x], col * x + 1.0, compile="eager")
    c = rng.standard_normal((4, 1))
    np.testing.assert_allclose(g(c, v), c * v + 1.0, rtol=1e-12)


def test_a_new_axis_of_size_one_ties_no_two_sizes_together(rng):
    # (n, 1) - (1, m) is (n, m) for any n and m: the size-1 axes fit anything.
    x, y = rg.matrix("x"), rg.matrix("y")
    t = rg.sum(x * x, axis=1)[:, None] + rg.sum(y * y, axis=1)[None, :] - 2 * (x @ y.T)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((5, 3))
    want = (a**2).sum(1)[:, None] + (b**2).sum(1)[None, :] - 2 * a @ b.T
    np.testing.assert_allclose(rg.function([x, y], t, compile="eager")(a, b), want, rtol=1e-12)
    with pytest.raises(rg.TypeCheckError, match="axis 1 of x is 3, axis 1 of y is 4"):
        rg.function([x, y], t, compile="eager")(a, rng.standard_normal((5, 4)))


def test_zero_d_empty_nan_inf():
    s, x = rg.scalar("s"), rg.vector("x")
    f = rg.function([s, x], [rg.exp(s) * 2.0, rg.log(x) + s], compile="eager")
    out0, out1 = f(0.0, np.array([-1.0, 0.0, np.inf, np.nan]))
    assert out0.shape == () and out0 == 2.0
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out1, np.log([-1.0, 0.0, np.inf, np.nan]))
    empty = f(1.0, np.zeros(0))[1]
    assert empty.shape == (0,) and empty.dtype == np.float64


def test_shared_subterms_are_computed_once():
    x, y = rg.vector("x"), rg.vector("y")
    shared = rg.exp(x) * y
    src = lower([x, y], [shared + rg.log(shared), shared * 2.0]).source
    # the shared product is one array, read by both outputs: exp appears in one
    # region only (its three loop variants: flat, rows without and with broadcasting)
    assert src.count("kernels.fresh(") == 3
    assert src.count("exp(") == 3
    np.testing.assert_allclose(
        rg.function([x, y], [shared + 1.0, shared * 2.0], compile="eager")(
            np.zeros(3), np.ones(3)
        )[1],
        2.0,
    )


def test_serial_and_parallel_lowerings():
    x = rg.vector("x")
    serial, parallel = (lower([x], [rg.exp(x) + 1.0], parallel=p).source for p in (False, True))
    assert "prange(" not in serial and "parallel=False" in serial
    assert "prange(" in parallel and "'prange': True" in parallel


def test_large_inputs_run_one_kernel_or_the_parallel_kernel(rng):
    x, y = rg.vector("x"), rg.vector("y")
    f = rg.function([x, y], rg.exp(x) * y + rg.log1p(y * y) - x / y, compile="eager")
    X, Y = rng.uniform(0.5, 1.5, (2, 1 << 17))
    want = np.exp(X) * Y + np.log1p(Y * Y) - X / Y
    np.testing.assert_allclose(f(X, Y), want, rtol=1e-13, atol=1e-15)
    assert f._parallel is None  # one large call: the serial kernel on blocks of rows
    np.testing.assert_allclose(f(X, Y), want, rtol=1e-13, atol=1e-15)
    assert f._parallel is not None  # a second: the prange kernel
    g = rg.function([x], x - rg.mean(x), compile="eager")  # every row before any
    np.testing.assert_allclose(g(X), X - X.mean(), rtol=1e-13, atol=1e-15)
    assert g.rows is None and g._parallel is not None  # built on the first large call
    # loops that read slices of a large input are long too
    h = rg.function([x], rg.sum(x[1:] * x[:-1]), compile="eager")
    np.testing.assert_allclose(h(X), np.sum(X[1:] * X[:-1]), rtol=1e-13)
    assert h.loop_inputs == (0,) and h._parallel is not None


def test_a_large_call_runs_on_blocks_of_rows_until_the_prange_kernel_is_ready(rng, monkeypatch):
    """With kernels compiled in the background, large calls run the serial kernel on
    blocks of rows on threads; the second one has the ``prange`` kernel compiled (a
    function called once at that scale pays for no second kernel), and once it is
    ready, large calls run it: its sums fold in the serial kernel's order (the same
    bits).  Where BLAS runs, never the prange kernel (BLAS's threads would spin
    against prange's): blocks where each block's products stay on its thread, else
    one call (products of 256 by 256 x 256 per row: BLAS's threads compute them)."""
    from relgraph.backends.numba.background import COMPILER

    on_blocks = []
    run_blocks = tiers.run_blocks
    monkeypatch.setattr(tiers, "run_blocks", lambda *a: on_blocks.append(1) or run_blocks(*a))
    x, A, W = rg.vector("x"), rg.matrix("A"), rg.matrix("W")
    f = rg.function([x], rg.sum(rg.exp(x) * 1e-3), compile="background")
    X = rng.normal(size=1 << 17)
    assert f.wait()
    first = f(X)
    assert on_blocks and COMPILER.idle(timeout=120) and f._parallel is None
    assert f(X) == first and len(on_blocks) == 2  # the second: blocks, and prange wanted
    assert COMPILER.idle(timeout=120) and f._parallel is not None
    on_blocks.clear()
    again = f(X)
    assert not on_blocks and again == f.kernel(X)[0]  # prange: the serial kernel's sum
    np.testing.assert_allclose([first, again], np.sum(np.exp(X) * 1e-3), rtol=1e-12)
    g = rg.function([A, W], rg.exp(-(A @ W)) + A, compile="eager")  # A read by a loop
    M, V = rng.normal(size=(1 << 9, 1 << 8)), rng.normal(size=(1 << 8, 1 << 8)) / 16
    on_blocks.clear()
    for _ in range(2):
        np.testing.assert_allclose(g(M, V), np.exp(-(M @ V)) + M, rtol=1e-12)
    assert g._last is not None and g._last[3] and g._last[4] == products.ONE_CALL
    assert not on_blocks and g._parallel is None


def test_a_matrix_only_a_skinny_product_reads_makes_a_call_large(rng, monkeypatch):
    """X in sum(softplus(X @ w)) is read by no fused loop, only by the product, which
    for a matrix of at most SKINNY columns is the kernel's own loop: a large X runs on
    blocks of rows.  A wider matrix's product is BLAS's, which has threads of its own:
    no blocks."""
    X, w = rg.matrix("X"), rg.vector("w")
    narrow = rg.function([X, w], rg.sum(rg.softplus(X @ w)), compile="eager")
    wide = rg.function([X, w], rg.sigmoid(X @ w), compile="eager")
    assert narrow.loop_inputs == wide.loop_inputs == ()
    calls = []
    real = tiers.run_blocks
    monkeypatch.setattr(tiers, "run_blocks", lambda *a: calls.append(a) or real(*a))
    x, v = rng.normal(size=(1 << 14, 8)), rng.normal(size=8)  # 2 ** 17 elements
    np.testing.assert_allclose(narrow(x, v), np.sum(np.logaddexp(0.0, x @ v)), rtol=1e-12)
    assert len(calls) == 1
    x, v = rng.normal(size=(300, 300)), rng.normal(size=300)
    np.testing.assert_allclose(wide(x, v), 1.0 / (1.0 + np.exp(-(x @ v))), rtol=1e-12)
    assert len(calls) == 1


def test_one_fused_loop_without_temporaries():
    x, y, z = rg.vector("x"), rg.vector("y"), rg.vector("z")
    src = lower([x, y, z], [rg.exp(x) * y + rg.log1p(z * z) - x / y]).source
    assert src.count("kernels.fresh(") == 1  # only the output is allocated


class TestErrors:
    def test_wrong_argument_count(self):
        x = rg.vector("x")
        with pytest.raises(TypeError, match=r"expected 1 arguments \(x\), got 2"):
            rg.function([x], x + 1.0, compile="eager")(np.ones(2), np.ones(2))

    def test_unsafe_dtype(self):
        x = rg.vector("x", "float32")
        with pytest.raises(rg.TypeCheckError, match="'x' is float32; cannot safely cast float64"):
            rg.function([x], x + 1.0, compile="eager")(np.ones(2))

    def test_safe_casts_are_made(self):
        x = rg.vector("x")
        np.testing.assert_array_equal(
            rg.function([x], x * 2.0, compile="eager")(np.arange(3)), [0.0, 2.0, 4.0]
        )

    def test_wrong_ndim_and_known_shape(self):
        A = rg.matrix("A", shape=(2, 2))
        f = rg.function([A], A * 2.0, compile="eager")
        with pytest.raises(rg.TypeCheckError, match="'A' must be 2-d"):
            f(np.ones(3))
        with pytest.raises(rg.TypeCheckError, match="'A' must have shape"):
            f(np.ones((2, 3)))

    def test_incompatible_shapes_name_the_symbols(self):
        A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
        f = rg.function([A, x, y], A @ x + y, compile="eager")
        with pytest.raises(rg.TypeCheckError, match=r"axis 1 of A is 3, axis 0 of x is 4"):
            f(np.ones((2, 3)), np.ones(4), np.ones(2))
        with pytest.raises(rg.TypeCheckError, match=r"axis 0 of A is 2, axis 0 of y is 5"):
            f(np.ones((2, 3)), np.ones(3), np.ones(5))
        # broadcasting a length-1 axis is fine; a product's inner axes must match exactly
        np.testing.assert_allclose(f(np.ones((2, 3)), np.ones(3), np.ones(1)), 4.0)
        g = rg.function([A, x, y], A @ (x + y), compile="eager")
        with pytest.raises(rg.TypeCheckError, match=r"in \(A @ \(x \+ y\)\)"):
            g(np.ones((2, 3)), np.ones(1), np.ones(1))

    def test_missing_inputs_and_bad_inputs(self):
        x, y = rg.vector("x"), rg.vector("y")
        with pytest.raises(rg.TypeCheckError, match="not inputs: y"):
            rg.function([x], x + y, compile="eager")
        with pytest.raises(TypeError, match="must be symbols"):
            rg.function(["x"], x, compile="eager")

    def test_an_op_without_lowering_fails_at_function_time(self):
        class Erf(rg.Op):
            name, nin = "erf", 1

            def infer_type(self, types, args):
                return types[0]

        x = rg.vector("x")
        with pytest.raises(LoweringError, match="Op erf has no Numba lowering"):
            rg.function([x], Erf()(x) + 1.0, compile="eager")
        # Without a kernel the numpy tier runs it: an Op without perform() says so.
        with pytest.raises(NotImplementedError, match="Op erf defines no perform"):
            rg.function([x], Erf()(x) + 1.0)(np.zeros(2))

    def test_a_reduction_of_a_3d_array_along_one_axis_compiles(self):
        # It was refused ("sum over axis=1 of a 3-d array"); it compiles now.
        T = rg.tensor("T", ndim=3)
        a = np.arange(24.0).reshape(2, 3, 4)
        np.testing.assert_array_equal(
            rg.function([T], rg.sum(T, 1), compile="eager")(a), a.sum(axis=1)
        )


class TestCaching:
    def test_same_structure_reuses_the_function(self):
        x = rg.vector("x")
        assert rg.function([x], rg.exp(x) + 1.0, compile="eager") is rg.function(
            [x], rg.exp(x) + 1.0, compile="eager"
        )

    def test_same_structure_other_names_reuses_the_kernel(self):
        a, b = rg.vector("a"), rg.vector("b")
        assert (
            rg.function([a], rg.sqrt(a), compile="eager").kernel
            is rg.function([b], rg.sqrt(b), compile="eager").kernel
        )

    def test_any_memory_layout_runs_the_one_compiled_signature(self, rng):
        # A strided, Fortran-ordered or read-only argument is made C-contiguous (or
        # passed as is): the caller never waits for Numba to compile another variant.
        M, v = rg.matrix("M"), rg.vector("v")
        f = rg.function([M, v], rg.tanh(M) * v + 1.0, compile="eager")
        a, b = rng.normal(size=(6, 8)), rng.normal(size=16)
        frozen = a.copy()
        frozen.flags.writeable = False
        for m, w in [(a, b[:8]), (a[::2], b[::2]), (np.asfortranarray(a), b[8:]), (frozen, b[:8]),
                     (a, np.broadcast_to(b[:1], (8,)))]:  # fmt: skip
            np.testing.assert_allclose(f(m, w), np.tanh(m) * w + 1.0, rtol=1e-15)
        assert len(f.kernel.signatures) == 1

    def test_kernels_are_written_to_the_cache_directory(self):
        x = rg.vector("x")
        f = rg.function([x], rg.log1p(x) * 3.0, compile="eager")
        f(np.ones(2))
        files = list(cache_dir().glob("k_*.py"))
        assert any(p.read_text() == f.source for p in files)

    def test_the_cache_key_covers_the_inlined_helpers(self, monkeypatch):
        import relgraph.backends.numba.kernel_cache as K

        x = rg.vector("x")
        source = lower([x], [rg.exp(x)]).source
        sig = K.signature([x], [rg.exp(x)], (0,))
        monkeypatch.setattr(K, "_KERNELS", {})
        before = {p.name for p in cache_dir().glob("k_*.py")}
        K.compile_kernel(source, sig)
        monkeypatch.setattr(K, "_HELPERS", "changed-helpers")
        monkeypatch.setattr(K, "_KERNELS", {})
        K.compile_kernel(source, sig)
        assert len({p.name for p in cache_dir().glob("k_*.py")} - before) == 2

    def test_a_new_process_loads_the_compiled_kernel(self, tmp_path):
        script = (
            "import numpy as np, relgraph as rg; x = rg.vector('x');"
            "print(rg.function([x], rg.expm1(x) * 2.0, compile='eager')(np.zeros(2)).tolist())"
        )
        env = {"RELGRAPH_CACHE_DIR": str(tmp_path), "PATH": ""}
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                                 text=True, check=True)  # fmt: skip
            assert out.stdout.strip() == "[0.0, 0.0]"
        assert list(tmp_path.glob("kernels/__pycache__/*.nbi")), "numba's index is on disk"


@st.composite
def programs(draw, depth):
    x, y, A = rg.vector("x"), rg.vector("y"), rg.matrix("A")
    if depth == 0:
        return draw(st.sampled_from([x, y, 1.5]))
    kind = draw(st.sampled_from(["add", "mul", "sub", "neg", "exp", "dot", "max"]))
    sub = programs(depth - 1)
    if kind in ("add", "mul", "sub", "max"):
        op = {"add": rg.add, "mul": rg.mul, "sub": rg.sub, "max": rg.maximum}[kind]
        a, b = draw(sub), draw(sub)
        if not any(isinstance(t, (rg.Term, rg.Symbol)) for t in (a, b)):
            a = x
        return op(a, b)
    operand = draw(sub)
    if not isinstance(operand, (rg.Term, rg.Symbol)):
        operand = y
    if kind == "neg":
        return -operand
    if kind == "exp":
        return rg.exp(rg.neg(rg.abs(operand)))
    return A @ operand


@settings(max_examples=40, deadline=None)
@given(t=programs(4), seed=st.integers(0, 2**16))
def test_compiled_programs_agree_with_evaluate(t, seed):
    rng = np.random.default_rng(seed)
    x, y, A = rg.vector("x"), rg.vector("y"), rg.matrix("A")
    env = {x: rng.standard_normal(3), y: rng.standard_normal(3), A: rng.standard_normal((3, 3))}
    f = rg.function([x, y, A], t, compile="eager")
    np.testing.assert_allclose(f(env[x], env[y], env[A]), rg.evaluate(t, env), rtol=1e-9,
                               atol=1e-12)  # fmt: skip


class TestOutputBuffers:
    """A result the caller holds is never written again; ``out=`` writes where asked."""

    N = 1 << 17  # above PARALLEL_MIN: the parallel kernel runs too

    def make(self, rng):
        x, y = rg.vector("x"), rg.vector("y")
        f = rg.function([x, y], rg.exp(x) * y + 1.0, compile="eager")
        X, Y = rng.uniform(0.5, 1.5, (2, self.N))
        return f, X, Y

    def test_a_held_result_or_view_is_never_overwritten(self, rng):
        f, X, Y = self.make(rng)
        held = f(X, Y)
        view = f(X, Y * 3)[::2]
        dropped = f(X, Y * 4)
        del dropped
        again = f(X, Y * 5)
        np.testing.assert_allclose(held, np.exp(X) * Y + 1.0, rtol=1e-13)
        np.testing.assert_allclose(view, (np.exp(X) * Y * 3 + 1.0)[::2], rtol=1e-13)
        np.testing.assert_allclose(again, np.exp(X) * Y * 5 + 1.0, rtol=1e-13)
        assert not np.shares_memory(again, held) and not np.shares_memory(again, view)

    def test_a_result_passed_back_as_input_is_not_the_output(self, rng):
        f, X, Y = self.make(rng)
        r = f(X, Y)
        out = f(r, Y)
        np.testing.assert_allclose(out, np.exp(np.exp(X) * Y + 1.0) * Y + 1.0, rtol=1e-12)
        np.testing.assert_allclose(r, np.exp(X) * Y + 1.0, rtol=1e-13)
        assert not np.shares_memory(out, r)

    @pytest.mark.parametrize("n", [5, 100_000])
    def test_the_same_output_twice_is_two_arrays(self, n):
        x = rg.vector("x")
        f = rg.function([x], [x + 1.0, x + 1.0, 2.0 * x, x + x], compile="eager")
        a, b, c, d = f(np.zeros(n))
        assert not np.shares_memory(a, b)
        del a, c
        f(np.full(n, 41.0))
        np.testing.assert_array_equal(b, np.ones(n))
        np.testing.assert_array_equal(d, np.zeros(n))

    def test_an_output_and_its_transpose_are_kept(self):
        A, B = rg.matrix("A"), rg.matrix("B")
        g = rg.function([A, B], [A + B, (A + B).T], compile="eager")
        s, st = g(np.ones((300, 300)), np.zeros((300, 300)))
        del s
        g(np.full((300, 300), 5.0), np.full((300, 300), 5.0))
        np.testing.assert_array_equal(st, np.ones((300, 300)))
        s2, st2 = g(st, st)  # a kept output passed back as input: not overwritten
        np.testing.assert_array_equal(st, np.ones((300, 300)))
        np.testing.assert_array_equal(s2, np.full((300, 300), 2.0))

    @pytest.mark.parametrize("n", [7, 1 << 17])
    def test_out_receives_every_output(self, rng, n):
        x, y = rg.vector("x"), rg.vector("y")
        f = rg.function([x, y], [rg.exp(x) * y, rg.sum(x), x + 1.0, x + 1.0], compile="eager")
        X, Y = rng.standard_normal((2, n))
        o0, o1, o3 = np.empty(n), np.empty(()), np.empty(n)
        res = f(X, Y, out=[o0, o1, None, o3])
        assert res[0] is o0 and res[1] is o1 and res[3] is o3
        assert not np.shares_memory(res[2], o3)
        np.testing.assert_allclose(o0, np.exp(X) * Y, rtol=1e-13)
        np.testing.assert_allclose(o1, X.sum(), rtol=1e-12)
        np.testing.assert_allclose(o3, X + 1.0)
        single = rg.function([x], x * 2.0, compile="eager")
        buf = np.empty(n)
        assert single(X, out=buf) is buf
        np.testing.assert_array_equal(buf, X * 2.0)

    def test_bad_out_is_refused_before_anything_changes(self, rng):
        x, y = rg.vector("x"), rg.vector("y")
        f = rg.function([x, y], [x * y, x + y], compile="eager")
        X, Y = rng.standard_normal((2, 10))
        keep = X.copy()
        with pytest.raises(rg.TypeCheckError, match="shares memory with argument 'x'"):
            f(X, Y, out=[X, None])
        buf = np.empty(10)
        with pytest.raises(rg.TypeCheckError, match=r"out\[1\] shares memory with out\[0\]"):
            f(X, Y, out=[buf, buf])
        with pytest.raises(rg.TypeCheckError, match="must be a 1-d float64 array"):
            f(X, Y, out=[np.empty(10, "float32"), None])
        with pytest.raises(rg.TypeCheckError, match="has shape"):
            f(X, Y, out=[np.empty(3), None])
        with pytest.raises(TypeError, match="2 entries"):
            f(X, Y, out=[buf])
        np.testing.assert_array_equal(X, keep)

    def test_dropped_functions_are_freed(self):
        import gc
        import weakref

        from relgraph.backends.numba import function as compiler

        x = rg.vector("x_dropped")
        f = rg.function([x], rg.exp(x) * 2.0, compile="eager")
        f(np.ones(1 << 17))
        ref = weakref.ref(f)
        del f
        gc.collect()
        assert ref() is None
        assert not any(x in key[0] for key in compiler._FUNCTIONS.keys())


def test_the_first_kernel_is_flat_and_broadcasting_falls_back(rng):
    x, y = rg.vector("x"), rg.vector("y")
    flat = lower([x, y], [rg.exp(x) * y], broadcast=False).source
    assert "_s0" not in flat and "raise ValueError" in flat  # no strided loop
    f = rg.function([x, y], rg.exp(x) * y + 1.0, compile="eager")
    X, Y = rng.standard_normal((2, 5))
    np.testing.assert_allclose(f(X, Y), np.exp(X) * Y + 1.0, rtol=1e-13)
    assert f._general is None  # equal shapes: the flat kernel served
    np.testing.assert_allclose(f(X, Y[:1]), np.exp(X) * Y[0] + 1.0, rtol=1e-13)
    assert f._general is not None  # (5,) with (1,): built on first need


class TestNumpySemanticsOrRefusal:
    """Compiled code agrees with numpy, or rg.function refuses with a clear error."""

    @pytest.mark.parametrize("n", [4, 1 << 17])
    def test_int_power_of_a_negative_exponent_raises_as_numpy_does(self, n):
        x, y = rg.vector("x", "int64"), rg.vector("y", "int64")
        f = rg.function([x, y], x**y, compile="eager")
        base, exp_ok = np.full(n, 3), np.full(n, 2)
        np.testing.assert_array_equal(f(base, exp_ok), base**exp_ok)
        exp_bad = exp_ok.copy()
        exp_bad[-1] = -1
        with pytest.raises(ValueError, match="negative integer powers"):
            np.power(base, exp_bad)
        with pytest.raises(ValueError, match="negative integer powers"):
            f(base, exp_bad)
        with pytest.raises(ValueError, match="negative integer powers"):
            rg.evaluate(x**y, {x: base, y: exp_bad})

    @pytest.mark.parametrize("dtype", ["int8", "uint8", "bool"])
    def test_float16_results_are_refused_at_function_time(self, dtype):
        b = rg.vector("b", dtype)
        assert np.exp(np.zeros(1, dtype)).dtype == np.float16
        with pytest.raises(LoweringError, match=r"exp\(b\) computes in float16"):
            rg.function([b], rg.exp(b) + 1, compile="eager")

    @pytest.mark.parametrize("dtype", ["int8", "uint8", "bool"])
    def test_float16_results_run_with_numpy_and_say_so_once(self, dtype):
        b = rg.vector("b", dtype)
        v = np.array([0, 1, 1, 0, 1], dtype)
        f = rg.function([b], rg.sqrt(b) / 3 + rg.exp(b))  # compile="background"
        with pytest.warns(RuntimeWarning, match=r"keeps running with numpy.*float16") as caught:
            assert not f.wait()
            for _ in range(3):  # the warning comes once: no kernel is tried again
                got = f(v)
        assert sum("keeps running with numpy" in str(w.message) for w in caught) == 1
        want = np.sqrt(v) / 3 + np.exp(v)
        assert got.dtype == want.dtype == np.float16
        np.testing.assert_array_equal(got, want)

    def test_small_ints_wrap_as_numpy_does(self):
        x8 = rg.vector("x8", "int8")
        f = rg.function([x8], [x8 * 2 + 1, rg.sum(x8 * 2)], compile="eager")
        v = np.array([100, -128, 127], np.int8)
        a, s = f(v)
        np.testing.assert_array_equal(a, v * 2 + 1)
        assert a.dtype == np.int8 and s == np.sum(v * 2) and s.dtype == np.sum(v * 2).dtype


class TestSizeGuards:
    def test_a_huge_graph_is_refused_with_the_limit_named(self):
        x = rg.vector("x")
        t = x
        for _ in range(2_500):
            t = t * 1.0001 + 0.5
        with pytest.raises(LoweringError, match="5000 nodes, more than max_nodes=4000"):
            rg.function([x], t, compile="eager")

    def test_source_generation_is_linear_in_the_graph(self):
        import time

        x = rg.vector("x")
        t = x
        for _ in range(10_000):
            t = t * 1.0001 + 0.5
        start = time.perf_counter()
        src = lower([x], [t]).source
        assert src.count("\n") > 20_000 and time.perf_counter() - start < 20  # was minutes


def test_output_shapes_are_planned_from_the_argument_shapes(rng):
    """Outputs are allocated by numpy before the kernel runs (a kernel's own large
    allocations pay a page fault per 4 KiB): the planned shape is the result's."""
    from relgraph.backends.numba.shapes import planned_shape, shape_checks

    x, m, v = rg.vector("x"), rg.matrix("m"), rg.vector("v")
    top = rg.max(m, axis=1, keepdims=True)
    graphs = {
        "broadcast": ([m, v], m * v + 1.0),
        "row softmax": ([m], rg.exp(m - top) / rg.sum(rg.exp(m - top), axis=1, keepdims=True)),
        "product": ([m, v], rg.tanh(m @ v)),
        "outer": ([x, v], x[:, None] - v[None]),
        "column sums": ([m], rg.sum(m, axis=0) * 2.0),
    }
    args = {x: rng.standard_normal(5), v: rng.standard_normal(3), m: rng.standard_normal((4, 3))}
    for name, (inputs, term) in graphs.items():
        plan = shape_checks(inputs, [term])[2][0]
        values = [args[s] for s in inputs]
        want = rg.function(inputs, term, compile="never")(*values).shape
        assert plan is not None and planned_shape(plan, [a.shape for a in values]) == want, name
    assert shape_checks([v], [rg.reshape(v, (-1, 1))])[2] == [None]  # known when it runs


def test_shapes_are_checked_again_when_they_change(rng):
    """A call with the last call's shapes reuses their check and output shapes; any
    other shapes are checked and planned again."""
    x, y = rg.vector("x"), rg.vector("y")
    f = rg.function([x, y], x * y + 1.0, compile="eager")
    a, b = rng.normal(size=5), rng.normal(size=5)
    for _ in range(2):
        np.testing.assert_array_equal(f(a, b), a * b + 1.0)
    with pytest.raises(TypeCheckError, match="shapes do not fit"):
        f(a, rng.normal(size=4))
    c, d = rng.normal(size=7), rng.normal(size=1)  # d broadcasts
    np.testing.assert_array_equal(f(c, d), c * d + 1.0)
    with pytest.raises(TypeCheckError, match="shapes do not fit"):
        f(a, rng.normal(size=4))
    assert f(a, b).shape == (5,)


def test_repeated_calls_of_one_shape_take_the_fast_call_and_agree_with_the_checked_one(rng):
    """After a call, arrays of its shapes and dtypes take one generated function
    (fastcall); anything else (a view, a list, another dtype or shape, shapes that
    broadcast, out=) goes the checked way, with the same values and errors."""
    x, y = rg.vector("x"), rg.vector("y")
    f = rg.function([x, y], rg.exp(x) * y + rg.log1p(y * y), compile="eager")
    a, b = rng.normal(size=6), rng.normal(size=6)
    a_before = a.copy()
    want = np.exp(a) * b + np.log1p(b * b)
    first = f(a, b)
    assert f.repeat_call is None  # one call of these shapes: not yet worth generating
    second = f(a, b)
    assert f.repeat_call is not None
    np.testing.assert_allclose(second, want, rtol=1e-14)
    assert second is not first and not np.shares_memory(first, second)  # new arrays
    second[:] = 0.0  # a result the caller holds is the caller's
    np.testing.assert_allclose(f(a, b), want, rtol=1e-14)
    w = rng.normal(size=12)
    for _ in range(3):  # a view takes the checked call, and generates nothing more
        want_w = np.exp(w[::2]) * b + np.log1p(b * b)
        np.testing.assert_allclose(f(w[::2], b), want_w, rtol=1e-14)
    assert len(f._fast_calls) == 1
    np.testing.assert_allclose(f(list(a), b), want, rtol=1e-14)
    np.testing.assert_allclose(f(a.astype("float32"), b), want, rtol=1e-6)
    with pytest.raises(TypeCheckError, match="shapes do not fit"):
        f(a, rng.normal(size=5))
    one = rng.normal(size=1)  # broadcasts: the flat kernel refuses it, every time
    for _ in range(2):
        np.testing.assert_allclose(f(a, one), np.exp(a) * one + np.log1p(one * one))
    out = np.empty(6)
    for _ in range(2):  # out= of the new output's shape and dtype: the fast call too
        out[:] = np.nan
        assert f(a, b, out=out) is out and np.allclose(out, want)
    with pytest.raises(TypeCheckError, match="shares memory with argument 'x'"):
        f(a, b, out=a)  # the kernel would overwrite an input it reads
    with pytest.raises(TypeCheckError, match="must be a 1-d float64 array"):
        f(a, b, out=np.empty(6, "float32"))
    np.testing.assert_array_equal(a, a_before)  # refused before anything ran
    with pytest.raises(TypeError, match="expected 2 arguments"):
        f(a)


def test_a_numpy_scalar_argument_takes_the_fast_call(rng):
    """``np.log(lam) - lam * x`` with ``lam`` a numpy float64 (PyMC's log-densities):
    the fast call takes a numpy scalar of the input's dtype, each value its own; a
    Python float, another dtype's scalar or a 0-d array go the checked way, with the
    same values as numpy."""
    x, lam = rg.vector("x"), rg.scalar("lam")
    f = rg.function([x, lam], rg.log(lam) - lam * x, compile="eager")
    a = rng.normal(size=5)
    for value in (2.0, 3.0):
        f(a, np.float64(value))
    assert f.repeat_call is not None
    for value in (np.float64(0.5), np.float64(np.inf), np.float64(-0.0), np.float64(np.nan)):
        with np.errstate(all="ignore"):
            want = np.log(value) - value * a
            np.testing.assert_array_equal(f.repeat_call((a, value)), want)
            np.testing.assert_array_equal(f(a, value), want)
    assert len(f._fast_calls) == 1
    for other in (0.5, np.float32(0.5), np.array(0.5)):  # the checked call
        assert f.repeat_call((a, other)) is None
        np.testing.assert_allclose(f(a, other), np.log(0.5) - 0.5 * a, rtol=1e-15)


def test_the_fast_call_runs_the_kernels_compiled_entry(rng):
    """The fast call skips Numba's dispatcher: it calls the entry compiled for its
    arguments' types, which reads read-only and writeable arrays alike; an array that
    is not aligned (a view into bytes) goes the checked way, with numpy's values."""
    x, y = rg.vector("x"), rg.vector("y")
    f = rg.function([x, y], x * y + 1.0, compile="eager")
    a, b = rng.normal(size=7), rng.normal(size=7)
    for _ in range(2):
        f(a, b)
    assert f.repeat_call is not None
    assert f.repeat_call.__globals__["kernel"] is not f.kernel  # not the dispatcher
    frozen = a.copy()
    frozen.flags.writeable = False
    for u, v in ((frozen, b), (a, b), (b, frozen)):
        np.testing.assert_array_equal(f.repeat_call((u, v)), u * v + 1.0)
    raw = np.zeros(7 * 8 + 1, np.uint8)
    odd = raw[1:].view(np.float64)  # C-contiguous, not aligned
    odd[:] = a
    assert not odd.flags.aligned and f.repeat_call((odd, b)) is None
    np.testing.assert_array_equal(f(odd, b), a * b + 1.0)
    np.testing.assert_array_equal(frozen, a)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "uint8", "bool"])
def test_a_scalar_output_takes_the_fast_call_as_a_0d_array_of_its_dtype(rng, dtype):
    """A reduction to a scalar (a loss, a log-likelihood) takes the fast call too, and
    returns what the checked call returns: a new 0-d array of the result's dtype;
    beside an array output, each keeps its own kind."""
    x = rg.vector("x", dtype)
    a = (rng.normal(size=6) * 50).astype(dtype)
    f = rg.function([x], rg.sum(x), compile="eager")
    g = rg.function([x], [rg.sum(x), x * x], compile="eager")
    checked, (checked_sum, checked_sq) = f(a), g(a)
    assert f.repeat_call is None and g.repeat_call is None
    for _ in range(2):
        fast, (fast_sum, fast_sq) = f(a), g(a)
        for got, want in ((fast, checked), (fast_sum, checked_sum), (fast_sq, checked_sq)):
            assert type(got) is np.ndarray and got.dtype == want.dtype
            assert got.shape == want.shape and got is not want
            np.testing.assert_array_equal(got, want)
    assert f.repeat_call is not None and g.repeat_call is not None
    assert checked.shape == () and checked.dtype == np.sum(a).dtype
    np.testing.assert_array_equal(checked, np.sum(a))


def test_a_zero_dimensional_array_constant_is_a_scalar_in_the_kernel():
    """``x + np.array(3)`` holds a 0-d array: the kernel reads it as a scalar of its
    dtype (Numba would not take a 0-d array where a scalar goes), with numpy's
    promotion and wrap-around."""
    i, b = rg.vector("i", "int64"), rg.vector("b", "bool")
    f32 = rg.vector("f", "float32")
    cases = [
        (i + np.array(3), i, np.array([1, 2**63 - 1])),
        (b + np.array(0, np.uint8), b, np.array([True, False])),
        (f32 * np.array(np.nan, np.float16), f32, np.array([1.0, -0.0], np.float32)),
        (rg.maximum(f32, np.array(-np.inf)), f32, np.array([np.nan, 2.0], np.float32)),
    ]
    for term, symbol, value in cases:
        got = rg.function([symbol], term, compile="eager")(value)
        with np.errstate(all="ignore"):
            want = rg.evaluate(term, {symbol: value})
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
