"""relgraph's equilibrium driver side by side with PyTensor + kanren and egglog.

Run from the repository root after ``pip install -e ".[bench]"``::

    python benchmarks/bench_rewrite.py            # the full table (a few minutes)
    python benchmarks/bench_rewrite.py --quick    # smaller sizes

Cases (all peers get the same term shape: sums built with ``+``, nested binary):

* chain:  ``A @ (v0 + ... + v{n-1})`` distributed, n = 8 .. 1024;
* sites:  ``sum_i A_i @ (x_i + y_i)`` distributed, k = 10 .. 500;
* gather: ``A @ v0 + ... + A @ v{n-1}`` gathered back by the reversed relation;
* scan:   a 10,000-node elementwise program and 20 registered relations that never
  apply (their heads do not occur), and the same with 20 relations whose heads do
  occur but whose patterns never match, and the library's ``stabilize`` query (which
  has relations on the program's sums and differences but rewrites nothing there);
* the chain, the gather and the second scan again with the relations written as rules
  (``rg.rule(A @ rg.add(xs), rg.add(A @ xs))``), which the driver matches directly.

Peers: PyTensor 3.0.x ``KanrenRelationSub`` in ``EquilibriumGraphRewriter(max_use_ratio=10)``
with default settings and tuned (``ignore_newtrees=False, tracks_on_change_inputs=True``),
operands as matrices (today's PyTensor skips matrix-vector products); egglog with the
rule ``a @ (b + c) -> a @ b + a @ c`` run to saturation.  Times are medians of
``--repeat`` runs, excluding term construction; ratios are peer / relgraph.
"""

from __future__ import annotations

import argparse
import functools
import math
import operator
import statistics
import sys
import time
from collections.abc import Callable

from etuples import etuple
from kanren import conso, eq, heado, lall, tailo, var
from kanren.assoccomm import assoc_flatten
from kanren.graph import mapo
from unification import vars as lvars

import relgraph as rg
from relations import optdb
from relations.linalg import dot_distributeo

sys.setrecursionlimit(100_000)  # egglog and PyTensor recurse on long nested sums


def median_time(make: Callable[[], Callable[[], object]], repeat: int) -> float:
    """Median wall time of ``run()`` over ``repeat`` fresh ``run = make()``."""
    times = []
    for _ in range(repeat):
        run = make()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def nested_sum(terms):
    return functools.reduce(operator.add, terms)


# --- relgraph -------------------------------------------------------------------------

FORWARD = rg.EquilibriumRewriter(
    [rg.Rule(dot_distributeo, "dot_distributeo", frozenset([rg.dot]))]
)
GATHER = rg.EquilibriumRewriter(
    [rg.Rule(rg.reverse(dot_distributeo), "gather", frozenset([rg.add]))]
)


def rg_chain(n, rewriter=FORWARD):
    A, vs = rg.matrix("A"), [rg.vector(f"v{i}") for i in range(n)]
    term = A @ nested_sum(vs)
    return lambda: rg.rewrite(term, rewriter)


def rg_chain_end_to_end(n):
    def build_and_rewrite():
        A, vs = rg.matrix("A"), [rg.vector(f"v{i}") for i in range(n)]
        return rg.rewrite(A @ nested_sum(vs), FORWARD)

    return build_and_rewrite


def rg_sites(k):
    term = nested_sum(
        rg.matrix(f"A{i}") @ (rg.vector(f"x{i}") + rg.vector(f"y{i}")) for i in range(k)
    )
    return lambda: rg.rewrite(term, FORWARD)


def rg_gather(n, rewriter=GATHER):
    A = rg.matrix("A")
    term = nested_sum(A @ rg.vector(f"v{i}") for i in range(n))
    return lambda: rg.rewrite(term, rewriter)


def never_applies(op, name):
    """``op(op(x)) -> op(x)``: tracked on ``op``."""

    def relation(a, b):
        x = var()
        return lall(eq(a, etuple(op, etuple(op, x))), eq(b, etuple(op, x)))

    relation.__name__ = name
    return relation


ABSENT_OPS = [rg.dot, rg.transpose, rg.sum, rg.max, rg.log1p, rg.expm1, rg.sqrt, rg.abs]
ABSENT_OPS += [rg.maximum, rg.pow]
PRESENT_OPS = [rg.add, rg.mul, rg.neg, rg.sub, rg.exp]


def scan_relations(ops):
    rules = []
    for i in range(20):
        op = ops[i % len(ops)]
        name = f"never_{op.name}_{i}"
        rules.append(rg.Rule(never_applies(op, name), name, frozenset([op])))
    return rules


def scan_term(nodes):
    """An elementwise program of ``nodes`` applications (add, mul, sub, exp)."""
    x, y = rg.vector("x"), rg.vector("y")
    t = x
    for i in range(round(nodes / 2.5)):  # 2 and 3 new nodes, alternately
        t = (t * y + float(i)) if i % 2 else rg.exp(t - y) + x
    return t


def rg_scan(nodes, ops):
    term = scan_term(nodes)
    rewriter = rg.EquilibriumRewriter(scan_relations(ops))
    return lambda: rg.rewrite(term, rewriter)


# The same relations written as rules: patterns the driver matches without kanren.
_A, _XS, _X, _Y, _Z = rg.lvar("A"), rg.rest("xs"), *rg.lvars("x y z")
DIST_RULE = rg.rule(_A @ rg.add(_XS), rg.add(_A @ _XS), name="dot_distributeo")
FORWARD_RULE = rg.EquilibriumRewriter([DIST_RULE])
GATHER_RULE = rg.EquilibriumRewriter([rg.reverse(DIST_RULE)])


def never_rule(op, i):
    """``op(op(x)) -> op(x)`` (``op(op(x, y), op(z, x))`` for a binary Op): never in the
    scanned program, though ``op`` is."""
    if op.nin == 1:
        lhs = rg.Term((op, rg.Term((op, _X))))
    else:
        lhs = rg.Term((op, rg.Term((op, _X, _Y)), rg.Term((op, _Z, _X))))
    return rg.rule(lhs, _X, name=f"never_{op.name}_{i}")


@functools.cache
def stabilize_query():
    return optdb.query(include=["stabilize"])  # its goals are built on the first run


def rg_scan_stabilize(nodes):
    term, query = scan_term(nodes), stabilize_query()
    return lambda: rg.rewrite(term, query)


@functools.cache
def never_rules():
    # built once, as a query is: its first run compiles the rules' filters and checks
    # the 20 rules for pairs that undo each other (about 9 ms)
    return rg.EquilibriumRewriter([never_rule(PRESENT_OPS[i % 5], i) for i in range(20)])


def rg_scan_rules(nodes):
    term, rewriter = scan_term(nodes), never_rules()
    return lambda: rg.rewrite(term, rewriter)


# --- PyTensor + kanren (the Aesara/PyTensor documentation's example, current names) ---


def pytensor_peer():
    try:
        import pytensor.tensor as pt
        from pytensor.graph.rewriting.basic import EquilibriumGraphRewriter
        from pytensor.graph.rewriting.kanren import KanrenRelationSub
        from pytensor.graph.rewriting.utils import rewrite_graph
        from pytensor.tensor.math import _dot
    except ImportError:
        return None
    from kanren import fact
    from kanren.assoccomm import associative

    fact(associative, pt.add)

    def pt_dot_distributeo(in_lv, out_lv):
        A_lv, add_term_lv, add_cdr_lv, dot_cdr_lv, add_flat_lv = lvars(5)
        return lall(
            eq(in_lv, etuple(_dot, A_lv, add_term_lv)),
            heado(pt.add, add_term_lv),
            assoc_flatten(add_term_lv, add_flat_lv),
            tailo(add_cdr_lv, add_flat_lv),
            conso(pt.add, dot_cdr_lv, out_lv),
            mapo(lambda x, y: conso(_dot, etuple(A_lv, x), y), add_cdr_lv, dot_cdr_lv),
        )

    def rewriter(relation, tuned):
        options = dict(ignore_newtrees=False, tracks_on_change_inputs=True) if tuned else {}
        return EquilibriumGraphRewriter([KanrenRelationSub(relation)], max_use_ratio=10, **options)

    def run(graph, relation, tuned):
        rw = rewriter(relation, tuned)
        return lambda: rewrite_graph(graph, include=[], custom_rewrite=rw, clone=False)

    def chain(n, tuned):
        A, vs = pt.matrix("A"), [pt.matrix(f"v{i}") for i in range(n)]
        return run(A.dot(nested_sum(vs)), pt_dot_distributeo, tuned)

    def sites(k, tuned):
        graph = nested_sum(
            pt.matrix(f"A{i}").dot(pt.matrix(f"x{i}") + pt.matrix(f"y{i}")) for i in range(k)
        )
        return run(graph, pt_dot_distributeo, tuned)

    def gather(n, tuned):
        A = pt.matrix("A")
        graph = nested_sum(A.dot(pt.matrix(f"v{i}")) for i in range(n))
        return run(graph, lambda a, b: pt_dot_distributeo(b, a), tuned)

    def scan(nodes, tuned):
        x, y = pt.vector("x"), pt.vector("y")
        t = x
        for i in range(round(nodes / 2.5)):
            t = (t * y + float(i)) if i % 2 else pt.exp(t - y) + x
        rules = [KanrenRelationSub(r.relation) for r in scan_relations(ABSENT_OPS)]
        options = dict(ignore_newtrees=False, tracks_on_change_inputs=True) if tuned else {}
        rw = EquilibriumGraphRewriter(rules, max_use_ratio=10, **options)
        return lambda: rewrite_graph(t, include=[], custom_rewrite=rw, clone=False)

    return dict(chain=chain, sites=sites, gather=gather, scan=scan)


# --- egglog ---------------------------------------------------------------------------


try:
    from egglog import EGraph, Expr, StringLike, rewrite, run

    class Mat(Expr):  # at module level: egglog resolves the type hints here
        def __init__(self, name: StringLike) -> None: ...
        def __matmul__(self, other: Mat) -> Mat: ...
        def __add__(self, other: Mat) -> Mat: ...

except ImportError:
    Mat = None


def egglog_peer():
    if Mat is None:
        return None

    def saturate(expr, forward):
        egraph = EGraph()

        @egraph.register
        def _rules(a: Mat, b: Mat, c: Mat):
            if forward:
                yield rewrite(a @ (b + c)).to(a @ b + a @ c)
            else:
                yield rewrite(a @ b + a @ c).to(a @ (b + c))

        def insert_and_saturate():
            egraph.let("expr", expr)
            egraph.run(run().saturate())

        return insert_and_saturate

    def chain(n):
        return saturate(Mat("A") @ nested_sum(Mat(f"v{i}") for i in range(n)), True)

    def chain_end_to_end(n):
        def build_insert_saturate_extract():
            expr = Mat("A") @ nested_sum(Mat(f"v{i}") for i in range(n))
            egraph = EGraph()

            @egraph.register
            def _rules(a: Mat, b: Mat, c: Mat):
                yield rewrite(a @ (b + c)).to(a @ b + a @ c)

            handle = egraph.let("expr", expr)
            egraph.run(run().saturate())
            return egraph.extract(handle)

        return build_insert_saturate_extract

    def sites(k):
        return saturate(
            nested_sum(Mat(f"A{i}") @ (Mat(f"x{i}") + Mat(f"y{i}")) for i in range(k)), True
        )

    def gather(n):
        A = Mat("A")
        return saturate(nested_sum(A @ Mat(f"v{i}") for i in range(n)), False)

    return dict(chain=chain, sites=sites, gather=gather, chain_end_to_end=chain_end_to_end)


# --- the table ------------------------------------------------------------------------


def fmt(t):
    return "-" if t is None else f"{t:.4f}"


def ratio(peer, ours):
    return "-" if peer is None else f"{peer / ours:.1f}x"


def table(title, sizes, ours, peers, repeat):
    """Time ``ours(n)`` and each peer ``(make, max_n)`` for every size; print a markdown table."""
    print(f"\n## {title}\n")
    names = list(peers)
    header = ["n", "relgraph s"] + [f"{p} s" for p in names] + [f"{p}/relgraph" for p in names]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    results = {}
    for n in sizes:
        t_ours = median_time(functools.partial(ours, n), repeat)
        t_peers = []
        for name in names:
            make, max_n = peers[name]
            runs = 1 if n > 64 else repeat  # the slow peers: one run at large sizes
            usable = make is not None and n <= max_n
            t_peers.append(median_time(functools.partial(make, n), runs) if usable else None)
        results[n] = (t_ours, t_peers)
        row = [str(n), fmt(t_ours)] + [fmt(t) for t in t_peers]
        row += [ratio(t, t_ours) for t in t_peers]
        print("| " + " | ".join(row) + " |", flush=True)
    return results


def growth_exponent(results, lo, hi):
    return math.log(results[hi][0] / results[lo][0]) / math.log(hi / lo)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--pytensor-default-max",
        type=int,
        default=256,
        help="largest n for PyTensor's default settings (n=256 takes about 10 s)",
    )
    args = parser.parse_args(argv)
    pt, eg = pytensor_peer(), egglog_peer()
    unlimited = 10**9

    def peers(case, default_max=args.pytensor_default_max, tuned_max=unlimited):
        found = {}
        if pt:
            found["pytensor"] = (functools.partial(pt[case], tuned=False), default_max)
            found["pytensor-tuned"] = (functools.partial(pt[case], tuned=True), tuned_max)
        if eg and case in eg:
            found["egglog"] = (eg[case], unlimited)
        return found

    chain_sizes = [8, 32, 128] if args.quick else [8, 16, 32, 64, 128, 256, 512, 1024]
    site_sizes = [10, 50] if args.quick else [10, 50, 100, 200, 500]
    scan_nodes = 1000 if args.quick else 10_000

    chain = table(
        "chain: A @ (v0 + ... + v{n-1})", chain_sizes, rg_chain, peers("chain"), args.repeat
    )
    table(
        "chain end to end: build the term in Python, rewrite (egglog: and extract)",
        chain_sizes,
        rg_chain_end_to_end,
        {"egglog": (eg["chain_end_to_end"], unlimited)} if eg else {},
        args.repeat,
    )
    sites = table(
        "many sites: sum_i A_i @ (x_i + y_i)",
        site_sizes,
        rg_sites,
        peers("sites", default_max=100),
        args.repeat,
    )
    gather = table(
        "gather (reverse): A @ v0 + ... + A @ v{n-1}",
        chain_sizes,
        rg_gather,
        peers("gather", default_max=128, tuned_max=256),
        args.repeat,
    )
    scan_peer = {"pytensor": (functools.partial(pt["scan"], tuned=False), unlimited)} if pt else {}
    absent = table(
        "scan: 20 relations whose heads are absent (n = nodes)",
        [scan_nodes],
        functools.partial(rg_scan, ops=ABSENT_OPS),
        scan_peer,
        args.repeat,
    )
    present = table(
        "scan: 20 relations whose heads occur but never match (n = nodes)",
        [scan_nodes],
        functools.partial(rg_scan, ops=PRESENT_OPS),
        {},
        args.repeat,
    )
    stabilize = table(
        "scan: the library's stabilize query, which rewrites nothing there (n = nodes)",
        [scan_nodes],
        rg_scan_stabilize,
        {},
        args.repeat,
    )
    eg_only = {"egglog": (eg["chain"], unlimited)} if eg else {}
    as_rule = functools.partial(rg_chain, rewriter=FORWARD_RULE)
    rule_chain = table("chain, as a rule", chain_sizes, as_rule, eg_only, args.repeat)
    eg_gather = {"egglog": (eg["gather"], unlimited)} if eg else {}
    as_rule = functools.partial(rg_gather, rewriter=GATHER_RULE)
    rule_gather = table("gather, as a rule", chain_sizes, as_rule, eg_gather, args.repeat)
    rule_scan = table(
        "scan: 20 rules whose heads occur but never match (n = nodes)",
        [scan_nodes],
        rg_scan_rules,
        {},
        args.repeat,
    )
    if not args.quick:
        scans = (absent, present, stabilize)
        summary(chain, sites, gather, *(scan[scan_nodes][0] for scan in scans))
        rule_summary(rule_chain, rule_gather, rule_scan[scan_nodes][0])


def summary(chain, sites, gather, t_absent, t_present, t_stabilize):
    print("\n## targets\n")
    egg = chain[256][1][-1]
    print(f"- chain n=256: {chain[256][0]:.4f} s (target <= 0.1 s; egglog {fmt(egg)} s)")
    default_128 = chain[128][1][0]
    if default_128 is not None:
        speedup = default_128 / chain[128][0]
        print(f"- chain n=128 vs PyTensor default: {speedup:.0f}x (target >= 50x)")
    print(
        f"- growth exponent 256->1024: {growth_exponent(chain, 256, 1024):.2f} "
        f"(target <= 1.15); 128->1024: {growth_exponent(chain, 128, 1024):.2f}"
    )
    print(f"- many sites k=500: {sites[500][0]:.4f} s (target <= 0.15 s)")
    print(f"- gather n=1024: {gather[1024][0]:.4f} s")
    print(
        f"- scan of 10,000 nodes, heads absent: {t_absent * 1e3:.1f} ms (target <= 20 ms); "
        f"heads present: {t_present * 1e3:.1f} ms; the library's stabilize: "
        f"{t_stabilize * 1e3:.1f} ms (target <= 20 ms)"
    )


def rule_summary(chain, gather, t_scan):
    print("\n## targets for rules\n")
    for name, results in (("chain", chain), ("gather", gather)):
        ours, egg = results[256][0], results[256][1][-1]
        print(f"- {name} n=256 as a rule: {ours:.4f} s (target <= egglog's {fmt(egg)} s)")
    print(
        f"- scan of 10,000 nodes, 20 rules never matching: {t_scan * 1e3:.1f} ms (target <= 20 ms)"
    )


if __name__ == "__main__":
    main()
