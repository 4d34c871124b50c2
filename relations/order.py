"""A total order on terms, the same in every process: the AC normal form's order.

Arguments of ``add`` and ``mul`` are sorted by :func:`arg_key`: constants
first, then symbols by name, then compound terms by Op name and a digest of
their structure.  Like terms sort next to each other: in a sum a term sorts by
what it is a multiple of (``x``, ``2 * x`` and ``-x`` are neighbours), in a
product by what it is a power of (``x`` and ``x ** 2``).  The driver tries
windows of neighbouring arguments, so one-line relations (``x + x -> 2 * x``)
then collect them.

Digests use BLAKE2, not ``hash``: Python's string hashes change per process,
and the normal form must not.

>>> import relgraph as rg
>>> x, y = rg.vector("x"), rg.vector("y")
>>> [rg.pprint(a) for a in sorted([y, 2 * x, 3.0, x], key=lambda a: arg_key(rg.add, a))]
['3.0', 'x', '(2 * x)', 'y']
"""

from __future__ import annotations

import functools
from hashlib import blake2b
from typing import Any

from relgraph.ops import add, mul, neg, pow
from relgraph.term import Constant, Symbol, Term

__all__ = ["term_key", "arg_key", "sorted_args"]

Key = tuple[int, str, bytes]


def term_key(x: Any) -> Key:
    """``(rank, text, digest)``: a deterministic key comparing any two terms."""
    if type(x) is Term:
        return _compound_key(x._tuple[0], x._tuple[1:])
    if type(x) is Symbol:
        return (1, x.name, _digest(str(x.type)))
    if type(x) is Constant:
        return (0, "array", _digest(x.value.dtype.str, x.value.shape, x.value.tobytes()))
    return (0, repr(x), b"")


@functools.lru_cache(maxsize=1 << 16)
def _compound_key(op: Any, args: tuple) -> Key:
    # Cached by (op, args): a term's key is computed once, from its arguments' keys.
    return (2, getattr(op, "name", repr(op)), _digest(op, *(term_key(a) for a in args)))


def _digest(*parts: Any) -> bytes:
    return blake2b(repr(parts).encode(), digest_size=8).digest()


def _base(op: Any, x: Any) -> Key:
    """The key of what ``x`` is a multiple of (in a sum) or a power of (in a product)."""
    if type(x) is Term:
        head, args = x._tuple[0], x._tuple[1:]
        if op is add and head is neg:
            return term_key(args[0])
        if op is add and head is mul and type(args[0]) is not Term and len(args) >= 2:
            rest = args[1:]
            if not isinstance(args[0], (Symbol, Term)):
                return term_key(rest[0]) if len(rest) == 1 else _compound_key(mul, rest)
        if op is mul and head is pow and not isinstance(args[1], (Symbol, Term)):
            return term_key(args[0])
    return term_key(x)


def arg_key(op: Any, x: Any) -> tuple[Key, Key]:
    """Sort key of ``x`` as an argument of ``op``: like terms are neighbours."""
    return (_base(op, x), term_key(x))


def sorted_args(op: Any, args: Any) -> list[Any]:
    """``args`` in the normal form's order for the AC Op ``op``."""
    return sorted(args, key=functools.partial(arg_key, op))
