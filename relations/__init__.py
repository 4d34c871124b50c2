"""relgraph's standard library of relations, registered in tagged databases.

``optdb`` is the default database: a :class:`~relgraph.rewriting.db.SequenceDB` running,
in PyTensor's order, the equilibrium databases ``canonicalize``, ``stabilize``,
``specialize`` and ``linalg``, with ``canonicalize`` once more after ``stabilize``
(as the stage ``recanonicalize``).  ``optdb.query(include=["fast_run"])`` is the
default pipeline; relations tagged ``unsafe`` are selected only when a query
names ``unsafe`` (``y - y`` stays: it is NaN at inf and 0.0 where ``0 * y`` is -0.0),
and those that may change the sign of a zero only when it names ``no_signed_zeros``
(``0 + x`` stays: it is 0.0 at ``x = -0.0``).

>>> import relgraph as rg
>>> from relations import optdb
>>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
>>> rg.pprint(rg.rewrite(A @ (x + y), optdb.query(include=["linalg"])))
'((A @ x) + (A @ y))'
>>> rg.pprint(rg.rewrite(rg.log(1 + x * 1) + (y - y * 1), optdb.query(include=["fast_run"])))
'(log1p(0 + x) + (y - y))'
>>> rg.pprint(rg.rewrite(y * x + x * y, optdb.query(include=["canonicalize"])))
'(2 * (x * y))'
"""

# Importing a subject's module registers its relations (relations.databases.register).
from relations import (  # noqa: F401
    arith,
    collect,
    explog,
    indexing,
    linalg,
    logsumexp,
    products,
    reductions,
    stabilize,
)
from relations.databases import canonicalize_db, linalg_db, specialize_db, stabilize_db
from relations.tags import TAGS
from relgraph.rewriting.db import SequenceDB
from relgraph.rewriting.library import register_library

__all__ = ["optdb", "canonicalize_db", "stabilize_db", "specialize_db", "linalg_db"]

RECANONICALIZE = "recanonicalize"

optdb = SequenceDB("optdb")
for _position, _db in enumerate((canonicalize_db, stabilize_db, specialize_db, linalg_db), 1):
    # The query is applied again within each stage; a stage's name selects all of it.
    optdb.register(_db.name, _db, position=_position)
# Stabilisations leave terms canonicalize would normalise further (log(exp(-z)) is -z
# inside a product): canonicalize runs again before specialize, so the pipeline's
# output is its own fixpoint.
optdb.register(RECANONICALIZE, canonicalize_db, position=2.5)

# The engine's front end (rg.jit, the command line) finds its default query here.
register_library("relations", optdb, TAGS)
