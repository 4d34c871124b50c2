"""Walking terms: conversion from kanren's answers, distinct subterms, rebuilding.

Every walk is iterative (depth 100,000 is fine) and visits shared subterms once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from cons.core import ConsPair
from etuples.core import ExpressionTuple
from unification.variable import Var

from relgraph.exceptions import TypeCheckError
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Symbol
from relgraph.terms.term import Term, _is_cons, _wrap

__all__ = [
    "leaves",
    "first_positions",
    "free_symbols",
    "as_term",
    "checked_term",
    "subterms",
    "count_nodes",
    "substitute",
]


def _is_expression(x: Any) -> bool:
    # Lists count too: kanren builds them (``conso(op, [x], q)``, mapo's default).
    return isinstance(x, (ExpressionTuple, list)) or _is_cons(x)


def as_term(x: Any) -> Any:
    """Convert an etuple / cons / list / ``Args`` expression into a :class:`Term`.

    Returns ``None`` if ``x`` contains a logic variable.  Leaves and ground terms
    come back unchanged; the walk is iterative and shares converted subterms.

    Examples
    --------
    >>> from etuples import etuple
    >>> import relgraph as rg
    >>> x = rg.vector("x")
    >>> as_term(etuple(rg.neg, etuple(rg.neg, x))) == -(-x)
    True
    >>> from unification import var
    >>> as_term(etuple(rg.neg, var())) is None
    True
    """
    if type(x) is Term and x._ground:
        return x
    if isinstance(x, Var):
        return None
    if not _is_expression(x):
        return _wrap(x)
    done: dict[int, Any] = {}  # ids are stable: x keeps every node alive
    stack = [(x, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        if type(node) is Term and node._ground:
            done[id(node)] = node
            continue
        if _is_cons(node):
            node_items = _cons_items(node)
        else:
            node_items = tuple(node)
        if not expanded:
            stack.append((node, True))
            for child in node_items:
                if isinstance(child, Var):
                    return None
                if _is_expression(child) and id(child) not in done:
                    stack.append((child, False))
            continue
        items = [done[id(c)] if _is_expression(c) else c for c in node_items]
        done[id(node)] = Term(items)
    return done[id(x)]


def checked_term(x: Any, action: str) -> Any:
    """``as_term(x)``, type-checked; a logic variable in it is an error.

    ``action`` names what the term is for, in the message ("rewrite", "compile").
    """
    term = as_term(x)
    if term is None:
        raise TypeCheckError(f"cannot {action} {x}: it contains a logic variable")
    typeof(term)
    return term


def _cons_items(node: ConsPair) -> tuple:
    items = []
    while _is_cons(node):
        items.append(node.car)
        node = node.cdr
    if isinstance(node, Var):
        return (*items, node)  # an improper list: as_term sees the var and fails
    return (*items, *node)


def subterms(term: Any) -> Iterator[Term]:
    """Distinct compound subterms, children before parents, each once.

    Distinct by structure: two equal subterms built separately count once.

    Examples
    --------
    >>> import relgraph as rg
    >>> x = rg.vector("x")
    >>> [str(t) for t in subterms(rg.exp(x) + rg.exp(x))]
    ['exp(x)', '(exp(x) + exp(x))']
    """
    if type(term) is not Term:
        return
    seen: set[Term] = set()
    stack: list[tuple[Term, bool]] = [(term, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        for child in reversed(node._tuple):
            if type(child) is Term and child not in seen:
                stack.append((child, False))


def count_nodes(term: Any) -> int:
    """Number of distinct compound subterms (applications) of a term.

    Examples
    --------
    >>> import relgraph as rg
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> count_nodes(A @ x + A @ y)
    3
    """
    if type(term) is not Term:
        return 0
    seen = {term}  # as subterms counts them, without the order it keeps
    stack = [term]
    while stack:
        for child in stack.pop()._tuple:
            if type(child) is Term and child not in seen:
                seen.add(child)
                stack.append(child)
    return len(seen)


def substitute(term: Any, replace: Callable[[Term], Any]) -> Any:
    """Rebuild ``term`` bottom-up; ``replace(node)`` may return a new node.

    Shared subterms are visited once.  Nodes whose children did not change are
    kept, so the result shares everything that was not rewritten.
    """
    done: dict[Term, Any] = {}
    for node in subterms(term):
        args = node._tuple
        new = tuple(done[a] if type(a) is Term else a for a in args)
        rebuilt = node if all(n is o for n, o in zip(new, args)) else Term(new)
        done[node] = replace(rebuilt)
    return done[term] if type(term) is Term else term


def first_positions(root: Any) -> dict[Term, tuple[int, ...]]:
    """The first position (argument path from the root, breadth first) of each subterm.

    >>> import relgraph as rg
    >>> x = rg.vector("x")
    >>> first_positions(rg.exp(x + x) * (x + x))[x + x]  # the shallower one
    (1,)
    """
    found: dict[Term, tuple[int, ...]] = {}
    queue: list[tuple[Term, tuple[int, ...]]] = [(root, ())] if type(root) is Term else []
    for node, path in queue:  # the list grows as it is walked
        if node not in found:
            found[node] = path
            queue.extend((a, (*path, i)) for i, a in enumerate(node._tuple[1:]) if type(a) is Term)
    return found


def free_symbols(terms: Iterable[Any]) -> set[Symbol]:
    """The symbols the terms read.

    >>> import relgraph as rg
    >>> x, y = rg.vector("x"), rg.vector("y")
    >>> sorted(s.name for s in free_symbols([rg.exp(x) + y, x]))
    ['x', 'y']
    """
    terms = list(terms)
    found = {t for t in terms if type(t) is Symbol}
    for t in terms:
        for node in subterms(t):
            found.update(a for a in node._tuple[1:] if type(a) is Symbol)
    return found


def leaves(term: Any, limit: int | None = None) -> list[Any]:
    """The leaves of ``term`` (symbols, constants, numbers), left to right, at most
    ``limit`` of them; a shared subterm's leaves count each time it occurs.

    Examples
    --------
    >>> import relgraph as rg
    >>> x, y = rg.vector("x"), rg.vector("y")
    >>> leaves(x * (y + 2.0))
    [x, y, 2.0]
    """
    out: list[Any] = []
    stack = [term]
    while stack and (limit is None or len(out) < limit):
        item = stack.pop()
        if type(item) is Term:
            stack.extend(reversed(item._tuple[1:]))
        else:
            out.append(item)
    return out
