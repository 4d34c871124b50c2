"""The standard library: every relation forward, backward and through the driver;
the AC normal form; the databases' tags."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from fuzz import programs
from hypothesis import given, settings, strategies as st
from kanren import run, var
from relation_cases import (  # noqa: E402
    CASES,
    DATABASES,
    RULES,
    X3,
    Y3,
    A,
    B,
    K,
    a,
    b,
    f64,
    i,
    j,
    x,
    y,
    z,
)

import relgraph as rg
from relations import arith, optdb
from relations.indexing import take_elementwiseo
from relations.reductions import reshape_keepdimso
from relations.stabilize import expm1o
from relations.tags import TAGS
from relgraph.eqsat.saturate import DirectedRule
from relgraph.rewriting.promotion import regrouping
from relgraph.rewriting.relation import Matcher, positions
from relgraph.rewriting.rules import PatternRelation
from relgraph.terms.traverse import subterms


def test_every_registered_relation_has_a_case():
    assert sorted(RULES) == sorted(CASES)
    assert len(RULES) >= 30


def terms(answers):
    return [rg.as_term(r) for r in answers]


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward(name):
    term, expected, _ = CASES[name]
    rule = RULES[name][1].obj
    q = var()
    (first,) = run(1, q, rule(term, q))
    out = rg.as_term(first)
    assert out == expected and type(out) is type(expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_backward(name):
    term, expected, backward = CASES[name]
    rule = RULES[name][1].obj
    assert rg.directions_of(rule) == (("forward", "backward") if backward else ("forward",))
    q = var()
    found = terms(run(8, q, rule(q, expected)))
    if not backward:
        assert all(t is None for t in found)  # no ground input is determined
        return
    if name in ("ac_normalo", "reassociateo"):
        # Backward is eq_assoccomm: groupings and orders, all AC-equal to the output.
        normal = rg.EquilibriumRewriter([arith.reassociateo])
        assert found and all(rg.rewrite(t, normal) == expected for t in found if t is not None)
    else:
        assert term in found


@pytest.mark.parametrize("name", sorted(CASES))
def test_through_the_driver(name):
    term, expected, _ = CASES[name]
    rule = RULES[name][1].obj
    out, rep = rg.rewrite(term, rg.EquilibriumRewriter([rule]), report=True)
    assert out == expected
    assert rep.applications == {name: 1}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rewrite_keeps_the_value(name):
    term, expected, _ = CASES[name]
    rng = np.random.default_rng(0)
    values = {v: rng.uniform(0.5, 2.0, 3) for v in (x, y, z, X3, Y3)}
    values.update({v: rng.integers(-5, 5, 3) for v in (i, j)})
    values.update({s: rng.uniform(0.5, 2.0) for s in (a, b)})
    values.update({m: rng.uniform(0.5, 2.0, (3, 3)) for m in (A, B)})
    values[K] = rng.integers(-3, 3, (3, 2))
    before = rg.evaluate(term, values)
    np.testing.assert_allclose(rg.evaluate(expected, values), before, rtol=1e-12)


# -- the AC normal form -------------------------------------------------------------

# Float sums and products have one normal form only when regrouping is allowed.
CANON = optdb.query(include=["canonicalize", "reassociate"])


def test_the_issue_examples_share_one_normal_form():
    forms = {rg.rewrite(t, CANON) for t in (y * x + x * y, x * y + y * x, 2 * (x * y))}
    assert forms == {rg.mul(2, x, y)}


def shuffled(draw, op, args):
    """``op`` over ``args`` in a random order and grouping."""
    args = draw(st.permutations(args))
    while len(args) > 1:
        i = draw(st.integers(0, len(args) - 2))
        args = [*args[:i], op(args[i], args[i + 1]), *args[i + 2 :]]
    return args[0]


@given(st.data())
def test_ac_equal_inputs_have_one_normal_form(data):
    leaves = data.draw(st.lists(st.sampled_from([x, y, z, a, 2.0, rg.exp(x)]), min_size=2))
    products = [shuffled(data.draw, rg.mul, leaves[: i + 1]) for i in range(len(leaves))]
    one = shuffled(data.draw, rg.add, products)
    other = shuffled(data.draw, rg.add, [shuffled(data.draw, rg.mul, leaves[: i + 1])
                                         for i in range(len(leaves))])  # fmt: skip
    assert rg.rewrite(one, CANON) == rg.rewrite(other, CANON)


def test_a_long_sum_is_ordered_without_permuting():
    # kanren's eq_assoccomm enumerates permutations (720 for 7 arguments); the
    # normal form sorts once.
    vs = [rg.vector(f"v{i}") for i in range(200)]
    out, rep = rg.rewrite(rg.add(*reversed(vs)), CANON, report=True)
    assert out == rg.add(*sorted(vs, key=lambda v: v.name))
    assert rep.children[0].applications["reassociateo"] == 1


def test_the_normal_form_is_the_same_in_every_process():
    code = (
        "import relgraph as rg; from relations import optdb;"
        "x, y, z, a = rg.vector('x'), rg.vector('y'), rg.vector('z'), rg.scalar('a');"
        "t = rg.exp(z * y) * (x + a) + (y - x) * rg.exp(y * z) + a * x;"
        "print(rg.pprint(rg.rewrite(t, optdb.query(include=['fast_run']))))"
    )
    outs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                text=True, check=True).stdout)  # fmt: skip
    assert len(outs) == 1


# -- databases --------------------------------------------------------------------


def names(rewriter):
    return [name for step in rewriter.steps for name in (r.name for r in step[1].rules)]


def test_tags_are_declared_in_one_place():
    used = {t for db in DATABASES for e in db.entries() for t in e.tags}
    assert used <= set(TAGS)
    assert set(TAGS) >= {"fast_run", "canonicalize", "stabilize", "specialize", "linalg",
                         "expand", "factor", "unsafe"}  # fmt: skip


def test_optdb_runs_the_databases_in_pytensors_order():
    assert [e.name for e in optdb.entries()] == ["canonicalize", "stabilize", "recanonicalize",
                                                  "specialize", "linalg"]  # fmt: skip
    # canonicalize runs again only after stabilize changed something to normalise
    assert [n for n, _ in optdb.query(include=["canonicalize"]).steps] == ["canonicalize"]


def test_unsafe_relations_are_selected_only_when_named():
    fast = names(optdb.query(include=["fast_run"]))
    unsafe = [n for n, (db, e) in RULES.items() if "unsafe" in e.tags]
    assert unsafe and not set(unsafe) & set(fast)
    assert not set(unsafe) & set(names(optdb.query(include=["canonicalize"])))
    assert set(unsafe) & set(names(optdb.query(include=["canonicalize", "unsafe"])))
    t = (a * b) / b
    assert rg.rewrite(t, optdb.query(include=["fast_run"])) == t
    assert rg.rewrite(t, optdb.query(include=["canonicalize", "unsafe"])) == a


def test_expand_and_factor_are_never_in_one_equilibrium():
    with pytest.raises(rg.QueryError, match="distributeo.*factoro|factoro.*distributeo"):
        optdb.query(include=["expand", "factor", "unsafe"])
    fast = names(optdb.query(include=["fast_run"]))
    assert "factoro" not in fast and "distributeo" not in fast  # both unsafe at inf * 0
    assert "factoro" in names(optdb.query(include=["factor", "unsafe"]))


def test_fast_run_simplifies_stabilizes_and_specializes():
    t = rg.exp(x) * rg.exp(y) - 1 + rg.log(1 + x * 1) + (y - 0) * (y - 0)
    out = rg.rewrite(t, optdb.query(include=["fast_run"]))
    # the written grouping; 0 + u: numpy's 0.0 where u is -0.0 (log(1 + -0.0) is 0.0)
    assert rg.pprint(out) == "(expm1(0 + (x + y)) + log1p(0 + x) + (y * y))"
    # exp(x + y) - 1 is no part of the fold (log1p(x) + exp(x + y)) - 1: it stays
    later = rg.rewrite(rg.log(1 + x) + rg.exp(y) - 1, optdb.query(include=["fast_run"]))
    assert rg.pprint(later) == "(exp(y) + log1p(0 + x) + -1)"
    assert rg.count_nodes(out) < rg.count_nodes(t)


def test_specialize_picks_the_cheaper_product_order_from_shapes():
    P, Q, R = (rg.matrix(n, shape=s) for n, s in (("P", (10, 500)), ("Q", (500, 10)),
                                                   ("R", (10, 500))))  # fmt: skip
    spec = optdb.query(include=["specialize"])
    assert rg.rewrite((P @ Q) @ R, spec) == (P @ Q) @ R  # 100k + 50k: already cheaper
    assert rg.rewrite(P @ (Q @ R), spec) == (P @ Q) @ R  # 2.5M + 2.5M
    assert rg.rewrite((A @ B) @ x, spec) == A @ (B @ x)  # unknown sizes, vector last


def test_canonicalize_terminates_on_its_own_output():
    t = rg.exp(x * 2.0 + x) * rg.exp(x * 3.0) - (y - y) / a
    once = rg.rewrite(t, CANON)
    assert rg.rewrite(once, CANON) == once


def test_the_docs_catalogue_is_current():
    from pathlib import Path

    from relations.catalogue import catalogue

    page = Path(__file__).resolve().parents[2] / "docs" / "relations.md"
    assert page.read_text() == catalogue(), (
        "run: python -m relations.catalogue > docs/relations.md"
    )


def test_div_mul_invo_only_inverts_floats():
    # numpy refuses int ** -1: found by exploring `-(a / 1)` backward (mul_invo)
    from relations.arith import div_mul_invo

    a, i = rg.scalar("a"), rg.scalar("i", "int64")
    assert list(rg.rewrites(a / 1, div_mul_invo)) == []
    assert list(rg.rewrites(a / i, div_mul_invo)) == []
    (out,) = rg.rewrites(a / 2.0, div_mul_invo)
    assert rg.evaluate(out, {a: 3.0}) == 1.5


def test_like_terms_and_powers_collect_in_one_application():
    out, rep = rg.rewrite(rg.add(*[x] * 40, y, -x), CANON, report=True)
    assert out == 39 * x + y
    assert rep.children[0].applications["collect_termso"] == 1
    out, rep = rg.rewrite(rg.mul(*[x] * 20, x**0.5, y**-1, y), CANON, report=True)
    assert out == rg.mul(x**20.5, y, y**-1)  # a negative power is left alone (y = 0)
    assert rep.children[0].applications["pow_mulo"] == 1


def test_the_constants_of_a_sum_fold_into_one_of_the_sums_dtype():
    assert rg.rewrite(rg.add(x, 1, 2.5), CANON) == rg.add(f64(3.5), x)
    x32 = rg.vector("x32", "float32")
    out = rg.rewrite(rg.add(x32, 1, 2.5), CANON)  # 3.5 would make it float64
    assert rg.typeof(out).dtype == "float32"


def test_the_standard_databases_have_no_fights():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert optdb.query(include=["fast_run"]).check() == []
        assert optdb.query(include=["canonicalize", "linalg"], exclude=["expand"]).check() == []


@settings(max_examples=150)
@given(programs())
def test_what_a_relation_produces_has_a_declared_head(e):
    """explore runs a relation backward only on e-nodes with a head it declares it
    produces (rg.produces): a head left out would lose answers.  Every answer of the
    library's relations, forward, on the cases and on every place of random programs,
    has a declared head."""
    declared = {n: rg.rewriting.relation.produced_heads(r.obj) for n, (_, r) in RULES.items()}
    places = [p for s in subterms(e.term) if type(s) is rg.Term for p, _ in positions(s)]
    for name, heads in declared.items():
        if heads is None:
            continue
        rule = rg.rewriting.relation.as_rule(RULES[name][1].obj)
        for place in places + [CASES[name][0]]:
            for answer in Matcher(rule, 4).answers(place):
                assert type(answer) is rg.Term and answer.op in heads, (name, place, answer)


def test_the_library_declares_what_its_two_way_relations_produce():
    # Identity laws produce any head (x + 0 -> x); the others say which.
    undeclared = sorted(
        n
        for n, (_, r) in RULES.items()
        if "backward" in rg.directions_of(r.obj)
        and rg.rewriting.relation.produced_heads(r.obj) is None
        and not hasattr(r.obj.relation, "reversed")  # a rule knows its right side
    )
    identity_laws = {"add_zeroo", "add_float_zeroo", "mul_oneo", "sub_zeroo", "div_oneo",
                     "pow_oneo", "neg_nego", "same_choiceo", "reciprocal_reciprocalo",
                     "transpose_transposeo", "transpose_lowo", "log_expo", "log1p_expm1o",
                     "exp_logo"}  # fmt: skip
    assert set(undeclared) <= identity_laws | {"reassociateo"}, undeclared


def test_signs_leave_a_float_product_from_anywhere_in_it():
    # -1 * x * -1 is ((-1 * x) * -1): a sign flip is exact in any place, so the two
    # -1s cancel though they are no leading run of the product
    canon = optdb.query(include=["canonicalize"])
    assert rg.rewrite(-1 * x * -1, canon) == x
    assert rg.rewrite(rg.mul(x, -1, -y), canon) == x * y
    assert rg.rewrite(rg.mul(-1, x, y), canon) == rg.mul(-1, x, y)  # the normal form
    # -(1) is a sign and leaves no 1 behind (in the e-graph, x * 1 grew into x * 1 * 1 ...)
    from relations.products import mul_nego

    q, minus_one = var(), rg.Term((rg.neg, 1))
    assert [rg.as_term(r) for r in run(0, q, mul_nego(rg.mul(x, minus_one), q))] == [-x]


# The library's pure patterns are rules: the e-graph matches them itself (no views).
PATTERNS = ["softpluso", "log1p_expm1o", "sum_doto", "log1m_sigmoido", "log_diff_expo",
            "sqrt_squareo", "sigmoid_quotiento", "log_ndtro"]  # fmt: skip


@pytest.mark.parametrize("name", PATTERNS)
def test_a_pattern_relation_is_a_rule_the_egraph_matches(name):
    term, expected, backward = CASES[name]
    entry = RULES[name][1].obj
    assert isinstance(entry.relation, PatternRelation)
    # both ways where the other side is an Op's application too (x alone matches anything)
    two_way = backward and type(expected) is rg.Term
    for direction in ("forward", "backward") if two_way else ("forward",):
        assert DirectedRule(entry, direction, max_answers=8).pattern is not None  # e-matched
    space = rg.explore(term, [entry], progress=False)
    assert expected in space


def test_a_reduction_given_keepdims_shape_is_the_keepdims_reduction():
    """reshape, [:, None] and expand_dims that give a reduction the shape keepdims gives
    become keepdims (the same values as numpy's); other shapes stay as written."""
    X, T = rg.matrix("X"), rg.tensor("T", shape=(2, 3, 4))
    data = {X: np.arange(12.0).reshape(3, 4), T: np.arange(24.0).reshape(2, 3, 4)}
    kept = [
        rg.reshape(rg.max(X, axis=1), (-1, 1)),
        rg.logsumexp(X, axis=1)[:, None],
        rg.sum(X, axis=0)[None],
        rg.expand_dims(rg.mean(X, axis=1), 1),
        rg.mean(T, axis=(0, 2))[None, :, None],
        rg.reshape(rg.min(T, axis=2), (2, 3, 1)),
    ]
    for t in kept:
        (out,) = rg.rewrites(t, reshape_keepdimso)
        assert out.op.param_values(out.args)["keepdims"]
        np.testing.assert_array_equal(rg.evaluate(out, data), rg.evaluate(t, data))
    other = [
        rg.reshape(rg.max(X, axis=1), (1, -1)),
        rg.sum(X, axis=0)[:, None],
        rg.expand_dims(rg.mean(X, axis=1), 0),
        rg.reshape(rg.mean(T, axis=2), (-1, 3, 1)),  # numpy may refuse a -1 beside a 0
        rg.reshape(rg.sum(X, axis=1, keepdims=True), (-1, 1)),
    ]
    assert all(not list(rg.rewrites(t, reshape_keepdimso)) for t in other)


def test_expm1_merges_an_exp_and_a_minus_one_of_a_sum():
    """``exp(u) + -1`` anywhere in a sum that regroups; in a float sum only where the
    two lead its fold; -1 as a number or an array of -1s, never another value."""

    def forward(t):
        q = var()
        return [rg.pprint(rg.as_term(r)) for r in run(1, q, expm1o(t, q))]

    minus_ones = rg.Constant(np.full(3, -1.0))
    assert forward(rg.exp(x) + -1) == ["expm1(0 + x)"]  # exp(-0.0) - 1 is 0.0
    assert forward(rg.add(-1, rg.exp(x), y)) == ["(expm1(0 + x) + y)"]
    assert forward(rg.add(rg.exp(x), minus_ones)) == ["expm1(0 + x)"]
    assert forward(rg.exp(rg.exp(x)) + -1) == ["expm1(exp(x))"]  # never -0.0: no 0 +
    assert forward(rg.add(y, rg.exp(x), -1)) == []  # y + exp(x) is folded first
    assert forward(rg.add(rg.exp(x), -2)) == [] and forward(rg.add(x, -1)) == []
    assert forward(rg.add(rg.exp(x), rg.Constant(np.array([-1.0, 1.0, -1.0])))) == []

    def regroupo(a, b): ...

    with regrouping([rg.Rule(rg.reassociates(regroupo), "regroupo")]):
        assert forward(rg.add(y, rg.exp(x), -1)) == ["(expm1(0 + x) + y)"]


def test_take_along_an_axis_reads_only_the_elements_it_takes(rng):
    """``take_along_axis(f(a, b), idx, axis)`` becomes ``f(take(a), b)`` where ``b`` has
    size 1 along the axis; the values are numpy's for every dtype (int8 wrapping,
    bool), NaN, infinities, -0.0, negative indices, and an index out of bounds still
    raises.  ``pow`` (which raises on a negative int exponent anywhere), an operand
    of unknown shape, or one that varies along the axis: no rewrite."""
    M, Idx = rg.matrix("M"), rg.matrix("Idx", "int64")
    kept = rg.max(M, axis=1, keepdims=True)
    cases = [M - kept, -kept + M, rg.exp(M) * 2.0, M / rg.sum(M, axis=1, keepdims=True)]
    specials = np.array([[np.nan, np.inf, -0.0, 1e308], [-np.inf, 5e-324, 0.0, -1e308]])
    for f in cases:
        (out,) = rg.rewrites(rg.take_along_axis(f, Idx, axis=1), take_elementwiseo)
        assert out.op is f.op
        for value in (rng.normal(size=(2, 4)), specials):
            idx = np.array([[0, -1, 3], [2, 1, -4]])
            with np.errstate(all="ignore"):
                want = rg.evaluate(rg.take_along_axis(f, Idx, axis=1), {M: value, Idx: idx})
                np.testing.assert_array_equal(rg.evaluate(out, {M: value, Idx: idx}), want)
            with pytest.raises(IndexError):
                rg.evaluate(out, {M: value, Idx: np.array([[4], [0]])})
    small = rg.matrix("S", "int8")
    f = small - rg.min(small, axis=0, keepdims=True)
    (out,) = rg.rewrites(rg.take_along_axis(f, Idx, axis=0), take_elementwiseo)
    value, idx = np.array([[127, -128], [-1, 5]], np.int8), np.array([[0, 1]])
    with np.errstate(all="ignore"):
        got = rg.evaluate(out, {small: value, Idx: idx})
    assert got.dtype == np.int8 and got.tolist() == [[-128, -123]]  # 127 - -1 wraps
    never = [
        rg.take_along_axis(M**kept, Idx, axis=1),
        rg.take_along_axis(M - rg.matrix("N"), Idx, axis=1),
        rg.take_along_axis(M - rg.max(M, axis=0, keepdims=True), Idx, axis=1),
    ]
    assert all(not list(rg.rewrites(t, take_elementwiseo)) for t in never)


def test_softmax_cross_entropy_computes_one_element_per_row(rng):
    """The compiled cross-entropy takes each row's label from the logits before
    subtracting the row's log-sum-exp: scipy's log_softmax values, NaN and
    infinities included; a label out of bounds raises."""

    def cross_entropy(z, labels):
        n = z.shape[0]
        logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
        return logp[np.arange(n), labels]

    from scipy.special import log_softmax

    f = rg.jit(cross_entropy, compile="eager")
    z, labels = rng.normal(0, 300, (50, 7)), rng.integers(-7, 7, 50)
    z[3, 2], z[5, :], z[8, 1] = np.nan, -np.inf, np.inf
    with np.errstate(all="ignore"):
        want = log_softmax(z, axis=1)[np.arange(50), labels]  # numpy's form overflows
        got = f(z, labels)
    # a row's largest logit minus its lse cancels: an ulp of logits of ~1000
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert "take_along_axis(z, " in rg.pprint(f.last.rewritten)
    with pytest.raises(IndexError):
        f(z, np.full(50, 7))
