"""relations.linalg: forward, backward, through the driver, and semantics."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from kanren import run, var

import relgraph as rg
from relations import optdb
from relations.linalg import dot_distributeo

N = 4
A, B = rg.matrix("A"), rg.matrix("B")
VECS = tuple(rg.vector(n) for n in "xyzw")
x, y, z, w = VECS


def test_forward_with_kanren_run():
    q = var()
    (out,) = run(0, q, dot_distributeo(A @ (x + y), q))
    assert rg.as_term(out) == A @ x + A @ y


def test_backward_with_kanren_run():
    q = var()
    (back,) = run(1, q, dot_distributeo(q, rg.add(A @ x, A @ y, A @ (B @ z))))
    assert rg.as_term(back) == A @ rg.add(x, y, B @ z)
    # operators nest binary sums: the outer sum's first argument is not a product
    assert run(1, q, dot_distributeo(q, A @ x + A @ y + A @ z)) == ()


def test_does_not_apply_to_other_terms():
    q = var()
    assert run(0, q, dot_distributeo(A @ x, q)) == ()
    assert run(0, q, dot_distributeo(A @ (x * y), q)) == ()
    assert run(0, q, dot_distributeo(q, A @ x + B @ y)) == ()


def test_through_the_driver_both_ways():
    t = A @ (x + (y + B @ (z + w)))
    out = rg.rewrite(t, optdb.query(include=["linalg"]))
    assert out == rg.add(A @ x, A @ y, A @ (B @ z), A @ (B @ w))
    back = rg.rewrite(out, rg.EquilibriumRewriter([rg.reverse(dot_distributeo)]))
    assert back == A @ rg.add(x, y, B @ (z + w))


def test_long_sums_distribute_in_one_step():
    vs = [rg.vector(f"v{i}") for i in range(1024)]
    out, rep = rg.rewrite(A @ rg.add(*vs), [dot_distributeo], report=True)
    assert out == rg.add(*(A @ v for v in vs))
    assert rep.applications == {"dot_distributeo": 1}
    back = rg.rewrite(out, [rg.reverse(dot_distributeo)])
    assert back == A @ rg.add(*vs)


# --- semantics: a rewrite never changes what a program computes -------------------


@st.composite
def vector_terms(draw, depth):
    if depth == 0:
        return draw(st.sampled_from(VECS))
    kind = draw(st.sampled_from(["add", "sub", "scale", "neg", "dot", "dot", "leaf"]))
    sub = vector_terms(depth - 1)
    if kind == "add":
        return rg.add(*draw(st.lists(sub, min_size=2, max_size=3)))
    if kind == "sub":
        return draw(sub) - draw(sub)
    if kind == "scale":
        return draw(st.sampled_from([2.0, -0.5])) * draw(sub)
    if kind == "neg":
        return -draw(sub)
    if kind == "dot":
        operand = (
            rg.add(*draw(st.lists(sub, min_size=2, max_size=3)))
            if draw(st.booleans())
            else draw(sub)
        )
        return draw(matrix_terms(min(depth - 1, 2))) @ operand
    return draw(st.sampled_from(VECS))


@st.composite
def matrix_terms(draw, depth):
    if depth == 0:
        return draw(st.sampled_from([A, B]))
    kind = draw(st.sampled_from(["add", "dot", "T", "leaf"]))
    sub = matrix_terms(depth - 1)
    if kind == "add":
        return draw(sub) + draw(sub)
    if kind == "dot":
        return draw(sub) @ draw(sub)
    if kind == "T":
        return draw(sub).T
    return draw(st.sampled_from([A, B]))


def random_inputs(seed):
    rng = np.random.default_rng(seed)
    values = {v: rng.standard_normal(N) for v in VECS}
    values.update({m: rng.standard_normal((N, N)) for m in (A, B)})
    return values


CHANGED = []


@settings(max_examples=300)
@given(t=vector_terms(6), seed=st.integers(0, 2**32 - 1))
def test_rewrites_preserve_semantics(t, seed):
    inputs = random_inputs(seed)
    expected = rg.evaluate(t, inputs)
    out = rg.rewrite(t, optdb.query(include=["linalg"]))
    np.testing.assert_allclose(rg.evaluate(out, inputs), expected, rtol=1e-9, atol=1e-9)
    back = rg.rewrite(out, [rg.reverse(dot_distributeo)])
    np.testing.assert_allclose(rg.evaluate(back, inputs), expected, rtol=1e-9, atol=1e-9)
    CHANGED.append(out != t)


def test_the_property_test_exercised_real_rewrites():
    # A fuzz in which nothing was rewritten would prove nothing.
    if not CHANGED:
        pytest.skip("runs after test_rewrites_preserve_semantics")
    assert sum(CHANGED) / len(CHANGED) > 0.3
