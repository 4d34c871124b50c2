"""Where the engine finds a library of relations without importing one.

``rg.jit``, the command line and the default query of the front end rewrite with a
library's database.  The engine's layers never import a library: a library
registers itself here when it is imported (``relations``, the standard library,
does), and is found through the ``relgraph.libraries`` entry point of its
distribution when nothing has imported it yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import Any

from relgraph.exceptions import QueryError, RegistrationError

__all__ = ["Library", "register_library", "default_library", "ENTRY_POINTS"]

ENTRY_POINTS = "relgraph.libraries"


@dataclass(frozen=True)
class Library:
    """A library of relations: its database and the tags its queries may name.

    Attributes
    ----------
    name : str
        The library's name (its package, for the standard library ``relations``).
    db : Any
        Its database, a :class:`~relgraph.rewriting.db.RelationDB` (``optdb``).
    tags : Mapping[str, str]
        Each tag the database uses, with what it means.
    """

    name: str
    db: Any
    tags: Mapping[str, str]


_LIBRARIES: dict[str, Library] = {}


def register_library(name: str, db: Any, tags: Mapping[str, str]) -> Library:
    """Register ``db`` as the library ``name`` (the first one registered is the default).

    Registering the same database under the same name again is a no-op.

    Examples
    --------
    >>> import relations
    >>> default_library().name
    'relations'
    """
    library = Library(name, db, MappingProxyType(dict(tags)))
    known = _LIBRARIES.get(name)
    if known is not None and known.db is not db:
        raise RegistrationError(f"another library is already registered as {name!r}")
    _LIBRARIES.setdefault(name, library)
    return _LIBRARIES[name]


def default_library() -> Library:
    """The library the front end rewrites with: the first registered, else the first
    one an installed distribution declares (``relations``, when relgraph is installed).

    Raises
    ------
    QueryError
        When no library is registered or installed.
    """
    if not _LIBRARIES:
        for point in sorted(entry_points(group=ENTRY_POINTS), key=lambda p: p.name):
            point.load()  # the library registers itself as it is imported
    if not _LIBRARIES:
        raise QueryError(
            "no library of relations is registered: `import relations` (relgraph's "
            "standard library), or register your own database with register_library"
        )
    return next(iter(_LIBRARIES.values()))
