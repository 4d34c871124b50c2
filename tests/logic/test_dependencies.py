"""What relgraph assumes of its dependencies' private structure, tested so that an
upgrade that changes it fails here, by name, rather than somewhere deep.

pyproject.toml pins the version ranges these hold for.  ``rg.why`` reads the goals
a kanren ``lall``/``conde`` closes over (kanren has no public hook for it); ``Term``
and ``Args`` fill an etuple's slots directly, so that building one is O(1).
"""

from etuples import etuple
from etuples.core import ExpressionTuple
from kanren import conde, eq, lall, lany, var

import relgraph as rg


def test_kanren_conjunctions_and_disjunctions_close_over_their_goals():
    x = var()
    for goal, name in [
        (lall(eq(x, 1), eq(x, 1)), "lconj_seq_goal"),
        (conde([eq(x, 1)], [eq(x, 2)]), "ldisj_seq_goal"),
        (lany(eq(x, 1), eq(x, 2)), "ldisj_seq_goal"),
    ]:
        assert goal.__name__ == name
        assert goal.__code__.co_freevars == ("goals",)


def test_why_still_finds_the_failing_conjunct():
    def exp_zeroo(a, b):
        inner = var()
        return lall(eq(a, etuple(rg.exp, inner)), eq(inner, 0.0), eq(b, 1.0))

    found = rg.why(exp_zeroo, rg.exp(rg.vector("x")))
    assert not found.applies
    assert "eq failed with u=x, v=0.0" in str(found)  # the second conjunct, by its values


def test_etuples_slots_are_the_ones_terms_fill():
    assert set(ExpressionTuple.__slots__) == {"_evaled_obj", "_tuple", "_parent"}
    x = rg.vector("x")
    t = x + 1.0
    assert t._evaled_obj is ExpressionTuple.null and t._parent is None
    assert etuple(rg.add, 1.0, 2.0).evaled_obj == 3.0
