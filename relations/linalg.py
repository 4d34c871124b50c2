"""Linear algebra relations.

``dot_distributeo`` is the seeds' example, written exactly as there: a plain
kanren goal constructor, so it runs forward and backward.

>>> import relgraph as rg
>>> from kanren import run, var
>>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
>>> q = var()
>>> [rg.pprint(rg.as_term(r)) for r in run(1, q, dot_distributeo(A @ (x + y), q))]
['((A @ x) + (A @ y))']
>>> [rg.pprint(rg.as_term(r)) for r in run(1, q, dot_distributeo(q, A @ x + A @ y))]
['(A @ (x + y))']
"""

from etuples import etuple
from kanren import conso, eq, heado, lall, tailo
from kanren.assoccomm import assoc_flatten
from kanren.graph import mapo
from unification import vars as lvars

from relgraph.ops import add, dot

__all__ = ["dot_distributeo"]


def dot_distributeo(in_lv, out_lv):
    """Relate ``A @ (a + b + ...)`` and ``(A @ a) + (A @ b) + ...``.

    Nested sums are flattened first (``add`` is associative), so the output is
    one variadic sum of products.
    """
    A_lv, add_term_lv, add_cdr_lv, dot_cdr_lv, add_flat_lv = lvars(5)

    return lall(
        # Make sure the input is a `dot`
        eq(in_lv, etuple(dot, A_lv, add_term_lv)),
        # Make sure the term being `dot`ed is an `add`
        heado(add, add_term_lv),
        # Flatten the associative pairings of `add` operations
        assoc_flatten(add_term_lv, add_flat_lv),
        # Get the flattened `add` arguments
        tailo(add_cdr_lv, add_flat_lv),
        # Add all the `dot`ed arguments and set the output
        conso(add, dot_cdr_lv, out_lv),
        # Apply the `dot` to all the flattened `add` arguments
        mapo(lambda x, y: conso(dot, etuple(A_lv, x), y), add_cdr_lv, dot_cdr_lv),
    )
