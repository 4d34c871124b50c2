"""relgraph's unification handlers are registered for its own state and terms only."""

import subprocess
import sys

CHECK = """
import numpy as np, unification.core as U
from unification.variable import Var
from etuples.core import ExpressionTuple
from cons.core import ConsPair
sigs = [(Var, object, dict), (object, Var, dict), (Var, Var, dict),
        (np.generic, ExpressionTuple, dict), (ExpressionTuple, np.generic, dict),
        (np.generic, ConsPair, dict)]
before = {sig: U._unify.dispatch(*sig) for sig in sigs}
reify_before = U._reify.dispatch(Var, dict)
assoc_before = U.assoc.dispatch(dict, object, object)
import relgraph, relations
import kanren.constraints  # registers for a Var subclass: no ambiguity with relgraph
from relations import optdb
x = relgraph.vector("x")
relgraph.rewrite(x * 1.0 + 0.0, optdb.query(include=["fast_run"]))
assert all(U._unify.dispatch(*sig) is f for sig, f in before.items())
assert U._reify.dispatch(Var, dict) is reify_before
assert U.assoc.dispatch(dict, object, object) is assoc_before
print("untouched")
"""


def test_importing_relgraph_leaves_unifications_own_handlers_alone():
    done = subprocess.run([sys.executable, "-W", "error::Warning", "-c", CHECK],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "untouched"


def test_kanren_run_with_dict_states_still_works_on_terms():
    from kanren import run, var
    from local_relations import dot_distributeo

    import relgraph as rg

    A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    q = var()
    (answer,) = run(1, q, dot_distributeo(A @ (x + y), q))
    assert rg.as_term(answer) == A @ x + A @ y


def test_a_search_tells_variables_as_unification_does():
    """The state's handlers tell a logic variable by its type once per type, and still
    see the objects ``unification.variables`` makes variables for a while."""
    from unification import variables
    from unification.variable import Var, isvar

    import relgraph as rg
    from relgraph.logic.state import _isvar

    class Sub(Var):  # another library's variables (kanren's ConstrainedVar)
        pass

    things = [Var(), Sub(), 1, "x", (1, 2), [1], rg.vector("x"), rg.vector("x") + 1,
              Var, None, 2.5]  # fmt: skip
    for _ in range(2):  # a type's verdict is kept after the first
        assert [_isvar(o) for o in things] == [isvar(o) for o in things]
    with variables(1, "x"):
        assert [_isvar(o) for o in things] == [isvar(o) for o in things]
        assert _isvar(1) and _isvar("x")
    assert not _isvar(1) and not _isvar("x")
