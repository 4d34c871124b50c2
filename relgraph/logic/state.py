"""The search state kanren threads through goals, tuned through its hooks.

Two costs of kanren's machinery grow with the length of what a relation walks
(``mapo`` over n arguments nests n levels of generators):

* ``unification.core.assoc`` copies the substitution dict on every binding, so
  n bindings cost O(n^2).  The state here is an :class:`immutables.Map` (a
  persistent hash map), registered with ``assoc``: a binding is O(log n).
* unification's generic ``_unify``/``_reify`` for logic variables are
  generators; each one that finishes raises ``StopIteration``, and in CPython
  raising inside n nested generators walks all n of them.  The plain-function
  versions below raise nothing, and compare a variable's value with ``is`` first:
  unification's ``u == v`` compares a numpy scalar with a list elementwise and then
  fails on the array's truth value.

Every handler here is registered for :data:`State` only, so other users of
unification in the process see the library they installed.  A library that
registers handlers for its own ``Var`` subclass and ``Mapping`` (PyTensor's
``ConstrainedVar``) makes multipledispatch warn that the pair is ambiguous for that
subclass in a relgraph search; neither library puts the other's variables there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import immutables
import unification.variable
from unification.core import _reify, _unify, assoc
from unification.variable import Var, isvar

__all__ = ["State", "initial_state"]

State = immutables.Map


def initial_state(bindings: Mapping[Var, Any]) -> State:
    """A kanren state binding the given logic variables."""
    return immutables.Map(bindings)


def _assoc_map(s: State, u: Any, v: Any) -> State:
    return s.set(u, v)


# unification's ``isvar`` is an ABC instance check that also looks in the set of
# objects made variables by ``unification.variables`` (empty but inside that
# context); a type's verdict is kept here, and the set is read as it is.
_GLOBAL_VARIABLES = getattr(unification.variable, "_global_logic_variables", None)
_VAR_TYPES: dict[type, bool] = {}


def _isvar(o: Any) -> bool:
    """``unification.isvar(o)``, without its ABC check for a type seen before."""
    t = type(o)
    by_type = _VAR_TYPES.get(t)
    if by_type is None:
        by_type = _VAR_TYPES[t] = issubclass(t, (Var, type(Var)))
    if by_type:
        return True
    # an object made a variable by unification.variables (the set is empty outside it)
    return (_GLOBAL_VARIABLES is None or bool(_GLOBAL_VARIABLES)) and isvar(o)


def walk(key: Any, s: Mapping) -> Any:
    """unification's ``transitive_get``: ``key``'s value in ``s``, followed."""
    try:
        while key in s:
            key = s[key]
    except TypeError:  # an unhashable key: not in the state
        pass
    return key


def _unify_var(u: Any, v: Any, s: Mapping) -> Any:
    # unification's _unify_Var_object, as a function: returns a state, False,
    # or a nested _unify (which stream_eval evaluates).
    u_w = walk(u, s) if _isvar(u) else u
    v_w = walk(v, s) if _isvar(v) else v
    if u_w is v_w:
        return s
    if _isvar(u_w):
        return s if u_w == v_w else assoc(s, u_w, v_w)
    if _isvar(v_w):
        return assoc(s, v_w, u_w)
    return _unify(u_w, v_w, s)


def _reify_var(o: Var, s: Mapping) -> Any:
    o_w = walk(o, s)
    if o_w is o:
        # Unbound: a one-item generator, as unification's own hook, because
        # ``isground`` only sees a variable that a generator yields.
        return _unbound(o)
    return _reify(o_w, s)


def _unbound(o: Var) -> Any:
    yield o


# Registered for relgraph's own state type only: a search that starts from a dict
# (kanren.run, or another library's rewriter in the same process) keeps
# unification's own handlers.
assoc.add((State, object, object), _assoc_map)
for _sig in ((Var, Var), (Var, object), (object, Var)):
    _unify.add((*_sig, State), _unify_var)
_reify.add((Var, State), _reify_var)
