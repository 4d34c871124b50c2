"""``rg.rule``: a relation written as a pattern pair, ``lhs <-> rhs``.

A rule is a kanren goal constructor like any hand-written relation:
``rule(a, b)`` is a goal, so ``kanren.run`` runs it both ways and databases,
``rg.rewrite``, ``rg.reverse`` and ``rg.explore`` take it.  Because it knows its
patterns, the driver also matches it directly (:meth:`PatternRelation.answers`),
without building kanren streams, and tracks it by its head Op.

Examples
--------
>>> import relgraph as rg
>>> from kanren import run, var
>>> x = rg.lvar("x")
>>> exp_log = rg.rule(rg.exp(rg.log(x)), x, name="exp_logo")
>>> v = rg.vector("v")
>>> q = var()
>>> run(0, q, exp_log(rg.exp(rg.log(v)), q))
(v,)
>>> [rg.pprint(t) for t in run(0, q, exp_log(q, v))]
['exp(log(v))']
>>> A, xs = rg.lvar("A", ndim=2), rg.rest("xs")
>>> dist = rg.rule(A @ rg.add(xs), rg.add(A @ xs), name="dist")
>>> M, y, z = rg.matrix("M"), rg.vector("y"), rg.vector("z")
>>> rg.pprint(rg.rewrite(M @ (v + y + z), dist))
'((M @ v) + (M @ y) + (M @ z))'
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from unification import reify, unify, var
from unification.core import isground
from unification.variable import Var

from relgraph.rewriting.declarations import BOTH
from relgraph.rewriting.patterns import (
    PApp,
    PLit,
    PRest,
    PVar,
    compile_pattern,
    quick_test,
    substitute_vars,
    variables,
)
from relgraph.rewriting.promotion import regrouping
from relgraph.terms.lvars import LVar, is_lvar
from relgraph.terms.printing import pprint
from relgraph.terms.term import Term

__all__ = ["rule", "PatternRelation", "Condition"]


class Condition:
    """A ``when=`` condition: a predicate on named variables, or a kanren goal."""

    def __init__(self, when: Any, names: dict[str, LVar], rule_name: str):
        self.source = when
        found = _parameters(when)
        params = found if found is not None else []
        self.goal = found is None or _is_goal(when, params)
        if not self.goal and not set(params) <= set(names):
            raise ValueError(
                f"rule {rule_name!r}: when={when!r} names {params}, which are not all "
                f"variables of the rule ({sorted(names)}); a predicate's parameters are "
                "named after the variables it reads"
            )
        self.vars = [] if self.goal else [names[p] for p in params]
        self.rule_name = rule_name

    def __repr__(self) -> str:
        return getattr(self.source, "__name__", repr(self.source))

    def states(self, b: dict) -> Iterator[dict]:
        """The bindings under which the condition holds (none if it is false)."""
        if not self.goal:
            if all(v in b for v in self.vars) and self.source(*(b[v] for v in self.vars)):
                yield b
            return
        stream = self.source(dict(b))
        if isinstance(stream, (bool, type(None))):
            raise TypeError(
                f"rule {self.rule_name!r}: when={self!r} returned {stream!r}: a predicate's "
                "parameters must be named after the rule's variables, a goal must yield states"
            )
        for state in stream:
            yield {**b, **{v: reify(v, state) for v in state if is_lvar(v)}}

    def missing(self, b: dict) -> list[LVar]:
        """The variables the predicate reads that ``b`` leaves unbound."""
        return [v for v in self.vars if v not in b]


def _is_goal(fn: Any, params: list[str]) -> bool:
    """A kanren goal: a function of the search state (``eq(x, 0)``, ``testo(...)``)."""
    named = "goal" in getattr(fn, "__qualname__", "")
    return len(params) == 1 and (named or params[0] in ("S", "s", "state"))


def _parameters(fn: Any) -> list[str] | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in sig.parameters.values() if p.kind in kinds]


class PatternRelation:
    """The relation of :func:`rule`: a goal constructor that knows its patterns.

    Attributes
    ----------
    lhs, rhs : term patterns
    __name__ : str
    conditions : tuple of Condition
    tracks : frozenset of Op or None
        The head of ``lhs``, for the driver's index.
    windows : bool
        False when ``lhs`` takes any number of arguments itself (a free rest
        variable, as in ``x + 0 + rest``); a rest whose every item must match a
        pattern (``add(A @ xs)``) is also tried on runs of arguments.
    directions : tuple of str
        ``("forward", "backward")``, or ``("forward",)`` when ``rhs`` leaves a
        variable of ``lhs`` unknown.
    depth : int
        How many levels of a term the left-hand side looks at.
    """

    def __init__(self, lhs: Any, rhs: Any, name: str, when: Sequence[Any]):
        self.lhs, self.rhs, self.__name__ = lhs, rhs, name
        self.left, self.right = compile_pattern(lhs), compile_pattern(rhs)
        names = {v.name: v for v in variables(lhs) | variables(rhs)}
        self.conditions = tuple(Condition(w, names, name) for w in when)
        lhs_vars, rhs_vars = variables(lhs), variables(rhs)
        unbound = rhs_vars - lhs_vars
        if unbound and not any(c.goal for c in self.conditions):
            raise ValueError(
                f"rule {name!r}: {_names(unbound)} on the right-hand side "
                "is not in the left-hand side (nothing would bind it)"
            )
        self.directions: tuple[str, ...] = BOTH if lhs_vars <= rhs_vars else ("forward",)
        self._reversed: PatternRelation | None = None
        self._index()

    def _index(self) -> None:
        """What the driver reads of the left-hand side: head, windows, depth, filter."""
        left = self.left
        self.tracks = frozenset([self.lhs._tuple[0]]) if isinstance(left, PApp) else None
        # A free rest (``x + 0 + rest``) matches a sum of any length itself; a rest
        # every item of which must match (``add(A @ xs)``) also matches its runs.
        self.windows = not (isinstance(left, PApp) and isinstance(left.rest, PRest))
        self.depth = getattr(left, "depth", 0)
        self.quick = quick_test(left)

    def __repr__(self) -> str:
        return f"rule({pprint(self.lhs)} -> {pprint(self.rhs)}, name={self.__name__!r})"

    def __call__(self, a: Any, b: Any) -> Callable:
        def rule_goal(S):
            a_rf, b_rf = reify(a, S), reify(b, S)
            if _ground(a_rf):
                if "forward" in self.directions:
                    yield from self._solve(self.left, self.right, a_rf, b, S)
            elif _ground(b_rf):
                if "backward" in self.directions:  # not for a rule marked forward_only
                    yield from self._solve(self.right, self.left, b_rf, a, S)
            else:
                yield from self._most_general(a, b, S)

        return rule_goal

    def _solve(self, source: Any, target: Any, term: Any, other: Any, S: Any) -> Iterator:
        for b in self.bindings(source, term):
            out = target.build(b)
            if out is None:  # a variable the source does not bind: kanren's fresh one
                out = _with_fresh(target, b)
            S1 = unify(other, out, S)
            if S1 is not False:
                yield S1

    def _most_general(self, a: Any, b: Any, S: Any) -> Iterator:
        if self.conditions or _has_rest(self.left) or _has_rest(self.right):
            return
        fresh = {v: var() for v in variables(self.lhs) | variables(self.rhs)}
        S1 = unify(a, substitute_vars(self.lhs, fresh.__getitem__), S)
        if S1 is not False:
            S2 = unify(b, substitute_vars(self.rhs, fresh.__getitem__), S1)
            if S2 is not False:
                yield S2

    def bindings(self, source: Any, term: Any) -> Iterator[dict]:
        """Bindings of ``source`` (``self.left`` or ``self.right``) on ``term`` that
        satisfy every condition."""
        for b in self._matched(source, term):
            yield from self._conditions(b, 0)

    def _matched(self, source: Any, term: Any) -> Iterable[dict]:
        """``source.match(term)``; for a rule marked :func:`~relgraph.reassociates` (a
        distribution) with float sums as it reads them: flat, any argument first."""
        if not getattr(self, "reassociates", False):
            return source.match(term, {})
        with regrouping([self]):
            return list(source.match(term, {}))

    def _conditions(self, b: dict, i: int) -> Iterator[dict]:
        if i == len(self.conditions):
            yield b
            return
        for b1 in self.conditions[i].states(b):
            yield from self._conditions(b1, i + 1)

    def answers(self, term: Any) -> Iterator[Any]:
        """The terms ``term`` rewrites to (forward), lazily; ``None`` when an answer
        leaves a variable unbound.  What the driver runs instead of the goal."""
        quick = self.quick
        if quick is not None and not quick(term):
            return
        yield from self.built(self._matched(self.left, term))

    def built(self, matches: Iterable[dict]) -> Iterator[Any]:
        """The right-hand side under each of ``matches`` (bindings of the left-hand
        side: its own match on a term, or the e-graph's matcher's) that satisfies the
        conditions."""
        for b in matches:
            for b1 in self._conditions(b, 0):
                yield self.right.build(b1)

    def reversed(self) -> PatternRelation:
        """The rule with its sides swapped (what :func:`relgraph.reverse` returns),
        made once: a rule does not change."""
        if self._reversed is not None:
            return self._reversed
        rel = PatternRelation.__new__(PatternRelation)
        rel.__dict__.update(self.__dict__)
        rel._reversed = self
        rel.lhs, rel.rhs, rel.left, rel.right = self.rhs, self.lhs, self.right, self.left
        rel.__name__ = f"reverse({self.__name__})"
        vars(rel)["__wrapped__"] = self  # as relgraph.reverse marks a reversed goal
        swap = {"forward": "backward", "backward": "forward"}
        rel.directions = tuple(d for d in BOTH if swap[d] in self.directions)
        rel._index()
        self._reversed = rel
        return rel


def _names(vs: set) -> str:
    return ", ".join(sorted(str(v) for v in vs))


def _ground(x: Any) -> bool:
    if type(x) is Term:
        return x._ground
    return not isinstance(x, Var) and isground(x, {})


def _with_fresh(target: Any, b: dict) -> Any:
    """``target`` built from ``b``, with a fresh logic variable for each unbound one."""
    if isinstance(target, PVar):
        return b.get(target.var, var())
    if isinstance(target, PLit):
        return target.value
    if isinstance(target, PApp) and target.rest is None:
        return Term((target.op, *(_with_fresh(a, b) for a in target.args)))
    return var()


def _has_rest(p: Any) -> bool:
    return isinstance(p, PApp) and (p.rest is not None or any(_has_rest(a) for a in p.args))


def rule(
    lhs: Any,
    rhs: Any,
    *,
    name: str | None = None,
    when: Any = None,
) -> PatternRelation:
    """A relation from a pattern pair: ``lhs`` rewrites to ``rhs``, and back.

    Parameters
    ----------
    lhs, rhs : pattern
        Terms built from :func:`relgraph.terms.lvars`, :func:`relgraph.lvar` (typed) and
        :func:`relgraph.rest` variables, symbols and constants, with the
        operators and functions of terms.  Every variable of ``rhs`` must occur
        in ``lhs`` (or be bound by a ``when`` goal).
    name : str, optional
        Shown in reports; defaults to ``"lhs -> rhs"``.
    when : predicate, goal, or a list of them
        Conditions on the bound variables, checked in either direction.  A
        predicate's parameters are named after the variables it reads
        (``when=lambda c: c > 0``); a kanren goal is run on the bindings and may
        bind more variables (``when=computeo(...)``).

    Examples
    --------
    >>> import relgraph as rg
    >>> x = rg.lvar("x")
    >>> sqrt_sq = rg.rule(rg.sqrt(x * x), abs(x), name="sqrt_squareo")
    >>> rg.pprint(rg.rewrite(rg.sqrt(rg.vector("v") * rg.vector("v")), sqrt_sq))
    'abs(v)'
    >>> c = rg.lvar("c", constant=True)
    >>> pos = rg.rule(rg.sign(c * x), rg.sign(x), when=lambda c: c > 0, name="sign_poso")
    >>> rg.pprint(rg.rewrite(rg.sign(2.0 * rg.vector("v")), pos))
    'sign(v)'
    >>> rg.rewrite(rg.sign(-2.0 * rg.vector("v")), pos) == rg.sign(-2.0 * rg.vector("v"))
    True
    """
    if when is None:
        conditions: list[Any] = []
    elif isinstance(when, (list, tuple)):
        conditions = list(when)
    else:
        conditions = [when]
    for c in conditions:
        if not callable(c):
            raise TypeError(f"when= must be a predicate or a kanren goal, got {c!r}")
    if name is not None and (not isinstance(name, str) or not name):
        raise ValueError(f"a rule's name must be a non-empty string, got {name!r}")
    label = name or f"{pprint(lhs)} -> {pprint(rhs)}"
    return PatternRelation(lhs, rhs, label, conditions)
