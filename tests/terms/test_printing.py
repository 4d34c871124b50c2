import numpy as np

import relgraph as rg


def test_seed_formats(syms):
    A, B, x, y, z, w = syms
    assert rg.pprint(A @ (x + y)) == "(A @ (x + y))"
    assert rg.pprint(A @ x + A @ y) == "((A @ x) + (A @ y))"
    assert rg.pprint(A @ (x + (y + B @ (z + w)))) == "(A @ (x + (y + (B @ (z + w)))))"
    assert rg.pprint(rg.add(x, y, z)) == "(x + y + z)"


def test_other_ops(syms):
    A, B, x, y, z, w = syms
    assert rg.pprint(-x / 2.0) == "(-x / 2.0)"
    assert rg.pprint(rg.log1p(x**2)) == "log1p(x ** 2)"
    assert rg.pprint(A.T) == "A.T"
    assert rg.pprint(rg.sum(A, 1) + rg.max(x)) == "(sum(A, axis=1) + max(x))"
    assert rg.pprint(x + np.array([1.0, 2.0])) == "(x + [1., 2.])"
    assert rg.pprint(x * np.float32(2)) == "(x * 2.0)"
    assert str(A @ x) == "(A @ x)" and repr(A @ x) == "Term((A @ x))"


def test_shared_subterms_print_once_when_the_tree_is_huge():
    x = rg.vector("x")
    t = x
    for _ in range(40):
        t = t * t
    text = rg.pprint(t)
    assert text.startswith("let t1 = (x * x); t2 = (t1 * t1); ")
    assert text.endswith(" in (t39 * t39)") and len(text) < 1000
    small = (x * x) * (x * x)
    assert rg.pprint(small) == "((x * x) * (x * x))"  # small trees print as trees


def test_a_large_term_with_nothing_shared_prints_no_let():
    vs = [rg.vector(f"v{i}") for i in range(3000)]
    text = rg.pprint(rg.add(*[rg.exp(rg.log(v)) for v in vs]))
    assert text.startswith("(exp(log(v0)) + exp(log(v1))")
