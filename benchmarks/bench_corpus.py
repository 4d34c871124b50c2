"""How much numpy code as people write it runs under rg.jit, unchanged, and how fast.

Run from the repository root after ``pip install -e ".[bench]"``::

    python benchmarks/bench_corpus.py [--size 1000000] [--repeat 5] [--no-jax]

The corpus (``benchmarks/corpus/functions.py``) holds functions from scikit-learn,
scipy, PyMC's log-densities, deep learning, finance and geometry code, each as its
source writes it.  Per function: whether ``rg.jit`` runs it unchanged (or what it
refuses, with its message), whether its values are numpy's (relative 1e-9 where numpy
is finite, or 1e-13 of the largest value), where numpy overflows to inf or NaN whether
relgraph's value is right (checked against numpy in ``np.longdouble``), and the best
time of ``--repeat`` calls of numpy, ``rg.jit`` and ``jax.jit`` (its ``jax.numpy``
twin: the module's source run again with ``np`` bound to ``jax.numpy``), as ratios
(above 1: relgraph is faster).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("RELGRAPH_CACHE_DIR", tempfile.mkdtemp(prefix="bench-corpus-"))

import relgraph as rg  # noqa: E402

CORPUS = Path(__file__).parent / "corpus"
sys.path.insert(0, str(CORPUS))
import functions as corpus  # noqa: E402
from bench_jit import best  # noqa: E402  (the best of repeated calls, as bench_jit times)


def leaves(out):
    return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


def jax_twins():
    """The corpus's functions with ``np``, ``special``, ``norm`` and ``linalg`` bound to
    JAX's."""
    import jax  # lazy: a peer, in the bench extra
    import jax.numpy as jnp
    import jax.scipy.linalg as jlinalg
    import jax.scipy.special as jspecial
    import jax.scipy.stats.norm as jnorm

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    namespace = {"__name__": "corpus_jax"}
    exec(compile((CORPUS / "functions.py").read_text(), "functions.py", "exec"), namespace)
    namespace.update(np=jnp, special=jspecial, norm=jnorm, linalg=jlinalg)
    return jax, namespace


def judge(fn, args, got, expected):
    """'same', 'numpy wrong' (numpy is not finite, relgraph matches longdouble), or why not."""
    verdicts = []
    for g, e in zip(leaves(got), leaves(expected)):
        finite = np.isfinite(e)
        if g.shape != e.shape:
            return f"shape {g.shape} != numpy's {e.shape}"
        scale = float(np.max(np.abs(e[finite]), initial=1.0))  # rounding near 0 is absolute
        if not np.allclose(g[finite], e[finite], rtol=1e-9, atol=1e-13 * scale):
            return "values differ from numpy's"
        if (
            finite.all()
            or np.array_equal(np.isnan(g), np.isnan(e))
            and np.array_equal(g[~finite], e[~finite])
        ):
            verdicts.append("same")
            continue
        with np.errstate(all="ignore"):
            wide = fn(*[np.asarray(a, np.longdouble) if np.asarray(a).dtype == np.float64 else a
                        for a in args])  # fmt: skip
        w = leaves(wide)[len(verdicts)].astype(np.float64)
        ok = np.allclose(g[~finite], w[~finite], rtol=1e-9, atol=1e-300)
        verdicts.append("numpy wrong" if ok else "differs where numpy is not finite")
    return next((v for v in verdicts if v != "same"), "same")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-jax", action="store_true")
    args = parser.parse_args()
    jax, twins = (None, None) if args.no_jax else jax_twins()
    rng = np.random.default_rng(0)
    inputs = {fn: make(rng, args.size) for fn, make in corpus.INPUTS.items()}
    rows, summary, timed = {}, {"runs": 0, "same": 0, "numpy wrong": 0}, {}
    ratios: dict[str, list[float]] = {"numpy": [], "jax.jit": []}
    for fn, data in inputs.items():  # numpy and relgraph first, JAX after: XLA's
        with np.errstate(all="ignore"):  # threads would spin against Numba's here
            expected = fn(*data)
            t_np = best(fn, data, args.repeat)
        try:
            f = rg.jit(fn, compile="eager")
            with np.errstate(all="ignore"):
                got = f(*data)
        except Exception as exc:  # the refusal is the result: reported with its message
            rows[fn] = (fn.__name__, f"refused: {type(exc).__name__}: {str(exc)[:90]}", "", "")
            continue
        summary["runs"] += 1
        verdict = judge(fn, data, got, expected)
        summary[verdict] = summary.get(verdict, 0) + 1
        timed[fn] = t_rg = best(f, data, args.repeat)
        rows[fn] = (fn.__name__, verdict, f"{t_np / t_rg:.2f}x", "")
        ratios["numpy"].append(t_np / t_rg)
    for fn, t_rg in timed.items() if twins is not None else ():
        data = inputs[fn]
        static = [i for i, a in enumerate(data) if isinstance(a, int)]
        try:
            j = jax.jit(twins[fn.__name__], static_argnums=static)
            jax.block_until_ready(j(*data))
            t_jax = best(lambda *a, j=j: jax.block_until_ready(j(*a)), data, args.repeat)
            vs_jax = f"{t_jax / t_rg:.2f}x"
            ratios["jax.jit"].append(t_jax / t_rg)
        except Exception as exc:  # JAX refuses some idioms: said in the table
            vs_jax = f"jax fails: {type(exc).__name__}"
        rows[fn] = (*rows[fn][:3], vs_jax)
    rows = list(rows.values())
    total = len(corpus.INPUTS)
    print(f"{total} functions, {args.size:,} elements, best of {args.repeat}; "
          "ratio = peer time / rg.jit time\n")  # fmt: skip
    print("| function | rg.jit | vs numpy | vs jax.jit |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(
        f"\nruns unchanged: {summary['runs']} of {total} ({100 * summary['runs'] / total:.0f}%); "
        f"numpy's values: {summary['same']}; numpy not finite where relgraph is right: "
        f"{summary['numpy wrong']}"
    )
    for peer, found in ratios.items():
        if found:
            at_least = sum(r >= 1.0 for r in found)
            print(f"geomean vs {peer}: {geomean(found):.2f}x; at least {peer}'s speed on "
                  f"{at_least} of {len(found)}")  # fmt: skip


def geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


if __name__ == "__main__":
    main()
