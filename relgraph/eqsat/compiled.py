"""Compiled rules: a rule matched and applied on e-class ids, as egg runs its rules.

A rule (:func:`relgraph.rule`) whose two sides are applications of a fixed number of
arguments over variables and literals (``(P @ Q) @ R -> P @ (Q @ R)``), with
predicate conditions at most, runs on the e-graph without terms.  Its left-hand side
binds each variable to an e-class (as :mod:`relgraph.eqsat.ematch` does, with the
same rules for commutative Ops and repeated variables); its right-hand side is looked
up e-node by e-node, typed from the classes' types, and added where it is new.

An answer is checked as an answer on a view is
(:func:`~relgraph.rewriting.relation.refusal`): it has the type of the class, and
every e-node it creates or removes is pure
(:func:`~relgraph.rewriting.promotion.pure_operation` on the classes' dtypes and
constants).  Unless identities are asked for, an answer that holds its own class
below its root (``x -> x * 1``) is dropped when it is applied.  A rule whose Op at
the root is associative runs on views instead: there it also matches runs of a
longer sum.

The terms of a match (the view it ran on, its answer) are built only when a
derivation reads them (:class:`~relgraph.eqsat.saturate.Merge`).

Examples
--------
>>> import relgraph as rg
>>> P, Q, R = rg.lvar("P", ndim=2), rg.lvar("Q", ndim=2), rg.lvar("R", ndim=2)
>>> assoc = rg.rule((P @ Q) @ R, P @ (Q @ R), name="assoc")
>>> compiled_rule(assoc) is not None
True
>>> x = rg.lvar("x")
>>> compiled_rule(rg.rule(x + 0, x, name="add_zero")) is None  # a sum: on views
True
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

from relgraph.eqsat.answer_code import Source, answer_code, program
from relgraph.eqsat.egraph import NO_CONSTANT, EGraph, Hole, Key, is_hashable, leaf_key
from relgraph.exceptions import TypeCheckError
from relgraph.rewriting.patterns import PApp, PLit, PVar, same, variables
from relgraph.rewriting.promotion import pure_operation
from relgraph.rewriting.relation import is_associative, same_type
from relgraph.terms.leaves import Symbol
from relgraph.terms.term import Term
from relgraph.terms.types import TensorType

__all__ = ["CompiledRule", "ClassMatcher", "compiled_rule", "IN_CLASS"]

#: What a match shows of an operand: a class id (a hole, or the class's constant), a
#: symbol of the pattern, or a matched e-node ``(key, shown operands)``.
Shown = Any
#: Bindings of a match: each variable's class, in the order of ``variables``.
Bindings = tuple
#: A part of a right-hand side as the graph has it: its class (None if new), its
#: type, and its constant value (None if not a constant).
Part = tuple
#: The answer is in the class already.
IN_CLASS = "in the class"
#: The id a new e-node's hole has where a new e-node's type is inferred.
NEW = 1 << 62


def compiled_rule(relation: Any) -> CompiledRule | None:
    """The compiled form of a rule's relation (run in the direction it is given),
    None where it runs on views: another kind of relation, a rest part, a variable
    among an Op's parameters, a condition that is a goal, a root Op that is
    associative, a right-hand side that would splice into a sum."""
    left, right = getattr(relation, "left", None), getattr(relation, "right", None)
    conditions = getattr(relation, "conditions", ())
    if not isinstance(left, PApp) or is_associative(left.op):
        return None
    if any(c.goal for c in conditions) or not (_fixed(left) and _fixed(right)):
        return None
    if not variables(relation.rhs) <= variables(relation.lhs):
        return None  # a variable the left-hand side does not bind
    found = _COMPILED.get(relation)
    if found is None:  # once per rule and direction: a rule does not change
        found = _COMPILED[relation] = CompiledRule(left, right, conditions)
    return found


_COMPILED: weakref.WeakKeyDictionary[Any, CompiledRule] = weakref.WeakKeyDictionary()


def _fixed(p: Any) -> bool:
    """Applications of fixed arity down to variables and literals, parameters literal,
    no left-nested chain of an associative Op (the graph would splice it)."""
    if isinstance(p, PLit):
        return is_hashable(leaf_key(p.value))
    if not isinstance(p, PApp):
        return isinstance(p, PVar)
    if p.rest is not None or not all(isinstance(a, PLit) for a in _params(p)):
        return False
    first = p.args[0] if p.args else None
    if isinstance(first, PApp) and first.op is p.op and is_associative(p.op):
        return False
    return all(_fixed(a) for a in p.args)


def _operands(p: PApp) -> list:
    return p.args if p.op.nin is None else p.args[: p.op.nin]


def _params(p: PApp) -> list:
    return [] if p.op.nin is None else p.args[p.op.nin :]


class CompiledRule:
    """A rule's two sides, run on class ids (see the module docs).  Bindings are a
    tuple of classes, one per variable of ``variables``."""

    def __init__(self, left: PApp, right: Any, conditions: tuple):
        self.left, self.right, self.conditions = left, right, conditions
        self.variables: list = []
        self._match = _Generator(self.variables).matcher(left)
        slots = {v: i for i, v in enumerate(self.variables)}
        self._walk, self._add = answer_code(program(right, slots))

    def matches(self, m: ClassMatcher, key: Key) -> list[tuple[Bindings, Shown]]:
        """Bindings of the left-hand side on e-node ``key``, each with the shape it
        matched."""
        return self._match(key, m.g.nodes, m.admits, m.shown)

    def holds(self, m: ClassMatcher, b: Bindings) -> bool:
        """Whether the conditions hold, each shown what a view shows of its classes."""
        if not self.conditions:
            return True
        values = {v: m.shown(c) for v, c in zip(self.variables, b)}
        return all(any(True for _ in c.states(values)) for c in self.conditions)

    def check(
        self, m: ClassMatcher, b: Bindings, cid: int, shape: Shown
    ) -> tuple[str | None, tuple]:
        """Why the answer under ``b`` may not join class ``cid`` (matched as ``shape``):
        :data:`IN_CLASS`, a refusal's reason, or None where it may; and, where it may,
        the classes of the answer below its root and the types of its e-nodes."""
        g = m.g
        try:
            answer = self._walk(b, m, g.memo, g.find, g.classes)
            root, type_, below, nodes = answer
        except TypeCheckError:
            return "builds an ill-typed term", ()
        if root == cid:
            return IN_CLASS, ()
        if not same_type(g.classes[cid].type, type_):
            return "changes the type", ()
        if not m.keeps_values(nodes, shape):
            return "changes values: moves arithmetic across dtypes", ()
        return None, (below, [node[3] for node in nodes])

    def add(self, g: EGraph, b: Bindings, types: list) -> tuple[int, Key, int]:
        """Add the answer under ``b`` (``types``: of its e-nodes, as :meth:`check`
        found them): its class, its root's key (``("class", id)`` for a variable) and
        the proof id of the answer as written."""
        return self._add(g, b, types)

    def shown_id(self, g: EGraph, shape: Shown) -> int:
        """The proof id of the view a match stands for.  Its e-nodes' keys are the
        graph's until the next rebuild (merges leave the keys as they are)."""
        if type(shape) is int:
            return g.shown_class_id(shape)
        if type(shape) is not tuple:  # a symbol of the pattern
            return g.node_ids[leaf_key(shape)]
        key, shown = shape
        return g.node_id(key, tuple([self.shown_id(g, s) for s in shown]))

    def terms(self, g: EGraph, b: Bindings, shape: Shown) -> tuple[Term, Any, Any]:
        """The view the match stands for, its answer, and the answer again (the result
        of a match on a whole e-node): the terms a derivation reads."""
        answer = self.right.build({v: _shown_value(g, c) for v, c in zip(self.variables, b)})
        return _shape_term(g, shape), answer, answer


class ClassMatcher:
    """What compiled rules read of one graph, as it is in one search phase (rebuilt:
    every id in an e-node canonical): what a view shows of each class, which
    variables admit it, which e-nodes are pure."""

    def __init__(self, egraph: EGraph):
        self.g = egraph
        self.values: dict[int, Any] = {}
        self.admitted: dict[tuple[Any, int], bool] = {}
        self.pure: dict[Any, bool] = {}  # by e-node, and by dtypes for new ones
        self.parts: dict[int, Part] = {}
        self.types: dict[tuple, TensorType] = {}  # of new e-nodes, by their kids' types

    def shown(self, cid: int) -> Any:
        """What a view shows for class ``cid``: its constant, or a hole."""
        found = self.values.get(cid)
        if found is None:
            found = self.values[cid] = _shown_value(self.g, cid)
        return found

    def admits(self, v: Any, cid: int) -> bool:
        """Whether variable ``v``'s type constraint admits class ``cid``."""
        found = self.admitted.get((v, cid))
        if found is None:
            found = self.admitted[v, cid] = v.admits(self.shown(cid))
        return found

    def part(self, cid: int) -> Part:
        """Class ``cid`` as a part of a right-hand side: itself, its type, its constant."""
        found = self.parts.get(cid)
        if found is None:
            canon = self.g.find(cid)
            cls = self.g.classes[canon]
            found = self.parts[cid] = (canon, cls.type, _class_constant(self.g, canon))
        return found

    def inferred(self, op: Any, kids: list[Part], params: tuple) -> TensorType:
        """The type of a new e-node of ``op`` over ``kids`` (by their types alone where
        no kid is a constant: one inference per types)."""
        if any(c is not None for _, _, c in kids):
            return _inferred(op, kids, params)
        key = (op, params, *(t for _, t, _ in kids))
        found = self.types.get(key)
        if found is None:
            found = self.types[key] = _inferred(op, kids, params)
        return found

    def is_pure_new(self, op: Any, type_: TensorType, kids: list[Part]) -> bool:
        """Whether a new e-node of ``op`` over ``kids`` would be pure."""
        if all(c is None for _, _, c in kids):  # by dtypes alone: one answer per dtypes
            key = (op, type_.dtype, *(t.dtype for _, t, _ in kids))
            found = self.pure.get(key)
            if found is None:
                found = self.pure[key] = pure_operation(op, type_.dtype, kids, _dtype, _constant)
            return found
        return pure_operation(op, type_.dtype, kids, _dtype, _constant)

    def _dtype(self, cid: int) -> Any:
        return self.g.classes[self.g.find(cid)].type.dtype

    def is_pure(self, key: Key) -> bool:
        """:func:`~relgraph.rewriting.promotion.is_pure` of e-node ``key`` as a view
        shows it."""
        found = self.pure.get(key)
        if found is None:
            g = self.g
            dtype = g.classes[g.find(g.memo[key])].type.dtype
            found = self.pure[key] = pure_operation(
                key[0], dtype, key[1], self._dtype, lambda c: _class_constant(g, c)
            )
        return found

    def keeps_values(self, nodes: list[tuple], shape: Shown) -> bool:
        """Whether every e-node an answer creates (``nodes``: its e-nodes, ``(key or
        None for a new one, op, operand parts, type, whether it is pure)``), or the
        view ``shape`` removes, is pure (an e-node of both is neither)."""
        removed = _shape_nodes(shape, [])
        pure = self.is_pure
        if all(node[4] for node in nodes) and all(map(pure, removed)):
            return True
        kept = {node[0] for node in nodes} & set(removed)
        return all(node[4] for node in nodes if node[0] not in kept) and all(
            pure(k) for k in removed if k not in kept
        )


class _Generator(Source):
    """The source of a left-hand side's matcher: nested loops over the e-nodes of the
    operand classes, as egg's pattern compiler emits them (``match(key, nodes,
    admits, shown)``: bindings and shapes on e-node ``key``)."""

    def __init__(self, variables: list):
        super().__init__()
        self.variables = variables  # in the order they are first bound
        self.slots: dict[Any, str] = {}
        self.env.update(same=same, _BOTH=((0, 1), (1, 0)), _ONE=((0, 1),))

    def matcher(self, left: PApp) -> Any:
        op = self.const(left.op)
        self.line(1, "out = []")
        self.line(1, f"if key[0] is not {op}:")
        self.line(2, "return out")
        self._app(left, "key", 1, self._found)
        return self.compiled("def match(key, nodes, admits, shown):", "out")

    def _found(self, shape: str, indent: int) -> None:
        slots = "".join(f"{self.slots[v]}, " for v in self.variables)
        self.line(indent, f"out.append((({slots}), {shape}))")

    def _app(self, p: PApp, key: str, indent: int, then: Any) -> None:
        """Match ``p``'s operands on e-node ``key`` (its head is ``p.op``)."""
        operands, literals = _operands(p), _params(p)
        kids = self.name("ch")
        self.line(indent, f"{kids} = {key}[1]")
        tests = [f"len({kids}) == {len(operands)}", f"len({key}[2]) == {len(literals)}"]
        tests += [f"same({self.const(x.value)}, {key}[2][{j}])" for j, x in enumerate(literals)]
        self.line(indent, f"if {' and '.join(tests)}:")
        indent += 1
        order = [str(i) for i in range(len(operands))]
        if p.swaps:  # a binary pattern on a commutative Op: either order
            perm = self.name("perm")
            self.line(indent, f"for {perm} in (_BOTH if {kids}[0] != {kids}[1] else _ONE):")
            indent += 1
            order = [f"{perm}[0]", f"{perm}[1]"]
        shown: list[str] = []

        def operand(i: int, indent: int) -> None:
            if i == len(operands):
                parts = f"({', '.join(shown)},)"
                if p.swaps:  # the shape shows the e-node's order
                    a, b = shown
                    parts = f"(({a}, {b}) if {order[0]} == 0 else ({b}, {a}))"
                then(f"({key}, {parts})", indent)
                return
            c = self.name("c")
            self.line(indent, f"{c} = {kids}[{order[i]}]")

            def next_operand(s: str, indent: int) -> None:
                shown.append(s)
                operand(i + 1, indent)
                shown.pop()

            self._operand(operands[i], c, indent, next_operand)

        operand(0, indent)

    def _operand(self, p: Any, c: str, indent: int, then: Any) -> None:
        """Match ``p`` on class ``c``."""
        if isinstance(p, PVar):
            v = p.var
            slot = self.slots.get(v)
            if slot is not None:  # a repeated variable: one class, or one value
                self.line(indent, f"if {slot} == {c} or same(shown({slot}), shown({c})):")
            else:
                slot = self.slots[v] = self.name("v")
                self.variables.append(v)
                self.line(indent, f"{slot} = {c}")
                self.line(indent, f"if admits({self.const(v)}, {c}):")
            then(c, indent + 1)
        elif isinstance(p, PLit) and isinstance(p.value, Symbol):
            # a symbol of the pattern: a class that holds it, shown as itself
            self.line(indent, f"if {self.const(leaf_key(p.value))} in nodes({c}):")
            then(self.const(p.value), indent + 1)
        elif isinstance(p, PLit):
            self.line(indent, f"if same({self.const(p.value)}, shown({c})):")
            then(c, indent + 1)
        else:
            node = self.name("n")
            self.line(indent, f"for {node} in nodes({c}):")
            # another head, or the class inside itself (x + 0): not this pattern's
            head = self.const(p.op)
            self.line(indent + 1, f"if {node}[0] is {head} and {c} not in {node}[1]:")
            self._app(p, node, indent + 2, then)


def _inferred(op: Any, kids: list[Part], params: tuple) -> TensorType:
    """The type of a new e-node over operands ``kids``, as typing its term gives it:
    numpy's promotion sees a constant operand's value, else its type."""
    shown = [_placeholder(t) if c is None else c for _, t, c in kids]
    return op.infer_type([t for _, t, _ in kids] + [None] * len(params), (*shown, *params))


@functools.lru_cache(maxsize=1024)
def _placeholder(type_: TensorType) -> Hole:
    return Hole(NEW, type_)


def _dtype(part: Part) -> Any:
    return part[1].dtype


def _constant(part: Part) -> Any:
    return part[2]


def _class_constant(g: EGraph, cid: int) -> Any:
    constant = g.classes[g.find(cid)].constant
    return None if constant is NO_CONSTANT else constant


def _shape_nodes(shape: Shown, out: list[Key]) -> list[Key]:
    """The matched e-nodes of a shape, appended to ``out``."""
    if type(shape) is tuple:
        key, shown = shape
        out.append(key)
        for s in shown:
            _shape_nodes(s, out)
    return out


def _shown_value(g: EGraph, cid: int) -> Any:
    """What a view shows for class ``cid`` (the id it had when matched): its constant,
    or its hole."""
    cls = g.classes[g.find(cid)]
    if cls.constant is not NO_CONSTANT:
        return cls.constant
    return Hole(cid, cls.type, cls.never_minus_zero)


def _shape_term(g: EGraph, shape: Shown) -> Any:
    if type(shape) is int:
        return _shown_value(g, shape)
    if type(shape) is not tuple:
        return shape
    (op, _, params), shown = shape
    return Term.of_ground((op, *(_shape_term(g, s) for s in shown), *params))
