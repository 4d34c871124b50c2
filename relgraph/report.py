"""What a rewrite did: frozen records, printed as a table like PyTensor's rewrite profile."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RuleStats", "RewriteReport"]


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
    """

    name: str
    passes: int
    time: float
    nodes_before: int
    nodes_after: int
    rules: tuple[RuleStats, ...] = ()
    pass_log: tuple[tuple[tuple[str, int], ...], ...] = ()
    children: tuple[RewriteReport, ...] = ()

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
        for child in self.children:
            lines.extend(child._lines(indent + "  "))
        return lines
