"""The search state kanren threads through relgraph's goals.

``unification.core.assoc`` copies the substitution dict on every binding, so a
relation that binds n variables (``mapo`` over n arguments) costs O(n^2).  The state
here is an :class:`immutables.Map` (a persistent hash map), registered with
``assoc`` for that type only: a binding is O(log n), and searches that start from a
dict (``kanren.run``, other libraries' rewriters) are untouched.  unification's own
handlers for logic variables serve relgraph's searches too: relgraph registers none
for types it does not own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import immutables
from unification.core import assoc
from unification.variable import Var

__all__ = ["State", "initial_state"]

State = immutables.Map


def initial_state(bindings: Mapping[Var, Any]) -> State:
    """A kanren state binding the given logic variables."""
    return immutables.Map(bindings)


def _assoc_map(s: State, u: Any, v: Any) -> State:
    return s.set(u, v)


# Registered for relgraph's own state type only.
assoc.add((State, object, object), _assoc_map)
