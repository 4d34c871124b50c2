"""An e-graph of terms: hash-consed e-nodes over e-classes, with a union-find.

An *e-node* is an Op applied to e-classes (``(op, (class, ...), params)``) or a
leaf (a symbol or a constant); an *e-class* is a set of e-nodes known to compute
the same values.  Adding a term adds one e-node per distinct subterm not yet in
the graph; :meth:`EGraph.merge` records that two classes are equal, and
:meth:`EGraph.rebuild` restores the invariants egg (Willsey et al., POPL 2021)
keeps: every e-node is stored once, with canonical children, and two e-nodes with
the same Op and children are in the same class (congruence).

Every e-node added and every merge is also recorded as a proof
(:mod:`relgraph.eqsat.proofs`): the terms as written, and why they are equal.

Three *analyses* ride along: every class has the :class:`~relgraph.terms.types.TensorType`
of its values (dtype, and shape where the symbols give one), a class holding a
constant leaf knows its value, and a class knows whether it is never -0.0
(:mod:`relgraph.ops.zeros`: ``exp(x) + 0`` is ``exp(x)``, ``x + 0`` is not).
Relations see a class through views (see :mod:`relgraph.eqsat.saturate`), in which an
operand class is a typed :class:`Hole` that carries the last fact.

Sums and products are kept flat: a left-nested chain ``(x + y) + z`` is the one
e-node ``add(x, y, z)``, which numpy computes the same way (a left fold), so
associativity does not multiply the e-nodes (:mod:`relgraph.eqsat.flatten`).

Examples
--------
>>> import relgraph as rg
>>> x, y = rg.vector("x"), rg.vector("y")
>>> g = EGraph()
>>> a, b = g.add_term(x + y), g.add_term(y + x)
>>> g.find(a) == g.find(b)
False
>>> g.merge(a, b); g.rebuild()
True
>>> g.find(a) == g.find(b), g.node_count, g.class_count
(True, 4, 3)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from relgraph.eqsat.flatten import flat_form, left_spine
from relgraph.eqsat.proofs import (
    CONGRUENCE,
    FLATTENED,
    GIVEN,
    LEAF,
    Proofs,
    leaf_key,
    term_key,
)
from relgraph.ops.zeros import never_minus_zero, node_never_minus_zero
from relgraph.rewriting.declarations import ANY_CONSTANT
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term
from relgraph.terms.traverse import substitute
from relgraph.terms.types import TensorType
from relgraph.unionfind import UnionFind

__all__ = ["EGraph", "Hole", "Key", "LEAF", "leaf_key", "is_hashable"]

#: An e-node: ``(op, children, params)``, or a leaf's key (:func:`leaf_key`).
Key = tuple


class Hole(Symbol):
    """An operand e-class shown in a view: a typed input that stands for the class.

    Equal only to the hole of the same class (never to a user's symbol).
    """

    __slots__ = ("cid", "never_minus_zero")
    cid: int
    never_minus_zero: bool

    def __init__(self, cid: int, type: TensorType, never_minus_zero: bool = False):
        super().__init__(f"e{cid}", type)
        object.__setattr__(self, "cid", cid)
        object.__setattr__(self, "never_minus_zero", never_minus_zero)
        object.__setattr__(self, "_hash", hash(("Hole", cid)))

    def __eq__(self, other):
        return self is other or (type(other) is Hole and other.cid == self.cid)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._hash

    def __reduce__(self):
        return (Hole, (self.cid, self.type, self.never_minus_zero))


class EClass:
    """One e-class: its e-nodes, the e-nodes that use it (with their classes and
    proof ids), and its analyses."""

    __slots__ = ("nodes", "parents", "type", "constant", "never_minus_zero")

    def __init__(self, key: Key, type: TensorType, constant: Any, never_minus_zero: bool):
        self.nodes: list[Key] = [key]
        self.parents: list[tuple[Key, int, int]] = []
        self.type = type
        self.constant = constant  # a leaf value, or NO_CONSTANT
        self.never_minus_zero = never_minus_zero


NO_CONSTANT = object()
_CONSTANTS = (bool, int, float, complex, Constant)


def is_constant(value: Any) -> bool:
    return isinstance(value, _CONSTANTS) or (
        hasattr(value, "dtype") and not isinstance(value, (Symbol, Term))
    )


class EGraph:
    """Hash-consed e-nodes, e-classes under a union-find, and their analyses."""

    def __init__(self) -> None:
        self.sets: UnionFind[int] = UnionFind()
        self._parents = self.sets.parents
        self.classes: dict[int, EClass] = {}
        self.memo: dict[Key, int] = {}
        self.pending: list[int] = []
        #: Pairs of classes merged with different constants: an unsound relation.
        self.conflicts: list[tuple[Any, Any]] = []
        self.version = 0  # bumped by every new e-node and every merge
        #: The order e-nodes were added in (extraction prefers older ones on ties).
        self.born: dict[Key, int] = {}
        #: Classes made or merged since :meth:`changed` was last called.
        self.touched: set[int] = set()
        self.reshown: set[int] = set()  # merged classes whose holes show another value
        #: Terms added, and the views shown, with their classes (maybe merged since).
        self.known: dict[Term, int] = {}
        self.proofs = Proofs()
        #: The proof id of an e-node of each key in ``memo``, and of the e-node that
        #: made each class.
        self.node_ids: dict[Key, int] = {}
        self.class_ids: dict[int, int] = {}

    # -- the union-find ---------------------------------------------------------------

    def find(self, cid: int) -> int:
        """The canonical id of class ``cid``."""
        try:
            if self._parents[cid] == cid:  # a class of its own, as most are
                return cid
        except KeyError:
            return cid
        return self.sets.find(cid)

    def canonical(self, key: Key) -> Key:
        """``key`` with its children canonical."""
        if key[0] is LEAF:
            return key
        find = self.find
        return (key[0], tuple(find(c) for c in key[1]), key[2])

    # -- adding ---------------------------------------------------------------------

    def add_node(self, key: Key, written: Key, type_: TensorType) -> tuple[int, int]:
        """The class of e-node ``key`` (canonical), made if new, and the proof id of
        ``written``: the e-node with the proof ids of its operands as written."""
        pid = self.proofs.add(written)
        found = self.memo.get(key)
        if found is not None:
            # another spelling of an e-node the graph has (or one made under a class
            # merged since): the same Op over equal operands
            self.proofs.union(pid, self.node_ids[key], CONGRUENCE)
            return self.find(found), pid
        cid = len(self.sets)
        self.sets.add(cid)
        constant = key[2] if key[0] is LEAF and is_constant(key[2]) else NO_CONSTANT
        self.classes[cid] = EClass(key, type_, constant, self._never_minus_zero(key, type_))
        self.touched.add(cid)
        self.memo[key] = cid
        self.node_ids[key] = self.class_ids[cid] = pid
        self.born.setdefault(key, len(self.born))
        if key[0] is not LEAF:
            for child in set(key[1]):
                self.classes[child].parents.append((key, cid, pid))
        self.version += 1
        return cid, pid

    def _never_minus_zero(self, key: Key, type_: TensorType) -> bool:
        if type_.dtype.kind not in "fc":
            return True
        if key[0] is LEAF:
            return never_minus_zero(key[2])
        operands = (self.classes[self.find(c)].never_minus_zero for c in key[1])
        return node_never_minus_zero(key[0], operands)

    def add_term(self, term: Any) -> int:
        """The class of ``term``: its subterms added bottom-up, holes mapped to their
        classes.  A left-nested sum or product is spliced into one e-node when its
        inner part is new (an answer ``view + 0`` stays one e-node over the view's
        class, so identities do not make ever longer sums)."""
        return self.insert(term)[0]

    def insert(self, term: Any) -> tuple[int, Key, int]:
        """:meth:`add_term`, the key of the root's e-node (``("class", id)`` for a
        hole), and the proof id of ``term`` as written."""
        if type(term) is Hole:
            return self.find(term.cid), ("class", self.find(term.cid)), self.class_ids[term.cid]
        root_key: Key = leaf_key(term) if type(term) is not Term else ()
        done: dict[Any, tuple[int, int]] = {}  # class and proof id
        stack: list[tuple[Any, Term | None]] = [(term, None)]
        while stack:
            item, flat = stack.pop()
            k = term_key(item)
            if flat is None and k in done:
                continue
            if type(item) is not Term:
                done[k] = self.add_leaf(item)
                continue
            if flat is None:
                flat = flat_form(item)
                if flat is not item and self.lookup(item._tuple[1]) is not None:
                    flat = item  # its inner part is in the graph: kept as written
                stack.append((item, flat))
                stack.extend((a, None) for a in _operands(flat) if term_key(a) not in done)
                continue
            operands = _operands(flat)
            parts = [done[term_key(a)] for a in operands]
            rest = flat.args[len(operands) :]
            key = (flat.op, tuple(self.find(c) for c, _ in parts), rest)
            written = (flat.op, tuple(p for _, p in parts), rest)
            cid, pid = self.add_node(key, written, typeof(item))
            if flat is not item:
                pid = self._as_written(item, pid, done)
            done[k] = cid, pid
            self.known[item] = cid
            if item is term:
                root_key = key
        cid, pid = done[term_key(term)]
        return self.find(cid), root_key, pid

    def _as_written(self, chain: Term, flat_pid: int, done: dict) -> int:
        """The proof id of a left-nested ``chain`` the graph holds as one e-node, linked
        to the e-node's (``flat_pid``) as FLATTENED."""
        op = chain.op
        pid = None
        for link in reversed(left_spine(chain)):
            first = done[term_key(link.args[0])][1] if pid is None else pid
            rest = tuple(done[term_key(a)][1] for a in link.args[1:])
            pid = self.proofs.add((op, (first, *rest), ()))
        assert pid is not None
        self.proofs.union(pid, flat_pid, FLATTENED)
        return pid

    def add_leaf(self, value: Any) -> tuple[int, int]:
        """The class of leaf ``value`` (made if new) and its proof id."""
        if type(value) is Hole:
            return self.find(value.cid), self.class_ids[value.cid]
        key = leaf_key(value)
        return self.add_node(key, key, typeof(value))

    def view_id(self, view: Any) -> int:
        """The proof id of ``view`` (a term of the graph's e-nodes, each hole standing
        for the e-node that made its class); the graph must be rebuilt."""
        return self._view(view)[1]

    def _view(self, view: Any) -> tuple[int, int]:
        if type(view) is Hole:
            return self.find(view.cid), self.class_ids[view.cid]
        if type(view) is not Term:
            key = leaf_key(view)
            return self.find(self.memo[key]), self.node_ids[key]
        operands = _operands(view)
        parts = [self._view(a) for a in operands]
        return self.shown_id(view.op, parts, view.args[len(operands) :])

    def shown_id(self, op: Any, parts: list[tuple[int, int]], params: tuple) -> tuple[int, int]:
        """The class and proof id of an e-node of the graph as a view shows it: ``op``
        over operands given by class and proof id, linked to the e-node by congruence."""
        key = (op, tuple(c for c, _ in parts), params)
        return self.find(self.memo[key]), self.node_id(key, tuple(p for _, p in parts))

    def node_id(self, key: Key, operands: tuple[int, ...]) -> int:
        """The proof id of e-node ``key`` of the graph written over operands of proof
        ids ``operands``, linked to the e-node by congruence."""
        pid = self.proofs.add((key[0], operands, key[2]))
        self.proofs.union(pid, self.node_ids[key], CONGRUENCE)
        return pid

    def shown_class_id(self, cid: int) -> int:
        """The proof id of what a view shows for class ``cid`` at its edge: its
        constant's e-node, or the e-node that made the class (a hole stands for it)."""
        constant = self.classes[self.find(cid)].constant
        if constant is NO_CONSTANT:
            return self.class_ids[cid]
        return self.node_ids[leaf_key(constant)]

    def lookup(self, term: Any) -> int | None:
        """The class of ``term`` if the graph holds it (as it is, or flattened)."""
        if type(term) is Term:  # one e-node over classes and leaves: its key
            operands = _operands(term)
            if not any(type(a) is Term for a in operands):
                kids = tuple(map(self._class_of_leaf, operands))
                found = (
                    None
                    if None in kids
                    else self.memo.get((term.op, kids, term.args[len(operands) :]))
                )
                return None if found is None else self.find(found)
        key = self.spelling(term)[0]
        if key is None:
            return None
        if key[0] == "class":
            return key[1]
        found = self.memo.get(key)
        return None if found is None else self.find(found)

    def spelling(self, term: Any) -> tuple[Key | None, bool]:
        """The e-node of ``term``'s root, and whether it is the flattened term's (a
        flatteno step makes the term spell it); ``(None, False)`` if not in the graph.
        A hole's is ``("class", id)``."""
        if type(term) is Hole:
            return ("class", self.find(term.cid)), False
        if type(term) is not Term:
            return leaf_key(term) if is_hashable(term) else None, False
        classes: dict[Any, int | None] = {}
        inner: set[int] = set()  # left operands of their own Op: only their chain splices
        stack: list[tuple[Any, bool]] = [(term, False)]
        while stack:
            item, expanded = stack.pop()
            k = term_key(item)
            if type(item) is not Term:
                classes[k] = self._class_of_leaf(item)
                continue
            if not expanded:
                stack.append((item, True))
                operands = _operands(item)
                if operands and type(operands[0]) is Term and operands[0].op is item.op:
                    inner.add(id(operands[0]))
                stack.extend((a, False) for a in operands if term_key(a) not in classes)
                continue
            key, flat = self._node_key(item, classes, id(item) in inner)
            found = None if key is None else self.memo.get(key)
            classes[k] = None if found is None else self.find(found)
            if item is term:
                return (key if found is not None else None), flat
        return None, False  # pragma: no cover - the root is always reached

    def _node_key(self, item: Term, classes: dict, inner: bool) -> tuple[Key | None, bool]:
        """The key of ``item`` (children's classes known) as the graph holds it: of its
        flat form if that is in the graph (as the start is) and not the term as it is
        in another class."""
        operands = _operands(item)
        children = tuple(classes.get(term_key(a)) for a in operands)
        key = None if None in children else (item.op, children, item.args[len(operands) :])
        flat = item if inner else flat_form(item)  # a chain splices from its top
        if flat is not item:
            flat_ops = _operands(flat)
            kids = tuple(
                classes[term_key(a)] if term_key(a) in classes else self.lookup(a)
                for a in flat_ops
            )
            flat_key = None if None in kids else (flat.op, kids, flat.args[len(flat_ops) :])
            if flat_key in self.memo and (
                key not in self.memo or self.find(self.memo[key]) == self.find(self.memo[flat_key])
            ):
                return flat_key, True
        return key, False

    def _class_of_leaf(self, value: Any) -> int | None:
        if type(value) is Hole:
            return self.find(value.cid)
        found = self.memo.get(leaf_key(value)) if is_hashable(value) else None
        return None if found is None else self.find(found)

    def spelled(self, term: Any) -> Any:
        """``term`` with each sum or product flattened where the graph holds it flat."""
        return substitute(term, lambda n: flat_form(n) if self.spelling(n)[1] else n)

    def key_of(self, term: Any) -> Key:
        """The canonical e-node of ``term``'s root as the graph holds it."""
        key = self.spelling(term)[0]
        if key is None:
            raise KeyError(f"{term} is not in the e-graph")
        return key

    # -- merging ----------------------------------------------------------------------

    def merge(self, a: int, b: int, why: tuple[int, int, Any] | None = None) -> bool:
        """Record that classes ``a`` and ``b`` are equal; True if they were not.

        ``why``: the proof ids of two terms of the classes (the first the source side)
        and the reason they are equal; without it, the classes' first e-nodes are
        linked as ``GIVEN``."""
        a, b = self.find(a), self.find(b)
        if a == b:
            return False
        self.proofs.union(*(why or (self.class_ids[a], self.class_ids[b], GIVEN)))
        ca, cb = self.classes[a], self.classes[b]
        if len(ca.parents) < len(cb.parents):
            a, b, ca, cb = b, a, cb, ca
        shown_a, shown_b = _shown(ca), _shown(cb)
        self.sets.union(a, b)
        del self.classes[b]
        ca.nodes.extend(cb.nodes)
        ca.parents.extend(cb.parents)
        ca.type = _meet(ca.type, cb.type)
        ca.never_minus_zero |= cb.never_minus_zero  # its e-nodes are equal, zeros too
        if ca.constant is NO_CONSTANT:
            ca.constant = cb.constant
        elif cb.constant is not NO_CONSTANT and not _same_constant(ca.constant, cb.constant):
            self.conflicts.append((ca.constant, cb.constant))
        self.pending.append(a)
        self.touched.add(a)
        shown = _shown(ca)
        if shown != shown_a or shown != shown_b:  # a hole of either shows something else
            self.reshown.add(a)
        self.version += 1
        return True

    def rebuild(self) -> None:
        """Restore canonical e-nodes and congruence after merges."""
        dirty: set[int] = set()  # classes holding an e-node whose operands merged
        while self.pending:
            todo = {self.find(c) for c in self.pending}
            self.pending.clear()
            for cid in todo:
                dirty.add(cid)
                dirty.update(self._repair(self.find(cid)))
        born = self.born
        for cid in {self.find(c) for c in dirty}:
            cls = self.classes[cid]
            nodes: dict[Key, None] = {}
            for k in cls.nodes:
                ck = self.canonical(k)
                if ck is not k and ck != k:
                    born[ck] = min(born.get(ck, born[k]), born[k])
                nodes[ck] = None
            cls.nodes = list(nodes)

    def _repair(self, cid: int) -> list[int]:
        """Make the e-nodes over class ``cid`` canonical, merging those that became one;
        their classes."""
        parents: dict[Key, tuple[int, int]] = {}
        for written, pcid, pid in self.classes[cid].parents:
            key = self.canonical(written)
            if key != written:  # its operands merged: it is held under its new key
                self.memo.pop(written, None)
                self.node_ids.pop(written, None)
            pcid = self.find(pcid)
            if key in parents:
                self.merge(parents[key][0], pcid, (pid, parents[key][1], CONGRUENCE))
            other = self.memo.get(key)
            if other is not None and self.find(other) != self.find(pcid):
                self.merge(other, pcid, (self.node_ids[key], pid, CONGRUENCE))
            self.memo[key] = self.find(pcid)
            self.node_ids[key] = pid
            parents[key] = (self.memo[key], pid)
        cid = self.find(cid)
        self.classes[cid].parents = [(key, c, pid) for key, (c, pid) in parents.items()]
        return [c for c, _ in parents.values()]

    # -- reading ----------------------------------------------------------------------

    def changed(self, depth: int) -> set[int]:
        """Classes whose views ``depth`` levels deep changed since the last call: the
        classes made or merged and their users up to ``depth - 1`` levels up, and the
        users ``depth`` levels up of a class whose hole shows another constant or type
        (a view shows holes at its edge)."""
        found = self._users(self.touched, depth) | self._users(self.reshown, depth + 1)
        self.touched, self.reshown = set(), set()
        return found

    def _users(self, classes: set[int], depth: int) -> set[int]:
        found = {self.find(c) for c in classes}
        frontier = found
        for _ in range(depth - 1):
            frontier = {self.find(p) for c in frontier for _, p, _ in self.classes[c].parents}
            frontier -= found
            found |= frontier
        return found

    @property
    def node_count(self) -> int:
        return sum(len(c.nodes) for c in self.classes.values())

    @property
    def class_count(self) -> int:
        return len(self.classes)

    def type_of(self, key: Key) -> TensorType | None:
        """The type of the class of e-node ``key`` (None if no e-node has that key)."""
        cid = self.memo.get(key)
        return None if cid is None else self.classes[self.find(cid)].type

    def nodes(self, cid: int) -> list[Key]:
        return self.classes[self.find(cid)].nodes

    def has_operand_in(self, key: Key, heads: frozenset) -> bool:
        """Whether a view of e-node ``key`` could show an operand with one of
        ``heads``, or a constant where ``ANY_CONSTANT`` is among them (see
        :func:`~relgraph.rewriting.declarations.needs_operand`)."""
        constant = ANY_CONSTANT in heads
        for cid in key[1]:
            cls = self.classes[self.find(cid)]
            if constant and cls.constant is not NO_CONSTANT:
                return True
            if any(k[0] in heads for k in cls.nodes):
                return True
        return False

    def hole(self, cid: int) -> Any:
        """What a view shows for class ``cid`` at its edge: its constant, or a hole."""
        cls = self.classes[self.find(cid)]
        if cls.constant is not NO_CONSTANT:
            return cls.constant
        return Hole(self.find(cid), cls.type, cls.never_minus_zero)

    def node_term(self, key: Key, children: Iterator[Any] | tuple) -> Any:
        """The term of e-node ``key`` with the given child terms."""
        if key[0] is LEAF:
            return key[2]
        return Term.of_ground((key[0], *children, *key[2]))


def _operands(t: Term) -> tuple:
    return tuple(t.op.operands(t.args))


def is_hashable(value: Any) -> bool:
    """Whether ``value`` can be a dict key (a leaf the graph can hold)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _meet(a: TensorType, b: TensorType) -> TensorType:
    """The more precise of two types of one class (a known dimension wins)."""
    if a == b or len(a.shape) != len(b.shape):
        return a
    shape = tuple(x if x is not None else y for x, y in zip(a.shape, b.shape))
    return TensorType(a.dtype, a.ndim, shape)


def _shown(cls: EClass) -> tuple:
    """What a hole of the class shows: whether it is a constant, its type, and
    whether it is never -0.0."""
    return cls.constant is NO_CONSTANT, cls.type, cls.never_minus_zero


def _same_constant(a: Any, b: Any) -> bool:
    try:
        va, vb = np.asarray(getattr(a, "value", a)), np.asarray(getattr(b, "value", b))
        return va.shape == vb.shape and bool(np.array_equal(va, vb, equal_nan=True))
    except (TypeError, ValueError):
        return a == b
