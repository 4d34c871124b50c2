"""Semantic fuzzing: no database of the standard library changes what a program computes.

Programs come from ``tests/fuzz.py``: random, well typed (scalars, vectors,
matrices, broadcasting), depth 6, every Op, junk spliced in, and every value
finite on the inputs.  The CI profile runs 500 examples per query; the
``deep`` profile (``pytest --hypothesis-profile=deep tests/test_fuzz.py``)
runs 10,000.  ``rg.explore``, which runs the relations both ways, is fuzzed on
programs of depth 4.
"""

import itertools

import numpy as np
import pytest
from fuzz import inputs, programs
from hypothesis import given, settings, strategies as st

import relgraph as rg
from relations import optdb
from relgraph.terms.traverse import subterms

QUERIES = {
    "canonicalize": ["canonicalize"],
    "stabilize": ["stabilize"],
    "specialize": ["specialize"],
    "linalg": ["linalg"],
    "fast_run": ["fast_run"],
}
CHANGED: dict[str, list[bool]] = {name: [] for name in QUERIES}
REWRITERS = {name: optdb.query(include=tags) for name, tags in QUERIES.items()}


def fuzz_settings(**kwargs):
    # At least 500 examples; the deep profile's 10,000 when it is loaded.
    return settings(max_examples=max(500, settings.default.max_examples), **kwargs)


def scale(term, values) -> float:
    """The largest magnitude among the program's leaves and intermediate values."""
    nodes = [*subterms(term), *(values[s] for s in values)]
    return max(float(np.max(np.abs(rg.evaluate(n, values)), initial=0.0)) for n in nodes)


@pytest.mark.parametrize("name", list(QUERIES))
def test_rewrites_preserve_semantics(name):
    rewriter = REWRITERS[name]

    @fuzz_settings()
    @given(program=programs(6), seed=st.integers(0, 2**32 - 1))
    def check(program, seed):
        values = inputs(seed)
        before = rg.evaluate(program.term, values)
        out = rg.rewrite(program.term, rewriter)
        after = rg.evaluate(out, values)
        assert np.shape(after) == np.shape(before) and rg.typeof(out) == rg.typeof(program.term)
        # Reordered sums round differently: tolerate a few ulps of the largest
        # intermediate value, nothing more.
        atol = 1e-12 * max(scale(program.term, values), 1.0)
        np.testing.assert_allclose(after, before, rtol=1e-6, atol=atol)
        CHANGED[name].append(out != program.term)

    check()


@pytest.mark.parametrize(
    "name, share",
    [("canonicalize", 0.5), ("stabilize", 0.1), ("specialize", 0.1), ("linalg", 0.004),
     ("fast_run", 0.5)],
)  # fmt: skip
def test_the_fuzz_exercised_real_rewrites(name, share):
    # A fuzz in which nothing was rewritten would prove nothing.
    seen = CHANGED[name]
    if not seen:
        pytest.skip("runs after test_rewrites_preserve_semantics")
    assert sum(seen) / len(seen) >= share, f"{name}: {sum(seen)} of {len(seen)} changed"


SIGNED = np.array([-0.0, 0.0, -0.0, 0.0, 1.0, -1.0, 2.0, -0.5])


@settings(max_examples=200)
@given(program=programs(6), seed=st.integers(0, 2**32 - 1))
def test_rewrites_keep_the_sign_of_every_zero(program, seed):
    """fast_run on inputs of -0.0, 0.0 and small numbers of both signs (outside the
    domain the programs are made for: NaN and inf are fine), 8 draws a program: where
    the program is a zero, the rewritten program is a zero of the same sign (``1 / z``
    tells them apart).  With ``no_signed_zeros`` selected it fails (on about one
    program in twelve)."""
    rng = np.random.default_rng(seed)
    out = rg.rewrite(program.term, REWRITERS["fast_run"])
    for _ in range(8):
        values = {s: rng.choice(SIGNED, size=(4,) * s.type.ndim)[()] for s in inputs(0)}
        with np.errstate(all="ignore"):
            before, after = rg.evaluate(program.term, values), rg.evaluate(out, values)
        zeros = (before == 0) & (after == 0)
        signs = np.signbit(before)[zeros], np.signbit(after)[zeros]
        assert np.array_equal(*signs), f"{rg.pprint(program.term)} -> {rg.pprint(out)}"


@settings(max_examples=100)  # each explores both ways: fewer than the driver's 500
@given(program=programs(4), seed=st.integers(0, 2**32 - 1))
def test_every_explored_term_computes_the_programs_values(program, seed):
    """rg.explore with fast_run (both directions, the default schedule): the best term
    and the first 40 of the space give the program's values; an explored space never
    holds another program, and at least one holds more than the program."""
    values = inputs(seed)
    before = rg.evaluate(program.term, values)
    space = rg.explore(program.term, REWRITERS["fast_run"], progress=False, timeout=None)
    atol = 1e-12 * max(scale(program.term, values), 1.0)
    terms = [space.best(), *itertools.islice(space.iter_terms(), 40)]
    for term in terms:
        np.testing.assert_allclose(rg.evaluate(term, values), before, rtol=1e-6, atol=atol)
    EXPLORED.append(len(terms) > 2)


EXPLORED: list[bool] = []


def test_the_explore_fuzz_explored():
    if not EXPLORED:
        pytest.skip("runs after test_every_explored_term_computes_the_programs_values")
    assert sum(EXPLORED) >= len(EXPLORED) / 2, f"{sum(EXPLORED)} of {len(EXPLORED)} grew"
