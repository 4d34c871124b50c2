"""What a relation declares about itself, as marks on its goal constructor: the
directions it runs in (:func:`forward_only`), the heads of its outputs
(:func:`produces`), the heads one of its input's operands must have, or a constant
(:func:`needs_operand`), what it reads of a term (:func:`reads`), and whether it
regroups float sums (:func:`reassociates`).

The driver and :func:`~relgraph.explore` read the marks to skip what a relation
cannot rewrite; a mark that promises more than the relation keeps loses answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "BOTH", "ANY_CONSTANT", "forward_only", "produces", "needs_operand", "reads", "reassociates",
]  # fmt: skip

Relation = Callable[[Any, Any], Callable]

BOTH = ("forward", "backward")


class _AnyConstant:
    def __repr__(self) -> str:
        return "ANY_CONSTANT"


#: For :func:`needs_operand`: an operand that is a constant (a number or an array
#: :class:`~relgraph.Constant`), as constant folding needs.
ANY_CONSTANT: Any = _AnyConstant()


def forward_only(relation: Relation) -> Relation:
    """Mark a goal constructor that only computes forward: ``rel(term, q)``.

    For identities whose output has no finite set of natural inputs (``6`` from
    any ``a * b``, ``0`` from any ``0 * x``).  :func:`explore` never runs it
    backward, and the relation catalogue says so.

    Examples
    --------
    >>> from kanren import eq
    >>> from relgraph.rewriting.relation import directions_of
    >>> @forward_only
    ... def foldo(a, b):  # a computation: it has no backward direction
    ...     return eq(a, b)
    >>> directions_of(foldo)
    ('forward',)
    """
    vars(relation)["directions"] = ("forward",)
    return relation


def produces(*ops: Any) -> Callable[[Relation], Relation]:
    """Declare the head Ops of a relation's outputs: run backward (``rel(q, term)``),
    it can only answer for a ``term`` with one of these heads.

    :func:`~relgraph.explore` then tries it backward on those e-nodes only, as
    ``tracks`` does forward; without it, on every e-node.  A declaration that leaves
    out a head loses the answers on it.  A rule (:func:`relgraph.rule`) needs none:
    it knows its right side.

    Examples
    --------
    >>> import relgraph as rg
    >>> from kanren import eq, lall, var
    >>> from etuples import etuple
    >>> from relgraph.rewriting.relation import produced_heads
    >>> @produces(rg.log1p)
    ... def log1po(a, b):  # log(1 + x) -> log1p(x)
    ...     x = var()
    ...     return lall(eq(a, etuple(rg.log, etuple(rg.add, 1, x))), eq(b, etuple(rg.log1p, x)))
    >>> produced_heads(log1po) == frozenset({rg.log1p})
    True
    """

    def mark(relation: Relation) -> Relation:
        vars(relation)["produces"] = frozenset(ops)
        return relation

    return mark


def needs_operand(*ops: Any) -> Callable[[Relation], Relation]:
    """Declare that a relation rewrites a term forward only where one of the term's
    operands has one of these heads (``1 - sigmoid(x)`` needs a ``neg``), or is a
    constant where :data:`ANY_CONSTANT` is among them (``x + 0 -> x``), so that the
    driver and :func:`~relgraph.explore` pass over other terms without asking it: one
    test per term, not a call into the relation.  Declarations stacked on one relation
    must all hold (``exp(u) - 1`` needs an ``exp`` and a constant).  Run backward
    (:func:`reverse`) it declares nothing.  A declaration that leaves out a head loses
    the answers on it.

    Examples
    --------
    >>> import relgraph as rg
    >>> from kanren import eq, lall, var
    >>> from etuples import etuple
    >>> from relgraph.rewriting.relation import Matcher, as_rule
    >>> @needs_operand(rg.exp)
    ... def expm1o(a, b):  # exp(u) - 1 -> expm1(u)
    ...     u = var()
    ...     return lall(eq(a, etuple(rg.sub, etuple(rg.exp, u), 1.0)), eq(b, etuple(rg.expm1, u)))
    >>> x = rg.vector("x")
    >>> m = Matcher(as_rule(expm1o))
    >>> m.rejects(rg.log(x) - 1.0), m.rejects(rg.exp(x) - 1.0)
    (True, False)
    >>> expm1o = needs_operand(ANY_CONSTANT)(expm1o)  # and a constant
    >>> Matcher(as_rule(expm1o)).rejects(rg.exp(x) - x)
    True
    """

    def mark(relation: Relation) -> Relation:
        # one set of heads per declaration, each of which must hold
        vars(relation)["needs_operand"] = (*getattr(relation, "needs_operand", ()), frozenset(ops))
        return relation

    return mark


def reads(guide: dict | None = None) -> Callable[[Relation], Relation]:
    """Declare what a relation reads of a term, so :func:`~relgraph.explore` shows it
    only that: ``{head: operands}`` for each head Op it rewrites, ``operands`` what it
    reads of every operand in the same form (``{}``: the operand as a whole, an
    e-class; a ``"leaf"`` key shows an operand that is a symbol or a constant as
    itself); ``None``: any head, its operands as wholes.  Without it the relation
    is shown every e-node two levels deep, each combination of its operands' e-nodes
    a view of its own.  A declaration that leaves out what it reads loses answers.

    Examples
    --------
    >>> import relgraph as rg
    >>> @reads({rg.dot: {rg.mul: {}}})  # a product, and the products among its operands
    ... def dot_scaledo(a, b): ...
    >>> dot_scaledo.depth
    2
    """

    def depth(g: dict) -> int:
        return 1 + max(map(depth, g.values())) if g else 0

    def mark(relation: Relation) -> Relation:
        if guide is None:
            vars(relation)["depth"] = 1
        else:
            vars(relation).update(guide=guide, depth=depth(guide))
        return relation

    return mark


def reassociates(relation: Relation) -> Relation:
    """Mark a relation that regroups float sums and products (as LLVM's ``reassoc``
    flag allows): a query that selects it lets every relation of the run take
    arguments from anywhere in a float sum or product, not only its leading ones
    (:func:`relgraph.rewriting.promotion.regrouping`).

    >>> def reassociateo(a, b): ...
    >>> reassociates(reassociateo).reassociates
    True
    """
    vars(relation)["reassociates"] = True
    return relation
