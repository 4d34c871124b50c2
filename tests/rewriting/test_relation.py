import numpy as np
import pytest
from etuples import etuple
from kanren import conde, eq, lall, var
from local_relations import dot_distributeo

import relgraph as rg
from relgraph.rewriting.relation import Matcher, as_rule, steps


def two_ways_o(a, b):
    u = var()
    return lall(
        eq(a, etuple(rg.neg, u)), conde([eq(b, etuple(rg.exp, u))], [eq(b, etuple(rg.log, u))])
    )


def test_reverse_swaps_the_arguments(syms):
    A, B, x, y, z, w = syms
    gather = rg.reverse(dot_distributeo)
    assert gather.__name__ == "reverse(dot_distributeo)"
    assert list(rg.rewrites(A @ x + A @ y, gather)) == [A @ (x + y)]
    assert list(rg.rewrites(A @ x + A @ y, rg.reverse(gather))) == []


def test_rewrites_yields_every_position_lazily(syms):
    A, B, x, y, z, w = syms
    t = A @ (x + B @ (y + z))
    results = list(rg.rewrites(t, dot_distributeo))
    assert results == [A @ (x + (B @ y + B @ z)), A @ x + A @ (B @ (y + z))]
    assert list(rg.rewrites(t, dot_distributeo, n=1)) == results[:1]


def test_rewrites_yields_every_answer_of_a_position(syms):
    A, B, x, y, z, w = syms
    assert set(rg.rewrites(rg.exp(-x), two_ways_o)) == {rg.exp(rg.exp(x)), rg.exp(rg.log(x))}


def test_rewrites_rewrites_shared_subterms_everywhere(syms):
    A, B, x, y, z, w = syms
    d = A @ (x + y)
    (only,) = rg.rewrites(d * d, dot_distributeo)
    assert only == (A @ x + A @ y) * (A @ x + A @ y)


def test_windows_of_associative_arguments(syms):
    A, B, x, y, z, w = syms
    t = rg.add(B @ y, B @ z, x, w)
    found = {(s.window, s.after) for s in steps(t, rg.reverse(dot_distributeo))}
    assert found == {((0, 2), B @ (y + z))}
    assert list(rg.rewrites(t, rg.reverse(dot_distributeo))) == [rg.add(B @ (y + z), x, w)]
    # in floats a run in the middle is no part of the fold: (x + B@y) + B@z
    assert list(steps(rg.add(x, B @ y, B @ z, w), rg.reverse(dot_distributeo))) == []


def test_a_window_step_that_changes_the_nodes_dtype_is_not_a_step():
    # The run 1 + 2 folds to an int64 3, but i + 3 is int64 where the int32
    # i + 1 + 2 is int32.
    from local_relations import constant_foldo

    i32, i = rg.vector("i32", "int32"), rg.vector("i", "int64")
    assert list(rg.rewrites(rg.add(i32, 1, 2), constant_foldo)) == []
    assert rg.add(i, np.int64(3)) in list(rg.rewrites(rg.add(i, 1, 2), constant_foldo))


def test_rule_metadata():
    rule = as_rule(dot_distributeo, tracks=[rg.dot])
    assert rule.name == "dot_distributeo" and rule.tracks == frozenset([rg.dot])
    assert as_rule(rule) is rule
    assert as_rule(rule, name="d").relation is dot_distributeo
    with pytest.raises(TypeError, match="goal constructor"):
        as_rule("dot_distributeo")


def test_matcher_builds_the_goal_once(syms):
    A, B, x, y, z, w = syms
    calls = []

    def counting_o(a, b):
        calls.append(1)
        return dot_distributeo(a, b)

    m = Matcher(as_rule(counting_o))
    assert list(m.answers(A @ (x + y))) == [A @ x + A @ y]
    assert list(m.answers(B @ (z + w))) == [B @ z + B @ w]
    assert list(m.answers(A @ x)) == []
    assert len(calls) == 1
    # once per relation, not per matcher: each explore and rewrite makes its own
    again = Matcher(as_rule(counting_o))
    assert list(again.answers(A @ (x + y))) == [A @ x + A @ y] and len(calls) == 1
    assert again.dropped is not m.dropped  # what a matcher counts stays its own
    back = Matcher(as_rule(rg.reverse(counting_o)))  # the same goal, run the other way
    assert list(back.answers(A @ x + A @ y)) == [A @ (x + y)] and len(calls) == 1
    twice = Matcher(as_rule(rg.reverse(rg.reverse(counting_o))))
    assert list(twice.answers(A @ (x + y))) == [A @ x + A @ y]
