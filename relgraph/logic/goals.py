"""Small goal constructors the relations are written with.

Most relations are plain unification patterns.  Some need a test on a ground
value (``c`` is a number), a computation (``c1 + c2``), or list surgery on the
arguments of a variadic Op.  These goals do that in kanren's style, like
``kanren.core.ground_order``: they look at what is known in the state, and fail
(or fall back to a relational search) when what they need is not known yet.

Examples
--------
>>> from kanren import run, var
>>> q = var()
>>> run(0, q, removeo(2, [1, 2, 3, 2], q))
([1, 3, 2], [1, 2, 3])
>>> run(0, q, removeo(q, [1, 2], [2]))
(1,)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from numbers import Number
from typing import Any

import numpy as np
from cons.core import ConsPair
from etuples.core import ExpressionTuple
from kanren import lall
from kanren.graph import mapo
from unification import reify, unify, var
from unification.core import isground

from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Args, Term
from relgraph.terms.traverse import as_term

__all__ = [
    "testo",
    "computeo",
    "eacho",
    "noto",
    "pipeo",
    "ifgroundo",
    "forward_of",
    "removeo",
    "variadico",
    "zipo",
    "has_head",
    "is_number",
    "is_scalar",
    "is_float",
    "is_constant",
]


def _ground(x: Any, S: Any) -> bool:
    if isinstance(x, (Term, Args)):
        return x._ground  # cached on the term
    if isinstance(x, ExpressionTuple) or issubclass(type(x), ConsPair):
        return as_term(x) is not None  # built by a goal: ground if it converts
    return isground(x, S)


def _known(values: Sequence[Any], S: Any) -> tuple[Any, ...] | None:
    """The values reified in ``S``, or None if one is not ground yet."""
    out = tuple(reify(v, S) for v in values)
    return out if all(_ground(v, S) for v in out) else None


def testo(predicate: Callable[..., bool], *args: Any) -> Callable:
    """Succeed once if ``args`` are known and ``predicate(*args)`` holds."""

    def testo_goal(S):
        known = _known(args, S)
        if known is not None and predicate(*known):
            yield S

    testo_goal.tests = (predicate, args)  # type: ignore[attr-defined]
    return testo_goal


def computeo(fn: Callable[..., Any], args: Sequence[Any], out: Any) -> Callable:
    """Unify ``out`` with ``fn(*args)`` once ``args`` are known; ``None`` fails."""

    def computeo_goal(S):
        known = _known(args, S)
        if known is None:
            return
        value = fn(*known)
        if value is not None:
            S = unify(out, value, S)
            if S is not False:
                yield S

    computeo_goal.computes = (fn, tuple(args), out)  # type: ignore[attr-defined]
    return computeo_goal


def pipeo(in_lv: Any, *goals: Callable) -> Callable:
    """The conjunction of ``goals``, run in reverse order when ``in_lv`` is unknown.

    A relation written as a pipeline from its input to its output runs
    backward as the same pipeline from the output to the input.
    """
    goal = ifgroundo(in_lv, lall(*goals), lall(*reversed(goals)))
    tests = getattr(goals[0], "tests", None) if goals else None
    if tests is not None and len(tests[1]) == 1 and tests[1][0] is in_lv:
        goal.guard = tests[0]  # type: ignore[attr-defined]
    last = getattr(goals[-1], "tests", None) if goals else None
    if last is not None and len(last[1]) == 1:  # what runs first backward
        goal.guard_back = last  # type: ignore[attr-defined]
    return goal


def eacho(fn: Callable[[Any], list], known: Any, unknown: Any) -> Callable:
    """Unify ``unknown`` with each term of ``fn(known)`` once ``known`` is ground.

    The backward mode of a relation whose forward mode computes: ``fn`` lists the
    (finitely many) inputs an output comes from.
    """

    def eacho_goal(S):
        value = reify(known, S)
        if _ground(value, S):
            for candidate in fn(value):
                S1 = unify(unknown, candidate, S)
                if S1 is not False:
                    yield S1

    return eacho_goal


def noto(goal: Callable) -> Callable:
    """Negation as failure: succeed (binding nothing) if ``goal`` has no answer."""

    def noto_goal(S):
        if next(iter(goal(S)), None) is None:
            yield S

    return noto_goal


def _as_list(x: Any) -> list[Any] | None:
    if isinstance(x, (list, tuple, ExpressionTuple)) or issubclass(type(x), ConsPair):
        return list(x)
    return None


def ifgroundo(x: Any, then: Callable, otherwise: Callable) -> Callable:
    """Run ``then`` if ``x`` is ground in the state, else ``otherwise``.

    A relation whose forward direction is a computation (sorting, folding)
    and whose backward direction is a search uses this to pick one.
    """

    def ifgroundo_goal(S):
        yield from (then if _ground(reify(x, S), S) else otherwise)(S)

    ifgroundo_goal.branches = (x, then, otherwise)  # type: ignore[attr-defined]
    return ifgroundo_goal


def forward_of(goal: Callable, in_var: Any, out_var: Any) -> tuple[Any, Any]:
    """What ``goal`` (a relation's goal on ``in_var`` and ``out_var``) does with a ground
    ``in_var``, where its structure says so without running it: ``(compute, guard)``.

    ``compute(term)`` is its one answer (None: no answer) when the goal is
    ``computeo(fn, [in_var], out_var)``, also as the branch ``ifgroundo`` takes (its
    first on a ground ``in_var``, its second on a fresh ``out_var``: run backward);
    ``guard(term)`` false means no answer, when it is a :func:`pipeo` that starts
    with ``testo(predicate, in_var)`` (or, run backward, ends with one on the
    relation's output).  Either is None where the goal says nothing.
    A caller that uses them gets the goal's answers without kanren's streams.

    Examples
    --------
    >>> a, b = var(), var()
    >>> compute, guard = forward_of(computeo(abs, [a], b), a, b)
    >>> compute(-2), guard
    (2, None)
    """
    guard, branches = None, getattr(goal, "branches", None)
    if branches is not None and branches[0] is in_var:
        guard, goal = getattr(goal, "guard", None), branches[1]
    elif branches is not None and branches[0] is out_var:  # a relation run backward
        back = getattr(goal, "guard_back", None)
        guard = back[0] if back is not None and back[1][0] is in_var else None
        goal = branches[2]
    computes = getattr(goal, "computes", None)
    if computes is None or len(computes[1]) != 1:
        return None, guard
    fn, (arg,), out = computes
    return (fn if arg is in_var and out is out_var else None), guard


def removeo(x: Any, seq: Any, rest: Any) -> Callable:
    """``rest`` is ``seq`` with one occurrence of ``x`` removed (any one).

    With ``seq`` known this unifies ``x`` with each element in turn, so ``x``
    may be a pattern; with ``x`` and ``rest`` known it inserts ``x`` at each
    position.  Otherwise it has no answer, where kanren's ``rembero`` would
    enumerate lists without end.
    """

    def removeo_goal(S) -> Iterator[Any]:
        seq_rf, x_rf, rest_rf = reify(seq, S), reify(x, S), reify(rest, S)
        items = _as_list(seq_rf) if _ground(seq_rf, S) else None
        if items is not None:
            x_known = _ground(x_rf, S)
            for i, item in enumerate(items):
                if x_known and not _same(x_rf, item):
                    continue
                S1 = unify(x, item, S)
                if S1 is not False:
                    S2 = unify(rest, items[:i] + items[i + 1 :], S1)
                    if S2 is not False:
                        yield S2
            return
        others = _as_list(rest_rf) if _ground(rest_rf, S) and _ground(x_rf, S) else None
        if others is None:
            return
        for i in range(len(others) + 1):
            S1 = unify(seq, others[:i] + [x_rf] + others[i:], S)
            if S1 is not False:
                yield S1

    return removeo_goal


def _same(a: Any, b: Any) -> bool:
    # Equality as unification sees it for ground values, without its dispatch;
    # terms first, so a numpy scalar never compares a term elementwise.
    if isinstance(b, (Term, Symbol, Constant)):
        return b == a
    return not isinstance(a, (Term, Symbol, Constant)) and bool(a == b)


def variadico(op: Any, args: Any, term: Any) -> Callable:
    """``term`` is ``op`` over ``args``: ``op(*args)``, or the one argument alone.

    A variadic Op (``add``, ``mul``) with one argument is that argument, so a
    relation that removes arguments (``x + 0 -> x``) ends with this goal.
    """

    def variadico_goal(S) -> Iterator[Any]:
        args_rf, term_rf = reify(args, S), reify(term, S)
        items = _as_list(args_rf) if _ground(args_rf, S) else None
        if items is not None:
            if items:
                value = items[0] if len(items) == 1 else Term((op, *items))
                S1 = unify(term, value, S)
                if S1 is not False:
                    yield S1
            return
        if _ground(term_rf, S):
            S1 = unify(args, [term_rf], S)
            if S1 is not False:
                yield S1
            if type(term_rf) is Term and term_rf._tuple[0] is op:
                S2 = unify(args, list(term_rf._tuple[1:]), S)
                if S2 is not False:
                    yield S2

    return variadico_goal


def zipo(relation: Callable, a: Any, b: Any) -> Callable:
    """``relation(a[i], b[i])`` for every ``i``: kanren's ``mapo``, once a length is known.

    When ``a`` or ``b`` is a proper list (its items may be unknown), the other
    is a list of fresh variables and this is one conjunction over the pairs,
    where ``mapo`` runs a ``conde`` over "empty or not" at every item.
    Otherwise it is ``mapo``.

    Examples
    --------
    >>> from kanren import eq, run, var
    >>> q = var()
    >>> run(0, q, zipo(lambda u, v: eq(v, (u, u)), [1, 2], q))
    ([(1, 1), (2, 2)],)
    >>> run(0, q, zipo(lambda u, v: eq(v, (u, u)), q, [(1, 1), (2, 2)]))
    ([1, 2],)
    """

    def zipo_goal(S) -> Iterator[Any]:
        a_items, b_items = _proper_list(reify(a, S)), _proper_list(reify(b, S))
        if a_items is None and b_items is None:
            yield from mapo(relation, a, b)(S)
            return
        if a_items is None and b_items is not None:
            a_items = [var() for _ in b_items]
            S = unify(a, a_items, S)
        elif b_items is None and a_items is not None:
            b_items = [var() for _ in a_items]
            S = unify(b, b_items, S)
        if (
            S is not False
            and a_items is not None
            and b_items is not None
            and len(a_items) == len(b_items)
        ):
            yield from lall(*map(relation, a_items, b_items))(S)

    return zipo_goal


def _proper_list(x: Any) -> list[Any] | None:
    """The items of a list, tuple, etuple or cons list that does not end in a variable."""
    items = []
    while issubclass(type(x), ConsPair) and not isinstance(x, ExpressionTuple):
        items.append(x.car)
        x = x.cdr
    if isinstance(x, (list, tuple, ExpressionTuple)):
        return items + list(x)
    return None


# -- predicates on ground values ---------------------------------------------------


def has_head(t: Any, op: Any) -> bool:
    """``t`` is a term applying ``op``: ``has_head(rg.exp(x), rg.exp)``."""
    return type(t) is Term and t._tuple[0] is op


def is_number(x: Any) -> bool:
    """A scalar constant: a Python or numpy number (not a bool)."""
    if type(x) is float or type(x) is int:  # the common case, without the ABC check
        return True
    return isinstance(x, (Number, np.number)) and not isinstance(x, (bool, np.bool_))


def is_constant(x: Any) -> bool:
    """A leaf that is not a symbol: a number or an array :class:`Constant`."""
    return is_number(x) or type(x) is Constant


def is_float(x: Any) -> bool:
    """A term or number of a floating dtype: ``x ** -1`` is defined on it."""
    if isinstance(x, (Term, Symbol, Constant)):
        return typeof(x).dtype.kind in "fc"
    return isinstance(x, (float, complex, np.floating, np.complexfloating))


def is_scalar(x: Any) -> bool:
    """A 0-d term (a number, a scalar symbol, or a term of ndim 0)."""
    if isinstance(x, (Term, Symbol, Constant)):
        return typeof(x).ndim == 0
    return is_number(x)
