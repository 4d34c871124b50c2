"""What a rewrite did: frozen records, printed as a table like PyTensor's rewrite profile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relgraph.terms.printing import brief

__all__ = ["RuleStats", "RewriteReport", "Application"]


@dataclass(frozen=True)
class Application:
    """One rewrite the driver made (``rewrite(..., trace=True)``).

    Attributes
    ----------
    relation : str
    pass_number : int
        The pass it happened in (from 1).
    position : tuple of int, or None
        Where the rewrite happened in the term the pass started from: the argument
        indices from the root (``()`` is the root, ``(1, 0)`` the first argument
        of the second).  ``before`` is the subterm there as the pass had rebuilt
        it by then (its arguments rewritten first).  ``None`` inside a run of
        arguments of an associative Op.
    before, after : Term
        The subterm (or, for an associative Op, the run of arguments) and what
        replaced it.
    """

    relation: str
    pass_number: int
    position: tuple[int, ...] | None
    before: Any
    after: Any

    def __str__(self) -> str:
        where = "in a run of arguments" if self.position is None else f"at {list(self.position)}"
        return (
            f"pass {self.pass_number}, {where}: {self.relation}: "
            f"{brief(self.before)} -> {brief(self.after)}"
        )


@dataclass(frozen=True)
class RuleStats:
    """Counters of one relation in one equilibrium run."""

    name: str
    attempts: int
    applications: int
    time: float
    nodes_created: int
    #: Answers refused, as ``((reason, count), ...)``: not ground, the same as the
    #: input, another type, or arithmetic moved across dtypes.
    dropped: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class RewriteReport:
    """The report of one rewriter run; sequences nest their steps in ``children``.

    Attributes
    ----------
    name : str
    passes : int
        Sweeps over the term (the last one found nothing to do).
    time : float
        Seconds.
    nodes_before, nodes_after : int
        Distinct applications in the term before and after.
    rules : tuple of RuleStats
        Most time-consuming first.
    pass_log : tuple
        For each pass, ``((relation name, applications), ...)``.
    children : tuple of RewriteReport
    trace : tuple of Application
        Every rewrite in order, when asked for (``trace=True``); children's
        traces are in theirs.
    """

    name: str
    passes: int
    time: float
    nodes_before: int
    nodes_after: int
    rules: tuple[RuleStats, ...] = ()
    pass_log: tuple[tuple[tuple[str, int], ...], ...] = ()
    children: tuple[RewriteReport, ...] = ()
    trace: tuple[Application, ...] = ()

    @staticmethod
    def joined(reports: tuple[RewriteReport, ...]) -> RewriteReport | None:
        """One report over runs on separate terms (a program's outputs), None for none."""
        if not reports:
            return None
        return RewriteReport(
            "outputs", max(r.passes for r in reports), sum(r.time for r in reports),
            sum(r.nodes_before for r in reports), sum(r.nodes_after for r in reports),
            children=reports,
        )  # fmt: skip

    @property
    def applied(self) -> tuple[Application, ...]:
        """The trace of this run and its children, in order."""
        return self.trace + tuple(a for child in self.children for a in child.applied)

    @property
    def applications(self) -> dict[str, int]:
        """Applications per relation name, over this run and its children."""
        counts: dict[str, int] = {}
        for stats in self.rules:
            if stats.applications:
                counts[stats.name] = counts.get(stats.name, 0) + stats.applications
        for child in self.children:
            for name, n in child.applications.items():
                counts[name] = counts.get(name, 0) + n
        return counts

    def __str__(self) -> str:
        return "\n".join(self._lines(""))

    def _lines(self, indent: str) -> list[str]:
        lines = [
            f"{indent}{self.name}: {self.time:.4f} s, {self.passes} pass(es), "
            f"nodes {self.nodes_before} -> {self.nodes_after}"
        ]
        for i, applied in enumerate(self.pass_log, 1):
            done = " ".join(f"({name}, {n})" for name, n in applied) or "-"
            lines.append(f"{indent}  pass {i}: {done}")
        if self.rules:
            lines.append(
                f"{indent}  {'time':>9}  {'tried':>7}  {'applied':>7}  {'created':>7}  relation"
            )
            for r in self.rules:
                lines.append(
                    f"{indent}  {r.time:8.4f}s  {r.attempts:7d}  {r.applications:7d}  "
                    f"{r.nodes_created:7d}  {r.name}"
                )
        for r in self.rules:
            for reason, n in r.dropped:
                lines.append(f"{indent}  {r.name}: dropped {n} answer(s): {reason}")
        lines.extend(f"{indent}  {step}" for step in self.trace)
        for child in self.children:
            lines.extend(child._lines(indent + "  "))
        return lines
