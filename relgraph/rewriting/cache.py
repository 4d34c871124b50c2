"""Rewritten programs on disk, so that a process (or a worker) skips the rewrite.

An entry is kept under a digest of the program's canonical form (its distinct nodes
in order, each naming its Op, parameters and children: two equal programs built
apart have one form) and of the query's content: the rewriters, the names and
settings of their relations and a fingerprint of their code (the source file a
relation is defined in, or its bytecode when it has none, what its closures hold,
and relgraph's and the relations' own code).  Entries live under
``$RELGRAPH_CACHE_DIR/rewrites`` (default ``~/.cache/relgraph``), one file each,
written atomically, so processes on one machine share them safely.

Nothing read back is trusted (see :mod:`relgraph.cache_files`): an entry must carry
this user's MAC and name the digest asked for and this format, and it is data, never
a pickle; anything else (a planted, truncated or corrupt file, another version's
entry) is ignored and written again.  A cache that cannot be written means no disk
cache, with one warning.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

from relgraph.cache_files import cache_root, read_signed, refusal_of, warn_once, write_signed
from relgraph.rewriting import term_json
from relgraph.rewriting.driver import EquilibriumRewriter
from relgraph.rewriting.sequence import SequenceRewriter
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term
from relgraph.terms.traverse import subterms

__all__ = ["load", "store", "key", "canonical", "fingerprint", "report_of"]

_FORMAT = b"relgraph-rewrite-3"


@functools.cache
def _code_fingerprint() -> str:
    """A digest of the code that decides what a rewrite gives."""
    digest = hashlib.sha256()
    for package in ("relgraph", "relations"):
        root = Path(str(__import__(package).__file__)).parent
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


def key(program: Any, query: str) -> str:
    """The digest an entry for ``program`` is kept under; ``query`` is the rewriter's
    :func:`fingerprint`."""
    blob = _FORMAT + canonical(program) + query.encode() + _code_fingerprint().encode()
    return hashlib.sha256(blob).hexdigest()


def _path(digest: str) -> Path:
    return cache_root() / "rewrites" / digest[:2] / digest[2:40]


def load(digest: str) -> tuple[Any, bytes] | None:
    """``(rewritten, report)`` kept under ``digest``, or None; the report stays as
    data until :func:`report_of` reads it (a batch rarely looks at them all).

    The file must carry this user's MAC (:mod:`relgraph.cache_files`), name this
    digest and this format: anything else is not an entry.  Nothing read is
    unpickled: the program is rebuilt from data (:mod:`relgraph.rewriting.term_json`).
    """
    if _refused():
        return None
    signed = read_signed(_path(digest))
    if signed is None:
        return None
    try:
        form, kept, program, report = signed.split(b"\n", 3)
        if form != _FORMAT or kept != digest.encode():
            return None
        return term_json.loads(program), report
    except ValueError:  # another version's entry, or an Op this process lacks
        return None


def _refused() -> bool:
    """Whether the cache directory is not this user's alone (then it is not used)."""
    problem = refusal_of("rewrites")
    if problem is not None:
        warn_once("rewrites", f"the rewrite cache {cache_root() / 'rewrites'} is not used "
                  f"({problem})")  # fmt: skip
    return problem is not None


def report_of(blob: bytes) -> Any:
    """The rewrite report of an entry (None if it cannot be read)."""
    try:
        return term_json.loads(blob)
    except ValueError:
        return None


def store(digest: str, rewritten: Any, report: Any) -> None:
    """Keep an entry (atomically: a reader sees the old file or the new one).  A
    program with no data form (an Op defined outside a module) is not kept."""
    path = _path(digest)
    if _refused():
        return
    try:
        data = [_FORMAT, digest.encode(), term_json.dumps(rewritten), term_json.dumps(report)]
        os.makedirs(path.parent, exist_ok=True)
    except term_json.Unstorable:
        return
    except OSError as exc:
        warn_once("rewrites", f"the rewrite cache {path.parent} cannot be written ({exc})")
        return
    write_signed(path, b"\n".join(data))


# --- the canonical form of a program ---------------------------------------------------


def canonical(program: Any) -> bytes:
    """The program as bytes that equal programs share, however they were built.

    Examples
    --------
    >>> import relgraph as rg
    >>> x = rg.vector("x")
    >>> canonical(rg.exp(x) + rg.exp(x)) == canonical(rg.add(rg.exp(x), rg.exp(x)))
    True
    >>> canonical(rg.exp(x)) == canonical(rg.exp(rg.vector("x", "float32")))
    False
    """
    ids: dict[Term, int] = {}
    rows: list[tuple] = []  # one per distinct node: its head, then its arguments

    def walk(p: Any) -> Any:
        if isinstance(p, (tuple, list)):
            return (type(p).__name__, tuple(walk(q) for q in p))
        if type(p) is not Term:
            return _leaf(p)
        for node in subterms(p):
            if node not in ids:
                ids[node] = len(rows)
                items = node._tuple
                args = [ids[a] if type(a) is Term else _leaf(a) for a in items[1:]]
                rows.append((_head(items[0]), *args))
        return ids[p]

    top = walk(program)
    return repr((rows, top)).encode()  # a node is its row's number, an int


_HEADS: dict[Any, str] = {}
_SYMBOLS: dict[Symbol, str] = {}


def _head(op: Any) -> str:
    head = _HEADS.get(op)
    if head is None:
        head = _HEADS[op] = f"{type(op).__module__}.{type(op).__qualname__}:{op.name}"
    return head


def _leaf(x: Any) -> Any:
    """A leaf as something whose ``repr`` tells it apart (never a bare int)."""
    if type(x) is float or isinstance(x, np.generic):
        return x  # repr tells 1.0, np.float32(1.0) and np.int64(1) apart
    if isinstance(x, Symbol):
        text = _SYMBOLS.get(x)
        if text is None:
            if len(_SYMBOLS) > 100_000:
                _SYMBOLS.clear()
            text = _SYMBOLS[x] = f"S({x.name!r},{x.type.dtype},{x.type.shape})"
        return text
    if isinstance(x, Constant):
        v = np.ascontiguousarray(x.value)
        return f"C({v.dtype},{v.shape},{hashlib.sha256(v.tobytes()).hexdigest()})"
    return (type(x).__name__, x)


# --- the content of a query ------------------------------------------------------------


def fingerprint(rewriter: Any) -> str | None:
    """A digest of what a rewriter does: its kind and settings, its relations'
    names and code, the query that selected them; None for a rewriter of a kind
    this does not know (it is then not cached).

    Examples
    --------
    >>> from relations import optdb
    >>> fingerprint(optdb.query(include=["fast_run"])) == fingerprint(
    ...     optdb.query(include=["fast_run"]))
    True
    >>> fingerprint(optdb.query(include=["fast_run"])) == fingerprint(
    ...     optdb.query(include=["canonicalize"]))
    False
    """
    digest = hashlib.sha256()
    try:
        _feed_rewriter(digest, rewriter)
    except _Unknown:
        return None
    return digest.hexdigest()


class _Unknown(Exception):
    pass


def _feed_rewriter(digest: Any, rewriter: Any) -> None:

    query = getattr(rewriter, "query", None)
    digest.update(f"{type(rewriter).__qualname__}:{getattr(rewriter, 'name', '')}".encode())
    if query is not None:
        tags = (sorted(query.include), sorted(query.require), sorted(query.exclude))
        digest.update(repr(tags).encode())
    if isinstance(rewriter, SequenceRewriter):
        for name, step in rewriter.steps:
            digest.update(f"step:{name}".encode())
            _feed_rewriter(digest, step)
    elif isinstance(rewriter, EquilibriumRewriter):
        settings = (rewriter.max_use_ratio, rewriter.max_passes, rewriter.max_answers)
        digest.update(repr(settings).encode())
        for rule in rewriter.rules:
            tracks = sorted(op.name for op in rule.tracks) if rule.tracks else None
            digest.update(f"rule:{rule.name}:{tracks}:{rule.windows}".encode())
            _feed(digest, rule.relation, set())
    else:
        raise _Unknown(rewriter)


def _feed(digest: Any, obj: Any, seen: set[int]) -> None:
    """Feed the code and data that decide what ``obj`` (a relation) does."""
    if id(obj) in seen:
        digest.update(b"<seen>")
        return
    seen.add(id(obj))
    if isinstance(obj, types.FunctionType):
        code = obj.__code__
        digest.update(obj.__qualname__.encode() + _code_bytes(code))
        digest.update(_module_digest(getattr(obj, "__module__", None)))
        for value in (*(c.cell_contents for c in obj.__closure__ or ()), obj.__defaults__):
            _feed(digest, value, seen)
        for name in sorted(_global_names(code)):  # the settings and helpers it reads
            if name in obj.__globals__:
                digest.update(f"global:{name}".encode())
                _feed_global(digest, obj.__globals__[name], seen)
        for attr in ("__wrapped__", "directions"):
            if hasattr(obj, attr):
                _feed(digest, getattr(obj, attr), seen)
    elif isinstance(obj, functools.partial):
        for part in (obj.func, obj.args, tuple(sorted(obj.keywords.items()))):
            _feed(digest, part, seen)
    elif isinstance(obj, (tuple, list, frozenset, set)):
        items = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj
        digest.update(f"{type(obj).__name__}{len(items)}".encode())
        for item in items:
            _feed(digest, item, seen)
    elif isinstance(obj, dict):
        digest.update(f"dict{len(obj)}".encode())
        for k, v in sorted(obj.items(), key=lambda item: repr(item[0])):
            _feed(digest, k, seen)
            _feed(digest, v, seen)
    elif type(obj) is Term:
        digest.update(canonical(obj))
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):  # a Rule
        digest.update(type(obj).__qualname__.encode())
        for f in dataclasses.fields(obj):
            _feed(digest, getattr(obj, f.name), seen)
    elif hasattr(obj, "lhs") and hasattr(obj, "conditions"):  # a pattern rule
        digest.update(f"rule:{obj.lhs!r}->{obj.rhs!r}:{obj.directions}".encode())
        for condition in obj.conditions:
            _feed(digest, condition.source, seen)
    elif isinstance(obj, (str, bytes, int, float, complex, bool, type(None), Symbol)):
        digest.update(repr(obj).encode())
    elif isinstance(obj, types.BuiltinFunctionType) or hasattr(obj, "__module__"):
        digest.update(f"{type(obj).__module__}.{type(obj).__qualname__}:{obj!r}".encode())
    else:
        raise _Unknown(obj)


# Libraries whose code the key covers by their version, not by reading it.
_LIBRARIES = {"relgraph", "relations", "kanren", "unification", "etuples", "cons", "numpy",
              "multipledispatch", "toolz", "builtins"}  # fmt: skip


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _feed_global(digest: Any, value: Any, seen: set[int]) -> None:
    """A global a relation reads: a module by its file, a helper by its code, a
    setting by its value (an array by its bytes)."""
    module = getattr(value, "__module__", None) or getattr(value, "__name__", "")
    library = str(module).partition(".")[0] in _LIBRARIES
    if isinstance(value, types.ModuleType):
        version = getattr(sys.modules.get(value.__name__.partition(".")[0]), "__version__", "")
        digest.update(f"module:{value.__name__}:{version}".encode())
        if not library:
            digest.update(_module_digest(value.__name__))
    elif isinstance(value, np.ndarray):
        digest.update(f"{value.dtype.str}{value.shape}".encode())
        digest.update(hashlib.sha256(np.ascontiguousarray(value).tobytes()).digest())
    elif isinstance(value, (types.FunctionType, functools.partial)) and library:
        digest.update(f"{module}.{getattr(value, '__qualname__', value)!r}".encode())
    elif isinstance(value, type):
        digest.update(f"class:{value.__module__}.{value.__qualname__}".encode())
    else:
        _feed(digest, value, seen)


def _code_bytes(code: types.CodeType) -> bytes:
    """A function's bytecode, names and constants (nested functions too): what it
    does, stable across runs (unlike ``marshal``, whose output follows refcounts)."""
    parts = [code.co_code, repr((code.co_names, code.co_varnames, code.co_freevars)).encode()]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            parts.append(_code_bytes(const))
        elif isinstance(const, frozenset):
            parts.append(repr(sorted(const, key=repr)).encode())
        else:
            parts.append(repr(const).encode())
    return b"\x00".join(parts)


def _module_digest(module: str | None) -> bytes:
    """The digest of the source file of a function's module (the helpers beside it).

    Found through the module, not the code's file name: a function pickled by value
    (a closure sent to a worker) keeps its module but not always its file name.
    Nothing for ``__main__`` or a module without a file (a prompt, a notebook cell),
    whose bytecode is all there is, and which differ from process to process.
    """
    mod = sys.modules.get(module) if module and module != "__main__" else None
    filename = getattr(mod, "__file__", None)
    if not filename:
        return b""
    try:
        stat = os.stat(filename)
    except OSError:
        return b""
    return _read_digest(filename, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _read_digest(filename: str, mtime: int, size: int) -> bytes:
    return hashlib.sha256(Path(filename).read_bytes()).digest()
