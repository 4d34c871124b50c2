"""Compiled rules: matched and applied on e-class ids, they find what matching on
e-classes finds, refuse what a view's answer refuses, and leave the same space."""

from collections import Counter

import numpy as np
import pytest

import relgraph as rg
import relgraph.eqsat.saturate as saturate
from relations import optdb
from relgraph.eqsat.compiled import ClassMatcher, compiled_rule
from relgraph.eqsat.views import Interned
from tests.eqsat.test_ematch import P, Q, R, by_ematching, graph_of, runner

u, v = rg.lvars("u v")
a_sym = rg.vector("a")
COMPILED = [
    rg.rule((P @ Q) @ R, P @ (Q @ R), name="assoc"),
    rg.rule(-(-u), u, name="neg_neg"),
    rg.rule(rg.sum(u, 0), rg.sum(u.T, 1), name="sum_axis"),
    rg.rule(-(2.0 * u), -2.0 * u, name="neg_scale"),  # either order of the product
    rg.rule(rg.exp(rg.log(a_sym)), a_sym, name="exp_log_a"),  # a symbol of the pattern
    rg.rule(rg.maximum(u, u), u, name="max_same"),  # a repeated variable
]


def test_rules_of_fixed_arity_are_compiled_others_run_on_views():
    assert all(compiled_rule(r) is not None for r in COMPILED)
    xs = rg.rest("xs")
    on_views = [
        rg.rule(u + 0, u, name="add_zero"),  # an associative root matches runs of sums
        rg.rule(P @ rg.add(xs), rg.add(P @ xs), name="distribute"),  # a rest part
        rg.rule(-u, -(u + 0) + 0 * u, name="splice", when=[lambda S: iter([S])]),  # a goal
    ]
    assert all(compiled_rule(r) is None for r in on_views)


def graph():
    A, B, C, D = (rg.matrix(n) for n in "ABCD")
    a, b, d = a_sym, rg.vector("b"), rg.vector("d")
    g = graph_of(
        (A @ B) @ C @ D, A @ (B @ a), -(-a), -(-(-b)), rg.sum(A, 0), rg.sum(A, 1),
        -(2.0 * a), -(b * 2.0), -(2 * b), rg.exp(rg.log(a)), rg.exp(rg.log(b)),
        rg.maximum(a, a), rg.maximum(a, b), rg.maximum(b, d),
    )  # fmt: skip
    # merged classes: b's class also holds exp(d), and d joins it (max(b, d) is then
    # max of one class twice)
    g.merge(g.add_term(b), g.add_term(rg.exp(d)))
    g.merge(g.add_term(d), g.add_term(b))
    g.rebuild()
    return g


@pytest.mark.parametrize("rule", COMPILED, ids=lambda r: r.__name__)
def test_a_compiled_rule_finds_what_ematching_finds(rule):
    g = graph()
    compiled, m = compiled_rule(rule), ClassMatcher(g)
    found = set()
    for cls in g.classes.values():
        for key in cls.nodes:
            for b, shape in compiled.matches(m, key):
                shown, _, _ = compiled.terms(g, b, shape)
                values = {var: m.shown(c) for var, c in zip(compiled.variables, b)}
                found.add((shown, None, frozenset(values.items())))
    assert found == by_ematching(g, Interned(), runner(rule))
    assert found  # each rule matches somewhere in this graph


def spaces(monkeypatch, start, relations, **options):
    """The space explored with compiled rules, and with every rule on views."""
    compiled = rg.explore(start, relations, timeout=None, progress=False, **options)
    monkeypatch.setattr(saturate, "compiled_rule", lambda relation: None)
    on_views = rg.explore(start, relations, timeout=None, progress=False, **options)
    monkeypatch.undo()
    return compiled, on_views


def summary(space):
    return (
        len(space), space.classes, space.stopped_by,
        Counter((a.rule.name, a.direction) for a in space.applications),
    )  # fmt: skip


X, W, Y = rg.matrix("X"), rg.vector("w"), rg.vector("y")
I8, J8 = rg.vector("i", "int8"), rg.vector("j", "int8")
F, B = rg.vector("f"), rg.vector("b", "bool")
LIBRARY_CASES = [
    (rg.sum(Y * (X @ W) - rg.log(1 + rg.exp(X @ W))), ["fast_run"]),
    (abs(-rg.sum(F) - rg.sum(Y)), ["canonicalize", "reassociate"]),
    (X.T @ (X @ W) - (X @ W).T.T, ["linalg", "canonicalize"]),
    ((I8 - J8) - -(-I8) + (F - 1) - 0, ["canonicalize"]),  # int8 beside float64
    (-(-(F * B)) + (B * B) + (F - 0.0) / 1.0, ["canonicalize"]),  # bools, float literals
    (rg.log(rg.exp(F)) - rg.log1p(-rg.sigmoid(F)), ["fast_run"]),
]


@pytest.mark.parametrize("start, include", LIBRARY_CASES)
def test_the_library_explores_the_same_space_compiled_or_on_views(monkeypatch, start, include):
    query = optdb.query(include=include)
    compiled, on_views = spaces(monkeypatch, start, query, max_nodes=2_000)
    assert any(r.compiled is not None for r in compiled.runners)
    assert summary(compiled) == summary(on_views)
    assert compiled.best() == on_views.best()


@pytest.mark.parametrize("case", [LIBRARY_CASES[3], LIBRARY_CASES[0]])
def test_the_space_is_the_same_on_a_slow_machine(monkeypatch, case):
    """A relation's search is bounded by matches and views tried, not by seconds: with
    a clock that moves 10 s at every reading (a machine a million times slower), the
    library builds the same space."""
    start, include = case
    query = optdb.query(include=include)
    fast = rg.explore(start, query, timeout=None, progress=False, max_nodes=2_000)
    readings = iter(range(0, 10**9, 10))
    monkeypatch.setattr(saturate.time, "perf_counter", lambda: float(next(readings)))
    slow = rg.explore(start, query, timeout=None, progress=False, max_nodes=2_000)
    monkeypatch.undo()
    assert slow.elapsed >= 10  # the clock was the slow one
    assert summary(slow) == summary(fast) and slow.best() == fast.best()


def test_the_chain_explores_the_same_space_and_every_term_is_explained(monkeypatch):
    dims = [30, 35, 15, 5, 10, 20]
    mats = [rg.matrix(f"M{i}", shape=(dims[i], dims[i + 1])) for i in range(5)]
    start = mats[0] @ mats[1] @ mats[2] @ mats[3] @ mats[4]
    compiled, on_views = spaces(monkeypatch, start, [COMPILED[0]], schedule="saturate")
    assert summary(compiled) == summary(on_views) and compiled.saturated
    for term in compiled.terms:
        derivation = compiled.explain(term)
        assert derivation.result == term and all(step.check() for step in derivation)


def test_an_answer_of_another_type_or_across_dtypes_is_refused_and_counted():
    i, f = rg.vector("i", "int64"), rg.vector("f")
    to_float = rg.rule(u - v, u + (-1.0) * v, name="sub_as_scaled")  # int - int -> float
    space = rg.explore(i - i * 2, [to_float], directions=["forward"], timeout=None)
    (run,) = space.runners
    assert run.compiled is not None and space.terms == (i - i * 2,)
    assert run.matcher.dropped["changes the type"] == 1
    # f - i is float; f + -1.0 * i moves i into float before it is negated: pure only
    # where every node the answer makes computes in its own dtype
    move = rg.rule(u - v, u + -v, name="sub_addo")
    space = rg.explore(f - i, [move], directions=["forward"], timeout=None)
    assert f + -i not in space
    assert space.runners[0].matcher.dropped["changes values: moves arithmetic across dtypes"] == 1
    ints = rg.explore(i - i * 2, [move], directions=["forward"], timeout=None)
    assert i + -(i * 2) in ints


def test_a_condition_sees_what_a_view_shows():
    c = rg.lvar("c", constant=True)
    positive = rg.rule(rg.maximum(u, c), u, name="max_below", when=[lambda c: np.all(c < 0)])
    assert compiled_rule(positive) is not None
    x = rg.vector("x", shape=3)
    e = rg.exp(x)  # any value: the rule says exp(x) >= 0 > c, which holds for c < 0
    assert e in rg.explore(rg.maximum(e, -1.0), [positive], timeout=None)
    assert e not in rg.explore(rg.maximum(e, 1.0), [positive], timeout=None)


def test_a_wrapping_answer_of_a_compiled_rule_is_dropped_unless_identities_are_on():
    x = rg.vector("x")
    wrap = rg.rule(-u, -(-(-u)), name="wrap_neg")
    assert compiled_rule(wrap) is not None
    dropped = rg.explore(-x, [wrap], directions=["forward"], max_iterations=2)
    kept = rg.explore(-x, [wrap], directions=["forward"], identities=True, max_iterations=2)
    assert -(-(-x)) in kept and -(-(-x)) not in dropped
    assert dropped.wrapped > 0 and kept.wrapped == 0
