"""The standard library through the driver: what its relations do to whole programs."""

import numpy as np
import pytest

import relgraph as rg
from relations import arith, optdb
from relations.linalg import dot_distributeo


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
