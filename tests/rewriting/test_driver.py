import warnings

import numpy as np
import pytest
from etuples import etuple
from kanren import conde, eq, lall, var
from local_relations import dot_distributeo, localdb

import relgraph as rg
from relgraph.logic import goals  # not testo by name: pytest would collect it
from relgraph.rewriting.relation import replace_at
from relgraph.ui.display import report_html


def neg_neg_o(a, b):
    """-(-x) == x"""
    x = var()
    return lall(eq(a, etuple(rg.neg, etuple(rg.neg, x))), eq(b, x))


def swap_add_o(a, b):
    """x + y == y + x: applied blindly, it oscillates."""
    x, y = var(), var()
    return lall(eq(a, etuple(rg.add, x, y)), eq(b, etuple(rg.add, y, x)))


def grow_o(a, b):
    """exp(x) -> exp(exp(x))... never terminates by itself."""
    x = var()
    return lall(eq(a, etuple(rg.exp, x)), eq(b, etuple(rg.exp, etuple(rg.exp, x))))


def boom_o(a, b):
    def goal(s):
        raise ZeroDivisionError("boom")
        yield s

    return lall(eq(a, etuple(rg.exp, var())), goal)


def unground_o(a, b):
    """Rewrites log(x) to a term with a fresh, unbound variable."""
    return lall(eq(a, etuple(rg.log, var())), eq(b, etuple(rg.exp, var())))


def transpose_o(a, b):
    """A wrong rewrite: A @ x -> A.T @ x does not even type-check."""
    A, x = var(), var()
    return lall(eq(a, etuple(rg.dot, A, x)), eq(b, etuple(rg.dot, etuple(rg.transpose, A), x)))


def identity_o(a, b):
    return eq(a, b)


def to_matrix_o(a, b):
    """An ill-typed rewrite: sum(x) -> x changes the ndim."""
    x = var()
    return lall(eq(a, etuple(rg.sum, x)), eq(b, x))


class TestSeedExamples:
    """The documentation's dot_distributeo examples, forward and backward."""

    def forward(self, t):
        return rg.rewrite(t, localdb.query(include=["linalg"]))

    def backward(self, t):
        return rg.rewrite(t, rg.EquilibriumRewriter([rg.reverse(dot_distributeo)]))

    def test_two_terms(self, syms):
        A, B, x, y, z, w = syms
        out = self.forward(A @ (x + y))
        assert rg.pprint(out) == "((A @ x) + (A @ y))"
        assert self.backward(out) == A @ (x + y)

    def test_nested_sums_flatten_to_four_products(self, syms):
        A, B, x, y, z, w = syms
        out = self.forward(A @ ((x + y) + (z + w)))
        assert out == rg.add(A @ x, A @ y, A @ z, A @ w)
        assert self.backward(out) == A @ rg.add(x, y, z, w)

    def test_nested_dot(self, syms):
        A, B, x, y, z, w = syms
        out = self.forward(A @ (x + (y + B @ (z + w))))
        assert out == rg.add(A @ x, A @ y, A @ (B @ z), A @ (B @ w))
        assert rg.pprint(out).count("@") == 6
        back = self.backward(out)
        assert back == A @ rg.add(x, y, B @ (z + w))
        assert rg.pprint(back).count("@") == 2


class TestDriver:
    def test_returns_the_input_object_when_nothing_applies(self, syms):
        A, B, x, y, z, w = syms
        t = A @ x + rg.exp(y)
        out, report = rg.rewrite(t, [dot_distributeo], report=True)
        assert out == t and report.applications == {}

    def test_tracks_limits_attempts_to_matching_heads(self, syms):
        A, B, x, y, z, w = syms
        t = rg.exp(A @ (x + y)) + rg.log(z) * w
        tracked = rg.Rule(dot_distributeo, "dot_distributeo", frozenset([rg.dot]))
        _, rep = rg.rewrite(t, [tracked], report=True)
        # the dot node, then the two new dot nodes: never exp, log, add or mul nodes
        assert rep.rules[0].attempts == 3
        _, rep = rg.rewrite(t, [dot_distributeo], report=True)
        assert rep.rules[0].attempts > 3

    def test_a_goals_own_test_runs_first_and_once(self, syms):
        """A goal that opens with its own test (``testo`` in a ``pipeo``) is asked it
        before the attempt, as a rule's filter is: each node it rejects is tested once
        and counted as an attempt (the node it passes is tested again by the goal); a
        test that raises is named as the goal's error."""
        A, B, x, y, z, w = syms
        tested = []

        def is_exp(t):
            tested.append(t)
            return t.op is rg.exp

        def exp_to_logo(a, b):
            u = var()
            return goals.pipeo(
                a, goals.testo(is_exp, a), eq(a, etuple(rg.exp, u)), eq(b, etuple(rg.log, u))
            )

        t = rg.exp(x) + y * z
        out, rep = rg.rewrite(t, [exp_to_logo], report=True)
        assert out == rg.log(x) + y * z
        assert rep.rules[0].attempts == len(set(tested))  # one per node
        assert all(tested.count(n) == 1 for n in tested if n.op is not rg.exp)

        def raising(t):
            raise ZeroDivisionError("boom")

        def raiseo(a, b):
            return goals.pipeo(a, goals.testo(raising, a), eq(b, a))

        with pytest.raises(rg.RelationError, match="raiseo"):
            rg.rewrite(t, [raiseo])

    def test_a_relation_that_needs_an_operand_is_not_called_without_one(self, syms):
        """``rg.needs_operand(rg.exp)``: sums with no ``exp`` among their operands never
        reach the relation (counted as attempts, as a failed test is); those with one
        do, and the relation rewrites them.  Run backward, it declares nothing."""
        A, B, x, y, z, w = syms
        computed = []

        def merge(t):
            computed.append(t)
            e = next((a for a in t.args if a.op is rg.exp), None)
            return (
                None
                if e is None
                else rg.add(rg.log(e.args[0]), *(a for a in t.args if a is not e))
            )

        @rg.needs_operand(rg.exp)
        def exp_sumo(a, b):
            return goals.computeo(merge, [a], b)

        t = rg.exp(x + y) + z * w
        rule = rg.Rule(exp_sumo, "exp_sumo", frozenset([rg.add]))
        out, rep = rg.rewrite(t, [rule], report=True)
        assert out == rg.log(x + y) + z * w
        assert computed == [t]  # not x + y, nor the sum it made
        assert rep.rules[0].attempts >= 2
        assert getattr(rg.reverse(exp_sumo), "needs_operand", None) is None

    def test_relations_that_need_operands_are_asked_together(self, syms):
        """Where every relation on a head needs an operand, a node with none of their
        heads is passed over for all of them at once (each counts the attempt); a
        relation that needs nothing is still asked on every node, and each relation
        sees only nodes with the operand it needs."""
        A, B, x, y, z, w = syms
        seen: dict[str, list] = {"exp": [], "neg": [], "any": []}

        def declared(head, name):
            @rg.needs_operand(head)
            def rel(a, b):
                return goals.computeo(lambda t: seen[name].append(t), [a], b)

            return rg.Rule(rel, f"{name}o", frozenset([rg.add]))

        def anyo(a, b):
            return goals.computeo(lambda t: seen["any"].append(t), [a], b)

        plain, with_exp, with_neg = x + y, rg.exp(x) + z, -w + y
        t = rg.log(plain) * with_exp * with_neg
        both = [declared(rg.exp, "exp"), declared(rg.neg, "neg")]
        out, rep = rg.rewrite(t, both, report=True)
        assert out == t
        assert seen["exp"] == [with_exp] and seen["neg"] == [with_neg]
        assert [r.attempts for r in rep.rules] == [3, 3]
        seen.update(exp=[], neg=[])
        rg.rewrite(t, [*both, rg.Rule(anyo, "anyo", frozenset([rg.add]))])
        assert seen["exp"] == [with_exp] and seen["neg"] == [with_neg]
        assert sorted(map(rg.pprint, seen["any"])) == sorted(
            map(rg.pprint, [plain, with_exp, with_neg])
        )

    def test_stacked_declarations_must_all_hold(self, syms):
        """``rg.needs_operand`` stacked: a relation is asked only where the term has an
        operand for each declaration; beside a relation with one declaration, a node
        either could apply to is asked of each that could."""
        A, B, x, y, z, w = syms
        seen: dict[str, list] = {"both": [], "neg": []}

        @rg.needs_operand(rg.exp)
        @rg.needs_operand(rg.ANY_CONSTANT)
        def botho(a, b):
            return goals.computeo(lambda t: seen["both"].append(t), [a], b)

        @rg.needs_operand(rg.neg)
        def nego(a, b):
            return goals.computeo(lambda t: seen["neg"].append(t), [a], b)

        no_constant, no_exp, both, negated = rg.exp(x) + y, z + 1.0, rg.exp(w) + 2.0, -x + y
        t = rg.log(no_constant) * rg.log(no_exp) * rg.log(both) * rg.log(negated)
        rules = [rg.Rule(r, r.__name__, frozenset([rg.add])) for r in (botho, nego)]
        out, rep = rg.rewrite(t, rules, report=True)
        assert out == t and seen == {"both": [both], "neg": [negated]}
        assert {r.name: r.attempts for r in rep.rules} == {"botho": 4, "nego": 4}

    def test_a_sum_that_fails_its_rules_filter_still_rewrites_its_runs(self, syms):
        """Two rules of one shape share a filter, which a sum of three fails (it has
        two arguments): each counts the attempt, and the runs of the sum's arguments
        are still tried, where the gather applies."""
        A, B, x, y, z, w = syms
        a, b, c = rg.lvars("a b c")
        gathers = [
            rg.rule(a @ b + a @ c, a @ (b + c), name=name) for name in ("gather", "gather2")
        ]
        t = rg.add(A @ z, A @ w, x)
        out, rep = rg.rewrite(t, gathers, report=True)
        assert out == rg.add(A @ (z + w), x)
        assert rep.rules[0].applications == 1 and rep.rules[1].attempts >= 1

    def test_failures_are_not_retried_and_shared_subterms_rewrite_once(self, syms):
        A, B, x, y, z, w = syms
        shared = A @ (x + y)
        t = rg.exp(shared) * shared + rg.log(shared)
        out, rep = rg.rewrite(t, [rg.Rule(dot_distributeo, "d", frozenset([rg.dot]))], report=True)
        distributed = A @ x + A @ y
        assert out == rg.exp(distributed) * distributed + rg.log(distributed)
        assert rep.rules[0].applications == 1
        assert rep.rules[0].attempts == 3  # shared dot once, then A@x and A@y once each

    def test_equal_subterms_built_apart_are_one_node(self, syms):
        """Two equal subterms that are distinct objects (and a sum above them that
        nothing rewrites) are made one node on the first pass: the twin is rewritten
        once (both sites count it), its parents rebuilt over the one result."""
        A, B, x, y, z, w = syms
        t = rg.exp(A @ (x + y)) * rg.log(z * w) + rg.log(z * w) * rg.exp(A @ (x + y))
        out, rep = rg.rewrite(t, [rg.Rule(dot_distributeo, "d", frozenset([rg.dot]))], report=True)
        distributed = A @ x + A @ y
        assert out == rg.exp(distributed) * rg.log(z * w) + rg.log(z * w) * rg.exp(distributed)
        assert rep.rules[0].applications == 2 and rep.rules[0].attempts == 3
        assert rep.nodes_before == 8 and rep.nodes_after == 9
        out, rep = rg.rewrite(rg.log(z * w) + rg.log(z * w), [dot_distributeo], report=True)
        assert rep.nodes_before == rep.nodes_after == 3 and rep.applications == {}

    def test_results_equal_to_the_input_are_ignored(self, syms):
        A, B, x, y, z, w = syms
        t = rg.exp(x + y)
        out, rep = rg.rewrite(t, [identity_o], report=True)
        assert out == t and rep.applications == {}

    def test_ungrounded_results_are_ignored(self, syms):
        A, B, x, y, z, w = syms
        t = rg.log(x)
        out, rep = rg.rewrite(t, [unground_o], report=True)
        assert out == t and rep.applications == {}

    def test_relations_run_to_a_fixpoint(self, syms):
        A, B, x, y, z, w = syms
        t = -(-(-(-(x + -(-y)))))
        assert rg.rewrite(t, [neg_neg_o]) == x + y

    def test_oscillation_names_the_relations(self, syms):
        A, B, x, y, z, w = syms
        with pytest.raises(rg.OscillationError, match="swap_add_o") as info:
            rg.rewrite(rg.exp(x + y), [swap_add_o, neg_neg_o])
        assert info.value.relations == ("swap_add_o",)

    def test_max_use_ratio_names_the_most_applied(self, syms):
        A, B, x, y, z, w = syms
        with pytest.raises(rg.EquilibriumLimitError, match="grow_o") as info:
            rg.rewrite(rg.exp(x), rg.EquilibriumRewriter([grow_o], max_use_ratio=5))
        assert info.value.counts["grow_o"] == 6

    def test_pass_limit(self, syms):
        A, B, x, y, z, w = syms
        rewriter = rg.EquilibriumRewriter([grow_o], max_use_ratio=10**6, max_passes=1)
        with pytest.raises(rg.EquilibriumLimitError, match="max_passes=1.*grow_o"):
            rg.rewrite(rg.exp(x), rewriter)

    def test_a_raising_relation_is_reported_by_name(self, syms):
        A, B, x, y, z, w = syms
        t = rg.exp(x) + A @ (y + z)
        with pytest.raises(
            rg.RelationError, match="boom_o.*ZeroDivisionError.*exp\\(x\\)"
        ) as info:
            rg.rewrite(t, [boom_o, dot_distributeo])
        assert info.value.relation == "boom_o" and info.value.term == rg.exp(x)

    def test_a_raising_relation_can_be_skipped_with_a_warning(self, syms):
        A, B, x, y, z, w = syms
        t = rg.exp(x) + A @ (y + z)
        rewriter = rg.EquilibriumRewriter([boom_o, dot_distributeo], on_error="warn")
        with pytest.warns(RuntimeWarning, match="boom_o"):
            out = rg.rewrite(t, rewriter)
        assert out == rg.exp(x) + (A @ y + A @ z)

    def test_a_result_of_another_type_is_not_a_rewrite(self):
        x = rg.vector("x")
        t = rg.exp(rg.sum(x))
        out, rep = rg.rewrite(t, [to_matrix_o], report=True)
        assert out == t and rep.applications == {}

    def test_an_ill_typed_result_is_not_a_rewrite(self):
        A = rg.matrix("A", shape=(2, 3))
        t = A @ rg.vector("x", shape=3)
        out, rep = rg.rewrite(t, [transpose_o], report=True)
        assert out == t and rep.applications == {}

    def test_a_window_rewrite_that_changes_the_sums_dtype_is_not_a_rewrite(self):
        # The window 1 + 2 folds to an int64 3 and keeps its own type, but
        # x + 3 is int64 where x + 1 + 2 is int32.
        from local_relations import constant_foldo

        from relgraph.rewriting.relation import as_rule

        pairs = as_rule(constant_foldo, tracks=[rg.add], windows=True)
        t = rg.add(rg.vector("x", "int32"), 1, 2)
        assert rg.rewrite(t, [pairs]) == t
        # An int64 sum folds its run of constants; a float sum only a leading run.
        i, y = rg.vector("i", "int64"), rg.vector("y")
        assert rg.rewrite(rg.add(i, 1, 2), [pairs]) == rg.add(i, np.int64(3))
        assert rg.rewrite(rg.add(y, 1, 2.5), [pairs]) == rg.add(y, 1, 2.5)
        assert rg.rewrite(rg.add(1, 2.5, y), [pairs]) == rg.add(np.float64(3.5), y)

    def test_logic_variables_in_the_input_are_rejected(self):
        with pytest.raises(rg.TypeCheckError, match="logic variable"):
            rg.rewrite(etuple(rg.exp, var()), [neg_neg_o])

    def test_bad_options(self):
        with pytest.raises(ValueError, match="on_error"):
            rg.EquilibriumRewriter([], on_error="ignore")
        with pytest.raises(ValueError, match="positive"):
            rg.EquilibriumRewriter([], max_passes=0)

    def test_report(self, syms):
        A, B, x, y, z, w = syms
        out, rep = rg.rewrite(A @ (x + y), localdb.query(include=["dot_distributeo"]), report=True)
        (linalg,) = rep.children
        assert linalg.passes == 2 and linalg.nodes_before == 2 and linalg.nodes_after == 3
        assert linalg.pass_log == ((("dot_distributeo", 1),), ())
        (stats,) = linalg.rules
        assert (stats.name, stats.attempts, stats.applications) == ("dot_distributeo", 3, 1)
        assert stats.nodes_created == 3
        text = str(rep)
        assert (
            "pass 1: (dot_distributeo, 1)" in text and "dot_distributeo" in text.splitlines()[-1]
        )

    def test_conde_relations_take_the_first_answer(self, syms):
        A, B, x, y, z, w = syms

        def exp_or_log_o(a, b):
            u = var()
            return lall(
                eq(a, etuple(rg.neg, u)),
                conde([eq(b, etuple(rg.exp, u))], [eq(b, etuple(rg.log, u))]),
            )

        assert rg.rewrite(-x, rg.EquilibriumRewriter([exp_or_log_o])) == rg.exp(x)


def test_sequence_rewriter_runs_steps_in_order(syms):
    A, B, x, y, z, w = syms
    seq = rg.SequenceRewriter(
        [
            ("gather", rg.EquilibriumRewriter([rg.reverse(dot_distributeo)])),
            ("negneg", rg.EquilibriumRewriter([neg_neg_o])),
        ]
    )
    out, rep = rg.rewrite(-(-(A @ x + A @ y)), seq, report=True)
    assert out == A @ (x + y)
    assert [c.name for c in rep.children] == ["equilibrium", "equilibrium"]


def test_sequence_skips_a_step_run_again_on_its_own_output(syms):
    """A step between that changes nothing (here: hands back an equal copy) leaves the
    repeated step at its fixpoint: it is reported with no passes."""
    from relgraph.rewriting.report import RewriteReport
    from relgraph.terms.term import Term

    class Copy:  # any rewriter: rebuilds the root as an equal, new object
        def apply(self, term, trace=False):
            return Term(term._tuple), RewriteReport("copy", 1, 0.0, 1, 1)

    A, B, x, y, z, w = syms
    gather = rg.EquilibriumRewriter([rg.reverse(dot_distributeo)])
    seq = rg.SequenceRewriter([("gather", gather), ("copy", Copy()), ("again", gather)])
    out, rep = rg.rewrite(A @ x + A @ y + B @ z, seq, report=True)
    assert out == A @ (x + y) + B @ z
    assert [c.passes > 0 for c in rep.children] == [True, True, False]
    negneg = rg.EquilibriumRewriter([neg_neg_o])
    changed = rg.SequenceRewriter([("gather", gather), ("negneg", negneg)] * 2)
    out, rep = rg.rewrite(-(-(A @ x + A @ y)), changed, report=True)
    assert out == A @ (x + y)  # gather runs again on the changed term; negneg need not
    assert [c.passes > 0 for c in rep.children] == [True, True, True, False]


def test_no_warning_for_clean_runs(syms):
    A, B, x, y, z, w = syms
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rg.rewrite(A @ (x + y), localdb.query(include=["linalg"]))


class TestDeepSearches:
    """kanren's mapo nests ~5 frames per element: no crash, and a clear error past the limit."""

    @staticmethod
    def mapo_distribute_o(a, b):
        """The documentation's dot_distributeo, with kanren's mapo: about 5 frames per term."""
        from kanren import conso, heado, tailo
        from kanren.graph import mapo

        A_, add_term, add_cdr, dot_cdr = var(), var(), var(), var()
        return lall(
            eq(a, etuple(rg.dot, A_, add_term)),
            heado(rg.add, add_term),
            tailo(add_cdr, add_term),
            conso(rg.add, dot_cdr, b),
            mapo(lambda x, y: conso(rg.dot, etuple(A_, x), y), add_cdr, dot_cdr),
        )

    def test_a_long_sum_does_not_crash_the_interpreter(self):
        # 4096 terms overflowed the main thread's C stack before goals ran on their own.
        A, vs = rg.matrix("A"), [rg.vector(f"v{i}") for i in range(4096)]
        out = rg.rewrite(A @ rg.add(*vs), [self.mapo_distribute_o])
        assert len(out.args) == 4096 and out.args[-1] == A @ vs[-1]

    def test_past_the_recursion_limit_the_relation_is_named(self, monkeypatch):
        import relgraph.logic.search

        monkeypatch.setattr(relgraph.logic.search, "GOAL_RECURSION_LIMIT", 3000)
        A, vs = rg.matrix("A"), [rg.vector(f"v{i}") for i in range(2000)]
        with pytest.raises(rg.RelationError, match="'mapo_distribute_o' raised RecursionError"):
            rg.rewrite(A @ rg.add(*vs), [self.mapo_distribute_o])

    def test_nested_rewrites_reuse_the_goal_thread(self):
        from relgraph.logic.search import run_deep

        inner = []
        run_deep(lambda: inner.append(run_deep(lambda: 42)))
        assert inner == [42]

    def test_an_interrupt_cancels_the_search(self, ctrl_c):
        import time

        import relgraph.logic.search

        runs = [0]

        def counting_o(a, b):
            goal = dot_distributeo(a, b)

            def counted(state):
                runs[0] += 1
                yield from goal(state)

            return counted

        A, x = rg.matrix("A"), rg.vector("x")
        sites = 3000
        term = rg.add(*(A @ (x + rg.vector(f"u{i}")) for i in range(sites)))
        ctrl_c(0.2)
        with pytest.raises(KeyboardInterrupt):
            rg.rewrite(term, [counting_o])
        seen = runs[0]
        time.sleep(0.3)
        # the search thread stopped with the caller: no goal runs after the interrupt
        assert seen > 0 and runs[0] == seen
        assert relgraph.logic.search._worker.job is None  # idle, ready for the next search

    def test_no_garbage_collection_runs_on_the_goal_thread(self):
        # Other libraries' thread-bound objects (egglog's e-graphs) must not be
        # dropped there: collection is paused and resumed in the caller's thread.
        import gc
        import threading

        threads = []

        def record(phase, info):
            if phase == "start":
                threads.append(threading.current_thread().name)

        gc.callbacks.append(record)
        try:
            A = rg.matrix("A")
            sites = [A @ (rg.vector(f"x{i}") + rg.vector(f"y{i}")) for i in range(60)]
            rg.rewrite(rg.add(*sites), [dot_distributeo])
            gc.collect()
        finally:
            gc.callbacks.remove(record)
        assert threads and "relgraph-goals" not in threads


class TestLargeInputs:
    """Costs grow with the term, not with its square; limits count work per node."""

    def test_distributing_over_twenty_thousand_terms(self):
        import time

        A, vs = rg.matrix("A"), [rg.vector(f"v{i}") for i in range(20_000)]
        start = time.perf_counter()
        out = rg.rewrite(A @ rg.add(*vs), localdb.query(include=["linalg"]))
        assert len(out.args) == 20_000 and out.args[-1] == A @ vs[-1]
        assert time.perf_counter() - start < 120  # quadratic took over 10 minutes


def test_a_local_oscillation_names_only_the_relations_in_the_cycle(syms):
    A, B, x, y, z, w = syms
    # neg_neg_o applies at the node first (in the same pass), but is not in the cycle.
    with pytest.raises(rg.OscillationError) as info:
        rg.rewrite(rg.exp(-(-(x + y))) + rg.exp(x), [neg_neg_o, swap_add_o])
    assert info.value.relations == ("swap_add_o",)
    assert "neg_neg_o" not in str(info.value)


class TestNamedErrors:
    """Every error names the relation (and the subterm); refused answers are counted."""

    def test_a_goal_constructor_that_raises_is_named(self, syms):
        def broken_o(a, b):
            raise KeyError("no such thing")

        with pytest.raises(rg.RelationError, match="'broken_o' could not build its goal"):
            rg.rewrite(syms[2] + 1.0, [broken_o])
        with pytest.raises(rg.RelationError, match="'broken_o' could not build its goal"):
            list(rg.rewrites(syms[2] + 1.0, broken_o))
        with pytest.raises(rg.RelationError, match="'broken_o' could not build its goal"):
            rg.explore(syms[2] + 1.0, [broken_o])

    def test_a_relation_of_the_wrong_arity_is_named(self, syms):
        def one_o(a):
            return eq(a, a)

        with pytest.raises(rg.RelationError, match="'one_o'.*two arguments"):
            rg.rewrite(syms[2] + 1.0, [one_o])

    def test_a_goal_that_raises_is_named_with_the_subterm_everywhere(self, syms):
        x = syms[2]
        for call in (
            lambda: rg.rewrite(rg.exp(x), [boom_o]),
            lambda: list(rg.rewrites(rg.exp(x), boom_o)),
        ):
            with pytest.raises(
                rg.RelationError, match=r"'boom_o' raised ZeroDivisionError.*exp\(x\)"
            ):
                call()

    def test_refused_answers_are_counted_with_their_reason(self, syms):
        x = syms[2]
        out, report = rg.rewrite(rg.log(x), [unground_o], report=True)
        assert out == rg.log(x)
        (stats,) = report.rules
        assert stats.dropped == (("not ground", 1),)
        assert "unground_o: dropped 1 answer(s): not ground" in str(report)


def test_a_trace_lists_every_rewrite_in_order_with_its_position():
    from local_relations import log_expo

    x, y = rg.vector("x"), rg.vector("y")
    A = rg.matrix("A")
    term = rg.exp(rg.log(rg.exp(A @ (x + y))))
    inner = rg.EquilibriumRewriter([log_expo, dot_distributeo])
    out, report = rg.rewrite(term, rg.SequenceRewriter([("inner", inner)]), trace=True)
    steps = report.applied
    assert [s.relation for s in steps] == ["dot_distributeo", "log_expo"]
    assert len(steps) == sum(report.applications.values())
    positions = [s.position for s in steps]
    assert positions == [(0, 0, 0), (0,)]  # where each happened, in the pass's input
    assert steps[0].before == A @ (x + y)
    # Replaying the steps (before -> after) in order on the input gives the output.
    replay = term
    for s in steps:
        replay = replace_at(replay, s.before, None, s.after)
    assert replay == out == rg.exp(A @ x + A @ y)
    assert "dot_distributeo: (A @ (x + y))" in str(report)
    assert "<td>log_expo</td>" in report_html(report)
    _, untraced = rg.rewrite(term, inner, report=True)
    assert untraced.trace == ()
