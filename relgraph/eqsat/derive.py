"""Derivations out of an e-graph: named relation steps from the start to a term.

Every e-node a relation added records its :class:`~relgraph.eqsat.saturate.Merge`:
the view it ran on (its *shape*) and the answer.  Within an e-class those records
are edges between e-nodes.  A derivation steers the start, a concrete term,
towards the target top-down: at each position it finds a path of edges from the
e-node the term has there to the one the target has, and takes the first step
after steering the subterm into that step's shape (which may take steps below
it); then it does the same for the operands.  Each step is an
:class:`~relgraph.eqsat.bfs.Edge` that :func:`relgraph.rewrites` replays (all
occurrences of the subterm are rewritten, as it does), and flattening a sum is
the step :func:`~relgraph.eqsat.egraph.flatteno`.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque
from typing import Any

from relgraph.eqsat.bfs import Derivation, Direction, Edge
from relgraph.eqsat.egraph import EGraph, Hole, commuteo, flat_form, flatteno, swapped
from relgraph.eqsat.saturate import Merge
from relgraph.exceptions import DerivationError
from relgraph.logic.search import run_deep
from relgraph.rewriting.relation import (
    Matcher,
    Rule,
    as_rule,
    directions_of,
    is_commutative,
    replace_at,
    reverse,
)
from relgraph.terms.term import Term
from relgraph.terms.traverse import leaves, substitute

__all__ = ["derive", "DerivationError"]

FLATTEN, COMMUTE = as_rule(flatteno), as_rule(commuteo)
COMMUTED = object()  # the edge between a binary sum or product and its swap
MAX_MOVES = 64  # steps at one position before giving up
MAX_NESTING = 48  # steering into a step's shape, within steering into another's
MAX_SECONDS = 2.0  # a derivation's search, at most
FLIP: dict[str, Direction] = {"forward": "backward", "backward": "forward"}


class _Graph:
    """Edges between the e-nodes of each class, from the applications."""

    def __init__(self, egraph: EGraph, applications: list[Merge]):
        self.g = egraph
        self.out: dict[Any, list[tuple[Merge, bool, Any]]] = defaultdict(list)
        self.from_any: dict[int, list[tuple[Merge, Any]]] = defaultdict(list)
        for app in applications:
            a = egraph.canonical(app.from_key)
            if app.to_key[0] == "class":
                cid = egraph.find(app.to_key[1])
                self.out[a].append((app, True, ("class", cid)))
                if _reversible(app) and _only_hole(app.shape, app.answer):
                    self.from_any[cid].append((app, a))
                continue
            b = egraph.canonical(app.to_key)
            self.out[a].append((app, True, b))
            if _reversible(app):
                self.out[b].append((app, False, a))

    def reachable(self, start: Any, banned: set) -> dict[Any, Any]:
        """E-nodes reachable from ``start``, each with the first edge of a shortest path
        there (None for ``start``), not using the ``banned`` edges."""
        first: dict[Any, Any] = {start: None}
        queue = deque([start])
        while queue:
            v = queue.popleft()
            for app, forward, w in self._edges(v):
                if w not in first and (id(app), forward) not in banned:
                    first[w] = first[v] if first[v] is not None else (app, forward)
                    queue.append(w)
        return first

    def _edges(self, v: Any):
        if v[0] == "class":  # landed somewhere in the class: any of its e-nodes
            for key in self.g.nodes(v[1]):
                yield None, True, key
            return
        yield from self.out.get(v, ())
        other = _swapped_key(v)
        if other is not None and other in self.g.memo:  # commuteo: no relation needed
            yield COMMUTED, True, other
        cid = self.g.memo.get(v)
        if cid is not None:
            for app, a in self.from_any.get(self.g.find(cid), ()):
                yield app, False, a


def _reversible(app: Merge) -> bool:
    return app.window is None and FLIP[app.direction] in directions_of(app.rule)


def _only_hole(shape: Any, answer: Hole) -> bool:
    return all(type(leaf) is not Hole or leaf == answer for leaf in leaves(shape))


def derive(
    egraph: EGraph,
    applications: list[Merge],
    start: Term,
    target: Any,
    fallback: Any = None,
) -> Derivation:
    """The steps from ``start`` to ``target`` (both in the e-graph's root class).

    With ``fallback`` (extraction's choices and costs), a part of ``target`` no
    replayable step reaches is replaced by the cheapest one that is reached: the
    derivation then ends at a term near ``target``.
    """
    deriver = _Deriver(_Graph(egraph, applications), fallback)
    steps: list[Edge] = []
    goal = egraph.spelled(target)
    cur = start
    for _ in range(4):
        taken = len(steps)
        try:
            cur = deriver.steer(cur, (), goal, steps, 0)
        except _Unusable:
            break
        if cur == goal or len(steps) == taken:
            return Derivation(start, tuple(steps))
    raise DerivationError(f"could not derive {target} from {start} with replayable steps")


class _Deriver:
    def __init__(self, graph: _Graph, fallback: Any = None):
        self.graph, self.g, self.fallback = graph, graph.g, fallback
        self.banned: set[tuple[int, bool]] = set()  # edges whose relation says otherwise
        self.active: set[tuple[tuple, Any]] = set()  # (position, e-node) being steered to
        self.in_step = 0  # steering into a step's shape, not towards the target
        self.deadline = time.perf_counter() + MAX_SECONDS
        self.matchers: dict[tuple[Any, str], Matcher] = {}

    def flatten(self, cur: Any, node: Term, steps: list[Edge]) -> Any:
        """The flatteno step that spells ``node`` as the graph holds it."""
        flat = flat_form(node)
        after = replace_at(cur, node, None, flat)
        steps.append(Edge(cur, after, "flatteno", "forward", node, None, node, flat, FLATTEN))
        return after

    def commute(self, cur: Any, pos: tuple, steps: list[Edge]) -> Any:
        """The commuteo step that swaps the two operands of the sum or product at ``pos``."""
        node = _at(cur, pos)
        other = swapped(node)
        if other is None:
            raise _Unusable(cur)
        after = replace_at(cur, node, None, other)
        steps.append(Edge(cur, after, "commuteo", "forward", node, None, node, other, COMMUTE))
        return after

    def steer(self, cur: Any, pos: tuple, shape: Any, steps: list[Edge], nesting: int) -> Any:
        """``cur`` with its subterm at ``pos`` rewritten to fit ``shape`` (holes: any)."""
        if type(shape) is Hole:
            return cur
        if time.perf_counter() > self.deadline:
            raise DerivationError(f"no derivation found within {MAX_SECONDS} s")
        goal = self.g.canonical(self.g.key_of(shape))
        if nesting > MAX_NESTING or (pos, goal) in self.active:
            raise _Unusable(cur)  # a circle: the step that led here is banned
        self.active.add((pos, goal))
        try:
            return self._steer(cur, pos, shape, goal, steps, nesting)
        finally:
            self.active.discard((pos, goal))

    def _steer(self, cur: Any, pos: tuple, shape: Any, goal: Any, steps: list, nesting: int):
        tried: set[tuple[Any, int, bool]] = set()
        for _ in range(MAX_MOVES):
            sub = _at(cur, pos)
            here, flat = self.g.spelling(sub)
            if flat:
                cur = self.flatten(cur, sub, steps)
                continue
            if here == goal:
                break
            paths = self.graph.reachable(here, self.banned)
            if goal not in paths:  # the same operands in another order, if reachable
                try:
                    goal, shape = _reordered(goal, shape, paths, self.g)
                except DerivationError:
                    if self.in_step:
                        raise _Unusable(cur) from None  # that step's shape is out of reach
                    if self.fallback is None:
                        raise
                    found = self.fallback[0].cheapest(list(paths), self.fallback[1])
                    if found is None:
                        raise
                    goal, shape = found
                continue
            step = paths[goal]
            if step is None or step[0] is None:
                if self.in_step:
                    raise _Unusable(cur)
                raise DerivationError(f"no steps lead from {sub} to {shape}")
            if (here, id(step[0]), step[1]) in tried:  # it led round in a circle
                self.banned.add((id(step[0]), step[1]))
                continue
            tried.add((here, id(step[0]), step[1]))
            mark = len(steps)
            try:
                app, forward = step
                cur = self.take(cur, pos, app, forward, steps, nesting)
            except _Unusable:  # the relation answers otherwise on real terms, or a circle
                del steps[mark:]
                self.banned.add((id(step[0]), step[1]))
        else:
            if self.in_step:
                raise _Unusable(cur)
            raise DerivationError(f"no derivation of {shape} within {MAX_MOVES} steps")
        if type(shape) is Term:
            for i, child in enumerate(shape.op.operands(shape.args)):
                cur = self.steer(cur, (*pos, i), child, steps, nesting + 1)
        return cur

    def take(self, cur, pos, app: Any, forward: bool, steps, nesting) -> Any:
        """One step along ``app`` (backward: its relation the other way)."""
        if app is COMMUTED:
            return self.commute(cur, pos, steps)
        source_shape = app.shape if forward else self.g.spelled(app.result)
        self.in_step += 1
        try:
            cur = self.steer(cur, pos, source_shape, steps, nesting + 1)
        finally:
            self.in_step -= 1
        sub = _at(cur, pos)
        binding = _bind(source_shape, sub)
        window = app.window if forward else None
        if window is not None:
            before = Term((sub.op, *sub.args[window[0] : window[1]]))
        else:
            before = sub
        direction = app.direction if forward else FLIP[app.direction]
        after = self.answer(app, direction, before, _fill(app.answer if forward else app.shape,
                                                          binding), cur)  # fmt: skip
        target = replace_at(cur, sub, window, after)
        if target is None:  # pragma: no cover - the graph checked the type
            raise DerivationError(f"{app.rule.name} changes the type of {sub}")
        steps.append(Edge(cur, target, app.rule.name, direction, sub, window, before, after,
                          app.rule))  # fmt: skip
        return target

    def answer(self, app: Merge, direction: str, before: Any, filled: Any, cur: Any):
        """``filled`` if the relation gives it on ``before``, else an answer of the same
        e-class (a relation may answer otherwise on terms than on views: sorting)."""
        key = (app.rule, direction)
        matcher = self.matchers.get(key)
        if matcher is None:
            run_as = app.rule if direction == "forward" else Rule(reverse(app.rule), app.rule.name)
            matcher = self.matchers[key] = Matcher(run_as)
        answers = list(run_deep(lambda: list(matcher.answers(before))))
        if filled in answers:
            return filled
        cid = self.g.lookup(filled)
        same = [a for a in answers if cid is not None and self.g.lookup(a) == cid]
        if not same:
            raise _Unusable(cur)
        return same[0]


class _Unusable(Exception):
    def __init__(self, cur: Any):
        self.cur = cur


def _swapped_key(key: Any) -> Any:
    """The e-node of a binary sum or product with its operand classes swapped."""
    if key[0] == "class" or key[0] == "leaf" or len(key[1]) != 2 or key[2]:
        return None
    if not is_commutative(key[0]) or key[1][0] == key[1][1]:
        return None
    return (key[0], key[1][::-1], key[2])


def _reordered(goal: Any, shape: Any, paths: dict, g: EGraph) -> tuple[Any, Any]:
    """A reachable e-node with ``goal``'s Op and operand classes in another order, and
    ``shape`` with its operands so ordered.  A relation that sorts (``ac_normalo``)
    orders a view's placeholders, not the terms they stand for, so the order the
    e-graph found may be one no step makes."""
    if goal[0] == "class" or type(shape) is not Term:
        raise DerivationError(f"no steps lead to {shape}")
    for key in paths:
        if key[0] == goal[0] and key[2] == goal[2] and sorted(key[1]) == sorted(goal[1]):
            pool: dict[int, list] = {}
            for cid, child in zip(goal[1], shape.op.operands(shape.args)):
                pool.setdefault(cid, []).append(child)
            try:
                children = [pool[cid].pop() for cid in key[1]]
            except (KeyError, IndexError):
                continue
            return key, Term((shape.op, *children, *key[2]))
    raise DerivationError(f"no steps lead to {shape}")


def _at(term: Any, pos: tuple) -> Any:
    for i in pos:
        if type(term) is not Term or i >= len(term.args):
            raise _Unusable(term)  # a step left another form here than the one steered into
        term = term.args[i]
    return term


def _bind(shape: Any, term: Any) -> dict[Hole, Any]:
    """What each hole of ``shape`` stands for in ``term`` (which fits it)."""
    out: dict[Hole, Any] = {}
    stack = [(shape, term)]
    while stack:
        s, t = stack.pop()
        if type(s) is Hole:
            out[s] = t
        elif type(s) is Term:
            if type(t) is not Term or len(s._tuple) != len(t._tuple):
                raise _Unusable(None)  # the subterm did not come to fit the step
            stack.extend(zip(s._tuple[1:], t._tuple[1:]))
    return out


def _fill(term: Any, binding: dict[Hole, Any]) -> Any:
    if type(term) is Hole:
        return binding[term]
    if type(term) is not Term:
        return term
    return substitute(term, lambda n: _fill_node(n, binding))


def _fill_node(node: Term, binding: dict[Hole, Any]) -> Term:
    if not any(type(a) is Hole for a in node._tuple):
        return node
    return Term(tuple(binding[a] if type(a) is Hole else a for a in node._tuple))
