"""The one error hierarchy of relgraph.

Errors are raised at construction and at the API boundary, with the offending
value in the message.  Inside a search (a kanren goal) nothing raises: a goal
that cannot apply fails.
"""

from __future__ import annotations

__all__ = [
    "RelgraphError",
    "TypeCheckError",
    "ParseError",
    "RegistrationError",
    "QueryError",
    "RelationError",
    "EquilibriumLimitError",
    "OscillationError",
    "SearchTimeout",
    "UnsupportedError",
    "TraceError",
    "ProgramError",
    "LoweringError",
    "PatternError",
    "DerivationError",
    "GradientError",
]


class RelgraphError(Exception):
    """Base class of every error relgraph raises on purpose."""


class TypeCheckError(RelgraphError, TypeError):
    """A term is ill-typed: the message shows the offending subterm."""


class ParseError(RelgraphError, ValueError):
    """Text given to :func:`relgraph.parse` is not an accepted expression."""


class UnsupportedError(RelgraphError, TypeError):
    """A numpy function, argument or value that terms cannot stand for.

    The message names it and, for a function, the nearest supported ones.
    """


class TraceError(RelgraphError, TypeError):
    """A traced Python function did something a term cannot follow: took the truth
    value of an array, read a size not known when tracing, wrote into an array."""


class RegistrationError(RelgraphError, ValueError):
    """A database entry cannot be registered (taken name, wrong kind of entry)."""


class QueryError(RelgraphError, ValueError):
    """A database query names tags that select nothing."""


class RelationError(RelgraphError):
    """A relation raised, or produced an ill-typed result, while rewriting.

    Attributes
    ----------
    relation : str
        The name of the relation.
    term : object
        The subterm it was applied to.
    """

    def __init__(self, message: str, relation: str, term: object):
        super().__init__(message)
        self.relation = relation
        self.term = term


class EquilibriumLimitError(RelgraphError):
    """An equilibrium rewrite exceeded ``max_use_ratio`` or ``max_passes``.

    Attributes
    ----------
    counts : dict
        Applications per relation name, most applied first.
    """

    def __init__(self, message: str, counts: dict[str, int]):
        super().__init__(message)
        self.counts = counts


class OscillationError(RelgraphError):
    """The rewritten term came back to a term it had been before.

    Attributes
    ----------
    relations : tuple of str
        The relations applied along the cycle.
    """

    def __init__(self, message: str, relations: tuple[str, ...]):
        super().__init__(message)
        self.relations = relations


class SearchTimeout(RelgraphError, TimeoutError):
    """A search (a rewrite, its relations' goals, an exploration) ran past its ``timeout``."""


class ProgramError(RelgraphError):
    """One program of :func:`relgraph.rewrite_many` or :func:`relgraph.compile_many`
    failed: the message names it by index and shows the error it raised;
    ``details`` holds that error's traceback."""

    def __init__(self, index: int, program: str, error: str, details: str = ""):
        super().__init__(f"program {index} ({program}) failed: {error}")
        self.index, self.program, self.error, self.details = index, program, error, details

    def __reduce__(self):
        return (ProgramError, (self.index, self.program, self.error, self.details))


class LoweringError(RelgraphError):
    """A term cannot be compiled: it names the Op or the construct."""


class PatternError(RelgraphError, ValueError):
    """A pattern that cannot be matched: a misplaced rest variable, a plain Var."""


class DerivationError(RelgraphError, RuntimeError):
    """No derivation of a term: classes an :class:`~relgraph.eqsat.egraph.EGraph`'s user
    merged by hand (no relation says why), or one longer than the derivation's budget
    of moves."""


class GradientError(RelgraphError, TypeError):
    """A gradient that cannot be built: it names the Op (or the argument) and why, as
    an Op without a derivative, or a size the gradient needs but the types leave open."""
