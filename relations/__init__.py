"""relgraph's standard library of relations, registered in tagged databases.

``optdb`` is the default database: a :class:`~relgraph.db.SequenceDB` of
equilibrium databases.

>>> import relgraph as rg
>>> from relations import optdb
>>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
>>> rg.pprint(rg.rewrite(A @ (x + y), optdb.query(include=["linalg"])))
'((A @ x) + (A @ y))'
"""

from relations.linalg import dot_distributeo
from relations.tags import EXPAND, LINALG
from relgraph import dot
from relgraph.db import EquilibriumDB, SequenceDB

__all__ = ["optdb", "linalg_db"]

linalg_db = EquilibriumDB(LINALG)
linalg_db.register("dot_distributeo", dot_distributeo, LINALG, EXPAND, tracks=[dot])

optdb = SequenceDB("optdb")
optdb.register(LINALG, linalg_db, LINALG, position=4)
