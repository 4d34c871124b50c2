"""What every rewrite space answers, however it was built: the e-graph's
:class:`~relgraph.eqsat.explore.RewriteSpace` (``rg.explore``) and the
breadth-first :class:`~relgraph.eqsat.bfs.TermSpace` (the stepper's).

>>> import relgraph as rg
>>> a, b, c = rg.lvars("a b c")
>>> distribute = rg.rule(a @ (b + c), a @ b + a @ c, name="distribute")
>>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
>>> isinstance(rg.explore(A @ (x + y), [distribute]), Space)
True
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from relgraph.eqsat.bfs import Derivation
from relgraph.eqsat.cost import Cost
from relgraph.terms.term import Term

__all__ = ["Space"]


@runtime_checkable
class Space(Protocol):
    """A set of terms equal to a start term, with how each was reached."""

    @property
    def terms(self) -> tuple[Term, ...]:
        """Every term in the space (for an e-graph: the ones it has shown)."""
        ...

    def depth(self, term: Any) -> int:
        """The fewest rewrites from the start term to ``term``."""
        ...

    def cost(self, term: Any, cost: Cost | None = None) -> float:
        """``term``'s cost under ``cost`` (the space's default model if None)."""
        ...

    def best(self, cost: Cost | None = None) -> Term:
        """The cheapest term in the space."""
        ...

    def explain(self, term: Any = None) -> Derivation:
        """The rewrites from the start term to ``term`` (the best one if None)."""
        ...
