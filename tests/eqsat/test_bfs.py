"""Exploring term by term (method="bfs"): budgets, best, explain, replay, semantics."""

import numpy as np
import pytest
from fuzz import inputs, programs
from hypothesis import given, settings, strategies as st

import relgraph as rg
from relations import optdb
from relations.arith import add_zeroo, mul_oneo
from relations.linalg import dot_distributeo
from relgraph.rewriting.relation import as_rule

A, B = rg.matrix("A"), rg.matrix("B")
x, y, z, w = (rg.vector(n) for n in "xyzw")
START = A @ x + A @ y + A @ z + A @ w
LINALG_CANON = optdb.query(include=["linalg", "canonicalize"])


@pytest.fixture(scope="module")
def space():
    return rg.explore(START, LINALG_CANON, method="bfs")


def values(seed=0):
    rng = np.random.default_rng(seed)
    return {A: rng.normal(size=(4, 4)), B: rng.normal(size=(4, 4))} | {
        v: rng.normal(size=4) for v in (x, y, z, w)
    }


def test_issue_example_best_and_explain(space):
    assert len(space) == 1000 and space.stopped_by == "max_terms" and not space.complete
    assert space.best() == A @ rg.add(x, y, z, w)
    assert space.cost(space.best()) == rg.op_cost(A @ rg.add(x, y, z, w)) < space.cost(START)
    derivation = space.explain()
    assert derivation.start == START and derivation.result == space.best()
    # The library's dot_distributeo is a rule, which takes the nested sum flat.
    assert [(s.relation, s.direction) for s in derivation] == [("dot_distributeo", "backward")]
    assert len(derivation) == space.depth(space.best()) == 1
    assert "dot_distributeo (backward)" in str(derivation)


def test_every_edge_replays_with_rewrites(space):
    for edge in space.edges[:300] + space.explain().steps:
        assert edge.target in set(rg.rewrites(edge.source, edge.goal)), str(edge)


def test_edge_position_points_at_the_rewritten_node(space):
    for edge in space.edges[:300]:
        term = edge.source
        for i in edge.position:
            term = term.args[i]
        assert term == edge.node
        if edge.window is not None:
            i, j = edge.window
            assert edge.before == rg.Term((edge.node.op, *edge.node.args[i:j]))


def test_every_term_computes_the_same(space):
    vals = values()
    expected = rg.evaluate(START, vals)
    for term in space.terms:
        np.testing.assert_allclose(rg.evaluate(term, vals), expected, rtol=1e-9, atol=1e-9)


def test_terms_are_distinct_and_depths_are_breadth_first(space):
    terms = space.terms
    assert len(set(terms)) == len(terms) and terms[0] == START
    depths = [space.depth(t) for t in terms]
    assert depths == sorted(depths)  # every depth is found before the next one
    for edge in space.edges:  # an edge never skips a level
        assert space.depth(edge.target) <= space.depth(edge.source) + 1


def test_complete_space():
    s = rg.explore(A @ (x + y), [dot_distributeo], method="bfs")
    assert s.complete and s.stopped_by is None
    assert set(s.terms) == {A @ (x + y), A @ x + A @ y}
    assert {(e.relation, e.direction) for e in s.edges} == {
        ("dot_distributeo", "forward"),
        ("dot_distributeo", "backward"),
    }


def test_directions():
    forward = rg.explore(A @ (x + y), [dot_distributeo], directions=["forward"], method="bfs")
    assert {e.direction for e in forward.edges} == {"forward"}
    backward = rg.explore(A @ x + A @ y, [dot_distributeo], directions=("backward",), method="bfs")
    assert backward.best() == A @ (x + y) and backward.complete
    assert rg.explore(
        A @ x + A @ y, [dot_distributeo], directions=["forward"], method="bfs"
    ).terms == (A @ x + A @ y,)


def test_max_depth():
    i, j = rg.vector("i", "int64"), rg.vector("j", "int64")  # floats: x + 0 is not x
    s = rg.explore(i + j, [add_zeroo], max_depth=2, method="bfs")
    assert s.stopped_by == "max_depth" and max(s.depth(t) for t in s.terms) == 2
    assert (i + j + 0) + 0 in s or ((i + 0) + j) + 0 in s


def test_max_terms_is_exact():
    s = rg.explore(x * y, [mul_oneo, add_zeroo], max_terms=37, method="bfs")
    assert len(s) == 37 and s.stopped_by == "max_terms"
    assert all(e.source in s and e.target in s for e in s.edges)


def test_timeout_returns_the_partial_space():
    s = rg.explore(x * y, [mul_oneo, add_zeroo], max_terms=10**9, timeout=0.3, method="bfs")
    assert s.stopped_by == "timeout" and len(s) > 1 and s.elapsed < 5


def test_interrupt_returns_the_partial_space(ctrl_c):
    ctrl_c(0.5)
    s = rg.explore(x * y, [mul_oneo, add_zeroo], max_terms=10**9, timeout=60, method="bfs")
    assert s.stopped_by == "interrupt" and len(s) > 1
    assert all(e.source in s and e.target in s for e in s.edges)


def test_progress_bar(capsys):
    rg.explore(x * y, [mul_oneo], max_depth=3, progress=True, method="bfs")
    assert "explore" in capsys.readouterr().err


def test_custom_cost():
    s = rg.explore(A @ (x + y), [dot_distributeo], method="bfs")
    assert s.best() == A @ (x + y)
    dots_are_free = rg.weighted({"dot": 0.0, "add": 1.0})
    assert s.best(cost=dots_are_free) == A @ (x + y)  # one add either way: nearest wins
    adds_cost_more = rg.weighted({"dot": 0.0, "add": 5.0})
    assert s.best(adds_cost_more) == A @ (x + y)
    s2 = rg.explore(
        A @ (x + y), [dot_distributeo], cost=lambda t: -rg.count_nodes(t), method="bfs"
    )
    assert s2.best() == A @ x + A @ y


def test_ties_keep_the_order_of_the_start():
    s = rg.explore(A @ y + A @ x, LINALG_CANON, max_terms=300, method="bfs")
    assert s.best() == A @ (y + x)


def test_a_window_step_that_changes_the_nodes_dtype_is_not_an_edge():
    from relations.arith import constant_foldo

    x32 = rg.vector("x32", "float32")
    space = rg.explore(rg.add(x32, 1, 2.5), [as_rule(constant_foldo, windows=True)], method="bfs")
    assert space.terms == (rg.add(x32, 1, 2.5),)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="directions"):
        rg.explore(x, [dot_distributeo], directions=["sideways"], method="bfs")
    with pytest.raises(ValueError, match="max_terms"):
        rg.explore(x, [dot_distributeo], max_terms=0, method="bfs")
    s = rg.explore(A @ (x + y), [dot_distributeo], method="bfs")
    with pytest.raises(KeyError, match=r"\(x \+ z\) is not in this rewrite space"):
        s.explain(x + z)

    def broken(a, b):
        def goal(state):
            raise ZeroDivisionError("boom")
            yield

        return goal

    with pytest.raises(rg.RelationError, match="'broken' \\(forward\\) raised ZeroDivisionError"):
        rg.explore(x + y, [broken], method="bfs")


@settings(max_examples=40, deadline=None)
@given(program=programs(4), seed=st.integers(0, 2**32 - 1))
def test_explored_terms_compute_the_same(program, seed):
    vals = inputs(seed)
    expected = rg.evaluate(program.term, vals)
    s = rg.explore(program.term, optdb.query(include=["fast_run"]), max_terms=40, method="bfs")
    for term in s.terms:
        got = rg.evaluate(term, vals)
        assert rg.typeof(term) == rg.typeof(program.term)
        np.testing.assert_allclose(
            got, expected, rtol=1e-6, atol=1e-9 * max(1, np.abs(expected).max())
        )


def test_both_kinds_of_space_answer_the_space_protocol():
    from relgraph.eqsat.bfs import explore_terms
    from relgraph.eqsat.space import Space

    A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    start = A @ (x + y)
    for space in (rg.explore(start, [dot_distributeo]), explore_terms(start, [dot_distributeo])):
        assert isinstance(space, Space)
        best = space.best()
        assert best in space.terms
        assert space.explain(best).result == best
        assert space.depth(start) == 0
