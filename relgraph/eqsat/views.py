"""Views of e-classes: the terms relations are run on in the e-graph.

A *view* of an e-class is one of its e-nodes as a term, its operand classes
expanded into their e-nodes as many levels deep as the relation looks and shown as
typed :class:`~relgraph.eqsat.egraph.Hole` symbols (or their constants) below that; a
class's symbol is shown as its hole at every depth, so an operand compares equal to
the same class deeper in the view (the ``y`` of ``(x * y) / y``).  A
rule (:func:`relgraph.rule`) knows how deep it looks and which Op it needs at each
place (its *guide*), so only those e-nodes are expanded; a hand-written goal sees
every e-node to its depth (2), unless it declares what it reads
(:func:`relgraph.rewriting.relation.reads`: a guide, in which ``"leaf"`` shows a
symbol or constant operand as itself).  An
e-node shows at most ``MAX_VIEWS`` views, an operand class at most
``MAX_ALTERNATIVES`` e-nodes; what was left out is counted.
"""

from __future__ import annotations

from itertools import islice, product
from math import prod
from typing import Any

from relgraph.eqsat.egraph import LEAF, NO_CONSTANT, EGraph, Key
from relgraph.rewriting.patterns import PApp, PEach
from relgraph.rewriting.relation import positions
from relgraph.terms.term import Term

__all__ = [
    "DEFAULT_DEPTH", "MAX_ALTERNATIVES", "MAX_VIEWS", "MAX_WINDOW_ARITY", "ALL",
    "pattern_guide", "Interned", "Views",
]  # fmt: skip

#: Depth of the views a hand-written goal sees, unless it says (``relation.depth``).
DEFAULT_DEPTH = 2
MAX_ALTERNATIVES = 8  # e-nodes shown for one operand class in one view
MAX_VIEWS = 32  # views of one e-node per relation
MAX_WINDOW_ARITY = 16  # runs of arguments are tried on sums of at most this many terms
ALL = "all"  # the guide of a hand-written goal: every e-node, to its depth


def pattern_guide(p: Any) -> dict:
    """The Ops a pattern needs at each place: ``{op: children}``, ``children`` a tuple
    of guides by position, or one guide for every operand (rest, commutative)."""
    if not isinstance(p, PApp):
        return {}
    if p.rest is None and not p.commutative:
        return {p.op: tuple(pattern_guide(a) for a in p.args)}
    merged: dict = {}
    parts = [*p.args, p.rest.template] if isinstance(p.rest, PEach) else list(p.args)
    for part in parts:
        _merge_guide(merged, pattern_guide(part))
    return {p.op: merged}


def _merge_guide(into: dict, other: dict) -> None:
    for op, children in other.items():
        mine = into.get(op)
        if mine is None:
            into[op] = children
        elif (
            isinstance(mine, tuple) and isinstance(children, tuple) and len(mine) == len(children)
        ):
            into[op] = tuple(_union(a, b) for a, b in zip(mine, children))
        else:
            into[op] = _union(_as_one(mine), _as_one(children))


def _as_one(children: Any) -> dict:
    if not isinstance(children, tuple):
        return children
    one: dict = {}
    for g in children:
        _merge_guide(one, g)
    return one


def _union(a: dict, b: dict) -> dict:
    out = dict(a)
    _merge_guide(out, b)
    return out


class Interned:
    """The one Term object of each view and window seen in a saturation, and each
    view's windows: the relations' memory of what they tried (``runner.seen``) then
    compares terms by identity rather than walking them, and windows are cut once."""

    def __init__(self) -> None:
        self.terms: dict[Term, Term] = {}
        self.windows: dict[Term, tuple] = {}
        self.cut: set[Key] = set()  # e-nodes whose views were cut (see Budgets.views_cut)
        self.holes: dict[tuple, Any] = {}
        # A view by the identities of its parts (interned, so stable): no structural
        # comparison of an equal view built again in a later search.
        self.by_parts: dict[tuple, Term] = {}
        self.recorded: set[int] = set()  # ids of the views put in a graph's ``known``

    def record(self, known: dict[Term, int], view: Term, cid: int) -> None:
        """``known[view] = cid``, once per view: the graph may hold an equal term
        built elsewhere, and a dict compares the two by walking them each time."""
        if id(view) not in self.recorded:
            self.recorded.add(id(view))
            known[view] = cid

    def term(self, t: Term) -> Term:
        return self.terms.setdefault(t, t)

    def hole(self, g: EGraph, cid: int) -> Any:
        """What a view shows for class ``cid`` at its edge (see :meth:`EGraph.hole`): its
        constant, or one hole per class and type (a merge may make the type precise)."""
        cid = g.find(cid)
        cls = g.classes[cid]
        if cls.constant is not NO_CONSTANT:  # a merge may have given it one
            return cls.constant
        found = self.holes.get((cid, cls.type))
        if found is None:
            found = self.holes[cid, cls.type] = g.hole(cid)
        return found

    def view(self, op: Any, combo: tuple, params: tuple, type_: Any = None) -> Term:
        """The one Term of ``op`` over these (interned) parts; ``type_``, the type of
        the e-class it shows, is its type (not inferred again)."""
        parts = (op, params, *map(id, combo))
        found = self.by_parts.get(parts)
        if found is None:
            found = self.by_parts[parts] = self.term(Term.of_ground((op, *combo, *params)))
            if found._type is None:
                found._type = type_
        return found

    def places(self, view: Term) -> tuple:
        """``positions(view)``, each place interned."""
        found = self.windows.get(view)
        if found is None:
            found = self.windows[view] = tuple((self.term(p), w) for p, w in positions(view))
        return found


class Views:
    """Views of the e-classes of one graph, as it is in one search phase (``interned``
    outlives it)."""

    def __init__(self, egraph: EGraph, interned: Interned):
        self.egraph = egraph
        self.interned = interned
        self.cache: dict[tuple[int, int, int], list] = {}
        self.root_cache: dict[tuple[Key, int, int], list] = {}
        # (class, guide, depth) whose alternatives were cut at MAX_ALTERNATIVES
        self.crowded: set[tuple[int, int, int]] = set()

    def of_node(self, key: Key, guide: Any, depth: int) -> list[Term]:
        """Views of e-node ``key`` (its guide entry: ALL, a tuple or one guide)."""
        children, interned, graph = key[1], self.interned, self.egraph
        op, params, type_ = key[0], key[2], graph.type_of(key)
        if depth <= 1:  # its operands as holes: one view
            holes = tuple([interned.hole(graph, c) for c in children])
            return [interned.view(op, holes, params, type_)]
        if isinstance(guide, tuple):
            guides = guide if len(guide) == len(children) else ({},) * len(children)
        else:
            guides = (guide,) * len(children)
        alts = [self.alternatives(c, g, depth - 1) for c, g in zip(children, guides)]
        crowded = self.crowded and any(
            (c, id(g), depth - 1) in self.crowded for c, g in zip(children, guides)
        )
        if crowded or prod(map(len, alts)) > MAX_VIEWS:
            interned.cut.add(key)
        return [
            interned.view(op, combo, params, type_) for combo in islice(product(*alts), MAX_VIEWS)
        ]

    def alternatives(self, cid: int, guide: Any, depth: int) -> list:
        """What a view shows for operand class ``cid``."""
        g = self.egraph
        if depth <= 0 or not guide:
            return [self.interned.hole(g, cid)]
        ck = (cid, id(guide), depth)
        found = self.cache.get(ck)
        if found is not None:
            return found
        self.cache[ck] = [self.interned.hole(g, cid)]  # a class inside itself: a hole
        out: list = []
        canon = g.find(cid)
        nodes = g.nodes(cid)
        for i, key in enumerate(nodes):
            if key[0] is not LEAF and canon in key[1]:
                continue  # the class inside itself (x + 0): its hole shows as much
            if key[0] is LEAF:
                if guide is not ALL and LEAF in guide:
                    out.append(key[2])  # asked for as itself (by name, to sort)
                elif guide is ALL:
                    # as the class, as below the view's depth: x beside the x of 2 * x
                    # is the same placeholder, so relations that compare operands see it
                    hole = self.interned.hole(g, cid)
                    if not any(o is hole for o in out):  # two leaves: one placeholder
                        out.append(hole)
            elif guide is ALL:
                out.extend(self.of_node(key, ALL, depth))
            elif key[0] in guide:
                out.extend(self.of_node(key, guide[key[0]], depth))
            if len(out) >= MAX_ALTERNATIVES:
                if len(out) > MAX_ALTERNATIVES or i < len(nodes) - 1:
                    self.crowded.add(ck)  # e-nodes left out (or not looked at)
                break
        out = out[:MAX_ALTERNATIVES] or [self.interned.hole(g, cid)]
        self.cache[ck] = out
        return out

    def of_root(self, cid: int, key: Key, runner: Any) -> list[Term]:
        """The views of e-node ``key`` of class ``cid`` a runner tries (none if its
        guide has no entry for the head)."""
        guide = runner.guide
        entry = ALL if guide is ALL else guide.get(key[0])
        if entry is None:
            return []
        rk = (key, id(entry), runner.depth)
        found = self.root_cache.get(rk)
        if found is None:
            found = self.root_cache[rk] = self.of_node(key, entry, runner.depth)
            known, record = self.egraph.known, self.interned.record
            for view in found:
                record(known, view, cid)
        return found
