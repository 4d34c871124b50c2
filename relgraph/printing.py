"""Infix printing of terms, fully parenthesised, in the seeds' format.

The printer emits tokens from an explicit stack and joins them once, so it is
linear in the size of the term and never recurses.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from etuples.core import ExpressionTuple

from relgraph.ops import Dot, Elemwise, Reduce, Transpose
from relgraph.term import Term, as_term

__all__ = ["pprint", "brief"]


def pprint(term: Any) -> str:
    """Render a term as infix text.

    Examples
    --------
    >>> import relgraph as rg
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> pprint(A @ (x + y))
    '(A @ (x + y))'
    >>> pprint(rg.add(x, y, -x) * rg.exp(A.T @ x))
    '((x + y + -x) * exp((A.T @ x)))'
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
    out: list[str] = []
    stack: list[Any] = [term]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif type(item) is Term:
            stack.extend(reversed(_layout(item)))
        else:
            out.append(_leaf(item))
    return "".join(out)


def brief(term: Any, limit: int = 160) -> str:
    """``pprint(term)``, cut to ``limit`` characters for error messages.

    Examples
    --------
    >>> import relgraph as rg
    >>> brief(rg.add(*(rg.vector(f"v{i}") for i in range(100))), 20)
    '(v0 + v1 + v2 + v...'
    """
    text = pprint(term)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _layout(term: Term) -> list[Any]:
    """The pieces of one node: strings, and children still to print."""
    op, args = term._tuple[0], term._tuple[1:]
    if isinstance(op, Dot) and len(args) == 2:
        return ["(", args[0], " @ ", args[1], ")"]
    if isinstance(op, Transpose) and len(args) == 1:
        return [args[0], ".T"]
    if isinstance(op, Elemwise) and op.symbol is not None:
        if len(args) == 1:
            return [op.symbol, args[0]]
        if len(args) >= 2:
            return ["(", *_interleave(args, f" {op.symbol} "), ")"]
    if isinstance(op, Reduce) and len(args) == 2:
        return [f"{op!r}(", args[0], f", axis={args[1]!r})"]
    return [_leaf(op) if type(op) is not Term else op, "(", *_interleave(args, ", "), ")"]


def _interleave(args: tuple, sep: str) -> list[Any]:
    pieces: list[Any] = []
    for i, a in enumerate(args):
        if i:
            pieces.append(sep)
        pieces.append(a)
    return pieces


def _leaf(x: Any) -> str:
    return str(x) if isinstance(x, np.generic) else repr(x)
