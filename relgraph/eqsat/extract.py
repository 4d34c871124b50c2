"""Reading terms out of an e-graph: the cheapest one, and all of them.

:func:`extract` picks an e-node per e-class so that the term it spells is cheap
under a cost model, counting a subterm used twice once (DAG cost).  Exact DAG
extraction is NP-hard; this is the greedy bottom-up one of extraction-gym's
``faster-greedy-dag``: a class's cost is that of its cheapest e-node together
with the distinct classes below it, improved until nothing changes.  On a tree
of choices (a matrix chain) it is the exact optimum.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from typing import Any

from relgraph.eqsat.cost import Cost
from relgraph.eqsat.egraph import LEAF, EGraph, Key
from relgraph.terms.term import Term

__all__ = ["NodeCosts", "extract", "iter_terms"]

_TINY = 1e-9  # the least a compound node costs: no cycle of free nodes
_ABOVE = 1 + 1e-9  # a cost this far above another is not a tie (see _better)


class NodeCosts:
    """The cost of each e-node under a cost model, computed once per node."""

    def __init__(self, egraph: EGraph, cost: Cost):
        self.egraph = egraph
        self.node_cost = getattr(cost, "node", cost)
        self.name = getattr(cost, "__name__", "cost")
        self.cache: dict[Key, float] = {}
        self.holes: dict[int, Any] = {}

    def __call__(self, key: Key) -> float:
        found = self.cache.get(key)
        if found is None:
            if key[0] is LEAF:
                found = 0.0
            else:
                view = self._view(key)
                found = float(self.node_cost(view))
                if not found >= 0:
                    raise ValueError(
                        f"cost model {self.name!r} gave {found} for {view}: "
                        "costs must be non-negative numbers"
                    )
                found = max(found, _TINY)
            self.cache[key] = found
        return found

    def _view(self, key: Key) -> Term:
        """E-node ``key`` as a term over its operand classes' holes, typed as its class
        (what a view shows: nothing is inferred again)."""
        g = self.egraph
        holes = []
        for c in key[1]:
            hole = self.holes.get(c)
            if hole is None:
                hole = self.holes[c] = g.hole(c)
            holes.append(hole)
        view = Term.of_ground((key[0], *holes, *key[2]))
        view._type = g.type_of(key)
        return view


def extract(egraph: EGraph, root: int, costs: NodeCosts) -> tuple:
    """The cheapest term of class ``root``, its DAG cost, the e-node chosen in each
    class it uses.

    Ties go to the e-node added first (the start's own e-nodes first).
    """
    g = egraph
    best: dict[int, tuple[float, int, Key, dict[int, float]]] = {}
    # breadth first from the classes that hold a leaf: a class is mostly looked at once
    # its operands have their terms, and again only where one of them improves
    work = deque(c for c, cls in g.classes.items() if any(_bottom(k) for k in cls.nodes))
    queued = set(work)
    while work:
        cid = g.find(work.popleft())
        queued.discard(cid)
        cls = g.classes[cid]
        current = best.get(cid)
        improved = False
        for key in cls.nodes:
            found = _candidate(g, cid, key, costs, best, current)
            if found is not None and _better(found, current):
                current, improved = found, True
        if improved and current is not None:
            best[cid] = current
            for _, parent, _ in cls.parents:
                parent = g.find(parent)
                if parent not in queued:
                    queued.add(parent)
                    work.append(parent)
    if g.find(root) not in best:  # pragma: no cover - the start itself is a term
        raise ValueError("the start's class has no finite term")
    top = best[g.find(root)]
    chosen = {cid: best[cid][2] for cid in top[3]}
    return _build(g, g.find(root), best), top[0], chosen


def _bottom(key: Key) -> bool:
    """Whether e-node ``key`` is a leaf or has no operands."""
    return key[0] is LEAF or not key[1]


def _candidate(g: EGraph, cid: int, key: Key, costs: NodeCosts, best: dict, current: Any) -> Any:
    """E-node ``key`` of class ``cid`` as its class's choice: ``(cost, born, key,
    cost of each class below)``; None where an operand has no term yet, or where it
    cannot beat ``current`` (it costs at least its own cost and its dearest operand's)."""
    own = costs(key)
    born = g.born.get(key, math.inf)
    if key[0] is LEAF:
        return (0.0, born, key, {cid: 0.0})
    entries = []
    for child in key[1]:
        child = g.find(child)
        entry = best.get(child)
        if entry is None or child == cid:
            return None
        entries.append(entry)
    if current is not None and own + max(e[0] for e in entries) > current[0] * _ABOVE:
        return None
    deps: dict[int, float] = {}
    for entry in entries:
        deps.update(entry[3])
    if cid in deps:
        return None  # it would contain itself
    deps[cid] = own
    return (sum(deps.values()), born, key, deps)


def _better(new: tuple, old: tuple | None) -> bool:
    if old is None:
        return True
    if math.isclose(new[0], old[0], rel_tol=1e-12, abs_tol=1e-12):
        return new[1] < old[1]
    return new[0] < old[0]


def _build(g: EGraph, root: int, best: dict) -> Term:
    done: dict[int, Any] = {}
    stack: list[tuple[int, bool]] = [(root, False)]
    on_path: set[int] = set()
    while stack:
        cid, expanded = stack.pop()
        key = best[cid][2]
        if expanded:
            on_path.discard(cid)
            children = () if key[0] is LEAF else tuple(done[g.find(c)] for c in key[1])
            done[cid] = g.node_term(key, children)
            continue
        if cid in done:
            continue
        if cid in on_path:  # pragma: no cover - excluded by _candidate
            raise RuntimeError("extraction chose a cycle")
        on_path.add(cid)
        stack.append((cid, True))
        if key[0] is not LEAF:
            stack.extend((g.find(c), False) for c in key[1] if g.find(c) not in done)
    return done[root]


def iter_terms(egraph: EGraph, root: int) -> Iterator[Any]:
    """Every term of class ``root`` without a class inside itself, lazily (there are
    exponentially many: take what you need)."""
    g = egraph

    def terms(cid: int, path: frozenset) -> Iterator[Any]:
        cid = g.find(cid)
        inner = path | {cid}
        for key in list(g.nodes(cid)):
            if key[0] is LEAF:
                yield key[2]
            elif not any(g.find(c) in inner for c in key[1]):
                for children in _product([(c, inner) for c in key[1]]):
                    yield g.node_term(key, children)

    def _product(slots: list) -> Iterator[tuple]:
        if not slots:
            yield ()
            return
        (cid, path), rest = slots[0], slots[1:]
        for first in terms(cid, path):
            for tail in _product(rest):
                yield (first, *tail)

    return terms(root, frozenset())
