"""Exploring the rewrite space of ``A @ x + A @ y + A @ z + A @ w`` .

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

from bench_canonicalize import median_time  # the same timer: median, and the last result
from bench_rewrite import Mat  # the same egglog sort: matrices with @ and + (None without egglog)

import relgraph as rg
from relations import optdb

A = rg.matrix("A")
x, y, z, w = (rg.vector(n) for n in "xyzw")
START = A @ x + A @ y + A @ z + A @ w
BEST = A @ rg.add(x, y, z, w)
QUERY = optdb.query(include=["linalg", "canonicalize"])


def relgraph_budget():
    space = rg.explore(START, QUERY, max_terms=1000, progress=False)
    assert len(space) == 1000 and space.best() == BEST
    return f"{len(space)} terms, best {rg.pprint(space.best())}"


def relgraph_depth2():
    space = rg.explore(START, QUERY, max_depth=2, max_terms=10**6, progress=False)
    assert space.best() == BEST
    return f"{len(space)} terms, best {rg.pprint(space.best())}"


def egglog_peer():
    if Mat is None:
        return None
    from egglog import EGraph, birewrite, rewrite, run

    def saturate_and_extract():
        egraph = EGraph()

        @egraph.register
        def _rules(a: Mat, b: Mat, c: Mat):
            yield birewrite(a @ (b + c)).to(a @ b + a @ c)
            yield birewrite(a + (b + c)).to((a + b) + c)
            yield rewrite(a + b).to(b + a)

        A_ = Mat("A")
        expr = A_ @ Mat("x") + A_ @ Mat("y") + A_ @ Mat("z") + A_ @ Mat("w")
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
        ("relgraph explore, 1,000-term budget", *median_time(relgraph_budget, args.repeat)),
        ("relgraph explore, max_depth=2", *median_time(relgraph_depth2, args.repeat)),
    ]
    peer = egglog_peer()
    egg = median_time(peer, args.repeat) if peer else None
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
