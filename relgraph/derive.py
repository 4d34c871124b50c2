"""Derivations out of an e-graph: named relation steps from the start to a term.

Every e-node a relation added records its :class:`~relgraph.saturate.Application`:
the view it ran on (its *shape*) and the answer.  Within an e-class those records
are edges between e-nodes.  A derivation steers the start, a concrete term,
towards the target top-down: at each position it finds a path of edges from the
e-node the term has there to the one the target has, and takes the first step
after steering the subterm into that step's shape (which may take steps below
it); then it does the same for the operands.  Each step is an
:class:`~relgraph.bfs.Edge` that :func:`relgraph.rewrites` replays (all
occurrences of the subterm are rewritten, as it does), and flattening a sum is
the step :func:`~relgraph.egraph.flatteno`.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any

from relgraph.bfs import Derivation, Edge
from relgraph.egraph import EGraph, Hole, flat_form, flatteno
from relgraph.relation import as_rule, directions_of, replace_at
from relgraph.saturate import Application
from relgraph.term import Term
from relgraph.traverse import substitute

__all__ = ["derive", "DerivationError"]

FLATTEN = as_rule(flatteno)
MAX_MOVES = 64  # steps at one position before giving up
MAX_NESTING = 48  # steering into a step's shape, within steering into another's
FLIP = {"forward": "backward", "backward": "forward"}


class DerivationError(RuntimeError):
    """No replayable derivation was found (the e-graph still holds the term)."""


class _Graph:
    """Edges between the e-nodes of each class, from the applications."""

    def __init__(self, egraph: EGraph, applications: list[Application]):
        self.g = egraph
        self.out: dict[Any, list[tuple[Application, bool, Any]]] = defaultdict(list)
        self.from_any: dict[int, list[tuple[Application, Any]]] = defaultdict(list)
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

    def first_step(self, start: Any, goal: Any) -> tuple[Application, bool] | None:
        """The first edge of a shortest path from e-node ``start`` to ``goal``."""
        first: dict[Any, Any] = {start: None}
        queue = deque([start])
        while queue:
            v = queue.popleft()
            if v == goal:
                return first[v]
            for app, forward, w in self._edges(v):
                if w not in first:
                    first[w] = first[v] if first[v] is not None else (app, forward)
                    queue.append(w)
        return None

    def _edges(self, v: Any):
        if v[0] == "class":  # landed somewhere in the class: any of its e-nodes
            for key in self.g.nodes(v[1]):
                yield None, True, key
            return
        yield from self.out.get(v, ())
        cid = self.g.memo.get(v)
        if cid is not None:
            for app, a in self.from_any.get(self.g.find(cid), ()):
                yield app, False, a


def _reversible(app: Application) -> bool:
    return app.window is None and FLIP[app.direction] in directions_of(app.rule)


def _only_hole(shape: Any, answer: Hole) -> bool:
    return all(type(leaf) is not Hole or leaf == answer for leaf in _leaves(shape))


def _leaves(term: Any):
    stack = [term]
    while stack:
        t = stack.pop()
        if type(t) is Term:
            stack.extend(t._tuple[1:])
        else:
            yield t


def derive(egraph: EGraph, applications: list[Application], start: Term, target: Any):
    """The steps from ``start`` to ``target`` (both in the e-graph's root class)."""
    deriver = _Deriver(_Graph(egraph, applications))
    steps: list[Edge] = []
    goal = egraph.spelled(target)
    cur = start
    for _ in range(4):
        if cur == goal:
            return Derivation(start, tuple(steps))
        cur = deriver.steer(cur, (), goal, steps, 0)
    raise DerivationError(f"could not derive {target} from {start} with replayable steps")


class _Deriver:
    def __init__(self, graph: _Graph):
        self.graph, self.g = graph, graph.g

    def flatten(self, cur: Any, node: Term, steps: list[Edge]) -> Any:
        """The flatteno step that spells ``node`` as the graph holds it."""
        flat = flat_form(node)
        after = replace_at(cur, node, None, flat)
        steps.append(Edge(cur, after, "flatteno", "forward", node, None, node, flat, FLATTEN))
        return after

    def steer(self, cur: Any, pos: tuple, shape: Any, steps: list[Edge], nesting: int) -> Any:
        """``cur`` with its subterm at ``pos`` rewritten to fit ``shape`` (holes: any)."""
        if type(shape) is Hole:
            return cur
        if nesting > MAX_NESTING:
            raise DerivationError("derivation nests too deep")
        goal = self.g.key_of(shape)
        for _ in range(MAX_MOVES):
            sub = _at(cur, pos)
            here, flat = self.g.spelling(sub)
            if flat:
                cur = self.flatten(cur, sub, steps)
                continue
            if here == goal:
                break
            step = self.graph.first_step(here, goal)
            if step is None:
                raise DerivationError(f"no steps lead from {sub} to {shape}")
            if step[0] is None:  # a landing vertex: the node is what the step left
                raise DerivationError(f"no steps lead from {sub} to {shape}")
            cur = self.take(cur, pos, *step, steps, nesting)
        else:
            raise DerivationError(f"no derivation of {shape} within {MAX_MOVES} steps")
        if type(shape) is Term:
            for i, child in enumerate(shape.op.operands(shape.args)):
                cur = self.steer(cur, (*pos, i), child, steps, nesting + 1)
        return cur

    def take(self, cur, pos, app: Application, forward: bool, steps, nesting) -> Any:
        """One step along ``app`` (backward: its relation the other way)."""
        source_shape = app.shape if forward else self.g.spelled(app.result)
        cur = self.steer(cur, pos, source_shape, steps, nesting + 1)
        sub = _at(cur, pos)
        binding = _bind(source_shape, sub)
        window = app.window if forward else None
        if window is not None:
            before = Term((sub.op, *sub.args[window[0] : window[1]]))
        else:
            before = sub
        after = _fill(app.answer if forward else app.shape, binding)
        target = replace_at(cur, sub, window, after)
        if target is None:  # pragma: no cover - the graph checked the type
            raise DerivationError(f"{app.rule.name} changes the type of {sub}")
        direction = app.direction if forward else FLIP[app.direction]
        steps.append(Edge(cur, target, app.rule.name, direction, sub, window, before, after,
                          app.rule))  # fmt: skip
        return target


def _at(term: Any, pos: tuple) -> Any:
    for i in pos:
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

