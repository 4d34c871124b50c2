"""How the e-graph holds sums and products: a left-nested chain of an associative Op,
``(x + y) + z``, is the same left fold as ``add(x, y, z)`` (the same values in every
dtype), so the graph keeps it as that one e-node (:func:`flat_form`), and derivations
name the step :func:`flatteno`.
"""

from __future__ import annotations

from typing import Any

from relgraph.exceptions import TypeCheckError
from relgraph.logic.goals import eacho
from relgraph.rewriting.declarations import forward_only
from relgraph.rewriting.relation import is_associative, keeps_type
from relgraph.terms.term import Term

__all__ = ["flat_form", "flatteno", "left_spine"]


def flat_form(term: Term) -> Term:
    """``term`` with a left-nested chain of its associative Op spliced into one node.

    ``(x + y) + z`` and ``add(x, y, z)`` are the same left fold, so the same values;
    the chain is kept when splicing would change the type (numpy promotes n-ary
    arguments together).

    >>> import relgraph as rg
    >>> x, y, z = rg.vector("x"), rg.vector("y"), rg.vector("z")
    >>> flat_form(x + y + z) == rg.add(x, y, z), flat_form(x + (y + z)) == x + (y + z)
    (True, True)
    """
    op, args = term._tuple[0], term._tuple[1:]
    first = args[0] if args else None
    if type(first) is not Term or first._tuple[0] is not op or op.nin is not None:
        return term
    if not is_associative(op):
        return term
    while type(first) is Term and first._tuple[0] is op:
        args = (*first._tuple[1:], *args[1:])
        first = args[0]
    flat = Term((op, *args))
    try:
        return flat if keeps_type(term, flat) else term
    except TypeCheckError:  # pragma: no cover - a chain that types types flat
        return term


def left_spine(chain: Term) -> list[Term]:
    """``chain`` and the left operands of its Op below it, top first."""
    spine = [chain]
    while type(chain.args[0]) is Term and chain.args[0].op is spine[0].op:
        chain = chain.args[0]
        spine.append(chain)
    return spine


def _splices(t: Any) -> list[Term]:
    """``t``'s left-nested chain spliced: all of it (:func:`flat_form`) first, then the
    upper parts of it, each only where it keeps the type."""
    if type(t) is not Term or flat_form(t) is t:
        return []
    spine = left_spine(t)
    out = []
    for depth in range(len(spine) - 1, 0, -1):
        rest = (a for link in reversed(spine[:depth]) for a in link.args[1:])
        args = (*spine[depth].args, *rest)
        spliced = Term((t.op, *args))
        if keeps_type(t, spliced):
            out.append(spliced)
    return out


@forward_only
def flatteno(in_lv: Any, out_lv: Any) -> Any:
    """``(x + y) + z -> add(x, y, z)``: a left-nested sum or product as one node.

    The same left fold, so the same values in every dtype; the e-graph holds sums
    and products in this form, and derivations name this relation when they
    flatten a term.  The whole chain first, then its upper parts
    (``((w + x) + y) + z -> add(w + x, y, z)``): an e-node may hold an operand that
    is itself a sum.

    >>> import relgraph as rg
    >>> x, y, z = rg.vector("x"), rg.vector("y"), rg.vector("z")
    >>> flat = next(rg.rewrites(x + y + z, flatteno))
    >>> flat == rg.add(x, y, z), len(flat.args)
    (True, 3)
    """
    return eacho(_splices, in_lv, out_lv)
