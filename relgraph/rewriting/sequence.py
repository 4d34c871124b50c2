"""Sequences of rewriters, and ``rg.rewrite``, the one entry point for all of them."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from relgraph.rewriting.driver import EquilibriumRewriter
from relgraph.rewriting.report import RewriteReport
from relgraph.terms.traverse import checked_term, count_nodes

__all__ = ["SequenceRewriter", "rewrite"]


class SequenceRewriter:
    """Run rewriters one after the other.

    Parameters
    ----------
    steps : sequence of (name, rewriter)
    name : str
    """

    query: Any = None  # the database query that built it, if one did

    def __init__(self, steps: Sequence[tuple[str, Any]], *, name: str = "sequence"):
        self.steps = tuple(steps)
        self.name = name

    def __repr__(self) -> str:
        return f"SequenceRewriter({self.name!r}: {', '.join(n for n, _ in self.steps)})"

    def check(self, *, strict: bool = False) -> list:
        """The static check of each step (see :meth:`EquilibriumRewriter.check`)."""
        return [
            f
            for _, step in self.steps
            if hasattr(step, "check")
            for f in step.check(strict=strict)
        ]

    def apply(self, term: Any, trace: bool = False) -> tuple[Any, RewriteReport]:
        """Apply each step in order; the report nests the steps' reports (and, with
        ``trace=True``, their traces: ``report.applied`` lists them all in order)."""
        term = checked_term(term, "rewrite")
        start = time.perf_counter()
        children: list[Any] = []
        outputs: dict[int, Any] = {}
        for name, step in self.steps:
            last = outputs.get(id(step))
            if last is not None and (last is term or last == term):
                # A step that runs again on its own output (nothing between changed
                # it, though a step between may have rebuilt equal nodes) is at its
                # fixpoint already.
                size = children[-1].nodes_after
                children.append(RewriteReport(name, 0, 0.0, size, size))
                continue
            term, child = step.apply(term, trace=trace) if trace else step.apply(term)
            outputs[id(step)] = term
            children.append(child)
        elapsed = time.perf_counter() - start
        # Each step counted the nodes it took and gave.
        before = children[0].nodes_before if children else count_nodes(term)
        after = children[-1].nodes_after if children else before
        return term, RewriteReport(self.name, 1, elapsed, before, after, children=tuple(children))


def rewrite(term: Any, rewriter: Any, *, report: bool = False, trace: bool = False) -> Any:
    """Rewrite ``term`` with a rewriter, a database query result, or relations.

    Parameters
    ----------
    term : Term
    rewriter : EquilibriumRewriter, SequenceRewriter, a relation, or a list of them
    report : bool
        Also return the :class:`RewriteReport`.
    trace : bool
        Record every rewrite in order in the report (``report.applied``); implies
        ``report=True``.

    Examples
    --------
    >>> import relgraph as rg
    >>> a, b, c = rg.lvars("a b c")
    >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> out, rep = rg.rewrite(A @ (x + y), dot_distributeo, report=True)
    >>> rg.pprint(out), rep.applications
    ('((A @ x) + (A @ y))', {'dot_distributeo': 1})
    """
    if not hasattr(rewriter, "apply"):
        relations = rewriter if isinstance(rewriter, (list, tuple)) else [rewriter]
        rewriter = EquilibriumRewriter(relations)
    result, rep = rewriter.apply(term, trace=True) if trace else rewriter.apply(term)
    return (result, rep) if report or trace else result
