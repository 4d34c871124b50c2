"""Tagged relation databases, with the seeds' optdb query semantics.

An entry has a name, tags and a position.  A :class:`Query` selects the entries
that have *any* of ``include``, *all* of ``require`` and *none* of ``exclude``
(an entry's name counts as one of its tags).  A database entry found by a query
is itself queried, with ``subquery[name]`` if given, else the same query.

* :class:`EquilibriumDB` holds relations (and nested equilibrium databases); its
  query is one :class:`~relgraph.rewriter.EquilibriumRewriter` over all of them.
* :class:`SequenceDB` holds rewriters and databases; its query runs them in order
  of ``position`` as a :class:`~relgraph.rewriter.SequenceRewriter`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from relgraph.exceptions import QueryError, RegistrationError
from relgraph.relation import Rule, as_rule
from relgraph.rewriter import EquilibriumRewriter, SequenceRewriter

__all__ = ["Query", "RelationDB", "EquilibriumDB", "SequenceDB"]


@dataclass(frozen=True)
class Query:
    """Which entries to take from a database.

    Examples
    --------
    >>> q = Query(include=["fast_run"]).excluding("unsafe")
    >>> sorted(q.include), sorted(q.exclude)
    (['fast_run'], ['unsafe'])
    """

    include: frozenset[str]
    require: frozenset[str] = frozenset()
    exclude: frozenset[str] = frozenset()
    subquery: Mapping[str, Query] = field(default_factory=dict)

    def __init__(
        self,
        include: Iterable[str],
        require: Iterable[str] = (),
        exclude: Iterable[str] = (),
        subquery: Mapping[str, Query] | None = None,
    ):
        for label, tags in (("include", include), ("require", require), ("exclude", exclude)):
            if isinstance(tags, str):
                raise TypeError(f"{label} must be a list of tags, not the string {tags!r}")
        object.__setattr__(self, "include", frozenset(include))
        object.__setattr__(self, "require", frozenset(require))
        object.__setattr__(self, "exclude", frozenset(exclude))
        object.__setattr__(self, "subquery", dict(subquery or {}))

    def including(self, *tags: str) -> Query:
        """A copy that also includes ``tags``."""
        return replace(self, include=self.include | set(tags))

    def requiring(self, *tags: str) -> Query:
        """A copy that also requires ``tags``."""
        return replace(self, require=self.require | set(tags))

    def excluding(self, *tags: str) -> Query:
        """A copy that also excludes ``tags``."""
        return replace(self, exclude=self.exclude | set(tags))

    def selects(
        self, name: str, tags: frozenset[str], opt_in: frozenset[str] = frozenset()
    ) -> bool:
        """Whether an entry with this name and these tags is selected.

        An entry carrying an ``opt_in`` tag is selected only if the query
        names that tag in ``include`` or ``require``.
        """
        labels = tags | {name}
        if (labels & opt_in) - self.include - self.require:
            return False
        return (
            bool(self.include & labels) and self.require <= labels and not (self.exclude & labels)
        )


@dataclass(frozen=True)
class Entry:
    """One registered entry."""

    name: str
    obj: Any
    tags: frozenset[str]
    position: float


class RelationDB:
    """Base class: a registry of named, tagged entries."""

    def __init__(self, name: str = "db", *, opt_in: Iterable[str] = ()):
        self.name = name
        self.opt_in = frozenset(opt_in)
        self._entries: dict[str, Entry] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}: {', '.join(self._entries)})"

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __getitem__(self, name: str) -> Any:
        return self._entries[name].obj

    def __iter__(self):
        return iter(self._entries)

    def entries(self) -> list[Entry]:
        """The entries, in order of position then registration."""
        return sorted(self._entries.values(), key=lambda e: e.position)

    def register(
        self,
        name: str,
        entry: Any,
        *tags: str,
        position: float | None = None,
        tracks: Iterable[Any] | None = None,
        windows: bool = True,
        overwrite: bool = False,
    ) -> Any:
        """Add ``entry`` under ``name`` with ``tags``; returns ``entry`` unchanged.

        Parameters
        ----------
        name : str
            Unique in this database (re-registering needs ``overwrite=True``).
        entry : relation, rewriter or database
        *tags : str
        position : float, optional
            Order in a :class:`SequenceDB`; defaults to after the last entry.
        tracks : iterable of Op, optional
            For a relation: the head Ops it can rewrite.
        windows : bool
            For a relation: also try it on runs of arguments of associative
            Ops (see :class:`~relgraph.relation.Rule`).
        overwrite : bool
            Replace an entry of the same name (for re-run notebook cells).
        """
        if not isinstance(name, str) or not name:
            raise RegistrationError(f"an entry name must be a non-empty string, got {name!r}")
        if name in self._entries and not overwrite:
            raise RegistrationError(
                f"{self.name}: the name {name!r} is taken (pass overwrite=True to replace it)"
            )
        bad = [t for t in tags if not isinstance(t, str)]
        if bad:
            raise RegistrationError(f"{self.name}: tags must be strings, got {bad!r}")
        obj = self._accept(name, entry, tracks, windows)
        if position is None:
            position = max((e.position for e in self._entries.values()), default=0) + 1
        self._entries[name] = Entry(name, obj, frozenset(tags), float(position))
        return entry

    def _accept(self, name: str, entry: Any, tracks: Iterable[Any] | None, windows: bool) -> Any:
        raise NotImplementedError

    def all_tags(self) -> set[str]:
        """Every tag and name in this database and the databases inside it."""
        tags: set[str] = set()
        for e in self._entries.values():
            tags |= e.tags | {e.name}
            if isinstance(e.obj, RelationDB):
                tags |= e.obj.all_tags()
        return tags

    def query(
        self,
        query: Query | None = None,
        *,
        include: Iterable[str] = (),
        require: Iterable[str] = (),
        exclude: Iterable[str] = (),
        subquery: Mapping[str, Query] | None = None,
    ) -> Any:
        """Build the rewriter of the entries a query selects.

        Pass a :class:`Query`, or its fields as keywords.  A tag in ``include``
        or ``require`` that no entry carries is an error (a typo selects nothing).
        """
        if query is None:
            query = Query(include, require, exclude, subquery)
        known = self.all_tags()
        unknown = sorted((query.include | query.require) - known)
        if unknown:
            raise QueryError(
                f"{self.name}: no entry has the tag(s) {unknown}; known: {sorted(known)}"
            )
        return self._build(query)

    def _selected(self, query: Query) -> list[Entry]:
        return [e for e in self.entries() if query.selects(e.name, e.tags, self.opt_in)]

    def _build(self, query: Query) -> Any:
        raise NotImplementedError


class EquilibriumDB(RelationDB):
    """Relations applied together until none applies.

    Parameters
    ----------
    name : str
    **options
        Passed to :class:`~relgraph.rewriter.EquilibriumRewriter`
        (``max_use_ratio``, ``max_passes``, ``on_error``, ``max_answers``).

    Examples
    --------
    >>> import relgraph as rg
    >>> from relations.linalg import dot_distributeo
    >>> db = EquilibriumDB("linalg")
    >>> _ = db.register("dot_distributeo", dot_distributeo, "linalg", "expand", tracks=[rg.dot])
    >>> db.query(include=["expand"])
    EquilibriumRewriter('linalg': dot_distributeo)
    """

    def __init__(self, name: str = "equilibrium", *, opt_in: Iterable[str] = (), **options: Any):
        super().__init__(name, opt_in=opt_in)
        EquilibriumRewriter([], **options)  # validate the options now
        self.options = options

    def _accept(self, name: str, entry: Any, tracks: Iterable[Any] | None, windows: bool) -> Any:
        if isinstance(entry, EquilibriumDB):
            return entry
        if isinstance(entry, RelationDB) or hasattr(entry, "apply"):
            raise RegistrationError(
                f"{self.name}: {name!r} must be a relation or an EquilibriumDB, got {entry!r}"
            )
        try:
            return as_rule(entry, name=name, tracks=tracks, windows=windows)
        except TypeError as exc:
            raise RegistrationError(f"{self.name}: {name!r}: {exc}") from None

    def rules(self, query: Query) -> list[Rule]:
        """The relations a query selects, nested databases included."""
        rules: list[Rule] = []
        for e in self._selected(query):
            if isinstance(e.obj, EquilibriumDB):
                rules.extend(e.obj.rules(query.subquery.get(e.name, query)))
            else:
                rules.append(e.obj)
        return rules

    def _build(self, query: Query) -> EquilibriumRewriter:
        rules = self.rules(query)
        _refuse_both_directions(self.name, rules)
        return EquilibriumRewriter(rules, name=self.name, **self.options)


def _refuse_both_directions(db: str, rules: list[Rule]) -> None:
    # A relation and its reverse in one equilibrium undo each other forever.
    by_relation = {r.relation: r.name for r in rules}
    for r in rules:
        forward = getattr(r.relation, "__wrapped__", None)
        if forward in by_relation:
            raise QueryError(
                f"{db}: the query selects both {by_relation[forward]!r} and its reverse "
                f"{r.name!r}; they would undo each other (select one direction, e.g. "
                "exclude 'expand' or 'factor')"
            )


class SequenceDB(RelationDB):
    """Rewriters and databases run one after the other, by position.

    A relation registered here runs as an equilibrium of its own.
    """

    def _accept(self, name: str, entry: Any, tracks: Iterable[Any] | None, windows: bool) -> Any:
        if isinstance(entry, RelationDB) or hasattr(entry, "apply"):
            return entry
        try:
            rule = as_rule(entry, name=name, tracks=tracks, windows=windows)
            return EquilibriumRewriter([rule], name=name)
        except TypeError as exc:
            raise RegistrationError(f"{self.name}: {name!r}: {exc}") from None

    def _build(self, query: Query) -> SequenceRewriter:
        steps = []
        for e in self._selected(query):
            obj = e.obj
            if isinstance(obj, RelationDB):
                obj = obj._build(query.subquery.get(e.name, query))
            steps.append((e.name, obj))
        return SequenceRewriter(steps, name=self.name)
