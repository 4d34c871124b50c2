"""The standard library through the driver: what its relations do to whole programs."""

import fuzz
import numpy as np
import pytest
from hypothesis import given, settings
from relation_cases import CASES, RULES

import relgraph as rg
from relations import arith, optdb
from relations.linalg import dot_distributeo
from relgraph.terms.traverse import subterms


def test_a_relation_that_holds_only_without_broadcasting_skips_broadcasts():
    # The documentation's relation would make A @ a from a broadcast scalar a.
    A, x, a = rg.matrix("A"), rg.vector("x"), rg.scalar("a")
    assert rg.rewrite(A @ (x + a), [dot_distributeo]) == A @ (x + a)


@pytest.mark.parametrize("tag", ["canonicalize", "fast_run"])
def test_a_balanced_sum_over_few_symbols_reaches_its_fixpoint(tag):
    syms = [rg.vector(n) for n in "abcd"]
    level = [syms[i % 4] for i in range(128)]
    while len(level) > 1:
        level = [level[i] + level[i + 1] for i in range(0, len(level), 2)]
    out = rg.rewrite(level[0], optdb.query(include=[tag]))
    env = {s: np.arange(3.0) + k for k, s in enumerate(syms)}
    np.testing.assert_allclose(rg.evaluate(out, env), 32 * sum(env.values()))


def test_an_answer_moving_arithmetic_across_dtypes_is_counted():
    x, y = rg.vector("x", "int64"), rg.vector("y")
    out, report = rg.rewrite(x * (x * y), [arith.reassociateo], report=True)
    assert out == x * (x * y)
    (stats,) = report.rules
    assert dict(stats.dropped) == {"changes values: moves arithmetic across dtypes": 1}


def _both_ways(entry):
    """The library entry's matcher, and the same with its goal always run by kanren."""
    from relgraph.rewriting.relation import Matcher, as_rule

    direct, streamed = Matcher(as_rule(entry.obj)), Matcher(as_rule(entry.obj))
    streamed.compute = streamed.guard = None
    return direct, streamed


@pytest.mark.parametrize("name", sorted(RULES))
@settings(max_examples=25, deadline=None, derandomize=True)
@given(program=fuzz.programs(depth=4))
def test_a_relation_answers_without_kanren_as_its_goal_does(name, program):
    """A goal that computes (``computeo``) or tests first (``pipeo`` with ``testo``) is
    answered by the Matcher without kanren's streams: the same answers, in order, on
    every subterm of random programs and on the relation's catalogue case."""
    direct, streamed = _both_ways(RULES[name][1])
    for t in [*subterms(program.term), *subterms(CASES[name][0])]:
        if type(t) is rg.Term:
            assert list(direct.answers(t)) == list(streamed.answers(t)), rg.pprint(t)


DECLARING = sorted(n for n in RULES if getattr(RULES[n][1].obj.relation, "needs_operand", None))


@pytest.mark.parametrize("name", DECLARING)
@settings(max_examples=25, deadline=None, derandomize=True)
@given(program=fuzz.programs(depth=4))
def test_what_a_relation_says_it_needs_is_true(name, program):
    """A library relation that declares the operands it needs (``rg.needs_operand``)
    has no answer, run by kanren, on a term it rejects without running (by that
    declaration, or by its own first test) among random programs' subterms and every
    catalogue case, and it does apply to its own catalogue case."""
    direct, streamed = _both_ways(RULES[name][1])
    streamed.needs = None
    cases = [c for case in CASES.values() for c in subterms(case[0])]
    for t in [*subterms(program.term), *cases]:
        if type(t) is rg.Term and direct.rejects(t):
            assert not list(streamed.answers(t)), rg.pprint(t)
    assert not direct.rejects(CASES[name][0]) and list(direct.answers(CASES[name][0]))


def test_the_products_relations_declare_the_operand_they_need():
    assert {"cheaper_dot_ordero", "dot_scaleo", "sum_scaleo", "expm1o"} <= set(DECLARING)


def test_the_direct_answers_cover_the_computing_relations():
    computing = [n for n in RULES if _both_ways(RULES[n][1])[0].compute is not None]
    guarded = [n for n in RULES if _both_ways(RULES[n][1])[0].guard is not None]
    assert {"ac_normalo", "constant_foldo", "collect_termso", "neg_addo"} <= set(computing)
    assert {"add_zeroo", "mul_oneo", "mul_neg_oneo", "one_minus_sigmoido"} <= set(guarded)
    assert "add_nego" not in computing  # a rule: matched directly anyway
