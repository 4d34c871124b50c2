"""Derivations out of an e-graph: named relation steps from the start to a term.

The e-graph records why every two of its e-nodes are equal, as they are found equal
(:mod:`relgraph.eqsat.proofs`).  A derivation steers the start, a concrete term,
towards the target top-down.  Where the subterm at a position is not yet an e-node
of the target's, it follows the recorded proof from the subterm's e-node towards the
target's by one link:

* a relation's answer on a view: the subterm is first steered into the view's
  instance (its operands, where the view looked into them), then rewritten into the
  answer's instance: one step, whose :attr:`~relgraph.eqsat.bfs.Edge.pattern` is the
  view and the answer;
* congruence (the same Op over equal operands): the operands are steered;
* a left-nested sum the graph holds as one e-node: the step
  :func:`~relgraph.eqsat.flatten.flatteno` (backward: the sum as written again);
* an integer sum or product and its operands in another order (a rule matched
  operands that were not neighbours): steps of :func:`~relgraph.eqsat.ematch.reordero`.

At the target's e-node, the operands are steered to the target's.  Every step is an
:class:`~relgraph.eqsat.bfs.Edge` that :meth:`~relgraph.eqsat.bfs.Edge.check` checks.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any

from relgraph.eqsat.bfs import Derivation, Direction, Edge, rewritten
from relgraph.eqsat.egraph import EGraph
from relgraph.eqsat.ematch import reordero
from relgraph.eqsat.flatten import flat_form, flatteno
from relgraph.eqsat.proofs import CONGRUENCE, FLATTENED, REORDERED, term_key
from relgraph.eqsat.saturate import Merge
from relgraph.exceptions import DerivationError
from relgraph.logic.search import run_deep
from relgraph.rewriting.relation import as_rule
from relgraph.terms.printing import brief
from relgraph.terms.term import Term
from relgraph.terms.traverse import substitute

__all__ = ["derive", "application_edges", "DerivationError"]

FLATTEN = as_rule(flatteno)
REORDER = as_rule(reordero)
MAX_MOVES = 20_000  # moves of one derivation, at most
FLIP: dict[str, Direction] = {"forward": "backward", "backward": "forward"}


#: The applications between e-nodes, each both ways: ``{e-node: [(e-node, Merge,
#: forward)]}``.
Edges = dict[tuple, list[tuple[tuple, Merge, bool]]]


def application_edges(egraph: EGraph, applications: list[Merge]) -> Edges:
    """Every application between two e-nodes (not into a class), from either end."""
    edges: Edges = defaultdict(list)
    for app in applications:
        if app.to_key[0] != "class":
            a, b = egraph.canonical(app.from_key), egraph.canonical(app.to_key)
            edges[a].append((b, app, True))
            edges[b].append((a, app, False))
    return edges


def derive(egraph: EGraph, edges: Edges, start: Term, target: Any) -> Derivation:
    """The steps from ``start`` to ``target`` (both in one class of ``egraph``); a sum
    or product the graph holds only flat ends flat.  Where applications
    (:func:`application_edges`) lead from an e-node straight to the target's, the
    fewest are taken instead of the longer way the proof may record."""
    deriver = _Deriver(egraph, start, edges)
    goal = substitute(target, deriver.spelled)
    run_deep(lambda: deriver.steer((), goal))
    return Derivation(start, tuple(deriver.steps))


class _Deriver:
    def __init__(self, egraph: EGraph, start: Term, edges: Edges):
        self.g, self.proofs, self.edges = egraph, egraph.proofs, edges
        self.cur: Any = start
        self.steps: list[Edge] = []
        self.ids: dict[Any, int | None] = {}
        self.keys: dict[Any, tuple] = {}
        self.moves = MAX_MOVES
        self.in_hop = 0  # steering into a shortcut's view: the record's path only

    def steer(self, pos: tuple, goal: Any) -> None:
        """Steps that make the subterm at ``pos`` ``goal`` (of the same class)."""
        while term_key(sub := _at(self.cur, pos)) != term_key(goal):
            self.moves -= 1
            if self.moves < 0:
                raise DerivationError(f"no derivation of {brief(goal)} in {MAX_MOVES} moves")
            here, there = self._recorded(sub), self._recorded(goal)
            if here is not None and there is not None:  # two recorded terms: the record
                self._follow(pos, sub, here, there)
                continue
            key, flat = self._spelling(sub)
            if flat:
                self._flatten(pos, sub)
                continue
            goal_key, goal_flat = self._spelling(goal)
            if key == goal_key and not goal_flat:
                self._operands(pos, goal)
                continue
            hop = None if goal_flat or self.in_hop else self._shortest(sub, key, goal_key)
            if hop is not None:  # the fewest applications lead there
                self._hop(pos, sub, *hop)
                continue
            if here is None:  # a term of the e-node spelled otherwise
                here = self.g.node_ids[key]
            if self.proofs.term(here) != sub:
                self._operands(pos, self.proofs.term(here))
            else:
                self._follow(pos, sub, here, self.g.node_ids[goal_key])

    def _recorded(self, term: Any) -> int | None:
        """The proof id of ``term`` as written, if its tree is its class's.  A chain
        the graph spliced (``(a + b) + c`` of ``((a + b) + c) + d``) was written, but
        only the whole chain is linked to the e-node: a class made later for a part of
        it has a tree of its own."""
        pid = self.proofs.id_of(term, self.ids)
        if pid is None:
            return None
        key, _ = self._spelling(term)
        return pid if self.proofs.linked(pid, self.g.node_ids[key]) else None

    def _hop(self, pos: tuple, sub: Any, flat: bool, app: Merge, forward: bool) -> None:
        """A move along the application ``app`` (from ``sub``'s flat form, if ``flat``)."""
        here, after = app.ids if forward else app.ids[::-1]
        if flat:
            self._flatten(pos, sub)
        elif self.proofs.term(here) != sub:
            # into the application's view by the record alone: a shorter way may lead
            # back through the term being steered (1 = --1)
            self.in_hop += 1
            try:
                self._operands(pos, self.proofs.term(here))
            finally:
                self.in_hop -= 1
        else:
            self._link(pos, sub, self.proofs.term(after), app, forward)

    def _follow(self, pos: tuple, sub: Any, here: int, there: int) -> None:
        """One link of the recorded proof from ``sub`` (id ``here``) towards ``there``;
        its operands steered to the next id's, for congruence (egg's explanations:
        those are proofs recorded earlier, so this ends)."""
        after, reason, forward = self.proofs.first_step(here, there)
        if reason is CONGRUENCE:
            self._operands(pos, self.proofs.term(after))
        else:
            self._link(pos, sub, self.proofs.term(after), reason, forward)

    def _shortest(self, sub: Any, key: tuple, goal: tuple) -> tuple | None:
        """The first application of a shortest path of them from ``sub``'s e-node (or
        its flat form's, then True) to ``goal``, if there is one."""
        starts = {}  # the flat form first: its operands need no steering
        if type(sub) is Term and flat_form(sub) is not sub:
            flat_key = self.g.spelling(sub)[0]
            if flat_key is not None:
                starts[self.g.canonical(flat_key)] = True
        starts.setdefault(key, False)
        first: dict[tuple, Any] = dict.fromkeys(starts)
        queue = deque(starts)
        while queue:
            node = queue.popleft()
            if node == goal:
                hop = first[node]
                return None if hop is None else (starts.get(hop[0], False), hop[1], hop[2])
            for other, app, forward in self.edges.get(node, ()):
                if other not in first:
                    first[other] = first[node] or (node, app, forward)
                    queue.append(other)
        return None

    def _operands(self, pos: tuple, goal: Term) -> None:
        for i, child in enumerate(goal.op.operands(goal.args)):
            self.steer((*pos, i), child)

    def _spelling(self, term: Any) -> tuple:
        """The e-node of ``term`` as it is, else of its flat form (then True)."""
        memo_key = term_key(term)
        found = self.keys.get(memo_key)
        if found is None:
            key, flat = self._exact(term), False
            if key is None:
                key, flat = self.g.spelling(term)
            if key is None:
                raise DerivationError(f"{brief(term)} is not in the e-graph")
            found = self.keys[memo_key] = (self.g.canonical(key), flat)
        return found

    def _exact(self, term: Any) -> tuple | None:
        if type(term) is not Term:
            return None
        operands = tuple(term.op.operands(term.args))
        kids = tuple(self.g.lookup(a) for a in operands)
        key = (term.op, kids, term.args[len(operands) :])
        return key if None not in kids and key in self.g.memo else None

    def spelled(self, node: Term) -> Term:
        """``node`` as the graph holds it: flat if only its flat form is an e-node."""
        return node if self._exact(node) is not None else flat_form(node)

    def _flatten(self, pos: tuple, sub: Term) -> None:
        self._link(pos, sub, flat_form(sub), FLATTENED, True)

    def _link(self, pos: tuple, sub: Any, after: Any, reason: Any, forward: bool) -> None:
        """The step of one link of a proof, from ``sub`` to ``after``."""
        if reason is FLATTENED:
            self._step(pos, sub, None, after, FLATTEN, "forward" if forward else "backward", None)
            return
        if reason is REORDERED:  # either way: operands moved to the front one by one
            for moved in _moves(sub, after):
                self._step(pos, _at(self.cur, pos), None, moved, REORDER, "forward", None)
            return
        if not isinstance(reason, Merge):  # GIVEN
            raise DerivationError(
                f"{brief(sub)} and {brief(after)} were merged by the e-graph's user, "
                "not by a relation"
            )
        app = reason
        direction = app.direction if forward else FLIP[app.direction]
        if app.window is None:
            pattern = (app.shape, app.answer) if forward else (app.answer, app.shape)
            self._step(pos, sub, None, after, app.rule, direction, pattern)
            return
        i, j = app.window
        op = sub.op
        run = Term((op, *app.shape.args[i:j]))
        if forward:
            self._step(pos, sub, (i, j), after.args[i], app.rule, direction, (run, app.answer))
        else:  # the answer, one argument, becomes the run of arguments it came from
            runs = Term((op, *after.args[i:j]))
            self._step(pos, sub, (i, i + 1), runs, app.rule, direction, (app.answer, run))

    def _step(self, pos, node, window, after, rule, direction, pattern) -> None:
        if window is None:
            before = node
        elif window[1] - window[0] == 1:  # one argument becomes a run
            before = node.args[window[0]]
        else:
            before = Term((node.op, *node.args[window[0] : window[1]]))
        target = rewritten(self.cur, node, window, after, pos)
        if target is None:  # pragma: no cover - the graph checked the type
            raise DerivationError(f"{rule.name} changes the type of {brief(node)}")
        self.steps.append(
            Edge(self.cur, target, rule.name, direction, node, window, before, after, rule,
                 pattern, pos)
        )  # fmt: skip
        self.cur = target


def _moves(sub: Term, after: Term) -> list[Term]:
    """The terms from ``sub`` to ``after`` (its operands in another order), each with
    one operand of the one before moved to the front (:func:`reordero`'s steps): the
    operands of the longest tail of ``after`` that ``sub`` has in that order stay."""
    args, target = sub.args, after.args
    kept: set[int] = set()
    j = len(args) - 1
    for operand in reversed(target):
        while j >= 0 and args[j] != operand:
            j -= 1
        if j < 0:
            break
        kept.add(j)
        j -= 1
    order, steps = list(range(len(args))), list[Term]()
    for operand in reversed(target[: len(target) - len(kept)]):  # the last one first
        p = next(q for q in order[len(steps) :] if q not in kept and args[q] == operand)
        moved = [p, *(q for q in order if q != p)]
        steps.append(Term((sub.op, *(args[q] for q in moved))))
        order = moved
    return [t for t, before in zip(steps, [sub, *steps]) if t != before]


def _at(term: Any, pos: tuple) -> Any:
    for i in pos:
        if type(term) is not Term or i >= len(term.args):
            raise DerivationError(f"a step left no argument {i} in {brief(term)}")
        term = term.args[i]
    return term
