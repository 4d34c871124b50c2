"""Exploring term by term: every term reachable by relations, run both ways.

``rg.explore(term, relations, method="bfs")`` grows a :class:`TermSpace`
breadth-first from a start term (the default is the e-graph,
:mod:`relgraph.eqsat.explore`).  The steps here, :class:`Edge` and :class:`Derivation`,
are also what the e-graph's explanations are made of, and :class:`Neighbours`
is what the stepper shows.
Its nodes are terms (deduplicated by structure); its edges are one-step
rewrites, each naming the relation, the direction it ran in and the position
it rewrote.  Budgets (``max_terms``, ``max_depth``, ``timeout``) and Ctrl-C
stop it cleanly, and the space says why it stopped.

A step is what :func:`relgraph.rewrites` does: one relation, at one distinct
subterm (all its occurrences) or one run of arguments of an associative Op, so
every edge can be replayed with ``rg.rewrites(edge.source, edge.goal)``.  The
answers of a relation on a subterm are computed once per exploration: most
subterms are shared by many terms of the space.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from tqdm.auto import tqdm

from relgraph.eqsat.cost import Cost, shape_cost
from relgraph.eqsat.egraph import Hole
from relgraph.eqsat.proofs import term_key
from relgraph.exceptions import SearchTimeout
from relgraph.logic.search import check_cancelled, run_deep
from relgraph.rewriting.relation import (
    Matcher,
    Rule,
    as_rule,
    directions_of,
    positions,
    replace_at,
    reverse,
)
from relgraph.terms.printing import brief, pprint
from relgraph.terms.term import Term
from relgraph.terms.traverse import checked_term, leaves, substitute, subterms

__all__ = [
    "explore_terms", "TermSpace", "Edge", "Derivation", "Neighbours", "rules_of", "rewritten",
]  # fmt: skip

Direction = Literal["forward", "backward"]
DIRECTIONS: tuple[Direction, ...] = ("forward", "backward")


@dataclass(frozen=True)
class Edge:
    """One rewrite step of a space: ``source`` -> ``target``.

    Attributes
    ----------
    source, target : Term
    relation : str
        The relation's name, as registered.
    direction : {"forward", "backward"}
        ``"backward"`` means ``relation(target, source)`` holds.
    node : Term
        The subterm of ``source`` that was rewritten: every occurrence, or the one at
        ``at``.
    window : (int, int) or None
        For a run of arguments ``node.args[i:j]`` of an associative Op; a run of one,
        ``(i, i + 1)``, is an argument replaced by the arguments of ``after`` (a
        relation's answer on a run, taken backward).
    before, after : Term
        What the relation related: ``node`` (or the run, as a term) and its
        replacement.
    rule : Rule
        The relation itself, to replay the step (see :attr:`goal`).
    pattern : (Term, Term) or None
        For a step of an e-graph's derivation, what the relation related when the
        e-graph ran it: ``before`` and ``after`` with the parts it did not look into
        as placeholders (``e12``: a class of equal terms).  ``before`` and ``after``
        are an instance of it.  A relation that orders operands orders placeholders
        otherwise than the terms they stand for, so such a step may not be one of
        ``rg.rewrites``' answers on ``source``: :meth:`check` checks it on the pattern.
    """

    source: Term
    target: Term
    relation: str
    direction: Direction
    node: Term
    window: tuple[int, int] | None
    before: Term
    after: Term
    rule: Rule = field(repr=False, compare=False)
    pattern: tuple[Any, Any] | None = field(default=None, repr=False, compare=False)
    #: Argument indices from the root of ``source`` to the one occurrence of ``node``
    #: rewritten (an e-graph's derivation); None: every occurrence.
    at: tuple[int, ...] | None = None

    @property
    def goal(self) -> Any:
        """The goal constructor that made this step, run forward: replay it with
        ``rg.rewrites(edge.source, edge.goal)``."""
        return self.rule.relation if self.direction == "forward" else reverse(self.rule)

    def check(self) -> bool:
        """Whether the relation relates ``before`` and ``after`` (run forward from one
        or backward from the other), or else relates :attr:`pattern`, of which they are
        an instance; and whether ``target`` is ``source`` rewritten so.

        >>> import relgraph as rg
        >>> a, b, c = rg.lvars("a b c")
        >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
        >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
        >>> space = rg.explore(A @ x + A @ y, [dot_distributeo])
        >>> all(step.check() for step in space.explain(A @ (x + y)))
        True
        """
        if rewritten(self.source, self.node, self.window, self.after, self.at) != self.target:
            return False
        if self._relates(self.before, self.after):
            return True
        if self.pattern is None:
            return False
        before, after = self.pattern
        binding: dict = {}
        return (
            _binds(before, self.before, binding)
            and _binds(after, self.after, binding)
            and self._relates(before, after)
        )

    def _relates(self, before: Any, after: Any) -> bool:
        goal = Matcher(as_rule(self.goal))
        if run_deep(lambda: after in set(goal.answers(before))):
            return True
        flipped = self.rule.relation if self.direction == "backward" else reverse(self.rule)
        back = Matcher(as_rule(flipped))
        return run_deep(lambda: before in set(back.answers(after)))

    @cached_property
    def position(self) -> tuple[int, ...]:
        """Argument indices from the root of ``source`` to the occurrence of ``node``
        rewritten (``()`` is the root): :attr:`at`, else the first."""
        if self.at is not None:
            return self.at
        stack: list[tuple[Any, tuple[int, ...]]] = [(self.source, ())]
        while stack:
            term, path = stack.pop()
            if term == self.node:
                return path
            if type(term) is Term:
                stack.extend((a, (*path, i)) for i, a in reversed(list(enumerate(term.args))))
        raise ValueError("edge node not found in its source")  # pragma: no cover

    def __str__(self) -> str:
        where = "" if self.window is None else f" args {self.window[0]}:{self.window[1]}"
        arrow = "->" if self.direction == "forward" else "<-"
        return (
            f"{self.relation} ({self.direction}) at {list(self.position)}{where}: "
            f"{brief(self.before, 60)} {arrow} {brief(self.after, 60)}"
        )


def rewritten(
    term: Any, node: Any, window: tuple[int, int] | None, after: Any, at: tuple | None = None
) -> Any:
    """``term`` with ``node`` rewritten as an :class:`Edge` says: at ``at``, else every
    occurrence (of a leaf, every occurrence as an operand)."""
    if window is not None and window[1] - window[0] == 1:  # one argument becomes a run
        i, args = window[0], node.args
        window, after = None, Term((node.op, *args[:i], *after.args, *args[i + 1 :]))
    if at is not None:
        return _replaced_at(term, at, node, window, after)
    if type(node) is not Term:
        if term_key(term) == term_key(node):
            return after
        return substitute(term, lambda n: _swap(n, node, after))
    return replace_at(term, node, window, after)


def _replaced_at(term: Any, at: tuple, node: Any, window: Any, after: Any) -> Any:
    if not at:
        if term_key(term) != term_key(node):
            raise ValueError(f"{brief(node)} is not at the step's position")
        return after if window is None else replace_at(node, node, window, after)
    args = list(term.args)
    args[at[0]] = _replaced_at(args[at[0]], at[1:], node, window, after)
    return Term((term.op, *args))


def _swap(n: Term, leaf: Any, after: Any) -> Term:
    k = len(tuple(n.op.operands(n.args)))
    args = n._tuple[1:]
    operands = tuple(after if term_key(a) == term_key(leaf) else a for a in args[:k])
    if all(a is b for a, b in zip(operands, args)):
        return n
    return Term((n.op, *operands, *args[k:]))


def _binds(pattern: Any, term: Any, binding: dict) -> bool:
    """Whether ``term`` is ``pattern`` with its placeholders bound consistently in
    ``binding``."""
    if type(pattern) is not Term:
        if type(pattern) is Hole:
            return term_key(binding.setdefault(pattern, term)) == term_key(term)
        return term_key(term) == term_key(pattern)
    if type(term) is not Term or len(term._tuple) != len(pattern._tuple):
        return False
    if pattern._tuple[0] != term._tuple[0]:
        return False
    return all(_binds(p, t, binding) for p, t in zip(pattern._tuple[1:], term._tuple[1:]))


@dataclass(frozen=True)
class Derivation:
    """A path of steps through a space, from its start to a term.

    Examples
    --------
    >>> import relgraph as rg
    >>> a, b, c = rg.lvars("a b c")
    >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> d = rg.explore(A @ x + A @ y, [dot_distributeo], method="bfs").explain(A @ (x + y))
    >>> print(d)
    ((A @ x) + (A @ y))
      1. dot_distributeo (backward) at []: ((A @ x) + (A @ y)) <- (A @ (x + y))
    = (A @ (x + y))
    """

    start: Term
    steps: tuple[Edge, ...]

    @property
    def result(self) -> Term:
        return self.steps[-1].target if self.steps else self.start

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Edge]:
        return iter(self.steps)

    def __getitem__(self, i: int) -> Edge:
        return self.steps[i]

    def __str__(self) -> str:
        lines = [pprint(self.start)]
        lines += [f"  {i}. {step}" for i, step in enumerate(self.steps, 1)]
        lines.append(f"= {pprint(self.result)}")
        return "\n".join(lines)


@dataclass
class _Entry:
    index: int
    depth: int
    parent: Edge | None


class TermSpace:
    """The terms reachable from ``start``, and the steps between them.

    Built by ``rg.explore(..., method="bfs")``.  ``len(space)`` counts terms; ``term in space``
    tests membership; :attr:`complete` says whether every term's rewrites are
    in the space, and :attr:`stopped_by` which budget cut it off.
    """

    def __init__(self, start: Term, cost: Cost = shape_cost):
        self.start = start
        self.cost_model = cost
        self._entries: dict[Term, _Entry] = {}
        self._edges: list[Edge] = []
        self._edge_keys: set[tuple[Term, Term, str, str]] = set()
        self._costs: dict[Term, float] = {}
        self.stopped_by: str | None = None
        self.elapsed = 0.0
        self._add(start, 0, None)

    # -- the graph ---------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, term: Any) -> bool:
        return term in self._entries

    @property
    def terms(self) -> tuple[Term, ...]:
        """All terms, in the order they were found (the start first)."""
        return tuple(self._entries)

    @property
    def edges(self) -> tuple[Edge, ...]:
        """All steps found between terms of the space."""
        return tuple(self._edges)

    @property
    def complete(self) -> bool:
        """Whether exploration ran out of rewrites rather than budget."""
        return self.stopped_by is None

    def depth(self, term: Any) -> int:
        """Steps from the start to ``term`` (the shortest derivation's length)."""
        return self._entry(term).depth

    def cost(self, term: Any, cost: Cost | None = None) -> float:
        """``term``'s cost under ``cost`` (default: the space's cost model)."""
        if cost is not None and cost is not self.cost_model:
            return float(cost(term))
        if term not in self._costs:
            self._costs[term] = float(self.cost_model(term))
        return self._costs[term]

    def best(self, cost: Cost | None = None) -> Term:
        """The cheapest term.

        Ties go to the term nearest the start, then to the one that keeps the
        start's order of leaves (``A @ (x + y)`` over ``A @ (y + x)``), then to
        the first found.

        Examples
        --------
        >>> import relgraph as rg
        >>> a, b, c = rg.lvars("a b c")
        >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
        >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
        >>> rg.pprint(rg.explore(A @ x + A @ y, [dot_distributeo], method="bfs").best())
        '(A @ (x + y))'
        """
        costs = {t: (self.cost(t, cost), e.depth) for t, e in self._entries.items()}
        cheapest = min(costs.values())
        tied = [t for t, c in costs.items() if c == cheapest]
        if len(tied) == 1:
            return tied[0]
        ranks = {leaf: i for i, leaf in enumerate(dict.fromkeys(leaves(self.start, 256)))}
        return min(
            tied,
            key=lambda t: (
                [ranks.get(leaf, len(ranks)) for leaf in leaves(t, 256)],
                self._entries[t].index,
            ),
        )

    def explain(self, term: Any = None) -> Derivation:
        """The shortest derivation of ``term`` (default: :meth:`best`) from the start."""
        term = self.best() if term is None else term
        steps: list[Edge] = []
        edge = self._entry(term).parent
        while edge is not None:
            steps.append(edge)
            edge = self._entries[edge.source].parent
        return Derivation(self.start, tuple(reversed(steps)))

    def _entry(self, term: Any) -> _Entry:
        try:
            return self._entries[term]
        except (KeyError, TypeError):
            raise KeyError(f"{brief(term)} is not in this rewrite space") from None

    def __repr__(self) -> str:
        status = "complete" if self.complete else f"cut off by {self.stopped_by}"
        return (
            f"TermSpace({len(self)} terms, {len(self._edges)} edges, {status}, "
            f"start {brief(self.start, 60)})"
        )

    # -- growing (by explore) ------------------------------------------------------

    def _add(self, term: Term, depth: int, parent: Edge | None) -> None:
        self._entries[term] = _Entry(len(self._entries), depth, parent)

    def _link(self, edge: Edge) -> None:
        key = (edge.source, edge.target, edge.relation, edge.direction)
        if key not in self._edge_keys:
            self._edge_keys.add(key)
            self._edges.append(edge)


def rules_of(relations: Any) -> tuple[Rule, ...]:
    """The rules of a rewriter (a database query result), a list, or one relation.

    Examples
    --------
    >>> from relations import optdb
    >>> [r.name for r in rules_of(optdb.query(include=["linalg"], exclude=["canonicalize"]))]
    ['cheaper_dot_ordero', 'dot_distributeo', 'dot_scaleo', 'transpose_doto', 'sum_doto']
    """
    if hasattr(relations, "rules"):
        return tuple(relations.rules)
    if hasattr(relations, "steps"):
        return tuple(dict.fromkeys(r for _, step in relations.steps for r in rules_of(step)))
    if isinstance(relations, (list, tuple)):
        return tuple(dict.fromkeys(r for item in relations for r in rules_of(item)))
    return (as_rule(relations),)


def explore_terms(
    term: Any,
    relations: Any,
    *,
    directions: Iterable[Direction] = DIRECTIONS,
    max_terms: int = 1000,
    max_depth: int | None = None,
    timeout: float | None = None,
    cost: Cost = shape_cost,
    max_answers: int = 8,
    progress: bool | None = None,
) -> TermSpace:
    """Explore the terms reachable from ``term``, breadth-first.

    Parameters
    ----------
    term : Term
    relations : rewriter, list of relations/Rules, or one relation
        A database query result works: its relations are used, each on its own.
    directions : iterable of {"forward", "backward"}
        Run each relation forward (``rel(term, q)``), backward (``rel(q, term)``)
        or both.
    max_terms, max_depth, timeout : budgets
        Stop when the space holds ``max_terms`` terms, beyond ``max_depth`` steps
        from the start, or after ``timeout`` seconds.  Ctrl-C stops it too.  In
        every case the space found so far is returned, with ``stopped_by`` set.
    cost : callable
        The cost model: :meth:`RewriteSpace.best`'s default, and the order in
        which the terms of one depth are expanded (cheapest first, so a budget
        cuts off the least promising terms).
    max_answers : int
        Answers of a relation looked at per position.
    progress : bool, optional
        Show a tqdm progress bar; by default it appears if the run takes more
        than a second.

    Examples
    --------
    >>> import relgraph as rg
    >>> from relations import optdb
    >>> A = rg.matrix("A")
    >>> x, y, z, w = (rg.vector(n) for n in "xyzw")
    >>> space = rg.explore(A @ x + A @ y + A @ z + A @ w,
    ...                    optdb.query(include=["linalg", "canonicalize"]), method="bfs")
    >>> len(space), space.stopped_by
    (1000, 'max_terms')
    >>> rg.pprint(space.best()), space.cost(space.best())
    ('(A @ (x + y + z + w))', 11.0)
    >>> [(step.relation, step.direction) for step in space.explain()]
    [('dot_distributeo', 'backward')]
    """
    term = checked_term(term, "explore")
    if max_terms < 1 or (max_depth is not None and max_depth < 0):
        raise ValueError("max_terms must be positive and max_depth non-negative")
    neighbours = Neighbours(relations, directions, max_answers)
    space = TermSpace(term, cost)
    start = time.perf_counter()
    # The search watches its own deadline between steps; the hard one stops a
    # relation that never returns from a single application.
    hard = None if timeout is None else timeout + HARD_TIMEOUT_GRACE
    try:
        run_deep(_grow, space, neighbours, max_terms, max_depth, timeout, progress, timeout=hard)
    except KeyboardInterrupt:
        space.stopped_by = "interrupt"
    except SearchTimeout:
        space.stopped_by = "timeout"
    space.elapsed = time.perf_counter() - start
    return space


HARD_TIMEOUT_GRACE = 0.5  # seconds past ``timeout`` before a stuck relation is interrupted


def _grow(space: TermSpace, neighbours: Neighbours, max_terms, max_depth, timeout, progress):
    """The breadth-first loop: one depth at a time, cheapest terms first."""

    deadline = None if timeout is None else time.perf_counter() + timeout
    delay = 1.0 if progress is None else 0.0
    with tqdm(
        total=max_terms, unit="term", desc="explore", delay=delay, disable=progress is False
    ) as bar:
        bar.update(len(space))
        level, depth = [space.start], 0
        try:
            while level:
                if max_depth is not None and depth >= max_depth:
                    space.stopped_by = "max_depth"
                    return
                level.sort(key=lambda t: (space.cost(t), space._entries[t].index))
                found: list[Term] = []
                for source in level:
                    for edge in neighbours.steps(source, deadline):
                        if edge.target not in space:
                            if len(space) >= max_terms:
                                space.stopped_by = "max_terms"
                                return
                            check_cancelled()
                            space._add(edge.target, depth + 1, edge)
                            found.append(edge.target)
                            bar.update(1)
                        space._link(edge)
                level, depth = found, depth + 1
        except _Timeout:
            space.stopped_by = "timeout"


class Neighbours:
    """The one-step rewrites of terms by some relations, in some directions.

    A relation's answers on a subterm are computed once and kept: the terms of
    a space share most of their subterms.

    Examples
    --------
    >>> import relgraph as rg
    >>> a, b, c = rg.lvars("a b c")
    >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> [str(e) for e in Neighbours([dot_distributeo]).steps(A @ (x + y))]
    ['dot_distributeo (forward) at []: (A @ (x + y)) -> ((A @ x) + (A @ y))']
    """

    def __init__(
        self,
        relations: Any,
        directions: Iterable[Direction] = DIRECTIONS,
        max_answers: int = 8,
    ):
        directions = tuple(dict.fromkeys(directions))
        if not directions or any(d not in DIRECTIONS for d in directions):
            raise ValueError(f"directions must be some of {DIRECTIONS}, got {directions!r}")
        self.matchers: list[tuple[Rule, Direction, Matcher]] = []
        for rule in rules_of(relations):
            for direction in (d for d in directions if d in directions_of(rule)):
                # Backward, the input is the relation's output: any head may match.
                run_as = rule if direction == "forward" else Rule(reverse(rule), rule.name)
                matcher = Matcher(run_as, max_answers, label=direction)
                self.matchers.append((rule, direction, matcher))
        self.answers: dict[tuple[int, Term], tuple[Term, ...]] = {}

    def steps(self, term: Term, deadline: float | None = None) -> Iterator[Edge]:
        """Every one-step rewrite of ``term``, as edges, lazily.

        Call it through :func:`~relgraph.logic.search.run_deep` for deep searches.
        """
        for node in subterms(term):
            for candidate, window in positions(node):
                head = candidate.op
                for index, (rule, direction, matcher) in enumerate(self.matchers):
                    if window is not None and not rule.windows:
                        continue
                    tracks = matcher.rule.tracks
                    if tracks is not None and head not in tracks:
                        continue
                    for after in self.answers_of(index, candidate, deadline):
                        target = replace_at(term, node, window, after)
                        if target is not None and target != term:
                            yield Edge(
                                term, target, rule.name, direction, node, window,
                                candidate, after, rule,
                            )  # fmt: skip

    def answers_of(self, index: int, candidate: Term, deadline: float | None) -> tuple:
        key = (index, candidate)
        found = self.answers.get(key)
        if found is None:
            check_cancelled()
            if deadline is not None and time.perf_counter() > deadline:
                raise _Timeout
            matcher = self.matchers[index][2]
            found = tuple(dict.fromkeys(matcher.answers(candidate)))
            self.answers[key] = found
        return found


class _Timeout(Exception):
    pass
