"""Exploring the rewrite space of ``A @ x + A @ y + A @ z + A @ w`` (issue 5).

Run from the repository root after ``pip install -e ".[bench]"``::

    python benchmarks/bench_explore.py [--repeat 5]

relgraph: ``rg.explore`` with ``optdb.query(include=["linalg", "canonicalize"])``, both
directions, (a) to the 1,000-term budget (target <= 2 s), (b) with ``max_depth=2``, the
depth at which the best term ``A @ (x + y + z + w)`` is first found.  Each row checks
that the best term is that one.

egglog: the nearest thing it does, saturating an e-graph with the rules that matter
here (distribute/gather ``@`` over ``+``, associativity and commutativity of ``+``) and
extracting the smallest term.  An e-graph holds the whole AC closure compactly; it does
not enumerate terms, and it has no relation for identities such as ``x -> x + 0`` run
backward (they would never saturate), so it does less work.  Times are medians of
``--repeat`` runs, in one process; ratios are egglog / relgraph.
"""

from __future__ import annotations

import argparse
import statistics
import time

import relgraph as rg
from relations import optdb

A = rg.matrix("A")
x, y, z, w = (rg.vector(n) for n in "xyzw")
START = A @ x + A @ y + A @ z + A @ w
BEST = A @ rg.add(x, y, z, w)
QUERY = optdb.query(include=["linalg", "canonicalize"])


def median(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def relgraph_budget():
    space = rg.explore(START, QUERY, max_terms=1000, progress=False)
    assert len(space) == 1000 and space.best() == BEST
    return f"{len(space)} terms, best {rg.pprint(space.best())}"


def relgraph_depth2():
    space = rg.explore(START, QUERY, max_depth=2, max_terms=10**6, progress=False)
    assert space.best() == BEST
    return f"{len(space)} terms, best {rg.pprint(space.best())}"


try:
    from egglog import EGraph, Expr, StringLike, birewrite, rewrite, run

    class M(Expr):  # at module level: egglog resolves the type hints here
        def __init__(self, name: StringLike) -> None: ...
        def __matmul__(self, other: M) -> M: ...
        def __add__(self, other: M) -> M: ...

except ImportError:
    M = None


def egglog_peer():
    if M is None:
        return None

    def saturate_and_extract():
        egraph = EGraph()

        @egraph.register
        def _rules(a: M, b: M, c: M):
            yield birewrite(a @ (b + c)).to(a @ b + a @ c)
            yield birewrite(a + (b + c)).to((a + b) + c)
            yield rewrite(a + b).to(b + a)

        A_ = M("A")
        expr = A_ @ M("x") + A_ @ M("y") + A_ @ M("z") + A_ @ M("w")
        handle = egraph.let("expr", expr)
        egraph.run(run().saturate())
        return str(egraph.extract(handle))

    return saturate_and_extract


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rg.explore(START, QUERY, max_terms=50, progress=False)  # warm up: imports, goal building
    rows = [
        ("relgraph explore, 1,000-term budget", *median(relgraph_budget, args.repeat)),
        ("relgraph explore, max_depth=2", *median(relgraph_depth2, args.repeat)),
    ]
    peer = egglog_peer()
    egg = median(peer, args.repeat) if peer else None
    print("| run | time (s) | egglog / this | result |")
    print("|---|---|---|---|")
    for name, t, result in rows:
        ratio = f"{egg[0] / t:.2f}x" if egg else "-"
        print(f"| {name} | {t:.3f} | {ratio} | {result} |")
    if egg:
        print(f"| egglog saturate + extract | {egg[0]:.3f} | 1.00x | {egg[1]} |")
    else:
        print("| egglog | - | - | not installed (pip install -e '.[bench]') |")


if __name__ == "__main__":
    main()
