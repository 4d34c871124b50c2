"""kanren's view of terms: cons, unification and reification hooks for Term and Args.

Registered by dispatch, next to nothing else: for relgraph's own types, and for
other libraries' types only together with relgraph's own search state
(:data:`relgraph.logic.state.State`), so other users of unification keep its handlers.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

import numpy as np
from cons.core import ConsError, ConsPair, _car, _cdr, car, cdr
from etuples.core import ExpressionTuple
from unification.core import _reify, _unify, construction_sentinel, unify

from relgraph.logic.state import State
from relgraph.terms.term import Args, Term, _suffix_hashes

__all__: list[str] = []

_default_unify = _unify.dispatch(object, object, dict)
if _unify.dispatch(ExpressionTuple, ExpressionTuple, dict) is _default_unify:
    # etuples skips registering its hooks, silently, when `packaging` is missing.
    raise ImportError(
        "etuples did not register its unification hooks, so no relation could match a "
        "term; install the 'packaging' package (pip install packaging)"
    )


def _car_Term(z: Term) -> Any:
    return z._tuple[0]


def _cdr_Term(z: Term) -> Args:
    return Args.view(z._tuple, 1, z._ground)


def _car_Args(z: Args) -> Any:
    if z._n == 0:
        raise ConsError("Not a cons pair")
    return z._first if z._base is None else z._base[z._off]


def _cdr_Args(z: Args) -> Args:
    if z._n == 0:
        raise ConsError("Not a cons pair")
    if z._base is None:
        return z._rest
    if z._tab is None:
        z._tab = _suffix_hashes(z._base)  # shared by every later view of this tuple
    return Args.view(z._base, z._off + 1, z._gnd, z._tab)


_car.add((Term,), _car_Term)
_cdr.add((Term,), _cdr_Term)
_car.add((Args,), _car_Args)
_cdr.add((Args,), _cdr_Args)


def _unify_ground_fast(u, v, s):
    # Ground on both sides: unification is equality, which the cached hashes make
    # O(1) on mismatch.  Otherwise unify the flat tuples as etuples does.
    if u._ground and v._ground:
        return s if u == v else False
    return _unify(u._tuple, v._tuple, s)


for _types in ((Term, Term), (Args, Args), (Term, Args), (Args, Term)):
    _unify.add((*_types, Mapping), _unify_ground_fast)


def _unify_cons_seq(u, v, s):
    # cons's _unify_Cons as a function (car, then cdr): our car/cdr are O(1)
    # and never consume an iterator, so no tee and no generator are needed.
    try:
        s = unify(car(u), car(v), s)
        return False if s is False else _unify(cdr(u), cdr(v), s)
    except ConsError:
        return False


def _unify_never(u, v, s):
    return False


def _unify_items(u, v, s):
    # A Python list of arguments (built by a relation) against a term's Args.
    u, v = tuple(u), tuple(v)
    return _unify(u, v, s) if len(u) == len(v) else False


for _list in (list, tuple):
    _unify.add((_list, Args, Mapping), _unify_items)
    _unify.add((Args, _list, Mapping), _unify_items)


for _seq in (Term, Args):
    _unify.add((ConsPair, _seq, Mapping), _unify_cons_seq)
    _unify.add((_seq, ConsPair, Mapping), _unify_cons_seq)
# A numpy scalar is never an expression; unification's fallback ``u == v`` would
# compare it with the expression's items elementwise.  For etuples and cons lists
# (other libraries' types) only in relgraph's own searches, whose state is a State.
_NEVER = [(Term, Mapping), (Args, Mapping), (Term, State), (Args, State)]
for _seq, _state in [*_NEVER, (ExpressionTuple, State), (ConsPair, State)]:
    _unify.add((np.generic, _seq, _state), _unify_never)
    _unify.add((_seq, np.generic, _state), _unify_never)


def _reify_Term(u: Term, s: Mapping):
    if u._ground:
        return u
    return _reify_items(u, s, Term)


def _reify_Args(u: Args, s: Mapping):
    if u._ground:
        return u
    return _reify_items(u, s, Args)


def _reify_items(u, s, ctor):
    res = []
    for item in u._tuple:
        r = _reify(item, s)
        if isinstance(r, Generator):
            r = yield r
        res.append(r)
    yield construction_sentinel
    yield ctor(res)


_reify.add((Term, Mapping), _reify_Term)
_reify.add((Args, Mapping), _reify_Args)
