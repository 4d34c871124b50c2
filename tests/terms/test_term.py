import pickle

import numpy as np
import pytest
from cons import car, cdr, cons
from etuples import etuple
from kanren import conso, eq, heado, run, tailo, var
from kanren.assoccomm import assoc_flatten
from kanren.graph import mapo
from unification import reify, unify

import relgraph as rg
from relgraph.terms.term import Args
from relgraph.terms.traverse import as_term, substitute, subterms


def test_symbols_compare_by_name_and_type():
    assert rg.vector("x") == rg.vector("x")
    assert hash(rg.vector("x")) == hash(rg.vector("x"))
    assert rg.vector("x") != rg.vector("y")
    assert rg.vector("x") != rg.vector("x", dtype="float32")
    assert rg.vector("x") != rg.matrix("x")
    assert rg.vector("x", shape=3) != rg.vector("x", shape=4)


@pytest.mark.parametrize("bad", ["", "1x", "a b", None, "x-y"])
def test_symbol_names_must_be_identifiers(bad):
    with pytest.raises((ValueError, TypeError), match="identifier"):
        rg.vector(bad)


def test_symbol_is_immutable():
    x = rg.vector("x")
    with pytest.raises(AttributeError):
        x.name = "y"


def test_operators_build_etuples(syms):
    A, B, x, y, z, w = syms
    assert x + y == etuple(rg.add, x, y)
    assert A @ (x + y) == etuple(rg.dot, A, etuple(rg.add, x, y))
    assert 2.0 * x == etuple(rg.mul, 2.0, x)
    assert -x == etuple(rg.neg, x)
    assert x / y == etuple(rg.true_div, x, y)
    assert x**2 == etuple(rg.pow, x, 2)
    assert 1 - x == etuple(rg.sub, 1, x)
    assert A.T == etuple(rg.transpose, A)
    assert rg.dot(A, x + y) == A @ (x + y)
    assert hash(x + y) == hash(etuple(rg.add, x, y))


def test_and_or_not_on_booleans_are_the_logical_ops_the_relations_know():
    b, c, i = rg.vector("b", "bool"), rg.vector("c", "bool"), rg.vector("i", "int8")
    assert b & c == rg.logical_and(b, c) and True | b == rg.logical_or(True, b)
    assert ~b == rg.logical_not(b)
    assert i & 3 == rg.bitwise_and(i, 3) and ~i == rg.invert(i) and b | i == rg.bitwise_or(b, i)
    p, q = rg.lvars("p q")  # a pattern's variables have no dtype: the operators as written
    assert p & q == rg.bitwise_and(p, q) and b | q == rg.bitwise_or(b, q) and ~p == rg.invert(p)
    bv, cv, iv = np.array([True, False]), np.array([True, True]), np.array([-128, 5], np.int8)
    for t, want in [(b & c, bv & cv), (~b, ~bv), (b | iv, bv | iv)]:
        g = rg.evaluate(t, {b: bv, c: cv})
        assert g.dtype == want.dtype and np.array_equal(g, want)


def test_ops_on_values_compute_with_numpy():
    assert etuple(rg.add, 1, 2).evaled_obj == 3
    assert rg.add(1.0, 2.0, 3.0) == 6.0
    np.testing.assert_allclose(rg.exp(np.zeros(3)), np.ones(3))


def test_evaled_obj_of_a_term_with_symbols_is_the_term(syms):
    A, B, x, y, z, w = syms
    assert etuple(rg.dot, A, etuple(rg.add, x, y)).evaled_obj == A @ (x + y)


def test_arrays_are_wrapped_constants_that_hash():
    x = rg.vector("x")
    t1 = x + np.arange(3.0)
    t2 = x + np.arange(3.0)
    assert t1 == t2 and hash(t1) == hash(t2)
    assert isinstance(t1.args[1], rg.Constant)
    assert x + np.arange(3.0) != x + np.arange(1.0, 4.0)
    with pytest.raises(ValueError):
        t1.args[1].value[0] = 5.0


def test_int_and_float_constants_are_different_terms():
    x = rg.vector("x")
    assert x + 1 != x + 1.0


def test_unify_with_a_dot_pattern(syms):
    A, B, x, y, z, w = syms
    q = var()
    s = unify(A @ (x + y), etuple(rg.dot, A, q))
    assert s[q] == x + y
    assert unify(A @ (x + y), etuple(rg.dot, B, q)) is False


def test_reify_builds_terms(syms):
    A, B, x, y, z, w = syms
    q = var()
    res = reify(etuple(rg.dot, A, q), {q: x + y})
    assert as_term(res) == A @ (x + y)
    # a ground term reifies to itself, without a walk
    t = A @ (x + y)
    assert reify(t, {q: 1}) is t


def test_kanren_goals_work_on_terms(syms):
    A, B, x, y, z, w = syms
    q = var()
    assert run(0, q, heado(q, x + y)) == (rg.add,)
    assert tuple(run(0, q, tailo(q, rg.add(x, y, z)))[0]) == (x, y, z)
    assert as_term(run(0, q, conso(rg.neg, [x], q))[0]) == -x
    (flat,) = run(0, q, assoc_flatten((x + y) + (z + w), q))
    assert as_term(flat) == rg.add(x, y, z, w)
    (mapped,) = run(0, q, mapo(lambda a, b: eq(b, etuple(rg.neg, a)), (x, y), q))
    assert [as_term(m) for m in mapped] == [-x, -y]


def test_args_car_cdr_cons_are_sequences(syms):
    A, B, x, y, z, w = syms
    t = rg.add(x, y, z)
    tail = cdr(t)
    assert isinstance(tail, Args) and list(tail) == [x, y, z]
    assert car(tail) == x and list(cdr(cdr(tail))) == [z]
    consed = cons(w, tail)
    assert list(consed) == [w, x, y, z]
    assert hash(consed) == hash(Args((w, x, y, z)))
    assert consed == Args((w, x, y, z))
    assert (Args((rg.add,)) + Args((x, y))).evaled_obj == x + y


def test_as_term_returns_none_for_logic_variables(syms):
    A, B, x, y, z, w = syms
    assert as_term(etuple(rg.add, x, var())) is None
    assert as_term(cons(rg.add, var())) is None


def test_pickle_roundtrip(syms):
    A, B, x, y, z, w = syms
    t = A @ (x + 2.0 * y) - np.ones(2)
    assert pickle.loads(pickle.dumps(t)) == t


def test_subterms_visit_shared_nodes_once(syms):
    A, B, x, y, z, w = syms
    e = rg.exp(x)
    t = e + e * e
    assert [str(s) for s in subterms(t)] == [
        "exp(x)",
        "(exp(x) * exp(x))",
        "(exp(x) + (exp(x) * exp(x)))",
    ]
    assert rg.count_nodes(t) == 3


def test_substitute_rebuilds_only_what_changed(syms):
    A, B, x, y, z, w = syms
    left = A @ x
    t = left + rg.exp(y)
    out = substitute(t, lambda n: rg.log(y) if n == rg.exp(y) else n)
    assert out == A @ x + rg.log(y)
    assert out.args[0] is left


class TestTypes:
    def test_dot_shapes(self):
        A = rg.matrix("A", shape=(2, 3))
        assert rg.typeof(A @ rg.vector("x", shape=3)).shape == (2,)
        assert rg.typeof(rg.vector("v", shape=2) @ A).shape == (3,)
        assert rg.typeof(rg.vector("v") @ rg.vector("u")).ndim == 0

    def test_dot_with_a_scalar_is_an_error_that_shows_the_term(self):
        A, s = rg.matrix("A"), rg.scalar("s")
        with pytest.raises(rg.TypeCheckError, match=r"\(A @ s\).*s has ndim 0"):
            A @ s

    def test_mismatched_known_shapes(self):
        A = rg.matrix("A", shape=(2, 3))
        v = rg.vector("v", shape=4)
        with pytest.raises(rg.TypeCheckError, match=r"\(v @ A\).*4 \(v\) vs 2 \(A\)"):
            v @ A

    def test_broadcast_error(self):
        a, b = rg.vector("a", shape=3), rg.vector("b", shape=4)
        with pytest.raises(rg.TypeCheckError, match=r"\(a \+ b\)"):
            a + b

    @pytest.mark.parametrize(
        "build, dtype",
        [
            (lambda: rg.vector("f", "float32") * 2.0, "float32"),
            (lambda: rg.vector("i", "int64") / 2, "float64"),
            (lambda: rg.exp(rg.vector("i", "int32")), "float64"),
            (lambda: rg.vector("i", "int64") + rg.vector("f", "float32"), "float64"),
            (lambda: rg.sum(rg.vector("i", "int32")), "int64"),
        ],
    )
    def test_dtypes_follow_numpy(self, build, dtype):
        assert rg.typeof(build()).dtype == np.dtype(dtype)

    def test_reduction_axes(self):
        A = rg.matrix("A", shape=(2, 3))
        assert rg.typeof(rg.sum(A)).ndim == 0
        assert rg.typeof(rg.sum(A, 1)).shape == (2,)
        with pytest.raises(rg.TypeCheckError, match="axis 2"):
            rg.sum(A, 2)

    def test_arity_is_checked(self):
        with pytest.raises(rg.TypeCheckError, match="exp takes 1"):
            rg.exp(rg.vector("x"), rg.vector("y"))
        with pytest.raises(rg.TypeCheckError, match="add needs at least 2"):
            rg.add(rg.vector("x"))

    def test_patterns_are_not_type_checked(self):
        pattern = rg.dot(var(), rg.scalar("s"))
        with pytest.raises(rg.TypeCheckError, match="logic variable"):
            rg.typeof(pattern)


class TestDeepTerms:
    """Depth 100,000: build, hash, compare, print, evaluate, rewrite."""

    DEPTH = 100_000

    def build(self, x):
        t = x
        for i in range(self.DEPTH):
            t = -t if i % 2 else t + 1.0
        return t

    def test_build_hash_compare_print_evaluate(self):
        x = rg.vector("x")
        t, u = self.build(x), self.build(x)
        assert t is not u and t == u and hash(t) == hash(u)
        assert t != self.build(rg.vector("y"))
        text = rg.pprint(t)
        assert text.count("x") == 1 and len(text) > 4 * self.DEPTH
        assert rg.typeof(t).ndim == 1
        value = rg.evaluate(t, {x: np.array([0.5, 1.0])})
        # each (+1, neg) pair maps v to -(v + 1)
        expected = np.array([0.5, 1.0])
        for _ in range(self.DEPTH // 2):
            expected = -(expected + 1.0)
        np.testing.assert_allclose(value, expected)

    def test_rewrite_at_the_bottom_of_a_deep_term(self, syms):
        from local_relations import localdb

        A, B, x, y, z, w = syms
        t = A @ (x + y)
        expected = A @ x + A @ y
        for _ in range(self.DEPTH):
            t, expected = -t, -expected
        out = rg.rewrite(t, localdb.query(include=["linalg"]))
        assert out == expected


class TestSharedSubtermsStayLinear:
    """``t = t * t`` forty times is a 40-node DAG with a 2**40-node tree."""

    @staticmethod
    def squares(n):
        x = rg.vector("x")
        t = x
        for _ in range(n):
            t = t * t
        return t

    def test_equality_hashing_and_walks_are_linear_in_the_dag(self):
        import time

        start = time.perf_counter()
        a, b = self.squares(40), self.squares(40)
        assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
        assert a != self.squares(39) * self.squares(38)
        assert rg.count_nodes(a) == 40
        x = rg.vector("x")
        assert rg.evaluate(a, {x: np.array([1.0, -1.0])}).tolist() == [1.0, 1.0]
        assert time.perf_counter() - start < 5  # exponential would never finish

    def test_type_errors_over_a_shared_dag_are_short(self):
        with pytest.raises(rg.TypeCheckError, match="let t1 = ") as info:
            rg.matrix("A", shape=(2, 2)) @ rg.add(self.squares(40), rg.vector("y", shape=3))
        assert len(str(info.value)) < 1000


class TestConstantsInEveryOp:
    def test_constant_arithmetic_builds_terms(self):
        c, d = rg.Constant(np.arange(3.0)), rg.Constant(np.ones((2, 3)))
        x = rg.vector("x")
        env = {x: np.array([1.0, 2.0, 3.0])}
        cases = {
            c * 2: np.arange(3.0) * 2,
            c + c: np.arange(3.0) * 2,
            d @ c: np.ones((2, 3)) @ np.arange(3.0),
            -c: -np.arange(3.0),
            c.T: np.arange(3.0),
            np.ones(3) * x: env[x],
            rg.exp(c) + x: np.exp(np.arange(3.0)) + env[x],
        }
        for term, expected in cases.items():
            assert isinstance(term, rg.Term)
            np.testing.assert_allclose(rg.evaluate(term, env), expected)
        f = rg.function([x], d @ (c * x) + 1.0)
        np.testing.assert_allclose(f(env[x]), np.ones((2, 3)) @ (np.arange(3.0) * env[x]) + 1)

    def test_numpy_defers_to_terms(self):
        x = rg.vector("x")
        assert isinstance(np.float64(2.0) * x, rg.Term)
        assert isinstance(np.ones(3) + x, rg.Term)


@pytest.mark.parametrize("dtype", ["U5", "V8", "object", "datetime64[s]", "timedelta64", "S3"])
def test_unsupported_dtypes_are_refused_with_their_name(dtype):
    with pytest.raises(ValueError, match="unsupported dtype"):
        rg.vector("x", dtype)


def test_a_negative_dimension_is_refused():
    with pytest.raises(ValueError, match="negative dimension"):
        rg.matrix("A", shape=(3, -1))


def test_signed_zeros_are_different_leaves():
    """``x / 0.0`` is inf and ``x / -0.0`` -inf: as leaves of terms, of compiled
    functions' caches, of one rewrite and of an e-graph, 0.0 and -0.0 stay apart."""
    from relations import optdb

    x = rg.vector("x")
    pos, neg = x / 0.0, x / -0.0
    assert pos != neg and rg.Term((rg.add, x, np.float32(0.0))) != x + np.float32(-0.0)
    assert rg.Constant(np.array([0.0])) != rg.Constant(np.array([-0.0]))
    value = np.array([1.0, -2.0])
    with np.errstate(all="ignore"):
        want = value / 0.0 + value / -0.0  # inf + -inf: NaN
        f = rg.jit(lambda v: (v / 0.0, v / -0.0), compile="eager")
        got = f(value)
        np.testing.assert_array_equal(got[0], value / 0.0)
        np.testing.assert_array_equal(got[1], value / -0.0)
        g = rg.jit(lambda v, s: v / s, compile="eager")
        for s in (0.0, -0.0, 0.0):
            np.testing.assert_array_equal(g(value, s), value / s)
        rewritten = rg.rewrite(pos + neg, optdb.query(include=["fast_run"]))
        np.testing.assert_array_equal(rg.evaluate(rewritten, {x: value}), want)
        space = rg.explore(pos + neg, optdb.query(include=["canonicalize"]))
        np.testing.assert_array_equal(rg.evaluate(space.best(), {x: value}), want)
