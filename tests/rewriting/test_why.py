"""rg.why: what failed, where, with the values it saw; and why answers were refused."""

import pytest
from etuples import etuple
from kanren import eq, lall, var
from local_relations import dot_distributeo, mul_oneo

import relgraph as rg
from relgraph.logic import goals

x, y = rg.lvars("x y")
a, b, c = rg.vector("a"), rg.vector("b"), rg.vector("c")
M = rg.matrix("M")


def test_a_fixed_arity_pattern_on_a_flat_sum_points_to_rest_variables():
    pair = rg.rule(rg.sum(x + y), rg.sum(x) + rg.sum(y), name="sum_addo")
    found = rg.why(pair, rg.sum(rg.Term((rg.add, a, b, c))))
    (attempt,) = found.attempts
    assert not found.applies and attempt.outcome == "no match"
    assert "add has 3 arguments" in attempt.reason and "rg.rest" in attempt.reason


def test_it_names_the_sub_pattern_and_the_subterm_that_differ():
    rule = rg.rule(rg.exp(rg.log(x)), x, name="exp_logo")
    found = rg.why(rule, rg.exp(rg.sqrt(a)) + rg.exp(rg.log(b)))
    outcomes = {a_.position: (a_.outcome, a_.reason) for a_ in found.attempts}
    assert outcomes[(0,)] == ("no match", "expected head log, found sqrt in sqrt(a)")
    assert outcomes[(1,)][0] == "rewrote" and found.attempts[1].results == (b,)
    assert "at [1]: rewrote exp(log(b)) to b" in str(found)


def test_repeated_variables_typed_variables_and_conditions_say_what_they_saw():
    same = rg.rule(x - x, 0.0 * x)
    assert "?x is a already, here it would be b" in rg.why(same, a - b).attempts[0].reason
    A = rg.lvar("A", ndim=2)
    typed = rg.rule(rg.sum(A), rg.sum(rg.sum(A, axis=0)))
    assert "does not satisfy ?A's ndim=2" in rg.why(typed, rg.sum(a)).attempts[0].reason
    k = rg.lvar("k", constant=True)
    pos = rg.rule(rg.sign(k * x), rg.sign(x), when=lambda k: k > 0, name="sign_poso")
    reason = rg.why(pos, rg.sign(-2.0 * a)).attempts[0].reason
    assert reason == "condition <lambda> is false for ?k=-2.0"


def transpose_lowo(a, b):
    """``x.T -> x`` for a vector or a scalar: a hand-written goal with a test."""
    u = var()
    return lall(
        eq(a, etuple(rg.transpose, u)), goals.testo(lambda v: rg.typeof(v).ndim < 2, u), eq(b, u)
    )


def test_a_hand_written_goal_reports_its_first_failing_conjunct_with_values():
    dist = rg.Rule(dot_distributeo, "dot_distributeo", frozenset([rg.dot]))
    (attempt,) = rg.why(dist, M @ rg.exp(a)).attempts
    assert attempt.reason == "eq failed with u=add(...), v=exp(a)"
    low = rg.Rule(transpose_lowo, "transpose_lowo", frozenset([rg.transpose]))
    assert rg.why(low, M.T).attempts[0].reason.startswith("testo failed with args=(M,)")


def test_refused_answers_say_why():
    i = rg.vector("i", "int32")
    (attempt,) = rg.why(mul_oneo, i * 1.0).attempts
    assert attempt.outcome == "refused"
    assert "changes the type from" in attempt.reason and "int32" in attempt.reason
    same = rg.rule(x - y, x - y, name="noop")
    assert rg.why(same, a - b).attempts[0].reason == "the answer is the input itself"


def test_a_term_without_the_head_says_which_heads_it_has():
    found = rg.why(rg.rule(rg.sum(x), x), rg.exp(a))
    assert found.attempts == () and "(sum)" in found.note and "['exp']" in found.note


def test_bad_input_is_named():
    with pytest.raises(TypeError):
        rg.why(dot_distributeo, "A @ x")
    assert "<td>rewrote</td>" in rg.why(dot_distributeo, M @ (a + b))._repr_html_()


def test_why_reports_a_condition_that_raises_at_its_position():
    x, v = rg.lvar("x"), rg.vector("v")
    r = rg.rule(rg.exp(x), x * 2.0, when=lambda x: 1 / 0, name="raiser")
    (attempt,) = rg.why(r, rg.exp(v)).attempts
    assert attempt.outcome == "raised" and "ZeroDivisionError" in attempt.reason
