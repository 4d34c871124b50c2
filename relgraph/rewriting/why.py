"""``rg.why``: why a relation does (or does not) rewrite a term, position by position.

At each position whose head the relation can match it says one of

* **rewrote**, with the answers the driver would take;
* **no match**, with the first part that failed and the values it saw: for a
  rule, the sub-pattern and the subterm it did not unify with (or the condition
  that was false and the bindings it saw); for a hand-written goal, the first
  conjunct of its ``lall`` with no answer (into ``conde`` branches too), with
  the values of the variables it holds;
* **refused**, with the reason an answer was dropped: not ground, the same as
  the input, or a change of type (from which type to which).

Examples
--------
>>> import relgraph as rg
>>> x, y = rg.lvars("x y")
>>> pair = rg.rule(rg.sum(x + y), rg.sum(x) + rg.sum(y), name="sum_addo")
>>> a, b, c = rg.vector("a"), rg.vector("b"), rg.vector("c")
>>> print(rg.why(pair, rg.sum(rg.Term((rg.add, a, b, c)))))
sum_addo on sum(a + b + c):
  at []: no match: add has 3 arguments in (a + b + c), the pattern 2 (use a rest variable, rg.rest)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice, tee
from typing import Any

from cons.core import ConsPair
from etuples.core import ExpressionTuple
from unification import reify, var
from unification.core import isground
from unification.variable import Var

from relgraph.exceptions import TypeCheckError
from relgraph.logic.search import run_deep
from relgraph.logic.state import initial_state
from relgraph.ops.base import Op
from relgraph.rewriting.relation import as_rule, refusal
from relgraph.rewriting.rules import PatternRelation
from relgraph.terms.infer import typeof
from relgraph.terms.printing import brief
from relgraph.terms.term import Term
from relgraph.terms.traverse import as_term, checked_term, first_positions

__all__ = ["why", "Why", "Attempt"]

ANSWERS = 8  # answers (and states per conjunct) looked at, as the driver does


@dataclass(frozen=True)
class Attempt:
    """The relation tried at one position.

    Attributes
    ----------
    position : tuple of int
        Argument indices from the root (``()`` is the root).
    term : Term
        The subterm there.
    outcome : str
        ``"rewrote"``, ``"no match"``, ``"refused"`` or ``"raised"`` (the relation's
        own code, such as a rule's condition, raised an exception here).
    reason : str
        What failed, with the values it saw (empty when it rewrote).
    results : tuple
        The answers the driver would take.
    """

    position: tuple[int, ...]
    term: Any
    outcome: str
    reason: str
    results: tuple = ()

    def __str__(self) -> str:
        if self.outcome == "rewrote":
            shown = ", ".join(brief(r) for r in self.results)
            return f"at {list(self.position)}: rewrote {brief(self.term)} to {shown}"
        return f"at {list(self.position)}: {self.outcome}: {self.reason}"


@dataclass(frozen=True)
class Why:
    """What :func:`why` found: one :class:`Attempt` per position tried."""

    relation: str
    term: Any
    attempts: tuple[Attempt, ...]
    note: str = ""

    @property
    def applies(self) -> bool:
        """Whether the relation rewrites the term somewhere."""
        return any(a.outcome == "rewrote" for a in self.attempts)

    def __str__(self) -> str:
        lines = [f"{self.relation} on {brief(self.term)}:"]
        lines += [f"  {a}" for a in self.attempts]
        if self.note:
            lines.append(f"  {self.note}")
        return "\n".join(lines)


def why(relation: Any, term: Any, *, timeout: float = 10.0) -> Why:
    """Why ``relation`` rewrites ``term`` where it does, and not elsewhere.

    Parameters
    ----------
    relation : goal constructor, rule or Rule
        Run forward; pass ``rg.reverse(relation)`` for the backward direction.
    term : Term
    timeout : float
        Seconds the diagnosis may take in all (a backward search may not end).

    Examples
    --------
    >>> import relgraph as rg
    >>> a, b, c = rg.lvars("a b c")
    >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
    >>> A, x = rg.matrix("A"), rg.vector("x")
    >>> print(rg.why(dot_distributeo, A @ rg.exp(x)))
    dot_distributeo on (A @ exp(x)):
      at []: no match: expected head add, found exp in exp(x)
    """
    term = checked_term(term, "why")
    rule = as_rule(relation)
    return run_deep(_why, rule, term, timeout=timeout)


def _why(rule: Any, term: Any) -> Why:
    heads = rule.tracks
    places = [(p, t) for t, p in first_positions(term).items() if heads is None or t.op in heads]
    note = ""
    if not places:
        names = ", ".join(sorted(getattr(h, "name", str(h)) for h in heads or ()))
        found = sorted({getattr(t.op, "name", str(t.op)) for t in first_positions(term)})
        note = f"no subterm has the head it matches ({names}); the term's heads: {found}"
    attempts = tuple(_attempt(rule, p, t) for p, t in places)
    return Why(rule.name, term, attempts, note)


def _attempt(rule: Any, position: tuple, node: Term) -> Attempt:
    rel = rule.relation
    try:
        if isinstance(rel, PatternRelation):
            answers, failure = list(islice(rel.answers(node), ANSWERS)), _rule_failure
        else:
            answers, failure = _goal_answers(rel, node), _goal_failure
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        if isinstance(rel, PatternRelation):
            reason = _rule_failure(rel, node)
        return Attempt(position, node, "raised", reason)
    if not answers:
        return Attempt(position, node, "no match", failure(rel, node))
    kept: list[Any] = []
    reasons: list[str] = []
    for result in answers:
        refusal = refusal_in_words(node, result)
        if refusal is None:
            kept.append(result)
        else:
            reasons.append(refusal)
    if kept:
        return Attempt(position, node, "rewrote", "", tuple(dict.fromkeys(kept)))
    return Attempt(position, node, "refused", "; ".join(dict.fromkeys(reasons)))


def refusal_in_words(before: Term, after: Any) -> str | None:
    """Why the driver drops ``after`` as a rewrite of ``before`` (its own test,
    :func:`~relgraph.rewriting.relation.refusal`), in words and with the types."""
    reason = refusal(before, after)
    if reason is None:
        return None
    if reason == "not ground":
        return f"the answer is not ground: {brief(after)}"
    if reason == "same as the input":
        return "the answer is the input itself"
    if reason == "changes the type":
        try:
            return f"the answer {brief(after)} changes the type from {typeof(before)} to " + str(
                typeof(after)
            )
        except TypeCheckError as exc:
            return f"the answer {brief(after)} is ill-typed: {exc}"
    return f"the answer {brief(after)} moves arithmetic across dtypes"


# -- rules -------------------------------------------------------------------------


def _rule_failure(rel: PatternRelation, node: Term) -> str:
    bindings = next(rel.left.match(node, {}), None)
    if bindings is None:
        return rel.left.explain(node, {})
    for condition in rel.conditions:
        try:
            state = next(condition.states(bindings), None)
        except Exception as exc:  # the user's condition raised: say so, at this position
            return f"condition {condition!r} raised {type(exc).__name__}: {exc}"
        if state is None:
            missing = condition.missing(bindings)
            if missing:
                return f"condition {condition!r} reads {missing}, unbound in this direction"
            seen = ", ".join(f"{v}={brief(bindings[v])}" for v in condition.vars)
            return f"condition {condition!r} is false" + (f" for {seen}" if seen else "")
        bindings = state
    return "the right-hand side has a variable nothing bound"


# -- hand-written goals --------------------------------------------------------------


def _goal_answers(rel: Callable, node: Term) -> list[Any]:
    a, b = var(), var()
    stream = rel(a, b)(initial_state({a: node}))
    return [as_term(reify(b, s)) for s in islice(stream, ANSWERS)]


def _goal_failure(rel: Callable, node: Term) -> str:
    a, b = var(), var()
    names = {a: "input", b: "output"}
    found = _first_failure(rel(a, b), initial_state({a: node}), names)
    return found or "the goal has no answer"


def _first_failure(goal: Callable, state: Any, names: dict) -> str | None:
    """The first part of ``goal`` with no answer from ``state``, described; None if
    every part answers."""
    parts = _conjuncts(goal)
    if parts is not None:
        states = [state]
        for part in parts:
            after = [s for st in states[:ANSWERS] for s in islice(part(st), ANSWERS)]
            if not after:
                inner = _first_failure(part, states[0], names)
                return inner or _describe(part, states[0], names)
            states = after
        return None
    branches = _branches(goal)
    if branches is not None:
        if any(next(iter(b(state)), None) is not None for b in branches):
            return None
        whys = [_first_failure(b, state, names) or _describe(b, state, names) for b in branches]
        return "no branch of conde answers: " + "; ".join(
            f"branch {i}: {w}" for i, w in enumerate(whys, 1)
        )
    if next(iter(goal(state)), None) is None:
        for run_by in _inner_goals(goal, state):  # ifgroundo, noto, ...: the goals they run
            found = _first_failure(run_by, state, names)
            if found is not None:
                return found
        return _describe(goal, state, names)
    return None


def _inner_goals(goal: Callable, state: Any) -> list[Callable]:
    if goal.__name__ == "ifgroundo_goal":  # relgraph.logic.goals.ifgroundo: its branch
        x = reify(_cell(goal, "x").cell_contents, state)
        known = x._ground if type(x) is Term else not isinstance(x, Var) and isground(x, {})
        return [_cell(goal, "then" if known else "otherwise").cell_contents]
    cells = getattr(goal, "__closure__", None) or ()
    values = []
    for cell in cells:
        try:
            values.append(cell.cell_contents)
        except ValueError:
            continue
    return [v for v in values if callable(v) and getattr(v, "__name__", "").endswith("_goal")]


def _cell(goal: Callable, name: str) -> Any:
    code, cells = getattr(goal, "__code__", None), getattr(goal, "__closure__", None)
    if code is None or cells is None or name not in code.co_freevars:
        return None
    return cells[code.co_freevars.index(name)]


def _goal_list(goal: Callable, kind: str) -> list | None:
    """The goals a kanren ``lall`` (``kind='lconj_seq_goal'``) or ``conde``/``lany``
    (``'ldisj_seq_goal'``) closes over, copied without consuming them."""
    if getattr(goal, "__name__", "") != kind:
        return None
    cell = _cell(goal, "goals")
    if cell is None:
        return None

    cell.cell_contents, mine = tee(cell.cell_contents)  # kanren tees it the same way
    return list(mine)


def _conjuncts(goal: Callable) -> list | None:
    return _goal_list(goal, "lconj_seq_goal")


def _branches(goal: Callable) -> list | None:
    return _goal_list(goal, "ldisj_seq_goal")


def _describe(goal: Callable, state: Any, names: dict) -> str:
    """A goal's name and the values, in ``state``, of what it closes over."""
    qual = getattr(goal, "__qualname__", repr(goal))
    name = qual.split(".<locals>")[0]
    code, cells = getattr(goal, "__code__", None), getattr(goal, "__closure__", None) or ()
    seen = []
    for key, cell in zip(code.co_freevars if code else (), cells):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if callable(value) and not isinstance(value, Term):
            if not getattr(value, "__name__", "").endswith("_goal"):
                seen.append(f"{key}={getattr(value, '__name__', value)}")
            continue
        seen.append(f"{key}={_value(value, state, names)}")
    return f"{name} failed" + (f" with {', '.join(seen)}" if seen else "")


def _value(value: Any, state: Any, names: dict) -> str:
    shown = _readable(reify(value, state))
    if isinstance(value, Var) and value in names:
        label = names[value]
        return label if shown is value else f"{label} {brief(shown, 60)}"
    return brief(shown, 60)


def _readable(x: Any) -> Any:
    """A reified value as a term where it is one (variables and all), else as is."""
    if (
        isinstance(x, ExpressionTuple)
        and not isinstance(x, Term)
        and len(x)
        and isinstance(x[0], Op)
    ):
        return Term(tuple(_readable(a) for a in x))
    if issubclass(type(x), ConsPair) and not isinstance(x, (ExpressionTuple, list, tuple)):
        head = getattr(x.car, "name", None)
        return f"{head}(...)" if head else x
    if isinstance(x, (list, tuple)) and not isinstance(x, ExpressionTuple):
        return type(x)(_readable(a) for a in x)
    return x
