"""Proofs recorded at union time: egg's explanation forest.

Every e-node the graph is given (the start's, each answer's, each view a relation
matched) gets a *proof id*: its Op over the proof ids of its operands as they were
written, not made canonical, so an id stands for one concrete term
(:meth:`Proofs.term`).  Whenever two ids are found equal, the forest links them with
the reason: a relation's answer on a view (the :class:`~relgraph.eqsat.saturate.Merge`),
``CONGRUENCE`` (the same Op over equal operands), ``FLATTENED`` (a left-nested sum as
written and the one e-node the graph holds it as), ``REORDERED`` (an integer sum or
product and the same operands in another order, where a rule matched operands that
were not neighbours), or ``GIVEN`` (a caller's
:meth:`~relgraph.eqsat.egraph.EGraph.merge`).  Each e-class is one tree of the
forest, so the path between two ids of a class is a proof that their terms are
equal; :mod:`relgraph.eqsat.derive` turns it into steps (Willsey et al., POPL 2021;
Flatt et al., FMCAD 2022).

>>> p = Proofs()
>>> a, b, c = (p.add((LEAF, str, name)) for name in "abc")
>>> p.union(a, b, "why a = b"); p.union(c, a, "why c = a")
>>> p.first_step(b, c)
(0, 'why a = b', False)
>>> p.first_step(a, c)
(2, 'why c = a', False)
"""

from __future__ import annotations

from typing import Any

from relgraph.terms.term import Term, negative_zero

__all__ = [
    "Proofs", "CONGRUENCE", "FLATTENED", "REORDERED", "GIVEN", "LEAF", "leaf_key", "term_key",
]  # fmt: skip

LEAF = "leaf"  # the head of a leaf's key (leaf_key), as in the e-graph
CONGRUENCE = "congruence"
FLATTENED = "flattened"
REORDERED = "reordered"
GIVEN = "given"


def leaf_key(value: Any) -> tuple:
    """The key of a leaf: its type is part of it, so ``1``, ``1.0`` and ``True`` differ,
    and its sign, so ``0.0`` and ``-0.0`` do."""
    return (LEAF, type(value), value, negative_zero(value))


def term_key(x: Any) -> Any:
    """A dict key for a subterm: leaves with their type (``1``, ``1.0``, ``True``,
    ``np.int64(1)`` differ, though they compare and hash alike) and sign (``0.0`` and
    ``-0.0``)."""
    return x if type(x) is Term else (type(x), x, negative_zero(x))


class Proofs:
    """Proof ids for written e-nodes, and the forest of reasons that joins them."""

    def __init__(self) -> None:
        #: Each id's node: ``(op, operand ids, params)`` or a leaf key.
        self.keys: list[tuple] = []
        self.ids: dict[tuple, int] = {}
        self.parent: list[int] = []
        #: The reason on the link to the parent, and whether the id is its source side
        #: (the term the relation ran on; the sum as written).
        self.links: list[tuple[Any, bool]] = []
        self._terms: dict[int, Any] = {}

    def add(self, key: tuple) -> int:
        """The id of ``key`` (new: a tree of its own)."""
        found = self.ids.get(key)
        if found is not None:
            return found
        pid = len(self.keys)
        self.keys.append(key)
        self.ids[key] = pid
        self.parent.append(pid)
        self.links.append((None, True))
        return pid

    def union(self, source: int, other: int, reason: Any) -> None:
        """Link the trees of ``source`` and ``other`` by ``reason``; nothing if they are
        one tree already (an e-node the graph made twice before a rebuild found it)."""
        if self.linked(source, other):
            return
        self._reroot(source)
        self.parent[source] = other
        self.links[source] = (reason, True)

    def linked(self, a: int, b: int) -> bool:
        """Whether ids ``a`` and ``b`` are in one tree (proven equal)."""
        return self._root(a) == self._root(b)

    def _root(self, pid: int) -> int:
        while self.parent[pid] != pid:
            pid = self.parent[pid]
        return pid

    def _reroot(self, pid: int) -> None:
        """Make ``pid`` the root of its tree, reversing the links on the way up."""
        parent, link = pid, (None, True)
        while True:
            up, up_link = self.parent[pid], self.links[pid]
            self.parent[pid], self.links[pid] = parent, link
            if up == pid:
                return
            parent, link = pid, (up_link[0], not up_link[1])
            pid = up

    def first_step(self, start: int, goal: int) -> tuple[int, Any, bool]:
        """The first link of the path from ``start`` to ``goal`` (one tree): the next
        id, the reason, and whether ``start`` is the reason's source side."""
        ups = {start: 0}
        pid = start
        while self.parent[pid] != pid:
            pid = self.parent[pid]
            ups[pid] = len(ups)
        below, pid = None, goal
        while pid not in ups:
            if self.parent[pid] == pid:
                raise ValueError(f"proof ids {start} and {goal} are not in one tree")
            below, pid = pid, self.parent[pid]
        if pid != start:  # up from start, towards the common ancestor
            reason, source = self.links[start]
            return self.parent[start], reason, source
        assert below is not None  # start != goal: goal is below start
        reason, source = self.links[below]
        return below, reason, not source

    def term(self, pid: int) -> Any:
        """The term id ``pid`` stands for."""
        found = self._terms.get(pid)
        if found is not None:
            return found
        stack = [pid]
        while stack:
            top = stack[-1]
            key = self.keys[top]
            if key[0] == LEAF:
                self._terms[top] = key[2]
                stack.pop()
                continue
            missing = [c for c in key[1] if c not in self._terms]
            if missing:
                stack.extend(missing)
                continue
            children = tuple(self._terms[c] for c in key[1])
            self._terms[top] = Term.of_ground((key[0], *children, *key[2]))
            stack.pop()
        return self._terms[pid]

    def id_of(self, term: Any, seen: dict) -> int | None:
        """The id whose term is ``term``, if there is one (``seen``: a memo)."""
        memo_key = term_key(term)
        found = seen.get(memo_key, seen)
        if found is not seen:
            return found
        if type(term) is not Term:
            try:
                pid = self.ids.get(leaf_key(term))
            except TypeError:  # an unhashable leaf
                pid = None
        else:
            operands = tuple(term.op.operands(term.args))
            kids = tuple(self.id_of(a, seen) for a in operands)
            pid = None if None in kids else self.ids.get((term.op, kids, term.args[len(kids) :]))
        seen[memo_key] = pid
        return pid
