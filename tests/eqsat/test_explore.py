"""Exploring by equality saturation: the e-graph, budgets, extraction, derivations."""

import functools
import itertools
import operator

import numpy as np
import pytest
from fuzz import inputs, programs
from hypothesis import given, settings, strategies as st

import relgraph as rg
from relations import optdb
from relations.arith import add_float_zeroo, add_zeroo, mul_oneo
from relations.linalg import dot_distributeo
from relgraph.eqsat.egraph import EGraph
from relgraph.eqsat.flatten import flat_form
from relgraph.logic import goals  # not testo by name: pytest would collect it

A, B = rg.matrix("A"), rg.matrix("B")
x, y, z, w = (rg.vector(n) for n in "xyzw")
START = A @ x + A @ y + A @ z + A @ w
LINALG_CANON = optdb.query(include=["linalg", "canonicalize"])
P, Q, R = rg.lvar("P", ndim=2), rg.lvar("Q", ndim=2), rg.lvar("R")
DOT_ASSOC = rg.rule((P @ Q) @ R, P @ (Q @ R), name="dot_assoco")


def replays(derivation):
    """Every step checks (the relation relates it, on the terms or on the pattern the
    e-graph ran it on), and the steps chain."""
    term = derivation.start
    for step in derivation:
        assert step.source == term
        assert step.check(), str(step)
        term = step.target
    return term == derivation.result


def test_issue_example_best_and_explain():
    space = rg.explore(START, LINALG_CANON, timeout=None)
    assert space.stopped_by == "schedule" and not space.saturated
    assert space.best() == A @ rg.add(x, y, z, w)
    assert space.cost(space.best()) == rg.op_cost(A @ rg.add(x, y, z, w)) < space.cost(START)
    derivation = space.explain()
    assert derivation.start == START and derivation.result == space.best()
    assert [(s.relation, s.direction) for s in derivation] == [
        ("flatteno", "forward"),
        ("dot_distributeo", "backward"),
    ]
    assert replays(derivation)
    # the steps the e-graph took on these terms are answers rg.rewrites gives
    assert all(s.target in set(rg.rewrites(s.source, s.goal)) for s in derivation)
    assert START in space and A @ (x + y + z + w) in space and A @ (x + z) not in space


def test_every_term_of_a_space_with_sorted_sums_is_explained():
    # ac_normalo sorts a view's placeholders, not the terms they stand for: its steps
    # check on the pattern the e-graph ran it on
    query = optdb.query(include=["canonicalize", "no_signed_zeros"])  # -(a + b) -> -a + -b
    s = rg.explore(abs(-rg.sum(x) - rg.sum(y)), query)
    terms = list(s.iter_terms())
    assert len(terms) >= 12 and abs(rg.sum(y) + rg.sum(x)) in terms
    for term in terms:
        derivation = s.explain(term)
        assert derivation.result == term and replays(derivation), rg.pprint(term)


@pytest.mark.parametrize(
    "start, query",
    [
        (START, LINALG_CANON),
        (abs(-rg.sum(x) - rg.sum(y)), optdb.query(include=["canonicalize"])),
        (rg.exp(x) * rg.exp(y) * 2.0 + 0.0 * z, optdb.query(include=["fast_run"])),
        # classes holding 1 and --1, and leaves 1 and np.int64(1): proofs through them
        (rg.log(1 - rg.sigmoid(A @ x)) * (1 - y), optdb.query(include=["fast_run"])),
    ],
)
def test_every_term_of_a_space_is_explained(start, query):
    s = rg.explore(start, query, max_iterations=6, timeout=None)
    for term in itertools.islice(s.iter_terms(), 200):
        derivation = s.explain(term)
        assert derivation.result == term and replays(derivation), rg.pprint(term)


def test_a_saturated_space():
    s = rg.explore(A @ (x + y), [dot_distributeo])
    assert s.saturated and s.stopped_by is None
    assert set(s.terms) == {A @ (x + y), A @ x + A @ y}
    assert s.applied == {("dot_distributeo", "forward"): 1}
    assert s.best() == A @ (x + y) and len(s.explain()) == 0
    assert replays(s.explain(A @ x + A @ y))


def test_directions():
    forward = rg.explore(A @ x + A @ y, [dot_distributeo], directions=["forward"])
    assert forward.terms == (A @ x + A @ y,)
    backward = rg.explore(A @ x + A @ y, [dot_distributeo], directions=("backward",))
    assert backward.best() == A @ (x + y) and backward.saturated


def test_identity_laws_run_backward_only_when_asked():
    # Backward, x + 0 -> x wraps every term again and again; by default explore runs
    # identity laws forward only, and says which ones it found.
    runners = rg.explore(x + y, LINALG_CANON, max_iterations=1).runners
    backward = {r.rule.name for r in runners if r.direction == "backward"}
    assert "dot_distributeo" in backward and "collect_termso" in backward
    assert not backward & {"add_zeroo", "mul_oneo", "neg_nego", "transpose_transposeo"}
    space = rg.explore(START, LINALG_CANON, timeout=None, schedule="saturate")
    assert space.saturated and space.best() == A @ rg.add(x, y, z, w)
    # Sums with many e-nodes per operand: some views were left out, and the space says so.
    assert space.views_cut > 0 and rg.explore(A @ (x + y), [dot_distributeo]).views_cut == 0
    assert not any(isinstance(t, rg.Term) and 0 in t.args for t in space.terms)
    opted = rg.explore(x + y, [add_float_zeroo, mul_oneo], max_iterations=3, identities=True)
    assert rg.add(x, y, 0) in opted and rg.mul(rg.add(x, y), 1) in opted


def test_a_wrapping_answer_is_dropped_unless_identities_are_on():
    a = rg.lvar("a")
    wrap = rg.rule(a, a * 1, name="wrap")  # not found by the probe: its left side is bare
    kept = rg.explore(x + y, [wrap], directions=["forward"], identities=True, max_iterations=2)
    dropped = rg.explore(x + y, [wrap], directions=["forward"], max_iterations=2)
    assert (x + y) * 1 in kept and (x + y) * 1 not in dropped and dropped.saturated
    assert dropped.wrapped > 0 and kept.wrapped == 0


def test_identity_introductions_cost_one_e_node_each():
    a = rg.lvar("a")
    add_zero, mul_one = rg.rule(a + 0, a, name="add_zero"), rg.rule(a * 1, a, name="mul_one")
    s = rg.explore(x + y, [add_zero, mul_one], identities=True)
    assert s.saturated and s.best() == x + y
    # x, y, 0, 1, x + y, and in the class of x + y the e-nodes (x + y) + 0 and (x + y) * 1
    # (a leaf is not a position a relation rewrites, as in rg.rewrites).
    assert s.classes == 5 and len(s) == 7
    assert (x + y) * 1 in s and (((x + y) + 0) * 1 + 0) * 1 in s and (x + 0) + y not in s
    assert replays(s.explain((((x + y) + 0) * 1 + 0) * 1))


def test_sums_are_held_flat():
    g = EGraph()
    root = g.add_term(x + y + z + w)
    assert g.node_count == 5 and g.nodes(root)[0][0] is rg.add
    assert g.lookup(rg.add(x, y, z, w)) == root and g.lookup(x + (y + z) + w) is None
    assert flat_form(x + y + z) == rg.add(x, y, z) and flat_form(x + (y + z)) == x + (y + z)


def test_shapes_choose_the_cheaper_product_order():
    A_, B_ = rg.matrix("A", shape=(1000, 1000)), rg.matrix("B", shape=(1000, 1000))
    v = rg.vector("v", shape=1000)
    s = rg.explore((A_ @ B_) @ v, [DOT_ASSOC])
    assert s.saturated and s.best() == A_ @ (B_ @ v)
    assert s.cost((A_ @ B_) @ v) > 100 * s.cost(A_ @ (B_ @ v))
    assert replays(s.explain())


def chain_optimum(dims):
    """The matrix-chain optimum under shape_cost, by dynamic programming."""
    mats = [rg.matrix(f"M{i}", shape=(dims[i], dims[i + 1])) for i in range(len(dims) - 1)]
    best = {(i, i): (0.0, mats[i]) for i in range(len(mats))}
    for span in range(1, len(mats)):
        for i in range(len(mats) - span):
            j = i + span
            options = []
            for k in range(i, j):
                left, right = best[i, k], best[k + 1, j]
                node = left[1] @ right[1]
                options.append((left[0] + right[0] + rg.shape_cost.node(node), node))
            best[i, j] = min(options, key=lambda o: o[0])
    return mats, best[0, len(mats) - 1]


@pytest.mark.parametrize("dims", [[30, 35, 15, 5, 10, 20, 25], [5, 40, 3, 60, 8, 2, 50, 7]])
def test_matrix_chain_reaches_the_dynamic_programming_optimum(dims):
    mats, (optimum, _) = chain_optimum(dims)
    s = rg.explore(functools.reduce(operator.matmul, mats), [DOT_ASSOC])
    assert s.saturated
    assert s.cost(s.best()) == pytest.approx(optimum)
    assert replays(s.explain())


def test_dag_cost_counts_a_shared_subterm_once():
    e, (a, b) = rg.exp(x), rg.lvars("a b")
    s = rg.explore(e * y + e * z, [rg.rule(a * b, b * a, name="commute")])
    assert s.cost(s.best()) == rg.shape_cost(e * y + e * z) == 4 + 1 + 1 + 1


def test_custom_cost():
    s = rg.explore(A @ (x + y), [dot_distributeo])
    assert s.best(rg.weighted({"dot": 0.0, "add": 1.0})) == A @ (x + y)
    assert s.best(rg.weighted({"dot": 1.0, "add": 50.0})) == A @ (x + y)
    assert s.best(rg.weighted({"dot": 1.0, "add": 0.0})) == A @ (x + y)
    nodes = rg.per_node(lambda node: 1.0)
    assert s.best(nodes) == A @ (x + y) and s.cost(A @ x + A @ y, nodes) == 3.0
    with pytest.raises(ValueError, match="non-negative"):
        s.best(lambda t: -1.0)


def test_max_nodes_and_max_iterations_stop_cleanly():
    s = rg.explore(x * y, [mul_oneo, add_zeroo, optdb.query(include=["canonicalize"])],
                   max_nodes=60, timeout=None, identities=True)  # fmt: skip
    assert s.stopped_by == "max_nodes" and 60 <= len(s) < 200
    assert s.best() == x * y and replays(s.explain())
    t = rg.explore(START, LINALG_CANON, max_iterations=1, timeout=None, schedule="saturate")
    assert t.stopped_by == "max_iterations" and t.best() == A @ rg.add(x, y, z, w)


def test_timeout_returns_the_partial_space():
    s = rg.explore(START, LINALG_CANON, max_nodes=10**7, max_iterations=10**4, timeout=0.5,
                   identities=True)  # fmt: skip
    assert s.stopped_by == "timeout" and len(s) > 5 and s.elapsed < 5
    assert s.best() in s


def test_interrupt_returns_the_partial_space(ctrl_c):
    import _thread

    tries = []

    def ctrl_c_on_the_200th_try(a, b):  # Ctrl-C pressed mid-search, whatever the speed
        def goal(state):
            tries.append(1)
            if len(tries) == 200:
                _thread.interrupt_main()
            return iter(())

        return goal

    relations = [dot_distributeo, add_zeroo, mul_oneo, ctrl_c_on_the_200th_try]
    s = rg.explore(START, relations, max_nodes=10**7, max_iterations=10**4, timeout=60,
                   identities=True, schedule="saturate")  # fmt: skip
    assert s.stopped_by == "interrupt" and len(s) > 5 and len(tries) >= 200
    assert s.best() in s and replays(s.explain())


def test_progress_bar(capsys):
    rg.explore(x * y, [mul_oneo], max_iterations=2, progress=True)
    assert "saturate" in capsys.readouterr().err


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="directions"):
        rg.explore(x, [dot_distributeo], directions=["sideways"])
    with pytest.raises(ValueError, match="max_nodes"):
        rg.explore(x, [dot_distributeo], max_nodes=0)
    with pytest.raises(ValueError, match="max_terms is a budget of method='bfs'"):
        rg.explore(x, [dot_distributeo], max_terms=10)
    with pytest.raises(ValueError, match="method"):
        rg.explore(x, [dot_distributeo], method="dfs")
    s = rg.explore(A @ (x + y), [dot_distributeo])
    with pytest.raises(KeyError, match=r"\(x \+ z\) is not in this rewrite space"):
        s.explain(x + z)

    def broken(a, b):
        def goal(state):
            raise ZeroDivisionError("boom")
            yield

        return goal

    with pytest.raises(rg.RelationError, match="'broken' \\(forward\\) raised ZeroDivisionError"):
        rg.explore(x + y, [broken])


def test_an_unsound_relation_shows_as_a_conflict():
    from relations.arith import constant_foldo

    one_and_one = rg.Term((rg.add, 1, 1))
    wrong = rg.rule(one_and_one, 3, name="one_and_one_is_three")
    s = rg.explore(x * one_and_one, [wrong, constant_foldo])
    assert sorted(s.conflicts[0]) == [2, 3]


def evaluates_like(term, start, vals):
    expected = rg.evaluate(start, vals)
    got = rg.evaluate(term, vals)
    assert rg.typeof(term) == rg.typeof(start)
    np.testing.assert_allclose(
        got, expected, rtol=1e-6, atol=1e-9 * max(1, np.abs(expected).max())
    )


@settings(max_examples=20, deadline=None, derandomize=True)
@given(program=programs(4), seed=st.integers(0, 2**32 - 1), backward=st.booleans())
def test_equivalent_terms_compute_the_same(program, seed, backward):
    """Every term the e-graph holds equal to the start computes what the start does."""
    directions = ["forward", "backward"] if backward else ["forward"]
    s = rg.explore(program.term, optdb.query(include=["fast_run"]), directions=directions,
                   max_nodes=300, max_iterations=3, timeout=2)  # fmt: skip
    vals = inputs(seed)
    best = s.best()
    assert best in s
    for term in [best, *list(s.terms)[:40]]:
        evaluates_like(term, program.term, vals)
        derivation = s.explain(term)  # every term has one: the proof the e-graph recorded
        assert derivation.result == term and replays(derivation)


def test_views_are_built_once_per_saturation_and_show_a_merged_constant():
    from relgraph.eqsat.views import ALL, Interned, Views

    def root_views(g, interned, cid):
        views = Views(g, interned)
        return [v for key in g.nodes(cid) for v in views.of_root(g.find(cid), key, _AllRunner())]

    g, interned = EGraph(), Interned()
    root = g.add_term(x * (y + 0.0))
    first = root_views(g, interned, root)
    again = root_views(g, interned, root)  # a later search phase
    assert first and all(a is b for a, b in zip(first, again))
    # y's class merged with the constant 2.0: views show the constant from then on
    g.merge(g.add_term(y), g.add_term(2.0))
    g.rebuild()
    shown = root_views(g, interned, root)
    assert any(2.0 in v.args[1].args for v in shown if type(v.args[1]) is rg.Term), shown
    assert ALL == _AllRunner.guide


class _AllRunner:
    """What Views reads of a runner: a hand-written goal's (every e-node, depth 2)."""

    guide, depth = "all", 2


def test_a_relation_that_needs_a_constant_is_shown_only_e_nodes_with_one():
    """``rg.needs_operand(rg.ANY_CONSTANT)``: the e-graph builds no views of an e-node
    none of whose operand classes holds a constant, and the driver passes over such
    terms; the relation still sees (and rewrites) the others."""
    asked = []

    def fold(t):
        asked.append(t)
        if t.op is rg.mul and len(t.args) == 2 and t.args[0] == 2.0:
            return t.args[1] + t.args[1]
        return None

    @rg.forward_only
    @rg.needs_operand(rg.ANY_CONSTANT)
    def foldo(a, b):
        return goals.computeo(fold, [a], b)

    def with_constant(t):
        return any(isinstance(a, float) for a in t.args[: t.op.nin])

    start = rg.exp(x * y) + 2.0 * x
    space = rg.explore(start, [foldo], progress=False)
    assert asked and all(map(with_constant, asked)), asked
    assert rg.exp(x * y) + (x + x) in space
    asked.clear()
    assert rg.rewrite(start, [foldo]) == rg.exp(x * y) + (x + x)
    assert asked and all(map(with_constant, asked)), asked


def test_the_space_does_not_depend_on_what_views_were_built():
    """An answer already in its class is known as such whether or not some relation
    built a view of it: declaring what two relations need (so that they build fewer
    views) leaves an int space that stops by its match limits unchanged."""
    from relations.arith import add_zeroo, constant_foldo
    from relgraph.eqsat.bfs import rules_of

    def undeclared(relation):
        def twin(a, b):
            return relation(a, b)

        vars(twin).update({k: v for k, v in vars(relation).items() if k != "needs_operand"})
        twin.__name__ = relation.__name__
        return twin

    query = optdb.query(include=["canonicalize"])
    plain = [
        rg.Rule(undeclared(r.relation), r.name, r.tracks, r.windows)
        if r.relation in (add_zeroo, constant_foldo)
        else r
        for r in rules_of(query)
    ]
    i = rg.vector("i", dtype="int8")
    start = (i + 0) * 1 + i * -1 + (i + 3 + 4)
    spaces = [
        rg.explore(start, rels, progress=False, timeout=None, max_iterations=13)
        for rels in (query, plain)
    ]
    assert [len(s) for s in spaces] == [len(spaces[0])] * 2
    assert spaces[0].classes == spaces[1].classes
    assert spaces[0].best() == spaces[1].best()


def test_a_constant_merged_into_a_class_is_seen_two_levels_up():
    """A view shows the holes at its edge as their classes' constants: when a merge
    gives a class a constant, relations that read two levels deep search the
    e-nodes two levels above it again (here ``(x + 0.0) * y`` appears only once
    ``w - w`` has merged with ``0.0``)."""
    from etuples import etuple
    from kanren import eq, lall, var

    a, b, c = rg.scalar("a"), rg.scalar("b"), rg.scalar("c")

    @rg.forward_only
    def cancelo(t, out):  # w - w -> 0.0 (for the test: not for inf or NaN)
        u = var()
        return lall(eq(t, etuple(rg.sub, u, u)), eq(out, 0.0))

    @rg.forward_only
    def drop_zeroo(t, out):  # (u + 0.0) * v -> u * v, read two levels deep
        u, v = var(), var()
        pattern = etuple(rg.mul, etuple(rg.add, u, 0.0), v)
        return lall(eq(t, pattern), eq(out, etuple(rg.mul, u, v)))

    space = rg.explore((a + (c - c)) * b, [cancelo, drop_zeroo], progress=False)
    assert space.saturated
    assert a * b in space
    assert [m.rule.name for m in space.applications] == ["cancelo", "drop_zeroo"]


def test_a_chain_whose_inner_part_is_in_the_graph_stays_as_written():
    """A left-nested sum is spliced into one e-node only where its inner part is new,
    however the inner part came into the graph: here as an e-node added on class ids
    (as a compiled rule adds one), never as a term."""
    g = EGraph()
    (ca, pa), (cb, pb) = g.add_leaf(x), g.add_leaf(y)
    inner, _ = g.add_node((rg.add, (ca, cb), ()), (rg.add, (pa, pb), ()), rg.typeof(x + y))
    assert g.lookup(x + y) == inner
    _, key, _ = g.insert((x + y) + z)
    assert key[0] is rg.add and key[1][0] == inner and len(key[1]) == 2
    _, key, _ = g.insert((x + z) + w)  # its inner part is new: one e-node
    assert len(key[1]) == 3
