"""E-matching: a rule's left-hand side matched over e-classes, without views.

A rule (:func:`relgraph.rule`) whose left-hand side is a tree of fixed-arity
applications is matched as egg matches its patterns: the root against an e-node,
an inner application against every e-node of its operand class with that head, a
variable against the class itself, a symbol of the pattern against a class that
holds it.  A variable binds to what a view would show for the class (its typed
:class:`~relgraph.eqsat.egraph.Hole`, or its constant), so conditions and the
right-hand side see the same values as on a view; a repeated variable matches one
class.  Nothing is built for the e-nodes that do not
match, and no combination is cut (views show at most ``MAX_VIEWS`` of them).

Each match comes with the term it matched (its *shape*: matched e-nodes as
written, holes below), which the saturation loop records as the view the rule
ran on.  Over an associative Op a pattern of ``k`` arguments is also matched on
each run of ``k`` neighbouring arguments of a longer e-node (a *window*), as the
driver tries runs of a sum: in floating point only the leading run, the one that is
a part of the fold.

Over an Op that is also commutative, an integer or bool sum or product (where every
grouping and order of the operands has one value) is matched on any sub-multiset of
its operands too: ``exp(x) * exp(y)`` on ``mul(exp(i), j, exp(k))`` of integers.  The
match stands on the e-node with those operands moved to the front, which the
saturation loop adds to the class with the proof step :func:`reordero`.  In floating
point each order rounds differently, so only the leading run is a part of the fold.

A rest part alone in an argument list (``add(xs)``, ``add(A @ xs)``) takes every
operand, and on an associative Op also each run of two or more of them (not all,
leading ones in floating point);
rules with a rest part beside other arguments (``x + 0 + rest``) are matched on
views.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import combinations, product
from typing import Any

from relgraph.eqsat.egraph import LEAF, EGraph, Key, leaf_key
from relgraph.eqsat.views import MAX_WINDOW_ARITY, Interned
from relgraph.logic.goals import eacho
from relgraph.rewriting.declarations import forward_only
from relgraph.rewriting.patterns import PApp, PLit, PRest, PVar, same
from relgraph.rewriting.promotion import any_order, is_pure, run_starts
from relgraph.rewriting.relation import is_associative, is_commutative
from relgraph.terms.leaves import Symbol
from relgraph.terms.term import Term

__all__ = ["matchable", "EMatcher", "reordero", "moves_to_front"]

#: One match: the shape matched, its window (None: the whole e-node), the term the
#: pattern matched (the shape, or its window's run as a term), the bindings, and the
#: e-node as the graph holds it where the shape reorders its operands (else None).
Found = tuple[Term, "tuple[int, int] | None", Term, list, "Term | None"]


def matchable(p: Any) -> bool:
    """Whether ``p`` (a compiled pattern) is e-matched: applications down to variables
    and literals, each with a fixed number of arguments or with a rest part alone
    (``add(xs)``, ``add(A @ xs)``)."""
    if isinstance(p, PApp):
        if p.rest is None:
            return all(matchable(a) for a in p.args)
        return not p.args and (isinstance(p.rest, PRest) or matchable(p.rest.template))
    return isinstance(p, (PVar, PLit))


class EMatcher:
    """The matches of patterns on one graph, as it is in one search phase: what a
    pattern matches on a class is found once per phase, whatever uses the class."""

    def __init__(self, egraph: EGraph, interned: Interned):
        self.egraph = egraph
        self.interned = interned
        self.memo: dict[tuple[int, Any], list[tuple[dict, Any]]] = {}

    def matches(self, p: PApp, key: Key, windows: bool) -> Iterator[Found]:
        """The matches of ``p`` on e-node ``key``, grouped by shape."""
        if key[0] is not p.op:
            return
        yield from _grouped(self._node(p, key), None, lambda shape: (shape, None))
        children, params = key[1], key[2]
        arity = len(children)
        if not windows or params or not 2 < arity <= MAX_WINDOW_ARITY:
            return
        sizes = range(arity - 1, 1, -1) if p.rest is not None else [len(p.args)]
        sizes = [k for k in sizes if 2 <= k < arity]
        if not sizes or not is_associative(p.op):
            return
        holes = tuple(self.interned.hole(self.egraph, c) for c in children)
        whole_node = self.interned.view(p.op, holes, ())
        # a run stands for its part of the fold in one dtype; in floats, a leading one
        starts = run_starts(whole_node)
        for k in sizes:
            for i in range(min(starts, arity - k + 1)):
                found = self._node(p, (p.op, children[i : i + k], ()))

                def whole(part: Term, i: int = i, k: int = k) -> tuple[Term, None]:
                    parts = (*holes[:i], *part._tuple[1:], *holes[i + k :])
                    return self.interned.view(p.op, parts, ()), None

                yield from _grouped(found, (i, i + k), whole)
        if starts == arity and _any_order(p, whole_node):
            yield from self._reordered(p, children, holes)

    def _reordered(self, p: PApp, children: tuple, holes: tuple) -> Iterator[Found]:
        """Matches of ``p`` (``k`` fixed arguments) on each ``k`` operands of an e-node
        that are not a run of neighbours: on the e-node with them moved to the front
        (window ``(0, k)``), with the e-node as it is."""
        k = len(p.args)
        for chosen in combinations(range(len(children)), k):
            if chosen[-1] - chosen[0] == k - 1:
                continue  # a run: matched as a window
            others = [holes[j] for j in range(len(children)) if j not in chosen]
            found = self._node(p, (p.op, tuple(children[j] for j in chosen), ()))

            def whole(part: Term, chosen: tuple = chosen, others: list = others) -> tuple:
                written = list(holes)
                for j, shown in zip(chosen, part._tuple[1:]):
                    written[j] = shown
                moved = self.interned.view(p.op, (*part._tuple[1:], *others), ())
                return moved, self.interned.view(p.op, tuple(written), ())

            yield from _grouped(found, (0, k), whole)

    def _node(self, p: PApp, key: Key) -> list[tuple[dict, Term]]:
        """Bindings of ``p`` on e-node ``key`` (its head is ``p.op``), with the shape."""
        mk = (id(p), key)
        found = self.memo.get(mk)
        if found is None:
            found = self.memo[mk] = self._fixed(p, key) if p.rest is None else self._rest(p, key)
        return found

    def _fixed(self, p: PApp, key: Key) -> list[tuple[dict, Term]]:
        children, params = key[1], key[2]
        if len(children) + len(params) != len(p.args):
            return []
        orders = [tuple(range(len(children)))]
        if p.swaps and not params and children[0] != children[1]:
            orders.append((1, 0))  # a binary pattern on a commutative Op: either order
        found: list[tuple[dict, Term]] = []
        type_ = self.egraph.type_of(key)  # None for a run of operands: inferred
        for order in orders:
            options = [self._class(a, children[j]) for a, j in zip(p.args, order)]
            options += [_literal(a, v) for a, v in zip(p.args[len(children) :], params)]
            for combo in product(*options):
                b = _merged(part for part, _ in combo)
                if b is not None:
                    shown = [combo[order.index(j)][1] for j in range(len(children))]
                    found.append((b, self.interned.view(p.op, tuple(shown), params, type_)))
        return found

    def _rest(self, p: PApp, key: Key) -> list[tuple[dict, Term]]:
        """A rest part alone: every operand its item (as matching a view does, the
        first match of each item that agrees with the items before it)."""
        children, params = key[1], key[2]
        if params or not children:
            return []
        if isinstance(p.rest, PRest):
            holes = [self.interned.hole(self.egraph, c) for c in children]
            view = self.interned.view(p.op, tuple(holes), (), self.egraph.type_of(key))
            return [(b, view) for b in p.rest.match_many(holes, {})]
        rests = p.rest.rests
        b: dict = {}
        got: dict = {v: [] for v in rests}
        shown = []
        for c in children:
            item = self._first_agreeing(p.rest.template, c, b, got)
            if item is None:
                return []
            b, part, term = item
            for v in rests:
                got[v].append(part[v])
            shown.append(term)
        b.update({v: tuple(values) for v, values in got.items()})
        return [(b, self.interned.view(p.op, tuple(shown), (), self.egraph.type_of(key)))]

    def _first_agreeing(self, template: Any, cid: int, b: dict, rests: Any) -> tuple | None:
        """The first match of ``template`` on class ``cid`` that agrees with ``b`` on
        every variable but ``rests``: the bindings together, the match's, its term."""
        for part, term in self._class(template, cid):
            merged = _merged((b, {k: w for k, w in part.items() if k not in rests}))
            if merged is not None:
                return merged, part, term
        return None

    def _class(self, p: Any, cid: int) -> list[tuple[dict, Any]]:
        """Bindings of ``p`` on class ``cid``, with the term shown for it."""
        mk = (id(p), cid)
        found = self.memo.get(mk)
        if found is not None:
            return found
        if isinstance(p, PLit) and isinstance(p.value, Symbol):
            # a symbol of the pattern: a class that holds it, shown as itself
            leaf = leaf_key(p.value)
            nodes = self.egraph.nodes(cid)
            found = [({}, p.value)] if any(k[0] is LEAF and k == leaf for k in nodes) else []
        elif not isinstance(p, PApp):
            found = _literal(p, self.interned.hole(self.egraph, cid))
        else:
            found = []
            canon = self.egraph.find(cid)
            for key in self.egraph.nodes(cid):
                if key[0] is not p.op or canon in key[1]:
                    continue  # another head, or the class inside itself (x + 0)
                found.extend(self._node(p, key))
        self.memo[mk] = found
        return found


def _literal(p: Any, value: Any) -> list[tuple[dict, Any]]:
    """Bindings of a variable or literal ``p`` on ``value``."""
    return [(b, value) for b in p.match(value, {})]


def _merged(parts: Iterable[dict]) -> dict | None:
    """The bindings of the arguments together; None where a variable bound in two
    of them differs (a repeated variable matches one class)."""
    b: dict = {}
    for part in parts:
        for v, value in part.items():
            if v in b and not same(b[v], value):
                return None
            b[v] = value
    return b


def _grouped(found: list[tuple[dict, Term]], window: Any, whole: Any) -> Iterator[Found]:
    """Matches with one shape together, in the order first found (``whole(part)``:
    the shape, and the e-node as the graph holds it where the shape reorders it)."""
    groups: dict[Term, list] = {}
    for b, part in found:
        groups.setdefault(part, []).append(b)
    for part, bindings in groups.items():
        shape, written = whole(part)
        yield shape, window, part, bindings, written


def _any_order(p: PApp, node: Term) -> bool:
    """Whether every order and grouping of the operands of ``node`` (a view of the
    e-node, pure) has one value, so that ``p`` (fixed arguments, none of its own Op:
    those would splice) may match any of them: a commutative Op of integers or bools
    (not floats, even where a query regroups them: a derivation's step must check
    alone)."""
    if p.rest is not None or not is_commutative(p.op):
        return False
    if any(isinstance(a, PApp) and a.op is p.op for a in p.args):
        return False
    return any_order(node)


def moves_to_front(t: Any) -> list[Term]:
    """``t`` with one of its operands moved to the front, for each operand but the
    first, where every order of ``t``'s operands has one value (see :func:`reordero`)."""
    if type(t) is not Term or len(t.args) < 2:
        return []
    if not (is_associative(t.op) and is_commutative(t.op) and is_pure(t) and any_order(t)):
        return []
    args = t.args
    moved = (Term((t.op, args[i], *args[:i], *args[i + 1 :])) for i in range(1, len(args)))
    return list(dict.fromkeys(m for m in moved if m != t))


@forward_only
def reordero(in_lv: Any, out_lv: Any) -> Any:
    """``add(i, j, k) -> add(k, i, j)``: an operand of an integer or bool sum or
    product moved to the front, the same value (integers wrap around, bools are
    logic: every order and grouping agrees).  Derivations name it where the e-graph
    matched a rule on operands that were not neighbours.  Not for floats, where each
    order rounds differently.

    >>> import relgraph as rg
    >>> from kanren import run, var
    >>> i, j, k = rg.vector("i", "int64"), rg.vector("j", "int64"), rg.vector("k", "int64")
    >>> q = var()
    >>> [str(t) for t in run(0, q, reordero(rg.add(i, j, k), q))]
    ['(j + i + k)', '(k + i + j)']
    >>> run(0, q, reordero(rg.add(*(rg.vector(n) for n in "xyz")), q))
    ()
    """
    return eacho(moves_to_front, in_lv, out_lv)
