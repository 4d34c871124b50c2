"""Exploring by equality saturation: relgraph's e-graph side by side with egglog.

Run from the repository root after ``pip install -e ".[bench]"``::

    python benchmarks/bench_explore.py [--repeat 3]

Each row saturates (or runs to its budget) and extracts the best term; times are
medians of ``--repeat`` runs in one process, ratios are egglog's time / relgraph's
(above 1: relgraph is faster).  Memory is the peak of Python's heap during one
relgraph run (tracemalloc; egglog's e-graph lives in Rust's heap, not measured).

* gather 4, 64, 256: ``A @ v0 + ... + A @ vn``, to ``A @ (v0 + ... + vn)``, to saturation
  (``schedule="saturate"``, as egglog runs them).  relgraph:
  the rule ``A @ add(xs) <-> add(A @ xs)`` both ways.  egglog: ``a @ (b + c) <-> a @ b
  + a @ c`` both ways (for 4 terms also associativity and commutativity of ``+``, as
  its binary sums need them to reach the gathered form).
* gather 4 under ``linalg`` and ``canonicalize`` (every relation of the two tags, the
  example of the docs), relgraph only, with the default schedule (forward to a
  fixpoint, both ways for three rounds, forward again) and to saturation.
* the logistic log-likelihood under ``fast_run``, default schedule: the best term's cost
  is at most ``rg.rewrite``'s.
* matrix chain of 6 and 10 matrices with given shapes: ``(P @ Q) @ R <-> P @ (Q @ R)``.
  relgraph extracts under its shape-aware cost; the row checks that the cost equals
  the dynamic-programming optimum.  egglog extracts with its own cost (term size, the
  same for every order), so its choice is costed with relgraph's model for the table.
* ``abs(-sum(x) - sum(y))`` (x, y float vectors of 1000) under ``canonicalize`` and
  ``reassociate`` (``sum(a) + sum(b) -> sum(a + b)`` adds in another order), default
  schedule; ``abs(sum(x + y))`` must be in the space and best by op weights (the
  shape-aware cost prefers ``abs(sum(x) + sum(y))``, which makes no temporary).  egglog: the five
  rules that reach it (``a - b -> a + -b``, ``-(a + b) <-> -a + -b``, ``--a -> a``,
  ``abs(-a) -> abs(a)``, ``sum(a) + sum(b) <-> sum(a + b)``).
"""

from __future__ import annotations

import argparse
import functools
import operator
import sys
import tracemalloc

from bench_canonicalize import median_time  # the same timer: median, and the last result

import relgraph as rg
from relations import optdb
from relgraph.terms.printing import brief

sys.setrecursionlimit(100_000)  # egglog recurses on long nested sums
A = rg.matrix("A")
CHAIN_DIMS = {
    6: [30, 35, 15, 5, 10, 20, 25],
    10: [30, 35, 15, 5, 10, 20, 25, 40, 8, 50, 12],
}
x_lv, xs = rg.lvar("M", ndim=2), rg.rest("xs")
DISTRIBUTE = rg.rule(x_lv @ rg.add(xs), rg.add(x_lv @ xs), name="dot_distributeo")
P, Q, R = rg.lvar("P", ndim=2), rg.lvar("Q", ndim=2), rg.lvar("R")
ASSOC = rg.rule((P @ Q) @ R, P @ (Q @ R), name="dot_assoco")


def peak_memory(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


# -- relgraph --------------------------------------------------------------------------


def gather_term(n):
    return functools.reduce(operator.add, [A @ rg.vector(f"v{i}") for i in range(n)])


def rg_gather(n):
    term = gather_term(n)
    goal = A @ rg.add(*[rg.vector(f"v{i}") for i in range(n)])

    def run():
        space = rg.explore(term, [DISTRIBUTE], timeout=None, progress=False, schedule="saturate")
        assert space.saturated and space.best() == goal
        return f"{len(space)} e-nodes, saturated, best {brief(space.best(), 40)}"

    return run


def rg_gather_query(schedule):
    term, query = gather_term(4), optdb.query(include=["linalg", "canonicalize"])
    goal = A @ rg.add(*[rg.vector(f"v{i}") for i in range(4)])

    def run():
        space = rg.explore(term, query, schedule=schedule, progress=False)
        assert space.best() == goal
        return f"{len(space)} e-nodes, {space.stopped_by or 'saturated'}, best found"

    return run


def rg_loglik():
    X, w, y = rg.matrix("X"), rg.vector("w"), rg.vector("y")
    term = rg.sum(y * (X @ w) - rg.log(1 + rg.exp(X @ w)))
    query = optdb.query(include=["fast_run"])
    rewritten = rg.rewrite(term, query)

    def run():
        space = rg.explore(term, query, progress=False)
        best = space.best()
        assert space.cost(best) <= space.cost(rewritten)
        return f"{len(space)} e-nodes, {space.stopped_by or 'saturated'}, best {brief(best, 40)}"

    return run


def chain(n):
    dims = CHAIN_DIMS[n]
    mats = [rg.matrix(f"M{i}", shape=(dims[i], dims[i + 1])) for i in range(n)]
    return mats, functools.reduce(operator.matmul, mats)


def chain_optimum(mats):
    """The optimum under shape_cost, by dynamic programming over sub-chains."""
    best = {(i, i): (0.0, mats[i]) for i in range(len(mats))}
    for span in range(1, len(mats)):
        for i in range(len(mats) - span):
            j = i + span
            options = []
            for k in range(i, j):
                (left_cost, left), (right_cost, right) = best[i, k], best[k + 1, j]
                node = left @ right
                options.append((left_cost + right_cost + rg.shape_cost.node(node), node))
            best[i, j] = min(options, key=lambda o: o[0])
    return best[0, len(mats) - 1][0]


def rg_chain(n):
    mats, term = chain(n)
    optimum = chain_optimum(mats)

    def run():
        space = rg.explore(term, [ASSOC], timeout=None, progress=False, schedule="saturate")
        cost = space.cost(space.best())
        assert space.saturated and abs(cost - optimum) < 1e-6 * optimum
        return f"{len(space)} e-nodes, cost {cost:,.0f} = optimum {optimum:,.0f}"

    return run


ABS_X, ABS_Y = rg.vector("x", shape=1000), rg.vector("y", shape=1000)
ABS_START = abs(-rg.sum(ABS_X) - rg.sum(ABS_Y))
ABS_GOAL = abs(rg.sum(ABS_X + ABS_Y))


def rg_abs():
    # sum(x) + sum(y) -> sum(x + y) adds in another order: opt-in (reassociate)
    query = optdb.query(include=["canonicalize", "reassociate"])

    def run():
        space = rg.explore(ABS_START, query, timeout=None, progress=False)
        assert ABS_GOAL in space and space.best(rg.op_cost) == ABS_GOAL
        return f"{len(space)} e-nodes, {space.stopped_by or 'saturated'}, best by shape " + (
            brief(space.best(), 30)
        )

    return run


# -- egglog ----------------------------------------------------------------------------

try:
    from egglog import EGraph, Expr, StringLike, birewrite, function, rewrite, run, vars_

    class Mat(Expr):  # module level: egglog resolves the type hints here
        def __init__(self, name: StringLike) -> None: ...
        def __matmul__(self, other: Mat) -> Mat: ...
        def __add__(self, other: Mat) -> Mat: ...

    class Arr(Expr):
        def __init__(self, name: StringLike) -> None: ...
        def __add__(self, other: Arr) -> Arr: ...
        def __sub__(self, other: Arr) -> Arr: ...
        def __neg__(self) -> Arr: ...

    @function
    def asum(a: Arr) -> Arr: ...

    @function
    def aabs(a: Arr) -> Arr: ...

except ImportError:
    Mat = None


def egglog_saturate(expr, rules):
    def run_once():
        egraph = EGraph()
        egraph.register(*rules())
        handle = egraph.let("expr", expr)
        egraph.run(run().saturate())
        return " ".join(str(egraph.extract(handle)).split())

    return run_once


def eg_gather(n):
    names = [Mat(f"v{i}") for i in range(n)]
    expr = functools.reduce(operator.add, [Mat("A") @ v for v in names])

    def rules():
        a, b, c = vars_("a b c", Mat)
        found = [birewrite(a @ (b + c)).to(a @ b + a @ c)]
        if n <= 4:
            found += [birewrite(a + (b + c)).to((a + b) + c), rewrite(a + b).to(b + a)]
        return found

    return egglog_saturate(expr, rules)


def eg_chain(n):
    dims = CHAIN_DIMS[n]
    expr = functools.reduce(operator.matmul, [Mat(f"M{i}") for i in range(n)])
    mats, _ = chain(n)
    symbols = {m.name: m for m in mats}

    def rules():
        a, b, c = vars_("a b c", Mat)
        return [birewrite((a @ b) @ c).to(a @ (b @ c))]

    saturate = egglog_saturate(expr, rules)

    def run_once():
        text = saturate()
        term = rg.parse(text.replace('Mat("', "").replace('")', ""), **symbols)
        cost = rg.shape_cost(term)
        return f"cost {cost:,.0f} ({cost / chain_optimum(mats):.2f}x the optimum)"

    assert len(dims) == n + 1
    return run_once


def eg_abs():
    x, y = Arr("x"), Arr("y")
    expr = aabs(-asum(x) - asum(y))

    def rules():
        a, b = vars_("a b", Arr)
        return [
            rewrite(a - b).to(a + (-b)),
            birewrite(-(a + b)).to((-a) + (-b)),
            rewrite(-(-a)).to(a),
            rewrite(aabs(-a)).to(aabs(a)),
            birewrite(asum(a) + asum(b)).to(asum(a + b)),
        ]

    return egglog_saturate(expr, rules)


# -- the table -------------------------------------------------------------------------

CASES = [
    ("gather 4, the rule both ways", rg_gather(4), lambda: eg_gather(4)),
    ("gather 64", rg_gather(64), lambda: eg_gather(64)),
    ("gather 256", rg_gather(256), lambda: eg_gather(256)),
    ("gather 4, linalg + canonicalize, default schedule", rg_gather_query("default"), None),
    ("gather 4, linalg + canonicalize, schedule='saturate'", rg_gather_query("saturate"), None),
    ("logistic log-likelihood (20 nodes), fast_run", rg_loglik(), None),
    ("matrix chain 6", rg_chain(6), lambda: eg_chain(6)),
    ("matrix chain 10", rg_chain(10), lambda: eg_chain(10)),
    ("abs(-sum(x) - sum(y)), canonicalize + reassociate", rg_abs(), eg_abs),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rg.explore(gather_term(4), [DISTRIBUTE], progress=False)  # warm up: imports, goals
    print("| case | relgraph (s) | egglog (s) | egglog / relgraph | relgraph peak MiB | result |")
    print("|---|---|---|---|---|---|")
    for name, ours, peer in CASES:
        t, result = median_time(ours, args.repeat)
        memory = peak_memory(ours)
        if peer is None or Mat is None:
            row = f"| {name} | {t:.4f} | - | - | {memory:.1f} | {result} |"
        else:
            te, peer_result = median_time(peer(), args.repeat)
            row = f"| {name} | {t:.4f} | {te:.4f} | {te / t:.2f}x | {memory:.1f} | {result}"
            row += f"; egglog: {brief(peer_result, 50)} |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
