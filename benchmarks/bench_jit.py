"""rg.jit side by side with numpy, numba.njit and jax.jit on numpy code as people write it.

Run from the repository root after ``pip install -e ".[bench]"``::

    python benchmarks/bench_jit.py [--size 1000000] [--repeat 5] [--dtype float32]

The functions are in ``jit_cases.py``, written once against an array namespace:
numpy runs them as they are, ``rg.jit`` and ``numba.njit(parallel=True)`` compile
the very same numpy function, ``jax.jit`` (CPU, x64 enabled) compiles its ``jax.numpy``
twin, timed in a process of its own (XLA's threads spin after a call, slowing
whatever runs next beside them).  numba cannot compile most of them
(``np.max(a, axis=1)``, ``keepdims``), so it also gets the loop version a numba user
would write instead.  Every input array is float64, or float32 with ``--dtype float32``
(the constants in the functions are Python floats: numpy and JAX keep float32 results).

Per function: the best time of ``--repeat`` calls, the ratio peer / rg.jit (above 1:
rg.jit is faster); the first calls: rg.jit's first result (traced, rewritten, run by
numpy while Numba compiles) and when its kernel took over, with empty caches (cold)
and again in a new process with relgraph's caches filled (warm), beside the first
calls of ``numba.njit`` and ``jax.jit``; and accuracy: the largest relative difference
from numpy where numpy is finite, and how many results are not finite.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("RELGRAPH_CACHE_DIR", tempfile.mkdtemp(prefix="bench-jit-"))

import relgraph as rg  # noqa: E402
from relgraph.backends.numba.background import COMPILER  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import timing  # noqa: E402
from jit_cases import functions, inputs  # noqa: E402


def best(fn, args, repeat):
    return timing.best(lambda: fn(*args), repeat)


def first_call(fn, args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def numba_loops():
    """What a numba user writes when njit refuses the numpy version."""
    import numba
    from numba import njit, prange

    @numba.vectorize(["float64(float64)"])
    def erf(x):
        return math.erf(x)

    @njit(parallel=True)
    def logsumexp(a):
        out = np.empty((a.shape[0], 1))
        for i in prange(a.shape[0]):
            m = a[i].max()
            out[i, 0] = math.log(np.exp(a[i] - m).sum()) + m
        return out

    @njit(parallel=True)
    def softmax(x):
        out = np.empty_like(x)
        for i in prange(x.shape[0]):
            e = np.exp(x[i] - x[i].max())
            out[i] = e / e.sum()
        return out

    @njit(parallel=True)
    def log_softmax(x):
        out = np.empty_like(x)
        for i in prange(x.shape[0]):
            s = x[i] - x[i].max()
            out[i] = s - math.log(np.exp(s).sum())
        return out

    @njit(parallel=True)
    def layer_norm(x):
        out = np.empty_like(x)
        for i in prange(x.shape[0]):
            mean = x[i].mean()
            d = x[i] - mean
            out[i] = d / math.sqrt((d * d).mean() + 1e-5)
        return out

    same = functions(np, erf)
    return {
        "logsumexp rows": logsumexp,
        "softmax rows": softmax,
        "log-softmax rows": log_softmax,
        "layer norm rows": layer_norm,
        "black-scholes (erf)": njit(parallel=True)(same["black-scholes (erf)"]),
    }


def jax_functions():
    try:
        import jax
        import jax.numpy as jnp
        from jax.scipy.special import erf
    except ImportError:
        return {}
    jax.config.update("jax_enable_x64", True)
    out = {}
    for name, fn in functions(jnp, erf).items():
        jitted = jax.jit(fn)
        out[name] = lambda *a, _f=jitted: _f(*a).block_until_ready()
    return out


def accuracy(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    finite = np.isfinite(want) & np.isfinite(got)
    scale = np.maximum(np.abs(want[finite]), 1e-300)
    err = np.max(np.abs(got[finite] - want[finite]) / scale, initial=0.0)
    return err, int(np.size(got) - np.count_nonzero(np.isfinite(got)))


def typed_inputs(size, dtype):
    """The cases' arrays (float64 as ``jit_cases`` makes them) in ``dtype``."""
    data = inputs(size, np.random.default_rng(0))
    return {name: tuple(a.astype(dtype) for a in args) for name, args in data.items()}


def run(size, repeat, dtype):
    import scipy.special
    from numba import njit

    data = typed_inputs(size, dtype)
    plain = functions(np, scipy.special.erf)
    loops = numba_loops()
    rows = []
    for name, fn in plain.items():
        args = data[name]
        with np.errstate(all="ignore"):
            want = fn(*args)
        row = {"name": name, "numpy": best(fn, args, repeat)}
        row.update(rg_first_calls(fn, args))
        # Steady state with every kernel these calls use compiled (the in-memory
        # kernel cache shares them with the background-compiled function).
        compiled = rg.jit(fn, compile="eager")
        got = compiled(*args)
        COMPILER.idle()  # no compile left from the first calls takes a core from the timing
        row["rg"] = best(compiled, args, repeat)
        row["rg err"], row["rg nonfinite"] = accuracy(got, want)
        row["numpy nonfinite"] = accuracy(want, want)[1]
        row["rewritten"] = rg.pprint(compiled.rewritten)
        try:
            same = njit(parallel=True)(fn)
            _, row["numba first"] = first_call(same, args)
            row["numba"], row["numba kind"] = best(same, args, repeat), "same function"
        except Exception:
            if name in loops:
                _, row["numba first"] = first_call(loops[name], args)
                row["numba"], row["numba kind"] = best(loops[name], args, repeat), "loops"
        rows.append(row)
    return rows


def rg_first_calls(fn, args):
    """rg.jit's first result (the numpy tier) and when its compiled kernel was ready,
    both from the first call."""
    jitted = rg.jit(fn)  # compile="background": the first call runs numpy
    start = time.perf_counter()
    jitted(*args)
    first = time.perf_counter() - start
    jitted.wait()
    return {"rg first": first, "rg compiled": time.perf_counter() - start}


def child(phase, size, repeat, dtype):
    """What ``--phase`` ``phase`` of this script prints, run in a new process."""
    cmd = [sys.executable, __file__, "--phase", phase, "--size", str(size)]
    cmd += ["--repeat", str(repeat), "--dtype", dtype]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def jax_phase(size, repeat, dtype):
    """jax.jit's first call and best time per function.  In a process of its own:
    XLA's threads keep spinning after a call, and on 16 cores they slowed whatever
    ran next in the same process up to 14x (rg.jit's logsumexp rows 17.97 ms, alone
    1.24 ms)."""
    data = typed_inputs(size, dtype)
    times = {}
    for name, fn in jax_functions().items():
        _, first = first_call(fn, data[name])
        times[name] = {"jax first": first, "jax": best(fn, data[name], repeat)}
    print(json.dumps(times))


def warm_phase(size, repeat, dtype):
    import scipy.special

    data = typed_inputs(size, dtype)
    plain = functions(np, scipy.special.erf)
    print(json.dumps({name: rg_first_calls(fn, data[name]) for name, fn in plain.items()}))


def fmt(t):
    return "-" if t is None else f"{t * 1e3:.2f}"


def ratio(peer, ours):
    return "-" if peer is None else f"{peer / ours:.2f}x"


def report(rows, size, dtype):
    print(
        f"\n## rg.jit against numpy, numba.njit and jax.jit ({size:.0e} elements of {dtype}, ms)\n"
    )
    print("| function | rg.jit | numpy | numba | jax | numpy/rg | numba/rg | jax/rg | numba |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ours = r["rg"]
        print(
            f"| {r['name']} | {fmt(ours)} | {fmt(r['numpy'])} | {fmt(r.get('numba'))} | "
            f"{fmt(r.get('jax'))} | {ratio(r['numpy'], ours)} | "
            f"{ratio(r.get('numba'), ours)} | {ratio(r.get('jax'), ours)} | "
            f"{r.get('numba kind', 'cannot compile')} |"
        )
    print("\n## First calls (s): the first result, and the compiled kernel ready\n")
    print("Cold: empty caches. Warm: a new process with relgraph's caches filled. rg.jit's")
    print("first result comes from numpy while the kernel compiles (or loads) in the")
    print("background.\n")
    print("| function | rg.jit first result | rg.jit kernel ready | warm: first result | "
          "warm: kernel ready | numba.njit first call | jax.jit first call |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        warm = r.get("warm", {})
        firsts = [r.get("rg first"), r.get("rg compiled"), warm.get("rg first"),
                  warm.get("rg compiled"), r.get("numba first"), r.get("jax first")]  # fmt: skip
        print(f"| {r['name']} | " + " | ".join("-" if t is None else f"{t:.2f}" for t in firsts))
    print("\n## Accuracy against numpy\n")
    print("| function | max rel. diff where numpy is finite | non-finite: numpy | rg.jit |")
    print("|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['name']} | {r['rg err']:.1e} | {r['numpy nonfinite']} | {r['rg nonfinite']} |"
        )
    print("\n## What rg.jit compiled\n")
    for r in rows:
        print(f"- {r['name']}: `{r['rewritten']}`")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=1e6, help="elements per array")
    parser.add_argument("--repeat", type=int, default=5, help="calls timed per case")
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                        help="of every input array")  # fmt: skip
    phases = ["cold", "warm", "jax"]
    parser.add_argument("--phase", choices=phases, default="cold", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.size < 1 or args.repeat < 1:
        parser.error("--size and --repeat must be positive")
    if args.phase != "cold":
        phase = warm_phase if args.phase == "warm" else jax_phase
        phase(int(args.size), args.repeat, args.dtype)
        return
    rows = run(int(args.size), args.repeat, args.dtype)
    warm, jaxed = (
        child(phase, int(args.size), args.repeat, args.dtype) for phase in ("warm", "jax")
    )
    for row in rows:
        row["warm"] = warm[row["name"]]
        row.update(jaxed.get(row["name"], {}))
    report(rows, args.size, args.dtype)


if __name__ == "__main__":
    main()
