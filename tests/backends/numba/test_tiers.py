"""Calls never wait for Numba: the evaluation tier (numpy) runs until the kernel is
ready, and both tiers give the same values, dtypes, shapes and errors."""

import importlib.util
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.special

import relgraph as rg
from relgraph.backends.numba.background import COMPILER

x, y = rg.vector("x"), rg.vector("y")
M = rg.matrix("M")
POINTS = np.array([-np.inf, -800.0, -1.5, -0.0, 0.0, 1e-300, 0.5, 2.0, 800.0, np.inf, np.nan])
PROGRAMS = {
    "softplus": ([x], rg.softplus(x) + rg.sigmoid(x) * 2.0),
    "stable": ([x, y], rg.log1p(rg.exp(x)) - rg.maximum(x, y) / (y + 1.0)),
    "rows": ([M], rg.logsumexp(M, axis=1) + rg.max(M, axis=1)),
    "product": ([M, x], M @ rg.tanh(x) + rg.sum(M, axis=1)),
    "int8": ([rg.vector("i", "int8")], rg.vector("i", "int8") * 3 + 100),
}


def _args(inputs):
    out = []
    for k, s in enumerate(inputs):
        if s.type.ndim == 2:
            out.append(np.resize(POINTS, (3, POINTS.size)))
        elif s.type.dtype == np.int8:
            out.append(np.array([-128, -1, 0, 1, 42, 127], np.int8))
        else:
            out.append(np.roll(POINTS, k))
    return out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_tiers_agree(name):
    inputs, term = PROGRAMS[name]
    args = _args(inputs)
    with np.errstate(all="ignore"):
        numpy_tier = rg.function(inputs, term, compile="never")(*args)
        compiled = rg.function(inputs, term, compile="eager")(*args)
    assert numpy_tier.dtype == compiled.dtype and numpy_tier.shape == compiled.shape
    np.testing.assert_allclose(numpy_tier, compiled, rtol=4e-16 * 8, equal_nan=True)


def _bench_programs():
    """The numpy functions of ``benchmarks/jit_cases.py``, as rg.jit users write them."""
    path = Path(__file__).parents[3] / "benchmarks" / "jit_cases.py"
    spec = importlib.util.spec_from_file_location("jit_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.functions(np, scipy.special.erf)


BENCH = _bench_programs()


@pytest.mark.parametrize("name", sorted(BENCH))
def test_the_tiers_agree_on_the_benchmark_programs(name):
    """Every argument holds the special points (+-inf, NaN, +-0, +-800, 1e-300):
    NaN and infinities in the same places, finite values to rounding (cancellation in
    a softmax or a distance makes a few ulp of an input many of the result)."""
    fn = BENCH[name]
    n_args = fn.__code__.co_argcount
    rows = np.resize(POINTS, (POINTS.size, POINTS.size)) + np.arange(POINTS.size)[:, None]
    args = [np.roll(rows, k, axis=1) for k in range(n_args)]
    if name.startswith(("black-scholes", "log-likelihood")):
        args = [a.ravel() for a in args]
    with np.errstate(all="ignore"):
        numpy_tier = rg.jit(fn, compile="never")(*args)
        compiled = rg.jit(fn, compile="eager")(*args)
    assert numpy_tier.dtype == compiled.dtype and numpy_tier.shape == compiled.shape
    np.testing.assert_allclose(numpy_tier, compiled, rtol=1e-9, atol=1e-12, equal_nan=True)


def test_the_first_call_runs_numpy_and_the_kernel_takes_over():
    f = rg.function([x], rg.exp(x) * 3.5 - x, compile="background")
    first = f(np.arange(4.0))
    np.testing.assert_allclose(first, np.exp(np.arange(4.0)) * 3.5 - np.arange(4.0))
    assert f.wait(600) and f.ready
    np.testing.assert_allclose(f(np.arange(4.0)), first, rtol=1e-15)
    again = f(np.arange(4.0))
    again[:] = 0.0  # results are the caller's own arrays, in either tier
    assert f(np.arange(4.0))[1] != 0.0


def test_the_compile_starts_once_the_first_result_is_there(monkeypatch):
    """No compile competes with the first call's numpy result for the GIL; ``wait()``
    and ``rg.jit(...).specialize`` start it without a call."""
    submitted: list = []
    monkeypatch.setattr(COMPILER, "submit", lambda job: submitted.append(job) or True)
    f = rg.function([x], rg.exp(x) * 0.75 - 2.0, compile="background")
    assert not submitted  # made, not called: nothing compiles yet
    f(np.zeros(3))
    assert len(submitted) == 1
    f(np.zeros(3))
    assert len(submitted) == 1  # once
    g = rg.function([x], rg.exp(x) * 0.5 - 2.0, compile="background")
    g.wait(timeout=0)
    assert len(submitted) == 2
    spec = rg.jit(lambda v: np.exp(v) * 0.25 - 2.0).specialize(np.zeros(3))
    assert len(submitted) == 3 and not spec.function.ready


def test_never_stays_on_numpy():
    f = rg.function([x], rg.exp(x) - 0.25, compile="never")
    assert f(np.zeros(2)).tolist() == [0.75, 0.75]
    assert not f.wait(0.01) and not f.ready


def test_a_result_is_never_a_view_of_an_argument():
    f = rg.function([M], M.T, compile="never")
    a = np.arange(6.0).reshape(2, 3)
    out = f(a)
    a[0, 0] = 99.0
    assert out[0, 0] == 0.0


def test_bad_arguments_are_refused_the_same_way():
    for tier in ("never", "eager"):
        f = rg.function([M, x], M @ x, compile=tier)
        with pytest.raises(rg.TypeCheckError, match="shapes do not fit"):
            f(np.ones((2, 3)), np.ones(4))
        with pytest.raises(TypeError, match="expected 2 arguments"):
            f(np.ones((2, 3)))


def test_out_is_filled_by_either_tier():
    for tier in ("never", "eager"):
        f = rg.function([x], rg.exp(x) + 1.0, compile=tier)
        out = np.empty(3)
        assert f(np.zeros(3), out=out) is out and out.tolist() == [2.0, 2.0, 2.0]


def test_eight_threads_calling_while_the_kernel_arrives():
    f = rg.function([x, y], rg.sqrt(x * x + y * y) + 0.125, compile="background")
    a, b = np.linspace(0, 1, 1000), np.linspace(1, 2, 1000)
    want = np.sqrt(a * a + b * b) + 0.125
    bad = []

    def caller():
        for _ in range(50):
            got = f(a, b)
            if not np.allclose(got, want, rtol=1e-15):
                bad.append(got)

    threads = [threading.Thread(target=caller) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
    assert f.wait(600)


def test_a_kernel_that_does_not_compile_keeps_numpy_and_says_why_once(monkeypatch):
    import relgraph.backends.numba.function as F

    def broken(*args, **kwargs):
        raise RuntimeError("no compiler today")

    monkeypatch.setattr(F, "compile_kernel", broken)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = rg.function([x], rg.exp(x) * 1.75 + 2.0, compile="background")
        assert f.wait(600) is False
        assert f(np.zeros(2)).tolist() == [3.75, 3.75]
        assert COMPILER.idle(600)
    said = [str(w.message) for w in caught if "did not compile" in str(w.message)]
    assert len(said) == 1 and "RuntimeError: no compiler today" in said[0]
    assert list(f.failed) == ["kernel"]  # and it is not tried again


def test_rg_jit_takes_the_same_tiers():
    fn = rg.jit(lambda v: np.log(1 + np.exp(v)), compile="background")
    assert fn(np.array([0.0, 800.0])).tolist() == [np.log(2.0), 800.0]  # rewritten, stable
    assert fn.wait(600) and fn.ready
    with pytest.raises(ValueError, match="compile must be one of"):
        rg.jit(lambda v: v, compile="later")
    with pytest.raises(ValueError, match="compile must be one of"):
        rg.function([x], x + 1.0, compile="later")


def test_a_forked_child_compiles_for_itself():
    import os

    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    f = rg.function([x], rg.exp(x) * 0.5 + 7.0, compile="background")
    f(np.zeros(1))
    pid = os.fork()
    if pid == 0:  # the child: its own compiler thread, its own jobs
        try:
            ok = f.wait(600) and f(np.zeros(1)).tolist() == [7.5]
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_the_display_of_a_jitted_function_says_which_tier_runs():
    fn = rg.jit(lambda v: v * 2.0 + 1.0, compile="never")
    fn(np.ones(2))
    assert "numpy (compile='never')" in fn._repr_html_()
    eager = rg.jit(lambda v: v * 2.0 + 1.0, compile="eager")
    eager(np.ones(2))
    assert "<td>compiled kernel</td>" in eager._repr_html_()


def test_a_process_that_exits_while_kernels_compile_exits_cleanly(tmp_path):
    import os
    import subprocess
    import sys

    script = (
        "import numpy as np, relgraph as rg\n"
        "x = rg.vector('x')\n"
        "fs = [rg.function([x], rg.tanh(x) * (i + 0.25) + rg.erf(x)) for i in range(4)]\n"
        "print([f(np.zeros(2)).tolist() for f in fs][0])\n"
    )
    env = dict(os.environ, RELGRAPH_CACHE_DIR=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[0.0, 0.0]"


def test_ctrl_c_during_a_background_compile(tmp_path):
    """Ctrl-C reaches the caller (the main thread), not the compile: the kernel still
    arrives, and the function keeps giving the right values throughout."""
    import os
    import subprocess
    import sys

    script = """
import os, signal, threading, numpy as np, relgraph as rg
x = rg.vector("x")
f = rg.function([x], rg.erf(rg.tanh(x) * 2.0) + rg.log1p(rg.exp(x)))
want = rg.function([x], f.outputs[0], compile="never")(np.linspace(-3, 3, 7))
threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    while True:  # calls on the numpy tier while the kernel compiles
        assert np.allclose(f(np.linspace(-3, 3, 7)), want, rtol=1e-13)
except KeyboardInterrupt:
    print("interrupted, ready:", f.ready)
print("compiled:", f.wait(), np.allclose(f(np.linspace(-3, 3, 7)), want, rtol=1e-13))
"""
    env = dict(os.environ, RELGRAPH_CACHE_DIR=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "interrupted, ready: False" in done.stdout  # the kernel was still compiling
    assert "compiled: True True" in done.stdout


def test_a_background_compile_leaves_the_callers_streams_alone(tmp_path):
    """Numba formats messages with colorama while it compiles, which swaps sys.stdout
    and sys.stderr: from the background compiler that would undo a redirection the
    caller makes meanwhile (doctest's, contextlib's)."""
    import os
    import subprocess
    import sys

    script = """
import io, os, sys, time, numpy as np, relgraph as rg
x = rg.vector("x")
fs = [rg.function([x], rg.exp(x) * (i + 0.5) + rg.tanh(x)) for i in range(4)]
for f in fs:
    f(np.zeros(3))  # the kernels compile in the background from here
mine, changed = io.StringIO(), 0
real, sys.stdout = sys.stdout, mine
while not all(f.ready for f in fs):
    time.sleep(0.0005)
    if sys.stdout is not mine:
        changed, sys.stdout = changed + 1, mine
sys.stdout = real
print(changed, "NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING" in os.environ)
"""
    env = dict(os.environ, RELGRAPH_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "False"]


def test_outputs_that_share_work_agree_in_both_tiers():
    shared = rg.exp(x) * 2.0
    outputs = [shared + 1.0, rg.sum(shared), shared + 1.0]
    args = [np.array([0.0, -1.5, 3.0])]
    numpy_tier = rg.function([x], outputs, compile="never")(*args)
    compiled = rg.function([x], outputs, compile="eager")(*args)
    for a, b in zip(numpy_tier, compiled):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=4e-16 * 8)
    assert numpy_tier[0] is not numpy_tier[2]  # an output listed twice: two arrays
