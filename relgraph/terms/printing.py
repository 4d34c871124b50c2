"""Infix printing of terms, fully parenthesised, as in the Aesara/PyTensor documentation.

The printer emits tokens from an explicit stack and joins them once, so it is
linear in the size of the printed text and never recurses.  A term whose tree is
much larger than its DAG (``t = t * t`` repeated) prints each shared subterm once,
as a ``let`` binding, so the text stays linear in the DAG.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from etuples.core import ExpressionTuple

from relgraph.terms.operators import register_operator
from relgraph.terms.term import Term, brief
from relgraph.terms.traverse import as_term, subterms

__all__ = ["pprint", "brief", "Bare"]


@register_operator("pprint")
def pprint(term: Any) -> str:
    """Render a term as infix text.

    Examples
    --------
    >>> import relgraph as rg
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> pprint(A @ (x + y))
    '(A @ (x + y))'
    >>> pprint(rg.add(x, y, -x) * rg.exp(A.T @ x))
    '((x + y + -x) * exp(A.T @ x))'
    >>> pprint(rg.sum(A, 0))
    'sum(A, axis=0)'

    Ground etuples (kanren's answers) print as the terms they denote:

    >>> from etuples import etuple
    >>> pprint(etuple(rg.dot, A, etuple(rg.add, x, y)))
    '(A @ (x + y))'
    """
    if isinstance(term, ExpressionTuple) and type(term) is not Term:
        converted = as_term(term)  # None if it holds logic variables: print it as it is
        term = term if converted is None else converted
    if type(term) is Term and _tree_size(term, TREE_LIMIT) > TREE_LIMIT:
        return _with_bindings(term)
    return _emit(term, {})


TREE_LIMIT = 5_000  # printed nodes beyond which shared subterms are bound once


class Bare:
    """A child printed without its outer parentheses: an argument between the commas
    of a call, ``where(x > 0, x, 0.0)``."""

    __slots__ = ("term",)

    def __init__(self, term: Any):
        self.term = term


def _emit(term: Any, names: dict[Term, str]) -> str:
    out: list[str] = []
    stack: list[Any] = [term]
    while stack:
        item = stack.pop()
        bare = type(item) is Bare
        if bare:
            item = item.term
        if isinstance(item, str):
            out.append(item)
        elif type(item) is Term:
            name = names.get(item) if item is not term else None
            if name is not None:
                out.append(name)
                continue
            pieces = _layout(item)
            if bare and pieces[0] == "(" and pieces[-1] == ")":
                pieces = pieces[1:-1]
            stack.extend(reversed(pieces))
        else:
            out.append(_leaf(item))
    return "".join(out)


def _tree_size(term: Term, cap: int) -> int:
    """How many nodes the tree of ``term`` has, counting repeats (at most ``cap + 1``)."""
    sizes: dict[Term, int] = {}  # by structure, as subterms() walks
    for node in subterms(term):
        size = 1
        for a in node._tuple[1:]:
            size += sizes[a] if type(a) is Term else 0
        sizes[node] = min(size, cap + 1)
    return sizes[term]


def _with_bindings(term: Term) -> str:
    """``let t1 = ...; t2 = ... in ...``: every subterm used twice is printed once."""
    uses: dict[Term, int] = {}
    order = list(subterms(term))
    for node in order:
        for a in node._tuple[1:]:
            if type(a) is Term:
                uses[a] = uses.get(a, 0) + 1
    names: dict[Term, str] = {}
    for node in order:
        if uses.get(node, 0) > 1:
            names[node] = f"t{len(names) + 1}"
    if not names:  # large, but nothing is shared
        return _emit(term, names)
    lets = "; ".join(f"{name} = {_emit(node, names)}" for node, name in names.items())
    return f"let {lets} in {_emit(term, names)}"


def _layout(term: Term) -> list[Any]:
    """The pieces of one node: strings, and children still to print."""
    op, args = term._tuple[0], term._tuple[1:]
    layout = getattr(op, "layout", None)
    if layout is not None:
        return layout(args)
    # A head that is not an Op (a pattern under construction): function form.
    pieces: list[Any] = [_leaf(op) if type(op) is not Term else op, "("]
    for i, a in enumerate(args):
        pieces += [", ", a] if i else [a]
    return [*pieces, ")"]


def _leaf(x: Any) -> str:
    return str(x) if isinstance(x, np.generic) else repr(x)
