"""rg.function kernels side by side with numpy, numexpr, JAX and PyTensor's NUMBA mode.

Run from the repository root after ``pip install -e ".[bench]"``::

    python benchmarks/bench_function.py

Cases (float64): the arithmetic expression ``a*x + b*y - c/z + x*y*z`` and the
transcendental ``exp(x)*y + log1p(z*z) - x/y`` at 1e7 and 1e3 elements,
``relu(A @ x + b)`` with A 1000x1000, and the array workloads of ``array_cases.py``
(softmax, logsumexp, leaky relu, a dense layer, layer norm, a shifted product); JAX
is ``jax.jit`` on CPU with ``jax_enable_x64``; compile times (cold, warm disk cache in a
new process, in-process cache hit).  The STREAM triad ``a = b + s*c`` measured in
the same run gives the bandwidth bound: bytes a kernel must move / bandwidth; for a
case that only reads (a reduction to a vector or a number) the bound is the bytes over
the read bandwidth, of a vectorised parallel sum, which is higher than the triad's.
Times are best-of-``--repeat``; ratios are peer / relgraph.  Each elementwise case
runs twice: returning a new array per call (as numpy does), and with ``out=``.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numba
import numpy as np

import relgraph as rg

sys.path.insert(0, str(Path(__file__).parent))
from array_cases import cases as array_cases  # noqa: E402
from timing import best  # noqa: E402


def triad_bandwidth(n, repeat):
    """Bytes per second of ``a = b + s*c`` on Numba's threads, with a prange kernel."""
    from numba import njit, prange

    @njit(parallel=True)
    def triad(a, b, c, s):
        for i in prange(a.shape[0]):
            a[i] = b[i] + s * c[i]

    a, b, c = np.empty(n), np.random.rand(n), np.random.rand(n)
    triad(a, b, c, 3.0)
    return 3 * 8 * n / best(lambda: triad(a, b, c, 3.0), repeat)


def read_bandwidth(n, repeat):
    """Bytes per second of a parallel sum on Numba's threads (fast-math: vectorised)."""
    from numba import njit, prange

    @njit(parallel=True, fastmath=True)
    def total(b):
        s = 0.0
        for i in prange(b.shape[0]):
            s += b[i]
        return s

    b = np.random.rand(n)
    total(b)
    return 8 * n / best(lambda: total(b), repeat)


def pytensor_fn(build):
    try:
        import pytensor
        import pytensor.tensor as pt
    except ImportError:
        return None
    args, out = build(pt)
    return pytensor.function(args, out, mode="NUMBA", trust_input=True)


def jax_fn(build):
    """``jax.jit`` of the function ``build(jnp)`` returns, waiting for its result."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    jitted = jax.jit(build(jnp))
    return lambda *args: jitted(*args).block_until_ready()


def numexpr_fn(expr):
    try:
        import numexpr
    except ImportError:
        return None
    return lambda **env: numexpr.evaluate(expr, local_dict=env)


def elementwise_cases(n, repeat, bandwidth):
    rng = np.random.default_rng(0)
    X, Y, Z = (rng.uniform(0.5, 1.5, n) for _ in range(3))
    x, y, z = rg.vector("x"), rg.vector("y"), rg.vector("z")
    cases = [
        ("arithmetic", 1.5 * x + -0.5 * y - 2.0 / z + x * y * z,
         lambda: 1.5 * X + -0.5 * Y - 2.0 / Z + X * Y * Z,
         "1.5*x + -0.5*y - 2.0/z + x*y*z",
         lambda pt: _pt3(pt, lambda a, b, c: 1.5 * a + -0.5 * b - 2.0 / c + a * b * c),
         lambda jnp: lambda a, b, c: 1.5 * a + -0.5 * b - 2.0 / c + a * b * c),
        ("transcendental", rg.exp(x) * y + rg.log1p(z * z) - x / y,
         lambda: np.exp(X) * Y + np.log1p(Z * Z) - X / Y,
         "exp(x)*y + log1p(z*z) - x/y",
         lambda pt: _pt3(pt, lambda a, b, c: pt.exp(a) * b + pt.log1p(c * c) - a / b),
         lambda jnp: lambda a, b, c: jnp.exp(a) * b + jnp.log1p(c * c) - a / b),
    ]  # fmt: skip
    rows = []
    for name, term, ref, ne_expr, pt_build, jax_build in cases:
        f = rg.function([x, y, z], term, compile="eager")
        np.testing.assert_allclose(f(X, Y, Z), ref(), rtol=1e-12, atol=1e-13)
        t_rg = best(functools.partial(f, X, Y, Z), repeat)
        t_np = best(ref, repeat)
        ne = numexpr_fn(ne_expr)
        t_ne = best(functools.partial(ne, x=X, y=Y, z=Z), repeat) if ne else None
        ptf = pytensor_fn(pt_build)
        t_pt = best(functools.partial(ptf, X, Y, Z), repeat) if ptf else None
        t_jax = timed_jax(jax_build, (X, Y, Z), repeat)
        bound = 4 * 8 * n / bandwidth  # three inputs read, one output written
        rows.append((f"{name} n={n:.0e}", t_rg, t_np, t_ne, t_jax, t_pt, bound))
        # The same kernel writing into the caller's array, as numpy's out= does.
        out = np.empty(n)
        t_out = best(functools.partial(f, X, Y, Z, out=out), repeat)
        rows.append((f"{name} n={n:.0e}, out=", t_out, t_np, t_ne, t_jax, t_pt, bound))
    return rows


def timed_jax(build, args, repeat):
    """The best time of ``jax.jit`` of ``build(jnp)`` on ``args``, in a forked child
    (None without JAX): XLA's threads spin after a call, and on 16 cores they slowed
    whatever ran next beside them in the same process (relgraph's layer norm 10000x256
    7.9 ms after JAX, 0.44 ms alone)."""
    reader, writer = multiprocessing.Pipe(duplex=False)

    def measure():
        jf = jax_fn(build)
        if jf is not None:
            jf(*args)  # compile
        writer.send(jf and best(functools.partial(jf, *args), repeat))

    child = multiprocessing.get_context("fork").Process(target=measure)
    child.start()
    try:
        return reader.recv()
    finally:
        child.join()


def array_rows(repeat, bandwidth, reads):
    """The array workloads, each checked against numpy before it is timed."""
    rows = []
    for case in array_cases():
        f = rg.function(case.symbols, case.term, compile="eager")
        expected = case.numpy()
        np.testing.assert_allclose(f(*case.inputs), expected, rtol=1e-10, atol=1e-12)
        t_rg = best(functools.partial(f, *case.inputs), repeat)
        t_np = best(case.numpy, repeat)
        t_ne = None
        if case.numexpr and (ne := numexpr_fn(case.numexpr)):
            t_ne = best(functools.partial(ne, x=case.inputs[0]), repeat)
        t_jax = timed_jax(case.jax, case.inputs, repeat)
        ptf = pytensor_fn(case.pytensor)
        t_pt = best(functools.partial(ptf, *case.inputs), repeat) if ptf else None
        speed = reads if case.reads_only else bandwidth
        rows.append((case.name, t_rg, t_np, t_ne, t_jax, t_pt, case.bytes_moved / speed))
    return rows


def _pt3(pt, fn):
    a, b, c = pt.vector("x"), pt.vector("y"), pt.vector("z")
    return [a, b, c], fn(a, b, c)


def relu_case(repeat):
    rng = np.random.default_rng(0)
    Av, xv, bv = (
        rng.standard_normal((1000, 1000)),
        rng.standard_normal(1000),
        rng.standard_normal(1000),
    )
    A, x, b = rg.matrix("A"), rg.vector("x"), rg.vector("b")
    f = rg.function([A, x, b], rg.maximum(A @ x + b, 0.0), compile="eager")
    np.testing.assert_allclose(f(Av, xv, bv), np.maximum(Av @ xv + bv, 0.0), rtol=1e-12)
    t_rg = best(lambda: f(Av, xv, bv), repeat)
    t_np = best(lambda: np.maximum(Av @ xv + bv, 0.0), repeat)

    def build(pt):
        a, v, c = pt.matrix("A"), pt.vector("x"), pt.vector("b")
        return [a, v, c], pt.maximum(a @ v + c, 0.0)

    ptf = pytensor_fn(build)
    t_pt = best(lambda: ptf(Av, xv, bv), repeat) if ptf else None
    jax_relu = lambda jnp: lambda a, v, c: jnp.maximum(a @ v + c, 0.0)  # noqa: E731
    t_jax = timed_jax(jax_relu, (Av, xv, bv), repeat)
    return ("relu(A@x+b) 1000x1000", t_rg, t_np, None, t_jax, t_pt, None)


COLD_SCRIPT = """
import time, numpy as np
import relgraph as rg
{preload}
x, y, z = rg.vector("x"), rg.vector("y"), rg.vector("z")
term = {term}
start = time.perf_counter()
f = rg.function([x, y, z], term, compile="eager")
f(np.ones(3), np.ones(3), np.ones(3))
print(time.perf_counter() - start)
"""


def compile_times():
    """Cold compile (Numba imported beforehand, as it is a fixed cost), time to the
    compiled first result in a new process once the kernel is in the cache (nothing
    imported beforehand but numpy and relgraph), and the in-process cache hit."""
    rows = []
    terms = {
        "arithmetic": "1.5 * x + -0.5 * y - 2.0 / z + x * y * z",
        "transcendental": "rg.exp(x) * y + rg.log1p(z * z) - x / y",
    }
    for name, term in terms.items():
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, RELGRAPH_CACHE_DIR=cache)
            preload = "import numba\nfrom relgraph.backends.numba import kernels, vecmath"
            cold_run = [sys.executable, "-c", COLD_SCRIPT.format(term=term, preload=preload)]
            warm_run = [sys.executable, "-c", COLD_SCRIPT.format(term=term, preload="")]
            out = subprocess.run(cold_run, env=env, capture_output=True, text=True, check=True)
            cold = float(out.stdout)
            out = subprocess.run(warm_run, env=env, capture_output=True, text=True, check=True)
            warm = float(out.stdout)
        rows.append((name, cold, warm))
    x, y, z = rg.vector("x"), rg.vector("y"), rg.vector("z")
    term = rg.exp(x) * y + rg.log1p(z * z) - x / y
    # The cache keeps Functions while they are held.
    held = rg.function([x, y, z], term, compile="eager")
    hit = best(lambda: rg.function([x, y, z], term, compile="eager"), 1000)
    assert rg.function([x, y, z], term, compile="eager") is held
    return rows, hit


def fmt(t, scale=1e3, unit="ms"):
    return "-" if t is None else f"{t * scale:.3f} {unit}"


def ratio(peer, ours):
    return "-" if peer is None else f"{peer / ours:.2f}x"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--only-arrays", action="store_true", help="the array workloads only")
    args = parser.parse_args(argv)
    bandwidth = triad_bandwidth(10**7, args.repeat)
    threads = numba.get_num_threads()
    reads = read_bandwidth(10**7, args.repeat)
    print(f"STREAM triad bandwidth ({threads} threads): {bandwidth / 1e9:.1f} GB/s; "
          f"read bandwidth (a parallel sum): {reads / 1e9:.1f} GB/s\n")  # fmt: skip
    rows = []
    if not args.only_arrays:
        rows += elementwise_cases(10**7, args.repeat, bandwidth)
        rows += elementwise_cases(10**3, 200, bandwidth)
        rows.append(relu_case(50))
    rows += array_rows(args.repeat, bandwidth, reads)
    print("| case | relgraph | numpy | numexpr | JAX | PyTensor NUMBA | bandwidth bound | "
          "numpy/relgraph | numexpr/relgraph | JAX/relgraph | PyTensor/relgraph | "
          "relgraph/bound |")  # fmt: skip
    print("|" + "---|" * 12)
    for name, t_rg, t_np, t_ne, t_jax, t_pt, bound in rows:
        unit = (1e6, "us") if t_rg < 1e-3 else (1e3, "ms")
        cells = [name, fmt(t_rg, *unit), fmt(t_np, *unit), fmt(t_ne, *unit),
                 fmt(t_jax, *unit), fmt(t_pt, *unit),
                 fmt(bound, *unit) if bound and t_rg > 1e-3 else "-", ratio(t_np, t_rg),
                 ratio(t_ne, t_rg), ratio(t_jax, t_rg), ratio(t_pt, t_rg),
                 f"{t_rg / bound:.2f}x" if bound and t_rg > 1e-3 else "-"]  # fmt: skip
        print("| " + " | ".join(cells) + " |", flush=True)
    if args.only_arrays:
        return
    compiles, hit = compile_times()
    print("\n| graph | cold compile (new process) | new process, warm cache: first result |")
    print("|---|---|---|")
    for name, cold, warm in compiles:
        print(f"| {name} | {cold:.3f} s | {warm * 1e3:.1f} ms |")
    print(f"\nin-process cache hit of rg.function: {hit * 1e6:.1f} us")


if __name__ == "__main__":
    main()
