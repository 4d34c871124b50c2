"""The ipywidgets stepper, driven by clicks as a notebook user would."""

import pytest

import relgraph as rg
from relations import optdb
from relations.linalg import dot_distributeo

pytest.importorskip("ipywidgets")
from relgraph.ui.stepper import Stepper  # noqa: E402

A = rg.matrix("A")
x, y, z = (rg.vector(n) for n in "xyz")


def buttons(stepper):
    return stepper.widget.children[2].children


def test_click_applies_and_history_moves():
    s = Stepper(A @ (x + y) + A @ z, [dot_distributeo])
    back, forward = s.widget.children[0].children[:2]
    assert back.disabled and forward.disabled
    labels = [b.description for b in buttons(s)]
    assert labels == [str(e) for e in s.options]
    assert any("(forward)" in label for label in labels)
    assert any("(backward)" in label for label in labels)
    (i,) = [k for k, e in enumerate(s.options) if e.direction == "forward"]
    buttons(s)[i].click()
    assert s.term == A @ x + A @ y + A @ z and s.index == 1
    assert "(((A @ x) + (A @ y)) + (A @ z))" in s.widget.children[1].value
    assert not back.disabled and forward.disabled
    back.click()
    assert s.term == A @ (x + y) + A @ z and not forward.disabled
    forward.click()
    assert s.term == A @ x + A @ y + A @ z
    assert s.widget.children[0].children[2].value == "step 1 of 1"


def test_apply_forgets_the_redo_history():
    s = Stepper(A @ x + A @ y, optdb.query(include=["linalg", "canonicalize"]))
    s.apply(0)
    s.back()
    gather = [k for k, e in enumerate(s.options) if e.relation == "dot_distributeo"]
    assert s.apply(gather[0]) == A @ (x + y)
    assert s.history == [A @ x + A @ y, A @ (x + y)]


def test_every_option_is_a_real_rewrite():
    s = Stepper(A @ (x + y), optdb.query(include=["linalg"]))
    for edge in s.options:
        assert edge.target in set(rg.rewrites(edge.source, edge.goal))
    assert len({e.target for e in s.options}) == len(s.options)


def test_bad_option_is_named():
    s = Stepper(A @ (x + y), [dot_distributeo], directions=["forward"])
    with pytest.raises(IndexError, match=r"option 5 of 1: \(A @ \(x \+ y\)\) has no such step"):
        s.apply(5)
    assert s.history == [A @ (x + y)]
