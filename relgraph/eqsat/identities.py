"""Identity laws: relations that, run backward, only wrap or reorder terms.

Run backward, an identity law (``x + 0 -> x``, ``--x -> x``) wraps every term of an
e-graph again and again, and an AC normal form lists every order of every sum; by
default :func:`relgraph.explore` runs neither backward.  Which relations they are is
found by running each one backward on bare symbols (and on a sum of three), once per
process, rather than kept in a list; and an answer that holds the very term it was
found on is recognised and dropped.
"""

from __future__ import annotations

import weakref
from typing import Any

from relgraph.eqsat.egraph import EGraph, Hole
from relgraph.exceptions import RelationError
from relgraph.ops.elemwise import add
from relgraph.rewriting.relation import Matcher
from relgraph.terms.leaves import Symbol
from relgraph.terms.term import Term
from relgraph.terms.traverse import free_symbols
from relgraph.terms.types import TensorType

__all__ = ["identity_law", "wraps"]

# Relations probed already (the answer is the relation's, whoever explores with it).
_IDENTITY_LAWS: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
# Bare symbols of rank 0, 1 and 2 (an identity may hold for one rank only: x.T -> x),
# and of integers (x + 0 -> x runs backward on them only: 0.0 + -0.0 is 0.0).
_PROBES = (
    *(Symbol("probe", TensorType("float64", ndim)) for ndim in range(3)),
    Symbol("probe", TensorType("int64", 1)),
)


def _only_reorders(matcher: Matcher) -> bool:
    """Whether the relation answers a sum of three symbols with its orders and
    groupings only (an AC normal form run backward)."""
    p, q, r = (Symbol(n, TensorType("float64", 1)) for n in "pqr")
    try:
        answers = list(matcher.answers(Term((add, p, q, r))))
    except RelationError:
        return False
    return bool(answers) and all(_sum_of(a) == [p, q, r] for a in answers)


def _sum_of(t: Any) -> list:
    """The leaves of a tree of sums, sorted by name."""
    if type(t) is not Term or t.op is not add:
        return [t]
    return sorted((leaf for a in t.args for leaf in _sum_of(a)), key=str)


def _wraps_a_symbol(matcher: Matcher) -> bool:
    """Whether the relation answers a bare symbol with a term that holds it."""
    for probe in _PROBES:
        try:
            answers = list(matcher.answers(probe))
        except RelationError:
            return False
        if any(type(a) is Term and probe in free_symbols(a) for a in answers):
            return True
    return False


def identity_law(relation: Any, backward: Matcher) -> bool:
    """Whether ``relation``, run backward (``backward`` is its matcher), wraps a bare
    symbol or only reorders a sum: an identity law or an AC normal form."""
    found = _IDENTITY_LAWS.get(relation)
    if found is None:
        found = _wraps_a_symbol(backward) or _only_reorders(backward)
        try:
            _IDENTITY_LAWS[relation] = found
        except TypeError:  # not weakly referable (a builtin callable): probed each time
            pass
    return found


def wraps(egraph: EGraph, result: Any, cid: int) -> bool:
    """Whether ``result`` holds a term of class ``cid`` below its root: an answer that
    only puts an identity around what it was found on (``x * 1``, ``--x``)."""
    if type(result) is not Term:
        return False
    target = egraph.find(cid)
    stack = list(result.op.operands(result.args))
    while stack:
        item = stack.pop()
        if type(item) is Hole:
            if egraph.find(item.cid) == target:
                return True
            continue
        if type(item) is not Term:
            continue
        if egraph.lookup(item) == target:
            return True
        stack.extend(item.op.operands(item.args))
    return False
