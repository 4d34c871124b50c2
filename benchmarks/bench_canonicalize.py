"""``canonicalize`` on a random 1,000-node program full of junk: relgraph vs PyTensor.

Run from the repository root after ``pip install -e ".[bench]"``::

    python benchmarks/bench_canonicalize.py [--nodes 1000] [--seed 0] [--repeat 5]

The program is random elementwise arithmetic over vectors ``x, y, z, w`` and
scalars ``a, b``, with simplifiable junk spliced in at random: ``e * 1``,
``e + 0``, ``e - 0``, ``e / 1``, ``e ** 1``, ``-(-e)``, ``(e * a) / a``,
``e + e``, ``2 * e + 3 * e``, ``e * e``, constant subexpressions.  The same
program is built as a PyTensor graph and rewritten by PyTensor's own
``rewrite_graph(include=("canonicalize",))``.

relgraph runs four times: ``canonicalize`` (safe relations only),
``canonicalize`` + ``unsafe``, which also cancels ``(e * a) / a`` as PyTensor's
canonicalize does, that + ``reassociate``, which also regroups float sums and products
as PyTensor does, and ``fast_run`` (every stage, as ``rg.jit`` rewrites).  Sizes
are apply nodes (distinct Op applications); PyTensor also adds ``DimShuffle`` nodes
to broadcast scalars, counted separately.  relgraph's results are evaluated on random
inputs and checked against the input program.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

import relgraph as rg
from relations import canonicalize_db, optdb
from relgraph.terms.traverse import subterms

VECTORS = [rg.vector(n) for n in "xyzw"]
SCALARS = [rg.scalar(n) for n in "ab"]
LEAVES = VECTORS + SCALARS


def junk(e, rnd: random.Random):
    """``e`` wrapped in one simplifiable pattern."""
    s = rnd.choice(SCALARS)
    return rnd.choice(
        [
            lambda: e * 1,
            lambda: e + 0,
            lambda: e - 0,
            lambda: e / 1,
            lambda: e**1,
            lambda: -(-e),
            lambda: (e * s) / s,
            lambda: e + e,
            lambda: 2 * e + 3 * e,
            lambda: e * e,
            lambda: e * rg.Term((rg.mul, 2.0, rg.Term((rg.add, 1.0, 0.5)))),
        ]
    )()


def program(nodes: int, seed: int):
    """A random program with about ``nodes`` apply nodes."""
    rnd = random.Random(seed)
    pool, seen = list(LEAVES), set()
    while len(seen) < nodes - 1:  # the final sum is one more
        kind = rnd.random()
        a, b = rnd.choice(pool), rnd.choice(pool)
        if kind < 0.35:
            term = junk(a, rnd)
        elif kind < 0.85:
            term = rnd.choice([rg.add, rg.sub, rg.mul])(a, b)
        else:
            term = rnd.choice([rg.exp, rg.neg])(rg.mul(a, 0.001))
        pool.append(term)
        seen.update(subterms(term))
    # Tie the pool together so every subterm is part of the program.
    return rg.add(*pool[len(LEAVES) :])


def to_pytensor(term):
    import pytensor.tensor as pt

    inputs = {v: pt.dvector(v.name) for v in VECTORS}
    inputs.update({s: pt.dscalar(s.name) for s in SCALARS})
    ops = {
        "add": pt.add, "sub": pt.sub, "mul": pt.mul, "true_div": pt.true_div,
        "neg": pt.neg, "exp": pt.exp, "pow": pt.pow,
    }  # fmt: skip
    done = {}
    for node in subterms(term):  # children first
        args = [done.get(a, inputs.get(a, a)) for a in node._tuple[1:]]
        done[node] = ops[node._tuple[0].name](*args)
    return [inputs[v] for v in LEAVES], done[term]


def pytensor_size(outputs) -> tuple[int, int]:
    from pytensor.graph.fg import FunctionGraph
    from pytensor.tensor.elemwise import DimShuffle

    fg = FunctionGraph(outputs=outputs, clone=True)
    shuffles = sum(isinstance(n.op, DimShuffle) for n in fg.apply_nodes)
    return len(fg.apply_nodes) - shuffles, shuffles


def median_time(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def check(term, out, values):
    expected = rg.evaluate(term, values)
    np.testing.assert_allclose(rg.evaluate(out, values), expected, rtol=1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-pytensor", action="store_true", help="relgraph only")
    args = parser.parse_args()

    term = program(args.nodes, args.seed)
    rng = np.random.default_rng(args.seed)
    values = {v: rng.uniform(0.5, 1.5, 8) for v in VECTORS}
    values.update({s: rng.uniform(0.5, 1.5) for s in SCALARS})
    print(f"program: {rg.count_nodes(term)} apply nodes, seed {args.seed}")

    rows = []
    for label, query in [
        ("relgraph canonicalize", optdb.query(include=["canonicalize"])),
        # the canonicalize stage only: "unsafe" alone also selects other stages' rules
        (
            "relgraph canonicalize+unsafe",
            canonicalize_db.query(include=["canonicalize", "unsafe"]),
        ),
        # float sums and products regrouped too (rounds and overflows otherwise): opt-in
        (
            "relgraph canonicalize+unsafe+reassociate",
            canonicalize_db.query(include=["canonicalize", "unsafe", "reassociate"]),
        ),
        # the whole pipeline rg.jit runs: canonicalize, stabilize, specialize, linalg
        ("relgraph fast_run", optdb.query(include=["fast_run"])),
    ]:
        seconds, out = median_time(lambda q=query: rg.rewrite(term, q), args.repeat)
        check(term, out, values)
        rows.append((label, seconds, rg.count_nodes(out), 0))

    if not args.no_pytensor:
        from pytensor.graph.rewriting.utils import rewrite_graph

        def pytensor_canonicalize():
            inputs, out = to_pytensor(term)
            start = time.perf_counter()
            res = rewrite_graph(out, include=("canonicalize",), clone=True)
            return time.perf_counter() - start, inputs, res

        runs = [pytensor_canonicalize() for _ in range(args.repeat)]
        seconds = statistics.median(r[0] for r in runs)
        pt_out = runs[-1][2]
        ops, shuffles = pytensor_size([pt_out])
        rows.append(("PyTensor canonicalize", seconds, ops, shuffles))

    base = rows[0][1]
    print(f"{'':40} {'time':>9} {'vs relgraph':>12} {'nodes':>7} {'+DimShuffle':>12}")
    for label, seconds, nodes, shuffles in rows:
        print(f"{label:40} {seconds:8.3f}s {seconds / base:11.1f}x {nodes:7d} {shuffles:12d}")


if __name__ == "__main__":
    main()
