"""The standard library's databases: PyTensor's optdb order and nested selection."""

import relgraph as rg
from relations import canonicalize_db, optdb


def names(rewriter):
    return [r.name for r in rewriter.rules]


def test_optdb_has_linalg():
    steps = dict(optdb.query(include=["linalg"]).steps)
    assert list(steps) == ["canonicalize", "specialize", "linalg"]
    linalg = steps["linalg"]
    assert names(linalg) == ["dot_distributeo", "dot_scaleo", "transpose_doto", "sum_doto"]
    assert linalg.rules[0].tracks == frozenset([rg.dot])


def test_excluding_one_relation_keeps_the_rest_of_its_stage():
    steps = dict(optdb.query(include=["canonicalize"], exclude=["ac_normalo"]).steps)
    assert list(steps) == ["canonicalize"]
    opt_in = {"unsafe", "reassociate", "no_signed_zeros"}  # selected only when named
    every = [n for n in canonicalize_db if not opt_in & set(canonicalize_db._entries[n].tags)]
    assert names(steps["canonicalize"]) == [n for n in every if n != "ac_normalo"]


def test_excluding_a_tag_inside_stages_keeps_the_stages():
    with_expand = dict(optdb.query(include=["fast_run"]).steps)
    without = dict(optdb.query(include=["fast_run"], exclude=["expand"]).steps)
    assert list(without) == list(with_expand) == [
        "canonicalize", "stabilize", "recanonicalize", "specialize", "linalg"
    ]  # fmt: skip
    assert "log_mulo" not in names(without["stabilize"])
