"""Relations: kanren goal constructors ``rel(a, b)``, and how they are applied.

A relation is written with no metadata; :class:`Rule` adds a name and the head
Ops it can match (``tracks``) when it is registered.  :class:`Matcher` builds
the relation's goal *once*, over two fresh logic variables, and then runs it on
each subterm by starting from the state ``{in: subterm}``: building kanren
goals is the expensive part of a match, and the goal does not depend on the
subterm.
"""

from __future__ import annotations

import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kanren.assoccomm import associative, commutative
from unification import reify, var

import relgraph.logic.unify_hooks  # noqa: F401  (kanren sees terms through these hooks)
from relgraph.exceptions import RelationError, TypeCheckError
from relgraph.logic.goals import forward_of
from relgraph.logic.search import run_deep
from relgraph.logic.state import initial_state
from relgraph.rewriting.declarations import ANY_CONSTANT, BOTH, reassociates
from relgraph.rewriting.promotion import keeps_values, run_starts
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Symbol
from relgraph.terms.printing import brief
from relgraph.terms.term import Term
from relgraph.terms.traverse import as_term, substitute, subterms
from relgraph.terms.types import TensorType

__all__ = [
    "REJECTED",
    "Rule",
    "as_rule",
    "reverse",
    "produced_heads",
    "directions_of",
    "Matcher",
    "Plan",
    "rewrites",
    "Step",
    "steps",
    "keeps_type",
    "same_type",
    "positions",
    "replace_at",
]

Relation = Callable[[Any, Any], Callable]


@dataclass(frozen=True)
class Rule:
    """A relation with the metadata a driver uses.

    Attributes
    ----------
    relation : callable
        The goal constructor ``relation(a, b)``.
    name : str
        Used in reports and error messages.
    tracks : frozenset of Op, optional
        The head Ops of the terms the relation can rewrite; ``None`` means any.
    windows : bool
        Also try the relation on runs of arguments of an associative Op
        (``x + y + z`` has the runs ``x + y`` and, in integer arithmetic, ``y + z``).
        ``False`` for a relation that handles any number of arguments itself
        (``x + 0 -> x``).
    """

    relation: Relation
    name: str
    tracks: frozenset | None = None
    windows: bool = True

    def __call__(self, a: Any, b: Any) -> Callable:
        return self.relation(a, b)


def as_rule(
    relation: Rule | Relation,
    name: str | None = None,
    tracks: Iterable | None = None,
    windows: bool | None = None,
) -> Rule:
    """Wrap a goal constructor as a :class:`Rule` (a ``Rule`` is returned as is).

    Examples
    --------
    >>> import relgraph as rg
    >>> a, b, c = rg.lvars("a b c")
    >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
    >>> as_rule(dot_distributeo).name
    'dot_distributeo'
    """
    if isinstance(relation, Rule) and name is None and tracks is None and windows is None:
        return relation
    if isinstance(relation, Rule):
        name = name or relation.name
        tracks = tracks if tracks is not None else relation.tracks
        windows = windows if windows is not None else relation.windows
        relation = relation.relation
    if not callable(relation):
        raise TypeError(f"a relation must be a goal constructor rel(a, b), got {relation!r}")
    name = name or getattr(relation, "__name__", None) or repr(relation)
    # A rule (rg.rule) knows the head it matches, and whether it takes any number of
    # arguments itself.
    tracks = tracks if tracks is not None else getattr(relation, "tracks", None)
    windows = windows if windows is not None else getattr(relation, "windows", True)
    tracked = None if tracks is None else frozenset(tracks)
    return Rule(relation, name, tracked, windows)


def reverse(relation: Rule | Relation) -> Relation:
    """The same relation with its two arguments swapped: it runs backward.

    Examples
    --------
    >>> import relgraph as rg
    >>> a, b, c = rg.lvars("a b c")
    >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
    >>> reverse(dot_distributeo).__name__
    'reverse(dot_distributeo)'
    """
    rule = as_rule(relation)
    if hasattr(rule.relation, "reversed"):  # a pattern rule: its sides swapped
        return rule.relation.reversed()

    def reversed_relation(a: Any, b: Any) -> Any:
        return rule.relation(b, a)

    reversed_relation.__name__ = f"reverse({rule.name})"
    swap = {"forward": "backward", "backward": "forward"}
    directions = tuple(d for d in BOTH if swap[d] in directions_of(rule))
    vars(reversed_relation).update(
        __wrapped__=rule.relation, reverses=rule.relation, directions=directions
    )
    if rule.tracks is not None:  # what it rewrote forward is what it produces now
        vars(reversed_relation)["produces"] = rule.tracks
    if getattr(rule.relation, "reassociates", False):
        reassociates(reversed_relation)
    return reversed_relation


def produced_heads(relation: Rule | Relation) -> frozenset | None:
    """The head Ops a relation's outputs can have (None: any; see :func:`produces`)."""
    inner = relation.relation if isinstance(relation, Rule) else relation
    return getattr(inner, "produces", None)


def directions_of(relation: Rule | Relation) -> tuple[str, ...]:
    """The directions a relation runs in: ``("forward", "backward")`` unless marked.

    >>> import relgraph as rg
    >>> a, b, c = rg.lvars("a b c")
    >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
    >>> directions_of(dot_distributeo)
    ('forward', 'backward')
    """
    inner = relation.relation if isinstance(relation, Rule) else relation
    return getattr(inner, "directions", BOTH)


#: :meth:`Matcher.shortcut`'s answer where the relation's own test fails.
REJECTED = object()


class Matcher:
    """A rule's goal, built once, applied to one subterm at a time.

    Parameters
    ----------
    rule : Rule
    max_answers : int
        How many answers of the goal's stream to look at per subterm before
        giving up (a reversed relation may yield endless unground answers).
    label : str, optional
        Said after the relation's name when its goal raises (the direction it runs in).
    """

    def __init__(self, rule: Rule, max_answers: int = 8, label: str | None = None):
        self.rule = rule
        self.max_answers = max_answers
        self.named = f"relation {rule.name!r}" + (f" ({label})" if label else "")
        # Answers refused, by reason, over this matcher's life (reports take differences).
        self.dropped: Counter[str] = Counter()
        self.direct = getattr(rule.relation, "answers", None)
        if not callable(self.direct):
            self.direct = None
        # A rule's filter on fixed heads and arities, run before anything else.
        self.quick = getattr(rule.relation, "quick", None) if self.direct else None
        # The goal (built once per relation: a goal holds no state; a reversed one is
        # its relation's with the variables swapped), and what it says of itself when
        # run forward: its one computed answer, or a test that fails first, taken
        # without kanren's streams.
        self.goal, self.in_var, self.out_var = _goal_of(rule)
        self.compute, self.guard = forward_of(self.goal, self.in_var, self.out_var)
        # declarations.needs_operand: an operand in each set of heads
        self.needs: tuple[frozenset, ...] | None = getattr(rule.relation, "needs_operand", None)

    def answers(
        self,
        term: Any,
        known: Callable[[Any], bool] | None = None,
        results: Iterator[Any] | None = None,
    ) -> Iterator[Term]:
        """Ground results of the relation on ``term`` that differ from it (and for which
        ``known``, if given, is false: results the caller has, not checked again).
        ``results``, if given, are the relation's results on ``term`` found by the
        caller (the e-graph matches rules itself): they are checked the same way.

        An exception inside the goal is raised as :class:`RelationError` naming the
        relation and ``term``; an ill-typed term built by the goal means the relation
        does not apply (numpy has no such program).  Refused answers are counted in
        ``dropped`` by reason.  A rule (:func:`relgraph.rule`) is matched directly,
        without running its goal.
        """
        try:
            found = self._results(term) if results is None else results
            yield from self._checked(term, found, known)
        except TypeCheckError:
            self.dropped["builds an ill-typed term"] += 1
        except (RelationError, KeyboardInterrupt):
            raise
        except Exception as exc:
            raise RelationError(
                f"{self.named} raised {type(exc).__name__}: {exc} on {brief(term)}",
                self.rule.name,
                term,
            ) from exc

    def first(self, term: Any) -> Term | None:
        """``next(self.answers(term), None)``, with :meth:`shortcut` taken first."""
        results = self.shortcut(term)
        if results is REJECTED:
            return None
        return next(self.answers(term, results=results), None)

    def shortcut(self, term: Any) -> Any:
        """What the relation's own test, or its computed answer, says of ``term``
        without kanren's streams: :data:`REJECTED`, the computed results (to pass to
        :meth:`answers`), or None (run the goal).  Most attempts end here, for the
        cost of a function call; an error is raised, named, by :meth:`answers`."""
        if self.direct is not None or type(term) is not Term or not term._ground:
            return None
        try:
            if self.guard is not None and not self.guard(term):
                return REJECTED
            value = self.compute(term) if self.compute is not None else term
        except Exception:
            return None  # answers runs them again and names the error
        if value is None:
            return REJECTED
        if value is term and self.compute is None:
            return None  # the test passed: the goal answers
        return (as_term(v) for v in (value,))  # as_term inside answers: errors named

    def rejects(self, term: Any) -> bool:
        """Whether the relation says no to ``term`` without running: no operand has a
        head it needs (:func:`needs_operand`), or its own test (``testo`` opening a
        goal's ``pipeo``) fails, asked as :meth:`shortcut` asks it; False where it
        cannot say (a rule, no test, a term with logic variables, a test that raises:
        the goal runs then and names the error)."""
        if self.direct is not None or type(term) is not Term or not term._ground:
            return False
        try:
            if self.needs is not None and not has_operands(term, self.needs):
                return True
            return self.guard is not None and not self.guard(term)
        except Exception:
            return False

    def _results(self, term: Any) -> Iterator[Any]:
        if self.direct is not None:
            return self.direct(term)
        short = self.shortcut(term)
        if short is REJECTED:
            return iter(())
        if short is not None:
            return short
        stream = self.goal(initial_state({self.in_var: term}))
        return (as_term(reify(self.out_var, s)) for s in stream)

    def _checked(self, term: Any, results: Iterator[Any], known: Any = None) -> Iterator[Term]:
        for count, result in enumerate(results, 1):
            if known is not None and result is not None and known(result):
                if count >= self.max_answers:
                    return
                continue
            reason = refusal(term, result)
            if reason is None:
                yield result
            else:
                self.dropped[reason] += 1
            if count >= self.max_answers:
                return


#: Goals by relation (a plain goal constructor: a rule's goal holds the rule, which
#: would keep it alive here), with their input and output variables.
_GOALS: weakref.WeakKeyDictionary[Any, tuple] = weakref.WeakKeyDictionary()


def has_operand_in(term: Term, heads: frozenset) -> bool:
    """Whether an operand of ``term`` is a Term with one of ``heads``, or a constant
    where :data:`~relgraph.rewriting.declarations.ANY_CONSTANT` is among them."""
    for a in term._tuple:  # the head is an Op: no Term
        if type(a) is Term and a._tuple[0] in heads:
            return True
    if ANY_CONSTANT in heads:
        nin = term._tuple[0].nin
        operands = term._tuple[1:] if nin is None else term._tuple[1 : 1 + nin]
        return any(type(a) is not Term and not isinstance(a, Symbol) for a in operands)
    return False


class Plan:
    """What the equilibrium driver tries a node with one head with: the indices of
    the rules whose ``tracks`` admit the head, those that also take runs of arguments,
    a test a node must pass for any of them to apply (or None), and how many nodes
    that test rejected (an attempt of each rule, counted when reported)."""

    __slots__ = ("candidates", "windows", "passes", "rejected")

    def __init__(self, candidates: tuple[int, ...], windows: tuple[int, ...],
                 passes: Callable[[Term], bool] | None):  # fmt: skip
        self.candidates, self.windows, self.passes = candidates, windows, passes
        self.rejected = 0


def has_operands(term: Term, needs: tuple[frozenset, ...]) -> bool:
    """Whether ``term`` has an operand in each of ``needs`` (:func:`has_operand_in`)."""
    if len(needs) == 1:
        return has_operand_in(term, needs[0])
    return _all_in(needs, operand_kinds(term))


def _all_in(needs: tuple[frozenset, ...], kinds: set) -> bool:
    """Whether ``kinds`` (:func:`operand_kinds`) meets each set of heads of ``needs``."""
    for heads in needs:  # a plain loop: a generator per call cost more (once per node)
        if heads.isdisjoint(kinds):
            return False
    return True


def operand_kinds(term: Term) -> set:
    """The heads of ``term``'s operands, and ANY_CONSTANT if one is a constant."""
    items = term._tuple
    nin = items[0].nin
    kinds = set()
    for i, a in enumerate(items[1:]):  # constants among the operands, not parameters
        if type(a) is Term:
            kinds.add(a._tuple[0])
        elif (nin is None or i < nin) and not isinstance(a, Symbol):
            kinds.add(ANY_CONSTANT)
    return kinds


def shared_test(matchers: Iterable[Matcher]) -> Callable[[Term], bool] | None:
    """A test that fails only on terms that each of ``matchers`` rejects without
    running (:meth:`Matcher.rejects`, a rule's filter): each needs an operand with one
    of some heads (:func:`needs_operand`), or all are rules of one shape.  None where
    there is no such test; on no matchers, a test that always fails."""
    matchers = list(matchers)
    quicks = {m.quick for m in matchers}
    if len(quicks) == 1 and None not in quicks:  # rules of one shape share their filter
        return quicks.pop()
    needs: list[tuple[frozenset, ...]] = []
    for m in matchers:
        if m.needs is None or m.direct is not None:
            return None
        if m.needs not in needs:
            needs.append(m.needs)
    # an operand in one set of heads of each (a constant's the dearer test: last)
    first = frozenset().union(*(min(n, key=lambda heads: ANY_CONSTANT in heads) for n in needs))
    if all(len(n) == 1 for n in needs):  # that is the whole test
        return lambda t: not t._ground or has_operand_in(t, first)

    def any_needs(t: Term) -> bool:  # an operand in each set of heads of one of needs
        if not t._ground:
            return True
        if not has_operand_in(t, first):
            return False
        kinds = operand_kinds(t)
        for sets in needs:
            if _all_in(sets, kinds):
                return True
        return False

    return any_needs


def _goal_of(rule: Rule) -> tuple:
    """``(goal, in_var, out_var)`` of ``rule`` (see :class:`Matcher`), or
    RelationError naming the relation."""
    relation = getattr(rule.relation, "reverses", rule.relation)
    cache = not hasattr(relation, "answers")
    try:
        found = _GOALS.get(relation) if cache else None
    except TypeError:  # a callable that takes no weak reference
        found, cache = None, False
    if found is None:
        found = _built(rule, relation)
        if cache:
            _GOALS[relation] = found
    goal, a, b = found
    return (goal, b, a) if relation is not rule.relation else found


def _built(rule: Rule, relation: Any) -> tuple:
    a, b = var(), var()
    try:
        goal = relation(a, b)
    except Exception as exc:
        raise RelationError(
            f"relation {rule.name!r} could not build its goal: {type(exc).__name__}: {exc} "
            "(a relation is a goal constructor rel(a, b) of two arguments)",
            rule.name,
            None,
        ) from exc
    if not callable(goal):
        raise RelationError(
            f"relation {rule.name!r} returned {goal!r}, not a kanren goal", rule.name, None
        )
    return goal, a, b


def refusal(before: Term, after: Any) -> str | None:
    """Why ``after`` may not replace ``before`` (None if it may)."""
    if after is None:
        return "not ground"
    if before == after:
        return "same as the input"
    if not keeps_type(before, after):
        return "changes the type"
    if not keeps_values(before, after):
        return "changes values: moves arithmetic across dtypes"
    return None


def keeps_type(before: Any, after: Any) -> bool:
    """Whether ``after`` has the type of ``before``, so it may replace it.

    Relations are written without types, as identities of symbols: ``x * 1 ->
    x`` does not hold when ``x`` is an int vector and ``1`` is ``1.0``, and
    ``A @ (x + a) -> A @ x + A @ a`` does not when ``a`` is a broadcast scalar.
    An answer of another dtype or shape, or one that is ill-typed, is just not
    a rewrite of ``before``.
    """
    try:
        t_after = typeof(after)
    except TypeCheckError:
        return False
    return same_type(typeof(before), t_after)


def same_type(before: TensorType, after: TensorType) -> bool:
    """Whether a value of type ``after`` may stand for one of type ``before``: one
    dtype, one ndim, and no dimension known on both sides that differs."""
    return (
        before.dtype == after.dtype
        and before.ndim == after.ndim
        and all(a is None or b is None or a == b for a, b in zip(before.shape, after.shape))
    )


@dataclass(frozen=True)
class Step:
    """One rewrite step: ``relation`` rewrote ``before`` into ``after`` inside ``term``.

    ``window`` is ``(i, j)`` when the step rewrote the arguments ``i:j`` of an
    associative Op (``x + y + (B@z + B@w)``); otherwise ``None``.
    """

    relation: str
    before: Term
    after: Term
    window: tuple[int, int] | None
    result: Term


def steps(
    term: Any, relation: Rule | Relation, max_answers: int = 8, timeout: float | None = None
) -> Iterator[Step]:
    """Every one-step rewrite of ``term`` by ``relation``, lazily.

    A position is a distinct compound subterm (all its occurrences are rewritten
    together) or a window of two or more arguments of an associative Op.  With
    ``timeout``, the whole walk (time spent yielding aside) stops with
    :class:`~relgraph.exceptions.SearchTimeout` after that many seconds.
    """
    matcher = Matcher(as_rule(relation), max_answers)
    left = timeout
    for node in subterms(term):
        for candidate, window in positions(node):
            start = time.monotonic()
            answers = run_deep(_all_answers, matcher, candidate, timeout=left)
            if left is not None:
                left = max(left - (time.monotonic() - start), 1e-3)
            for after in answers:
                result = replace_at(term, node, window, after)
                if result is not None:
                    yield Step(matcher.rule.name, candidate, after, window, result)


def _all_answers(matcher: Matcher, term: Term) -> list[Term]:
    return list(dict.fromkeys(matcher.answers(term)))


def positions(node: Term) -> Iterator[tuple[Term, tuple[int, int] | None]]:
    """The places a step can rewrite at ``node``: the node, then each run of two or
    more (but not all) arguments of an associative Op, as a term, with its window."""
    yield node, None
    op, args = node._tuple[0], node._tuple[1:]
    # A run of arguments stands for its part of the left fold only when the fold
    # stays in one dtype (``0.0 + y + z`` with bool y, z is not ``0.0 + (y + z)``),
    # and in floats only from the first (``a + (x + x)`` is not ``(a + x) + x``).
    if len(args) > 2 and is_associative(op) and (starts := run_starts(node)):
        for size in range(len(args) - 1, 1, -1):
            for i in range(min(starts, len(args) - size + 1)):
                yield Term((op, *args[i : i + size])), (i, i + size)


def is_associative(op: Any) -> bool:
    """Whether kanren's fact store says ``op`` is associative."""
    try:
        return (op,) in associative.facts
    except TypeError:
        return False


def is_commutative(op: Any) -> bool:
    """Whether kanren's fact store says ``op`` is commutative."""
    try:
        return (op,) in commutative.facts
    except TypeError:
        return False


def replace_at(term: Term, node: Term, window: tuple[int, int] | None, after: Any) -> Any:
    """``term`` with every occurrence of ``node`` (or of its run of arguments
    ``window``) replaced by ``after``.

    ``None`` if ``node`` rebuilt with a rewritten run would change type: the run
    kept its own, but n-ary dtype promotion may not (with a float32 ``x``,
    ``x + 1 + 2.5`` is float32 and ``x + 3.5`` float64).
    """
    if window is not None:
        i, j = window
        args = node._tuple[1:]
        after = Term((node._tuple[0], *args[:i], after, *args[j:]))
        if not (keeps_type(node, after) and keeps_values(node, after)):
            return None
    return substitute(term, lambda n: after if n == node else n)


def rewrites(
    term: Any,
    relation: Rule | Relation,
    n: int | None = None,
    max_answers: int = 8,
    timeout: float | None = None,
) -> Iterator[Term]:
    """The distinct terms one rewrite step away, at every position, lazily.

    Parameters
    ----------
    term : Term
    relation : goal constructor or Rule
    n : int, optional
        Stop after ``n`` distinct results.
    max_answers : int
        Answers of the relation looked at per position.
    timeout : float, optional
        Seconds the relation may run in all; then :class:`SearchTimeout` is raised.

    Examples
    --------
    >>> import relgraph as rg
    >>> a, b, c = rg.lvars("a b c")
    >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
    >>> A, B = rg.matrix("A"), rg.matrix("B")
    >>> x, y, z = rg.vector("x"), rg.vector("y"), rg.vector("z")
    >>> [rg.pprint(t) for t in rg.rewrites(A @ (x + B @ (y + z)), dot_distributeo)]
    ['(A @ (x + ((B @ y) + (B @ z))))', '((A @ x) + (A @ (B @ (y + z))))']
    """
    seen: set[Term] = set()
    for step in steps(term, relation, max_answers, timeout):
        if step.result not in seen:
            seen.add(step.result)
            yield step.result
            if n is not None and len(seen) >= n:
                return
