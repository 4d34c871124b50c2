"""The library's hand-written relations and the rules that replace them give the same
answers, both ways and through the driver."""

import pytest
from hypothesis import given, settings, strategies as st
from kanren import run, var

import relgraph as rg
from relations.arith import neg_nego
from relations.explog import exp_logo, log_expo
from relations.linalg import dot_assoco, dot_distributeo, transpose_doto, transpose_transposeo
from relgraph.terms.traverse import subterms

X, Y = rg.lvars("x y")
Am, Bm, Cm = rg.lvars("A B C")
XS = rg.rest("xs")
M, N = rg.matrix("M"), rg.matrix("N")

TWINS = {
    "neg_nego": (rg.rule(-(-X), X), neg_nego),
    "log_expo": (rg.rule(rg.log(rg.exp(X)), 0 + X), log_expo),
    "exp_logo": (rg.rule(rg.exp(rg.log(X)), X), exp_logo),
    "transpose_transposeo": (rg.rule(Am.T.T, Am), transpose_transposeo),
    "transpose_doto": (rg.rule((Am @ Bm).T, Bm.T @ Am.T), transpose_doto),
    "dot_assoco": (rg.rule((Am @ Bm) @ Cm, Am @ (Bm @ Cm)), dot_assoco),
    # a distribution: it reads float sums flat (rg.reassociates), as kanren's goal does
    "dot_distributeo": (
        rg.reassociates(rg.rule(Am @ rg.add(XS), rg.add(Am @ XS))),
        dot_distributeo,
    ),  # fmt: skip
}


def answers(relation, term, n=0, backward=False):
    q = var()
    goal = relation(q, term) if backward else relation(term, q)
    return {rg.as_term(r) for r in run(n, q, goal)} - {None}


@st.composite
def matrix_terms(draw, depth=4):
    """Well-typed float64 matrix programs that the twins' patterns occur in."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from([M, N, rg.matrix("P")]))
    t = matrix_terms(depth - 1)
    kind = draw(st.sampled_from(["neg", "exp", "log", "T", "dot", "add", "sum3"]))
    if kind == "neg":
        return -draw(t)
    if kind in ("exp", "log"):
        return getattr(rg, kind)(draw(t))
    if kind == "T":
        return draw(t).T
    if kind == "dot":
        return draw(t) @ draw(t)
    if kind == "add":
        return draw(t) + draw(t)
    return draw(t) @ (draw(t) + draw(t) + draw(t))


@pytest.mark.parametrize("name", sorted(TWINS))
@settings(max_examples=40, deadline=None, derandomize=True)
@given(term=matrix_terms())
def test_a_rule_and_its_hand_written_twin_give_the_same_answers(name, term):
    rule, twin = TWINS[name]
    for node in {term, *subterms(term)}:
        forward = answers(rule, node)
        assert forward == answers(twin, node), rg.pprint(node)
        for out in forward:  # and back: to the input, or its flattened sums
            back = answers(rule, out, 8, backward=True)
            assert back == answers(twin, out, 8, backward=True)
            assert back and all(out in answers(rule, t) for t in back)
    # The hand-written twin gets the head the rule knows (untracked, the backward
    # search of dot_distributeo runs on every node, without end on some).
    assert rg.rewrite(term, rule) == rg.rewrite(term, rg.Rule(twin, name, rule.tracks))
    back = rg.reverse(rule)
    if back.tracks is not None:  # x -> --x grows forever, in both
        twin_back = rg.Rule(rg.reverse(twin), name, back.tracks, back.windows)
        assert rg.rewrite(term, back) == rg.rewrite(term, twin_back)
