"""Static checks of a relation set: pairs and cycles that undo each other.

Two relations fight when the right-hand side of one unifies with the left-hand
side of the other and the other's right-hand side then unifies back with the
first's left-hand side: ``x*y -> y*x`` with itself, a relation next to its
reverse, ``-x -> -1*x`` next to ``-1*x -> -x``.  An equilibrium run over such a
set oscillates (the driver stops it with :class:`OscillationError`), or one
relation silently undoes the other's work.

A rule (:func:`relgraph.rule`) gives its sides as patterns.  A hand-written
relation is asked for its most general answers, ``run(2, (a, b), rel(a, b))`` with
both unknown, within a short time; a relation whose goal needs a known input
gives none and is left out (and named as such).

A run that oscillates all the same is stopped by the driver, which names the
relations of the cycle: within a pass (a node rewritten back to one it came from,
:func:`local_oscillation`) or across passes (:func:`pass_oscillation`).

Examples
--------
>>> import relgraph as rg
>>> x, y = rg.lvars("x y")
>>> swap = rg.rule(x * y, y * x, name="commute")
>>> [f.names for f in fights([swap])]
[('commute',)]
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kanren import run
from unification import var
from unification.variable import Var

from relgraph.exceptions import QueryError
from relgraph.logic.search import run_deep
from relgraph.rewriting.patterns import same, substitute_vars
from relgraph.rewriting.relation import Matcher, Rule, as_rule
from relgraph.rewriting.rules import PatternRelation
from relgraph.terms.leaves import vector
from relgraph.terms.printing import brief, pprint
from relgraph.terms.term import Term
from relgraph.terms.traverse import as_term

__all__ = ["Fight", "CycleWarning", "fights", "sides"]

PROBE_SECONDS = 0.5  # a hand-written relation's most general answers, at most


class CycleWarning(UserWarning):
    """Relations of one rewriter that undo each other."""


@dataclass(frozen=True)
class Fight:
    """Relations that undo each other, and which one to drop.

    Attributes
    ----------
    names : tuple of str
        One name: a relation that undoes itself (``x*y -> y*x``); two: a pair.
    example : str
        A term rewritten there and back.
    drop : str
        The relation to drop (the one that makes the term bigger), and why.
    """

    names: tuple[str, ...]
    example: str
    drop: str

    def __str__(self) -> str:
        if len(self.names) == 1:
            return f"{self.names[0]!r} undoes itself ({self.example}): {self.drop}"
        a, b = self.names
        return f"{a!r} and {b!r} undo each other ({self.example}): {self.drop}"


def sides(rule: Rule, probe: bool = True) -> list[tuple[Any, Any]] | None:
    """The (left, right) patterns of a relation; None when they cannot be known."""
    rel = rule.relation
    if isinstance(rel, PatternRelation):
        return [(rel.lhs, rel.rhs)]
    if not probe:
        return None
    try:
        return run_deep(_most_general, rel, timeout=PROBE_SECONDS)
    except Exception:  # a goal that needs its input known, or did not answer in time
        return None


def _most_general(rel: Any) -> list[tuple[Any, Any]] | None:
    a, b = var(), var()
    found = run(2, (a, b), rel(a, b))
    pairs = [(_as_pattern(p), _as_pattern(q)) for p, q in found]
    pairs = [(p, q) for p, q in pairs if type(p) is Term]
    return pairs or None


def _as_pattern(x: Any) -> Any:
    """A kanren answer (etuples, cons cells with variables) as a Term pattern."""
    t = as_term(x)
    if t is not None:
        return t
    try:
        items = list(x)
    except TypeError:
        return x
    return Term(tuple(_as_pattern(i) for i in items)) if items else x


def _fresh(pattern: Any, names: dict) -> Any:
    """``pattern`` with its variables renamed apart."""
    return substitute_vars(pattern, lambda v: names.setdefault(v, var()))


def _undoes(first: tuple, second: tuple) -> tuple[str, Any] | None:
    """A term ``first`` rewrites and ``second`` rewrites back (printed, and as a
    pattern), or None."""
    l1, r1 = first
    if _clash(second[0], r1):  # most pairs: no renaming needed to say no
        return None
    renamed: dict = {}
    l2, r2 = _fresh(second[0], renamed), _fresh(second[1], renamed)
    s = _unify(l2, r1, {})  # the renamed side first, so the first's names are kept
    if s is not None:
        s = _unify(_reify(r2, s), _reify(l1, s), s)
    if s is None:
        return None
    before, after = _reify(l1, s), _reify(r1, s)
    return f"{_show(before)} -> {_show(after)} -> {_show(before)}", before


def _clash(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` cannot unify for their heads or arities alone."""
    if type(a) is not Term or type(b) is not Term:
        return False
    x, y = a._tuple, b._tuple
    return len(x) != len(y) or (not _is_var(x[0]) and not _is_var(y[0]) and not same(x[0], y[0]))


# A small unifier with the occurs check (kanren's has none: x = f(x) would make the
# reified pattern infinite).


def _is_var(x: Any) -> bool:
    """A logic variable: an instance of a Var class (Var's own isinstance, which also
    asks kanren's global variables, costs about 1 us; patterns hold none of those)."""
    kind = type(x)
    known = _VAR_TYPES.get(kind)
    if known is None:
        known = _VAR_TYPES[kind] = issubclass(kind, Var)
    return known


_VAR_TYPES: dict[type, bool] = {}


def _walk(x: Any, s: dict) -> Any:
    while _is_var(x) and x in s:
        x = s[x]
    return x


def _occurs(v: Any, x: Any, s: dict) -> bool:
    x = _walk(x, s)
    if _is_var(x):
        return x == v
    return type(x) is Term and not x._ground and any(_occurs(v, a, s) for a in x._tuple)


def _unify(a: Any, b: Any, s: dict) -> dict | None:
    a, b = _walk(a, s), _walk(b, s)
    a_var, b_var = _is_var(a), _is_var(b)
    if a_var and b_var and a == b:
        return s
    if a_var or b_var:
        v, x = (a, b) if a_var else (b, a)
        return None if _occurs(v, x, s) else {**s, v: x}
    if type(a) is Term and type(b) is Term:
        if len(a._tuple) != len(b._tuple):
            return None
        for x, y in zip(a._tuple, b._tuple):
            step = _unify(x, y, s)
            if step is None:
                return None
            s = step
        return s
    return s if same(a, b) else None


def _reify(x: Any, s: dict) -> Any:
    x = _walk(x, s)
    if type(x) is Term and not x._ground:
        return Term(tuple(_reify(a, s) for a in x._tuple))
    return x


def _show(p: Any) -> str:
    try:
        return pprint(p)
    except Exception:
        return repr(p)


def _size(p: Any) -> int:
    """Nodes and leaves of a pattern."""
    return 1 + sum(_size(a) for a in p._tuple[1:]) if type(p) is Term else 1


def fights(relations: Iterable[Any], *, probe: bool = True) -> list[Fight]:
    """The relations of a set that undo themselves or each other.

    Parameters
    ----------
    relations : goal constructors, rules or Rules
    probe : bool
        Run hand-written relations to learn their sides (rules are read as is).
        A fight found from a hand-written relation's most general answers is kept
        only if the relations really rewrite an instance of it there and back.
    """
    rules = list({r.name: r for r in map(as_rule, relations)}.values())
    found = [
        Fight((r1.name, r2.name), "one is the other reversed", f"drop {r2.name!r}")
        for i, r1 in enumerate(rules)
        for r2 in rules[i + 1 :]
        if _reverses(r1, r2)
    ]
    probed = [(r, sides(r, probe)) for r in rules]
    known = [(r, s) for r, s in probed if s]
    for i, (r1, s1) in enumerate(known):
        for r2, s2 in known[i:]:
            if _reverses(r1, r2):
                continue
            for p in s1:
                example = next((e for q in s2 if (e := _undoes(p, q)) is not None), None)
                if example is not None and _confirmed(r1, r2, example):
                    found.append(_fight(r1, s1[0], r2, s2[0], example[0]))
                    break
    return found


def _reverses(r1: Rule, r2: Rule) -> bool:
    """Whether one is ``rg.reverse`` of the other."""
    a, b = r1.relation, r2.relation
    return getattr(a, "__wrapped__", None) is b or getattr(b, "__wrapped__", None) is a


def _confirmed(r1: Rule, r2: Rule, example: tuple) -> bool:
    """Rules are taken at their word; for a hand-written relation, an instance of the
    example (its variables made float64 vectors) must go there and back."""
    _, before = example
    if isinstance(r1.relation, PatternRelation) and isinstance(r2.relation, PatternRelation):
        return True

    symbols: dict = {}
    term = substitute_vars(before, lambda v: symbols.setdefault(v, vector(f"v{len(symbols)}")))
    try:
        there = next(Matcher(r1).answers(term), None)
        return there is not None and any(b == term for b in Matcher(r2).answers(there))
    except Exception:
        return False


def _fight(r1: Rule, s1: tuple, r2: Rule, s2: tuple, example: str) -> Fight:
    if r1 is r2:
        return Fight((r1.name,), example, "run it in rg.explore, not in an equilibrium")
    grows1, grows2 = _size(s1[1]) - _size(s1[0]), _size(s2[1]) - _size(s2[0])
    if grows1 != grows2:
        loser, why = (r1, "makes terms bigger") if grows1 > grows2 else (r2, "makes terms bigger")
    else:
        loser, why = r2, "comes later"
    return Fight((r1.name, r2.name), example, f"drop {loser.name!r} (it {why})")


def check_relations(
    relations: Sequence[Any], *, name: str, strict: bool = False, probe: bool = True
) -> list[Fight]:
    """Warn (or, ``strict``, raise :class:`~relgraph.exceptions.QueryError`) about the
    fights in a rewriter's relations; return them."""

    found = fights(relations, probe=probe)
    for fight in found:
        if strict:
            raise QueryError(f"{name}: {fight}")
        warnings.warn(f"{name}: {fight}", CycleWarning, stacklevel=3)
    return found


# -- cycles found while a run sweeps -----------------------------------------------


def waiting_on(waiting: dict[int, list[int]], key: int) -> set[int]:
    """The nodes that take their value from ``key``, directly or through others."""
    found, todo = set(), [key]
    while todo:
        k = todo.pop()
        if k not in found:
            found.add(k)
            todo.extend(waiting.get(k, ()))
    return found


def rewrite_cycle(
    waiting: dict[int, list[int]], made_by: dict[int, tuple[str, ...]], key: int, back: int
) -> list[str]:
    """The relations that rewrote ``back`` step by step into ``key`` (oldest first)."""
    came_from: dict[int, int] = {key: key}
    todo = [key]
    while todo and back not in came_from:
        k = todo.pop()
        for earlier in waiting.get(k, ()):
            if earlier not in came_from:
                came_from[earlier] = k
                todo.append(earlier)
    names: list[str] = []
    k = back
    while k != key:  # from the oldest node towards the newest
        k = came_from[k]
        names.extend(made_by.get(k, ()))
    return names


def local_oscillation(
    name: str, node: Term, back: Term, cycle: list[str]
) -> tuple[str, tuple[str, ...]]:
    """The message and relation names for ``node`` rewritten back to ``back`` in one
    pass of the rewriter ``name``, through the relations ``cycle``."""
    names = tuple(dict.fromkeys(cycle))
    message = (
        f"{name}: relations oscillate: {brief(node)} was rewritten back "
        f"to {brief(back)}; relations in the cycle: {', '.join(names)}"
    )
    return message, names


def pass_oscillation(
    name: str, pass_log: list[dict[str, int]], first_pass: int, last_pass: int
) -> tuple[str, tuple[str, ...]]:
    """The message and relation names for the term after pass ``last_pass`` being
    the term after ``first_pass`` (``pass_log``: the relations each pass applied)."""
    names = tuple(dict.fromkeys(n for log in pass_log[first_pass:last_pass] for n in log))
    message = (
        f"{name}: relations oscillate: the term after pass {last_pass} "
        f"is the term after pass {first_pass}; relations in the cycle: {', '.join(names)}"
    )
    return message, names
