"""Tagged relation databases, with the query semantics of PyTensor's optdb.

An entry has a name, tags and a position.  A :class:`Query` selects the relations
that have *any* of ``include``, *all* of ``require`` and *none* of ``exclude``.  An
entry's name counts as one of its tags, and so do the names of the databases it is
registered in (as PyTensor adds a database's name to the tags of its entries): a
query that includes a nested database by name selects what is in it.  A nested
database is queried with ``subquery[name]`` if given, else with the same query, and
is left out only when its own name or tags are excluded; one that selects nothing
is left out of a sequence.  A query that selects no relation at all, or names a tag
no entry carries (in ``include``, ``require`` or ``exclude``), is an error.

* :class:`EquilibriumDB` holds relations (and nested equilibrium databases); its
  query is one :class:`~relgraph.rewriting.driver.EquilibriumRewriter` over all of them.
* :class:`SequenceDB` holds rewriters and databases; its query runs them in order
  of ``position`` as a :class:`~relgraph.rewriting.sequence.SequenceRewriter`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from relgraph.exceptions import QueryError, RegistrationError
from relgraph.rewriting.driver import EquilibriumRewriter
from relgraph.rewriting.relation import Rule, as_rule
from relgraph.rewriting.sequence import SequenceRewriter

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
        self, labels: frozenset[str], own: frozenset[str], opt_in: frozenset[str] = frozenset()
    ) -> bool:
        """Whether a relation with these ``labels`` (its name, tags and enclosing
        databases' names) is selected.

        A relation whose ``own`` name or tags carry an ``opt_in`` tag is selected only
        if the query names that tag in ``include`` or ``require``.
        """
        if (own & opt_in) - self.include - self.require:
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
    #: Whether the names of the databases holding the entry count as its tags.
    db_name_as_tag: bool = True


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
        """The entries' names, in the order they run (position, then registration)."""
        return iter([e.name for e in self.entries()])

    def entries(self) -> list[Entry]:
        """The entries, in order of position then registration."""
        return sorted(self._entries.values(), key=lambda e: e.position)

    def count(self, query: Query, within: frozenset[str] = frozenset()) -> int:
        """How many relations ``query`` selects here (nested databases included)."""
        total = 0
        for entry, labels, names in self._visible(query, within):
            if isinstance(entry.obj, RelationDB):
                inner = query.subquery.get(entry.name, query)
                total += entry.obj.count(inner, names)
            else:
                total += self._takes(query, entry, labels)
        return total

    def withheld(self, query: Query, within: frozenset[str] = frozenset()) -> dict[str, str]:
        """The relations ``query`` names that an opt-in tag keeps out, by name, with
        that tag (``div_selfo`` is ``unsafe``: selected only when a query names it)."""
        found: dict[str, str] = {}
        for entry, labels, names in self._visible(query, within):
            if isinstance(entry.obj, RelationDB):
                found.update(entry.obj.withheld(query.subquery.get(entry.name, query), names))
            elif query.selects(labels, entry.tags | {entry.name}) and not self._takes(
                query, entry, labels
            ):
                tags = (entry.tags | {entry.name}) & self.opt_in
                found[entry.name] = sorted(tags - query.include - query.require)[0]
        return found

    def _visible(self, query: Query, within: frozenset[str]):
        """(entry, labels, names) of the entries not excluded.  ``labels`` add to an
        entry's name and tags ``within``, the names of the databases holding it;
        ``names`` is what a database entry passes on to its own entries."""
        for e in self.entries():
            inherited = within if e.db_name_as_tag else frozenset()
            labels = e.tags | {e.name} | inherited
            if not (query.exclude & labels):
                yield e, labels, inherited | {e.name}

    def _takes(self, query: Query, entry: Entry, labels: frozenset[str]) -> bool:
        return query.selects(labels, entry.tags | {entry.name}, self.opt_in)

    def register(
        self,
        name: str,
        entry: Any,
        *tags: str,
        position: float | None = None,
        tracks: Iterable[Any] | None = None,
        windows: bool | None = None,
        overwrite: bool = False,
        use_db_name_as_tag: bool = True,
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
            For a relation: the head Ops it can rewrite (a rule knows its own).
        windows : bool, optional
            For a relation: also try it on runs of arguments of associative
            Ops (see :class:`~relgraph.rewriting.relation.Rule`); by default yes, except for
            a rule whose pattern takes any number of arguments itself.
        overwrite : bool
            Replace an entry of the same name (for re-run notebook cells).
        use_db_name_as_tag : bool
            Whether a query that names a database this entry is in selects it (as
            in PyTensor).  ``False`` for an entry only its own name and tags select,
            such as the expanding direction of a pair kept in one database.
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
        self._entries[name] = Entry(
            name, obj, frozenset(tags), float(position), use_db_name_as_tag
        )
        return entry

    def _accept(
        self, name: str, entry: Any, tracks: Iterable[Any] | None, windows: bool | None
    ) -> Any:
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
        unknown = sorted((query.include | query.require | query.exclude) - known)
        if unknown:
            raise QueryError(
                f"{self.name}: no entry has the tag(s) {unknown}; known: {sorted(known)}"
            )
        if not self.count(query):
            withheld = self.withheld(query)
            hint = "".join(
                f"; {name} is tagged {tag!r}, which runs only when a query names it: add "
                f"{tag!r} to include to opt in"
                for name, tag in sorted(withheld.items())[:3]
            )
            raise QueryError(
                f"{self.name}: the query selects no relation (include={sorted(query.include)}, "
                f"require={sorted(query.require)}, exclude={sorted(query.exclude)}){hint}"
            )
        built = self._build(query, frozenset())
        built.query = query  # what selected it: part of its rewrite-cache key
        return built

    def _build(self, query: Query, within: frozenset[str]) -> Any:
        raise NotImplementedError


class EquilibriumDB(RelationDB):
    """Relations applied together until none applies.

    Parameters
    ----------
    name : str
    **options
        Passed to :class:`~relgraph.rewriting.driver.EquilibriumRewriter`
        (``max_use_ratio``, ``max_passes``, ``on_error``, ``max_answers``).

    Examples
    --------
    >>> import relgraph as rg
    >>> a, b, c = rg.lvars("a b c")
    >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
    >>> db = EquilibriumDB("linalg")
    >>> _ = db.register("dot_distributeo", dot_distributeo, "linalg", "expand", tracks=[rg.dot])
    >>> db.query(include=["expand"])
    EquilibriumRewriter('linalg': dot_distributeo)
    """

    def __init__(self, name: str = "equilibrium", *, opt_in: Iterable[str] = (), **options: Any):
        super().__init__(name, opt_in=opt_in)
        EquilibriumRewriter([], **options)  # validate the options now
        self.options = options

    def _accept(
        self, name: str, entry: Any, tracks: Iterable[Any] | None, windows: bool | None
    ) -> Any:
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

    def rules(self, query: Query, within: frozenset[str] = frozenset()) -> list[Rule]:
        """The relations a query selects, nested databases included."""
        rules: list[Rule] = []
        for e, labels, names in self._visible(query, within):
            if isinstance(e.obj, EquilibriumDB):
                rules.extend(e.obj.rules(query.subquery.get(e.name, query), names))
            elif self._takes(query, e, labels):
                rules.append(e.obj)
        return rules

    def _build(self, query: Query, within: frozenset[str]) -> EquilibriumRewriter:
        rules = self.rules(query, within)
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

    A relation registered here runs as an equilibrium of its own.  One database may
    be registered at several positions (canonicalize again after stabilize); when a
    query leaves out what lies between, it runs once.
    """

    def _accept(
        self, name: str, entry: Any, tracks: Iterable[Any] | None, windows: bool | None
    ) -> Any:
        if isinstance(entry, RelationDB) or hasattr(entry, "apply"):
            return entry
        try:
            rule = as_rule(entry, name=name, tracks=tracks, windows=windows)
            return EquilibriumRewriter([rule], name=name)
        except TypeError as exc:
            raise RegistrationError(f"{self.name}: {name!r}: {exc}") from None

    def _build(self, query: Query, within: frozenset[str]) -> SequenceRewriter:
        steps: list[Any] = []
        last: Any = None
        built: dict[Any, Any] = {}
        for e, labels, names in self._visible(query, within):
            obj = source = e.obj
            if source is last:
                continue  # a database again right after itself: its fixpoint is reached
            if isinstance(obj, RelationDB):
                inner = query.subquery.get(e.name, query)
                if not obj.count(inner, names):
                    continue  # a stage with nothing selected is left out
                # One rewriter per database and query: run again on its own output,
                # the sequence skips it.
                key = (id(source), id(inner))
                obj = built[key] = built.get(key) or obj._build(inner, names)
            elif not self._takes(query, e, labels):
                continue
            steps.append((e.name, obj))
            last = source
        return SequenceRewriter(steps, name=self.name)
