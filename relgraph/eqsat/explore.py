"""Exploring a rewrite space by equality saturation.

:func:`explore` adds the start term to an e-graph (:mod:`relgraph.eqsat.egraph`) and
runs the relations on it, both ways, until nothing new is found or a budget
stops it (:mod:`relgraph.eqsat.saturate`).  The :class:`RewriteSpace` it returns holds
every term the relations make equal to the start, sharing what they have in
common: :meth:`~RewriteSpace.best` extracts the cheapest under a cost model
(:mod:`relgraph.eqsat.extract`), :meth:`~RewriteSpace.explain` gives the named steps
that lead to a term (:mod:`relgraph.eqsat.derive`), and :meth:`~RewriteSpace.iter_terms`
lists the terms.  ``method="bfs"`` explores term by term instead
(:mod:`relgraph.eqsat.bfs`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from itertools import islice
from typing import Any

from relgraph.eqsat.bfs import (
    DIRECTIONS,
    HARD_TIMEOUT_GRACE,
    Derivation,
    Direction,
    explore_terms,
    rules_of,
)
from relgraph.eqsat.cost import Cost, shape_cost
from relgraph.eqsat.derive import Edges, application_edges, derive
from relgraph.eqsat.egraph import EGraph
from relgraph.eqsat.extract import NodeCosts, extract, iter_terms
from relgraph.eqsat.saturate import (
    DEFAULT_SCHEDULE,
    EVERYTHING,
    Budgets,
    Merge,
    Step,
    directed_rules,
    saturate,
)
from relgraph.exceptions import SearchTimeout
from relgraph.logic.search import run_deep
from relgraph.terms.printing import brief
from relgraph.terms.term import Term
from relgraph.terms.traverse import checked_term

__all__ = ["explore", "RewriteSpace"]

TERMS_SHOWN = 1000  # what RewriteSpace.terms lists; iter_terms() goes on
DEFAULT_TIMEOUT = 5.0  # seconds, as egg's default time limit


class RewriteSpace:
    """The terms a set of relations makes equal to ``start``, as an e-graph.

    ``len(space)`` counts e-nodes; ``term in space`` says whether the relations
    make ``term`` equal to the start; :attr:`saturated` whether they found
    everything, and :attr:`stopped_by` which budget stopped them otherwise
    (``"max_nodes"``, ``"max_iterations"``, ``"timeout"`` or ``"interrupt"``).
    """

    def __init__(self, start: Term, cost: Cost, runners: list):
        self.start = start
        self.cost_model = cost
        self.egraph = EGraph()
        self.root = self.egraph.add_term(start)
        self.runners = runners
        #: Every answer the relations added, in order.
        self.applications: list[Merge] = []
        self.stopped_by: str | None = None
        self.elapsed = 0.0
        #: E-nodes some of whose views a relation was not shown (a view shows at most
        #: ``MAX_ALTERNATIVES`` e-nodes of an operand class, and an e-node has at most
        #: ``MAX_VIEWS`` views; :mod:`relgraph.eqsat.views`), and
        #: answers dropped because they only wrapped the term they were found on
        #: (``identities=False``).  What the space may be missing.
        self.views_cut = 0
        self.wrapped = 0
        self._best: dict[Any, tuple] = {}

    # -- what it holds ------------------------------------------------------------------

    def __len__(self) -> int:
        return self.egraph.node_count

    @property
    def classes(self) -> int:
        """The number of e-classes (sets of equal subterms)."""
        return self.egraph.class_count

    def __contains__(self, term: Any) -> bool:
        try:
            found = self.egraph.lookup(checked_term(term, "look up"))
        except (TypeError, ValueError):
            return False
        return found is not None and found == self.egraph.find(self.root)

    @property
    def saturated(self) -> bool:
        """Whether the relations found everything (no budget stopped them)."""
        return self.stopped_by is None

    complete = saturated

    @property
    def terms(self) -> tuple[Term, ...]:
        """The first terms of the space (at most 1,000; :meth:`iter_terms` for more)."""
        return tuple(islice(self.iter_terms(), TERMS_SHOWN))

    def iter_terms(self) -> Iterator[Term]:
        """Every term of the space without a subterm inside itself, lazily, the
        start (its sums and products as the graph holds them) first."""
        first = self.egraph.spelled(self.start)
        yield first
        for term in iter_terms(self.egraph, self.root):
            if term != first:
                yield term

    @property
    def applied(self) -> Counter:
        """How many e-nodes each relation (and direction) added."""
        return Counter((a.rule.name, a.direction) for a in self.applications)

    @property
    def conflicts(self) -> list[tuple[Any, Any]]:
        """Pairs of different constants some relations made equal (an unsound relation)."""
        return self.egraph.conflicts

    # -- choosing --------------------------------------------------------------------

    def cost(self, term: Any, cost: Cost | None = None) -> float:
        """``term``'s cost under ``cost`` (default: the space's cost model)."""
        return float((cost or self.cost_model)(term))

    def best(self, cost: Cost | None = None) -> Term:
        """The cheapest term of the space, a subterm used twice counted once.

        Ties go to the start's own subterms.

        Examples
        --------
        >>> import relgraph as rg
        >>> a, b, c = rg.lvars("a b c")
        >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
        >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
        >>> rg.pprint(rg.explore(A @ x + A @ y, [dot_distributeo]).best())
        '(A @ (x + y))'
        """
        return self._extracted(cost)[0]

    def chosen(self, cost: Cost | None = None) -> dict[int, Any]:
        """The e-node :meth:`best` takes in each e-class it uses."""
        return self._extracted(cost)[2]

    def _extracted(self, cost: Cost | None) -> tuple[Term, float, dict]:
        """The cheapest term, its cost, and its e-nodes."""
        model = cost or self.cost_model
        if model not in self._best:
            costs = NodeCosts(self.egraph, model)
            term, value, chosen = extract(self.egraph, self.root, costs)
            self._best[model] = (term, value, chosen)
        return self._best[model]

    def explain(self, term: Any = None) -> Derivation:
        """Named steps from the start to ``term`` (default: :meth:`best`), each
        checked by :meth:`~relgraph.eqsat.bfs.Edge.check`, most of them answers
        :func:`relgraph.rewrites` gives.  A sum or product the graph holds flat ends
        flat (the step :func:`~relgraph.eqsat.flatten.flatteno`).

        The steps follow the proof the e-graph recorded when it found ``term`` equal
        to the start (:mod:`relgraph.eqsat.proofs`): every term of the space has one.
        """
        if term is None:
            term = self.best()
        elif term not in self:
            raise KeyError(f"{brief(term)} is not in this rewrite space")
        return derive(self.egraph, self._edges, self.start, term)

    @cached_property
    def _edges(self) -> Edges:
        """The applications between e-nodes, for derivations (the space is complete)."""
        return application_edges(self.egraph, self.applications)

    def depth(self, term: Any) -> int:
        """Steps in :meth:`explain`'s derivation of ``term``."""
        return len(self.explain(term))

    def __repr__(self) -> str:
        status = "saturated" if self.saturated else f"stopped by {self.stopped_by}"
        return (
            f"RewriteSpace({len(self)} e-nodes in {self.classes} classes, {status}, "
            f"start {brief(self.start, 60)})"
        )


def explore(
    term: Any,
    relations: Any,
    *,
    directions: Iterable[Direction] = DIRECTIONS,
    max_nodes: int = 10_000,
    max_iterations: int = 30,
    timeout: float | None | str = "default",
    cost: Cost = shape_cost,
    max_answers: int = 8,
    progress: bool | None = None,
    method: str = "egraph",
    max_terms: int | None = None,
    max_depth: int | None = None,
    identities: bool = False,
    schedule: str | Sequence[Step] = "default",
) -> Any:
    """Every term ``relations`` make equal to ``term``, by equality saturation.

    Parameters
    ----------
    term : Term
    relations : rewriter, list of relations/Rules, or one relation
        A database query result works: its relations are used, each on its own.
    directions : iterable of {"forward", "backward"}
        Run each relation forward (``rel(term, q)``), backward (``rel(q, term)``)
        or both (a relation marked forward-only never runs backward).
    max_nodes, max_iterations, timeout : budgets
        Stop when the e-graph holds ``max_nodes`` e-nodes, after ``max_iterations``
        rounds of search and merge, or after ``timeout`` seconds (egg's defaults:
        10,000, 30 and 5 s; ``timeout=None`` for none).  Ctrl-C stops it too.  In
        every case the space found so far is returned, ``stopped_by`` set.
    cost : callable
        The cost model of :meth:`RewriteSpace.best`: :func:`relgraph.shape_cost`
        (flops and elements moved where shapes are known) unless given.  The
        e-graph calls it on each e-node with its operands as typed placeholders
        (see :func:`relgraph.per_node`).
    max_answers : int
        Answers of a relation looked at per view.
    progress : bool, optional
        A tqdm bar; by default it appears if the run takes more than a second.
    method : {"egraph", "bfs"}
        ``"bfs"`` explores term by term, breadth-first (:mod:`relgraph.eqsat.bfs`), with
        the budgets ``max_terms`` (default 1,000) and ``max_depth``.
    schedule : "default", "saturate" or a sequence of steps
        Which relations run in which round.  A step is ``(which, rounds)``: the
        ``"forward"`` runners or ``"both"`` directions, for ``rounds`` rounds or, with
        None, until they change nothing.  ``"default"`` simplifies first, explores
        both ways for three rounds, then simplifies what that found:
        ``(("forward", None), ("both", 3), ("forward", None))``.  ``"saturate"`` runs
        everything until nothing changes (``(("both", None),)``), which many
        databases never reach within the budgets.  The run ends saturated
        (``stopped_by`` None) as soon as a round of every relation changes nothing,
        and with ``stopped_by == "schedule"`` when the steps run out first.
    identities : bool
        Run identity laws backward too (``x`` -> ``x + 0``, ``x * 1``, ``-(-x)``,
        ``x.T.T``) and keep answers that wrap the term they were found on.  Off by
        default: such answers only grow the space (every class gets them, every
        round), and they help only where a later relation needs the identity to
        match, as in factoring ``a * x + x`` into ``(a + 1) * x``.  A relation is an
        identity law here if, run backward on a bare symbol, it answers terms that
        hold the symbol.

    Examples
    --------
    >>> import relgraph as rg
    >>> from relations import optdb
    >>> A = rg.matrix("A")
    >>> x, y, z, w = (rg.vector(n) for n in "xyzw")
    >>> space = rg.explore(A @ x + A @ y + A @ z + A @ w,
    ...                    optdb.query(include=["linalg", "canonicalize"]), timeout=None)
    >>> space.stopped_by, rg.pprint(space.best()), space.cost(space.best())
    ('schedule', '(A @ (x + y + z + w))', 11.0)
    >>> [(step.relation, step.direction) for step in space.explain()]
    [('flatteno', 'forward'), ('dot_distributeo', 'backward')]
    """
    if method == "bfs":
        return explore_terms(
            term, relations, directions=directions,
            max_terms=1000 if max_terms is None else max_terms, max_depth=max_depth,
            timeout=_seconds(timeout, None), cost=cost,
            max_answers=max_answers, progress=progress,
        )  # fmt: skip
    if method != "egraph":
        raise ValueError(f"method must be 'egraph' or 'bfs', got {method!r}")
    for name, value in (("max_terms", max_terms), ("max_depth", max_depth)):
        if value is not None:
            raise ValueError(
                f"{name} is a budget of method='bfs'; the e-graph's budgets are "
                "max_nodes, max_iterations and timeout"
            )
    if max_nodes < 1 or max_iterations < 1:
        raise ValueError("max_nodes and max_iterations must be positive")
    term = checked_term(term, "explore")
    directions = tuple(dict.fromkeys(directions))
    if not directions or any(d not in DIRECTIONS for d in directions):
        raise ValueError(f"directions must be some of {DIRECTIONS}, got {directions!r}")
    runners = directed_rules(rules_of(relations), directions, max_answers)
    space = RewriteSpace(term, cost, runners)
    seconds = _seconds(timeout, DEFAULT_TIMEOUT)
    if seconds is not None and not seconds > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    budgets = Budgets(max_nodes, max_iterations, seconds, identities=identities)
    steps = _schedule(schedule)
    began = time.perf_counter()
    hard = None if seconds is None else seconds + HARD_TIMEOUT_GRACE
    try:
        space.stopped_by = run_deep(
            saturate, space.egraph, runners, budgets, space.applications, progress, steps,
            timeout=hard,
        )  # fmt: skip
    except KeyboardInterrupt:
        space.stopped_by = "interrupt"
    except SearchTimeout:
        space.stopped_by = "timeout"
    space.egraph.rebuild()
    space.elapsed = time.perf_counter() - began
    space.views_cut, space.wrapped = budgets.views_cut, budgets.wrapped
    return space


def _schedule(schedule: str | Sequence[Step]) -> tuple[Step, ...]:
    """``schedule`` as steps, or ValueError naming what is wrong with it."""
    if isinstance(schedule, str):
        named = {"default": DEFAULT_SCHEDULE, "saturate": EVERYTHING}
        if schedule not in named:
            raise ValueError(f"schedule must be 'default', 'saturate' or a sequence of "
                             f"(which, rounds) steps, got {schedule!r}")  # fmt: skip
        return named[schedule]
    steps = tuple(tuple(step) for step in schedule)
    for step in steps:
        ok = len(step) == 2 and step[0] in ("forward", "both")
        if not ok or not (step[1] is None or (isinstance(step[1], int) and step[1] > 0)):
            raise ValueError(
                f"schedule step {step!r}: a step is (which, rounds), which 'forward' or "
                "'both', rounds a positive int or None (until nothing changes)"
            )
    if not steps:
        raise ValueError("schedule has no steps")
    return steps  # type: ignore[return-value]


def _seconds(timeout: float | str | None, default: float | None) -> float | None:
    """``timeout`` in seconds: ``"default"`` is ``default``, None no limit."""
    if timeout == "default":
        return default
    if isinstance(timeout, str):
        raise ValueError(
            f"timeout must be a number of seconds, None or 'default', got {timeout!r}"
        )
    return timeout
