"""The standard library's databases, and :func:`register`, the decorator each relation
is registered with where it is defined.

The four equilibrium databases run in :data:`relations.optdb`, a sequence in
PyTensor's order.  Within a database the driver tries relations in order of their
``position`` (at a node, the first that applies wins), which each registration gives.

>>> from relations import canonicalize_db
>>> first = canonicalize_db.entries()[0]
>>> first.name, first.position
('reassociateo', 1.0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from relations.tags import (
    CANONICALIZE,
    LINALG,
    NO_SIGNED_ZEROS,
    REASSOCIATE,
    SPECIALIZE,
    STABILIZE,
    UNSAFE,
)
from relgraph import ops
from relgraph.rewriting.db import EquilibriumDB
from relgraph.rewriting.declarations import produces as mark_produces
from relgraph.rewriting.relation import reverse as reversed_relation

__all__ = [
    "register", "canonicalize_db", "stabilize_db", "specialize_db", "linalg_db", "REDUCTIONS",
]  # fmt: skip


def _equilibrium(name: str) -> EquilibriumDB:
    # Relations tagged unsafe, reassociate or no_signed_zeros run only when a query
    # names the tag.
    return EquilibriumDB(name, opt_in=[UNSAFE, REASSOCIATE, NO_SIGNED_ZEROS])


canonicalize_db = _equilibrium(CANONICALIZE)
stabilize_db = _equilibrium(STABILIZE)
specialize_db = _equilibrium(SPECIALIZE)
linalg_db = _equilibrium(LINALG)

#: The reductions, for relations that fire on any of them.
REDUCTIONS = (ops.sum, ops.max, ops.min, ops.prod, ops.mean)


def register(
    db: EquilibriumDB,
    *tags: str,
    position: float,
    name: str | None = None,
    tracks: Iterable[Any] | None = None,
    produces: Iterable[Any] | None = None,
    reverse: bool = False,
    whole: bool = False,
) -> Callable[[Any], Any]:
    """Register the decorated relation in ``db``; returns it unchanged.

    Parameters
    ----------
    db : EquilibriumDB
        One of this module's databases.
    *tags : str
        Its tags (declared in :mod:`relations.tags`).  A relation without its
        database's own tag (the expanding twin of a specialize relation) is selected
        by its own tags only.
    position : float
        Its place in the database: the driver tries relations in this order.
    name : str, optional
        The name queries and reports use; the function's name by default.
    tracks : iterable of Op, optional
        The head Ops it rewrites (None: any).
    produces : iterable of Op, optional
        The head Ops of what it rewrites to (None: any), so that ``rg.explore``
        runs it backward on those e-nodes only (:func:`relgraph.produces`).
    reverse : bool
        Register the relation run backward (``rg.reverse``) instead.
    whole : bool
        Whether it handles sums and products of any length itself, so the driver
        does not also try it on runs of their arguments.
    """

    def decorate(relation: Any) -> Any:
        entry = reversed_relation(relation) if reverse else relation
        if produces is not None:
            entry = mark_produces(*produces)(entry)
        db.register(
            name or relation.__name__,
            entry,
            *tags,
            position=position,
            tracks=tracks,
            windows=not whole,
            use_db_name_as_tag=db.name in tags,
        )
        return relation

    return decorate
