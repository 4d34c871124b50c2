"""Rewritten programs on disk, so that a new process skips the rewrite.

An entry is kept under a digest of the program before rewriting, the query that
rewrote it and the code of relgraph and its relations; it holds the program before
and after and the rewrite report.  Nothing read back is trusted blindly: an entry
whose program differs from the one asked for, whose results have other types, or
that cannot be read is ignored (and written again).  A cache that cannot be written
means no disk cache, silently: the kernel cache has already warned about it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from relgraph.infer import typeof
from relgraph.kernel_cache import cache_dir

__all__ = ["load", "store", "key"]


@functools.cache
def _code_fingerprint() -> str:
    """A digest of the code that decides what a rewrite gives."""
    digest = hashlib.sha256()
    for package in ("relgraph", "relations"):
        root = Path(__import__(package).__file__).parent
        for path in sorted(root.glob("*.py")):
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def key(program: Any, query: tuple) -> str:
    """The digest an entry for ``program`` rewritten by ``query`` is kept under."""
    blob = pickle.dumps((program, query), protocol=4)
    return hashlib.sha256(blob + _code_fingerprint().encode()).hexdigest()


def _path(digest: str) -> Path:
    return cache_dir().parent / "rewrites" / f"r_{digest[:40]}.pkl"


def load(digest: str, program: Any) -> tuple[Any, Any] | None:
    """``(rewritten, report)`` kept for ``program``, or None."""
    try:
        with open(_path(digest), "rb") as f:
            before, after, report = pickle.load(f)
    except Exception:  # missing, unreadable, or written by other code: not an entry
        return None
    if before != program or not _same_types(before, after):
        return None
    return after, report


def store(digest: str, program: Any, rewritten: Any, report: Any) -> None:
    """Keep an entry (atomically: a reader sees the old file or the new one)."""
    path = _path(digest)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            pickle.dump((program, rewritten, report), f, protocol=4)
        os.replace(tmp, path)
    except OSError:
        return


def _same_types(before: Any, after: Any) -> bool:
    if isinstance(before, (tuple, list)):
        return (
            type(before) is type(after)
            and len(before) == len(after)
            and all(map(_same_types, before, after))
        )
    try:
        return typeof(before) == typeof(after)
    except Exception:
        return False
