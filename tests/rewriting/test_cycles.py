"""The static check of a relation set: relations that undo themselves or each other."""

import warnings

import pytest
from etuples import etuple
from kanren import eq, lall, var

import relgraph as rg
from relgraph.rewriting.cycles import CycleWarning

x, y = rg.lvars("x y")


def test_a_commuting_rule_undoes_itself_and_a_pair_of_inverses_is_named():
    swap = rg.rule(x * y, y * x, name="commute")
    to_mul = rg.rule(-x, -1.0 * x, name="neg_to_mul")
    to_neg = rg.rule(-1.0 * x, -x, name="mul_to_neg")
    with pytest.warns(CycleWarning) as caught:
        found = rg.EquilibriumRewriter([swap, to_mul, to_neg]).check()
    assert [f.names for f in found] == [("commute",), ("neg_to_mul", "mul_to_neg")]
    assert "drop 'neg_to_mul' (it makes terms bigger)" in str(caught[1].message)
    with pytest.raises(rg.QueryError, match="'commute' undoes itself"):
        rg.EquilibriumRewriter([swap]).check(strict=True)


def test_rewriting_with_rules_that_fight_warns_once_before_it_runs():
    swap = rg.rule(x * y, y * x, name="commute")
    rewriter = rg.EquilibriumRewriter([swap])
    a, b = rg.vector("a"), rg.vector("b")
    with pytest.warns(CycleWarning, match="commute"), pytest.raises(rg.OscillationError):
        rg.rewrite(a * b, rewriter)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(rg.OscillationError):  # no second warning
            rg.rewrite(a * b, rewriter)


def test_hand_written_relations_are_probed_and_confirmed_on_an_instance():
    def neg_to_mulo(a, b):
        v = var()
        return lall(eq(a, etuple(rg.neg, v)), eq(b, etuple(rg.mul, -1.0, v)))

    def mul_to_nego(a, b):
        v = var()
        return lall(eq(a, etuple(rg.mul, -1.0, v)), eq(b, etuple(rg.neg, v)))

    def mul_to_neg_of_intso(a, b):  # its instance (float vectors) does not rewrite
        v = var()
        return lall(eq(a, etuple(rg.mul, -1, v)), eq(b, etuple(rg.neg, rg.neg(v))))

    with pytest.warns(CycleWarning):
        found = rg.EquilibriumRewriter([neg_to_mulo, mul_to_nego, mul_to_neg_of_intso]).check()
    assert [f.names for f in found] == [("neg_to_mulo", "mul_to_nego")]
    with pytest.warns(CycleWarning, match="one is the other reversed"):
        rg.EquilibriumRewriter([mul_to_nego, rg.reverse(mul_to_nego)]).check()
