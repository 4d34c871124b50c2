"""E-matching: rules matched over e-classes agree with matching their views, and
find every combination where views are cut."""

import functools
import operator

import pytest

import relgraph as rg
from relgraph.eqsat.egraph import EGraph
from relgraph.eqsat.ematch import EMatcher, matchable
from relgraph.eqsat.saturate import DirectedRule
from relgraph.eqsat.views import MAX_ALTERNATIVES, Interned, Views
from relgraph.rewriting.patterns import compile_pattern
from relgraph.rewriting.relation import Rule, positions

P, Q, R = rg.lvar("P", ndim=2), rg.lvar("Q", ndim=2), rg.lvar("R")
u, v = rg.lvars("u v")
c = rg.lvar("c", constant=True)
XS = rg.rest("xs")
RULES = [
    rg.rule((P @ Q) @ R, P @ (Q @ R), name="assoc"),
    rg.rule(rg.sum(u) + rg.sum(v), rg.sum(u + v), name="sum_add"),
    rg.rule(u * u, u**2, name="square"),
    rg.rule(rg.exp(u) * rg.exp(v), rg.exp(u + v), name="exp_mul"),
    rg.rule(c * (u + v), c * u + c * v, name="scale_sum"),
    rg.rule(-(-u), u, name="neg_neg"),
    rg.rule(rg.sum(u, 0), rg.sum(u.T, 1), name="sum_axis"),
    rg.rule(P @ rg.add(XS), rg.add(P @ XS), name="distribute"),
    rg.rule(rg.add(P @ XS), P @ rg.add(XS), name="gather"),
    rg.rule(rg.exp(rg.add(XS)), rg.mul(rg.exp(XS)), name="exp_sum"),
]


def runner(rule):
    return DirectedRule(Rule(rule, rule.__name__), "forward", 8)


def graph_of(*terms):
    g = EGraph()
    for t in terms:
        g.add_term(t)
    g.rebuild()
    return g


def by_ematching(g, interned, run):
    """``(term matched, window, bindings)`` of every match on every e-node."""
    matcher = EMatcher(g, interned)
    found = set()
    for cls in g.classes.values():
        for key in cls.nodes:
            for _, window, term, bindings, _ in matcher.matches(run.pattern, key, run.windows):
                for b in bindings:
                    found.add((term, window, frozenset(b.items())))
    return found


def by_views(g, interned, run):
    """What matching the pattern on every view (and its runs) finds."""
    views = Views(g, interned)
    found = set()
    for cid, cls in g.classes.items():
        for key in cls.nodes:
            for view in views.of_root(cid, key, run):
                places = positions(view) if run.windows and len(view.args) > 2 else [(view, None)]
                for candidate, window in places:
                    for b in run.pattern.match(candidate, {}):
                        found.add((candidate, window, frozenset(b.items())))
    return found


def test_rules_are_ematched_unless_a_rest_part_has_company():
    runners = [runner(r) for r in RULES]
    assert all(r.pattern is not None for r in runners)
    beside = rg.rule(rg.add(u, XS, 0.0), rg.add(u, XS), name="drop_last_zero")
    assert not matchable(compile_pattern(beside.lhs))
    assert runner(beside).pattern is None  # matched on views


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.__name__)
def test_ematching_finds_what_matching_views_finds(rule):
    A, B, C, D = (rg.matrix(n) for n in "ABCD")
    a, b, d = rg.vector("a"), rg.vector("b"), rg.vector("d")
    s = rg.scalar("s")
    g = graph_of(
        (A @ B) @ C @ D, A @ (B @ a), rg.sum(a) + rg.sum(b) + rg.sum(d),
        a * a * b, rg.exp(a) * rg.exp(b) * rg.exp(a), 2.0 * (a + b), s * (a + d),
        -(-a), rg.sum(A, 0), rg.sum(a) + rg.sum(a),
        A @ (a + b + d), A @ a + A @ b + A @ d + B @ a, rg.exp(a + b),
    )  # fmt: skip
    # a merged class: b's class also holds exp(d), and a's holds a * 1
    g.merge(g.add_term(b), g.add_term(rg.exp(d)))
    g.merge(g.add_term(a), g.add_term(a * 1))
    g.rebuild()
    run, interned = runner(rule), Interned()
    found = by_ematching(g, interned, run)
    assert found == by_views(g, interned, run)
    assert found  # each rule matches somewhere in this graph


def test_a_repeated_variable_matches_one_class():
    a, b = rg.vector("a"), rg.vector("b")
    g = graph_of(a * b)
    run = runner(RULES[2])  # u * u -> u ** 2
    assert by_ematching(g, Interned(), run) == set()
    g.merge(g.add_term(a), g.add_term(b))  # now a and b are one class
    g.rebuild()
    (shape, window, binding), *more = by_ematching(g, Interned(), run)
    assert not more and window is None and len(dict(binding)) == 1


def test_ematching_finds_every_alternative_where_views_are_cut():
    """An operand class with more e-nodes of the pattern's head than a view shows."""
    n = MAX_ALTERNATIVES + 4
    mats = [rg.matrix(f"M{i}", shape=(3, 3)) for i in range(2 * n)]
    products = [mats[2 * i] @ mats[2 * i + 1] for i in range(n)]
    C = rg.matrix("C", shape=(3, 3))
    g = graph_of(products[0] @ C, *products)
    first = g.add_term(products[0])
    for p in products[1:]:  # one class holding n products (as a rewrite would make it)
        g.merge(first, g.add_term(p))
    g.rebuild()
    run = runner(RULES[0])
    found = by_ematching(g, Interned(), run)
    assert len(found) == n  # every ((Mi @ Mj) @ C)
    assert len(by_views(g, Interned(), run)) == MAX_ALTERNATIVES  # what views show


def test_explore_reaches_the_chain_optimum_with_ematching():
    dims = [30, 35, 15, 5, 10, 20, 25]
    mats = [rg.matrix(f"M{i}", shape=(dims[i], dims[i + 1])) for i in range(6)]
    space = rg.explore(functools.reduce(operator.matmul, mats), [RULES[0]], timeout=None,
                       schedule="saturate")  # fmt: skip
    assert space.saturated
    assert space.cost(space.best()) == 34_500  # the dynamic-programming optimum
    for term in list(space.terms)[:20]:
        derivation = space.explain(term)
        assert derivation.result == term and all(step.check() for step in derivation)


def test_a_relation_that_declares_what_it_reads_is_shown_only_that():
    from relations.linalg import dot_scaleo

    A, a = rg.matrix("A"), rg.vector("a")
    g = graph_of(A @ (2.0 * a))
    g.merge(g.add_term(2.0 * a), g.add_term(a + a))  # the operand class also holds a sum
    g.rebuild()
    views = Views(g, Interned())
    run = DirectedRule(Rule(dot_scaleo, "dot_scaleo"), "forward", 8)
    assert run.depth == 2 and rg.add not in run.guide[rg.dot]
    root = g.lookup(A @ (2.0 * a))
    shown = [v for key in g.nodes(root) for v in views.of_root(root, key, run)]
    operands = [o for v in shown for o in v.args]
    assert any(type(o) is rg.Term and o.op is rg.mul for o in operands), shown
    assert not any(type(o) is rg.Term and o.op is rg.add for o in operands), shown
    # and exploring still finds what it rewrites to
    space = rg.explore(A @ (2.0 * a), [dot_scaleo], directions=["forward"], timeout=None)
    assert 2.0 * (A @ a) in space


def test_the_ac_normal_form_sees_the_sums_it_splices_and_its_symbols():
    from relations.arith import ac_normalo

    i, j, k = (rg.vector(n, "int64") for n in "ijk")
    g = graph_of(i + (j + k))
    g.merge(g.add_term(j + k), g.add_term(rg.matrix("M", "int64") @ k))  # a product too
    g.rebuild()
    run = DirectedRule(Rule(ac_normalo, "ac_normalo"), "forward", 8)
    root = g.lookup(i + (j + k))
    views = Views(g, Interned())
    operands = [o for key in g.nodes(root) for v in views.of_root(root, key, run) for o in v.args]
    assert i in operands  # by name, so the normal form sorts as rg.rewrite's does
    assert any(type(o) is rg.Term and o.op is rg.add for o in operands)
    assert not any(type(o) is rg.Term and o.op is rg.dot for o in operands)
    space = rg.explore(i + (j + k), [ac_normalo], directions=["forward"], timeout=None)
    assert rg.add(i, j, k) in space


def test_like_terms_are_collected_in_the_egraph_as_by_rewrite():
    """collect_termso reads multiples among a sum's operands: ``x`` and the ``x`` of
    ``2.0 * x`` are one class, shown alike (a symbol beside a placeholder was not)."""
    from relations import optdb

    x, y = rg.vector("x"), rg.vector("y")
    query = optdb.query(include=["canonicalize"])
    for start, collected in [(x + 2.0 * x, 3.0 * x), (2.0 * x + 3.0 * x + y, 5.0 * x + y)]:
        space = rg.explore(start, query, timeout=None, max_nodes=1_000)
        assert collected in space and collected == rg.rewrite(start, query)
        # op weights count a sum once, whatever its length: x + x + x + x + x + y is cheaper
        assert space.cost(space.best()) <= space.cost(collected)
        assert space.stopped_by != "max_nodes"
    # (2x + y) + 3x: the like terms are no part of one fold in floating point
    assert 5.0 * x + y not in rg.explore(2.0 * x + y + 3.0 * x, query, timeout=None)


def test_a_symbol_is_shown_as_its_class_at_every_depth():
    """``(x * y) / y``: the y beside the product and the y inside it are one placeholder
    in a view, so mul_div_cancelo (opt-in: unsafe) finds what the driver finds."""
    from relations import optdb

    x, y, z = rg.vector("x"), rg.vector("y"), rg.vector("z")
    query = optdb.query(include=["canonicalize", "unsafe"])
    for start in [(x * y) / y, (y * x) / y, (x * y * z) / y]:
        space = rg.explore(start, query, timeout=None, max_nodes=1_000)
        assert space.best() == rg.rewrite(start, query) != start


def test_a_symbol_of_a_pattern_matches_the_class_that_holds_it():
    b, x, y = rg.vector("b"), rg.vector("x"), rg.vector("y")
    exp_b = rg.rule(rg.exp(b) * rg.exp(u), rg.exp(b + u), name="exp_b")
    assert runner(exp_b).pattern is not None
    space = rg.explore(rg.exp(b) * rg.exp(x), [exp_b], timeout=None)
    assert rg.exp(b + x) in space and space.explain(rg.exp(b + x)).result == rg.exp(b + x)
    assert rg.explore(rg.exp(y) * rg.exp(x), [exp_b], timeout=None).terms == (
        rg.exp(y) * rg.exp(x),
    )  # another symbol: no match


INTS = [rg.vector(n, "int64") for n in "ijk"]
NEG_NEG_MUL = rg.rule(-u * -v, u * v, name="neg_neg_mulo")


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint16"])
def test_a_rule_matches_operands_of_an_integer_product_that_are_not_neighbours(dtype):
    """Every order of an integer product has one value (it wraps around): ``-u * -v``
    fires on the first and last operands, and the derivation moves them to the front
    first (reordero steps), every step checked."""
    i, j, k = (rg.vector(n, dtype) for n in "ijk")
    space = rg.explore(rg.mul(-i, j, -k), [NEG_NEG_MUL], progress=False)
    assert rg.mul(i, k, j) in space
    steps = space.explain(rg.mul(i, k, j))
    assert all(step.check() for step in steps)
    names = [step.rule.name for step in steps]
    assert names[0] == "reordero" and "neg_neg_mulo" in names and len(names) <= 4


@pytest.mark.parametrize("regrouping", [False, True])
def test_a_float_product_is_matched_on_its_leading_operands_only(regrouping):
    """In floating point the order of a product rounds: (-x * y) * -z is not
    (-x * -z) * y, so the rule does not fire on the first and last operands; where the
    query regroups floats (a relation marked rg.reassociates) the matcher still does
    not reorder them itself (a derivation's step must check on its own)."""
    from kanren.core import fail

    @rg.reassociates
    def regroupo(a, b):
        return fail

    x, y, z = (rg.vector(n) for n in "xyz")
    rules = [NEG_NEG_MUL, regroupo] if regrouping else [NEG_NEG_MUL]
    space = rg.explore(rg.mul(-x, y, -z), rules, progress=False)
    assert rg.mul(x, z, y) not in space and rg.mul(x * z, y) not in space
    for t in space.terms:
        steps = space.explain(t)
        assert all(s.rule.name != "reordero" and s.check() for s in steps)


def test_reordero_moves_an_operand_to_the_front_of_integer_sums_only():
    from kanren import run, var

    from relgraph.eqsat.ematch import reordero

    def answers(t):
        q = var()
        return list(run(0, q, reordero(t, q)))

    i, j, k = INTS
    assert answers(rg.add(i, j, k)) == [rg.add(j, i, k), rg.add(k, i, j)]
    assert answers(rg.add(i, i, j)) == [rg.add(j, i, i)]  # no repeats, nothing unmoved
    x, y = rg.vector("x"), rg.vector("y")
    assert answers(rg.add(x, y, x)) == []  # floats round by order
    assert answers(rg.add(i, rg.vector("s", "int8"), j)) == []  # int8 + int8 first: wraps
    assert answers(i - j) == []  # not commutative
