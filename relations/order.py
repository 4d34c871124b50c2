"""A total order on terms, the same in every process: the AC normal form's order.

Arguments of ``add`` and ``mul`` are sorted by :func:`arg_key`: constants
first, then symbols by name, then compound terms by Op name and then their
arguments, recursively.  Like terms sort next to each other: in a sum a term
sorts by what it is a multiple of (``x``, ``2 * x`` and ``-x`` are neighbours),
in a product by what it is a power of (``x`` and ``x ** 2``), so a collected
sum or product reads in the same order as the input.

A relation that takes a whole sum or product (folding its constants, merging its
exponentials) takes the arguments :func:`combinable` gives it: in floating point the
leading ones only, since every other grouping rounds and overflows differently.

Keys are built from names and values only, never from ``hash`` (which changes
per process for strings), and cached on each term.

>>> import relgraph as rg
>>> x, y = rg.vector("x"), rg.vector("y")
>>> [rg.pprint(a) for a in sorted_args(rg.add, [y, 2 * x, 3.0, x * y, x])]
['3.0', 'x', '(2 * x)', 'y', '(x * y)']
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from hashlib import blake2b
from typing import Any

from relgraph.ops import add, mul, neg, pow
from relgraph.rewriting.promotion import regroups
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term, memoized

__all__ = ["term_key", "arg_key", "sorted_args", "combinable"]

Key = tuple


def term_key(x: Any) -> Key:
    """``(rank, name, detail)``: a deterministic key comparing any two terms."""
    if type(x) is Term:
        return _term_key(x)
    if type(x) is Symbol:
        return _symbol_key(x)
    if type(x) is Constant:
        digest = blake2b(x.value.tobytes(), digest_size=8).hexdigest()
        return (0, "array", f"{x.value.dtype.str}{x.value.shape}{digest}")
    return (0, repr(x), "")


@functools.lru_cache(maxsize=1 << 12)
def _symbol_key(x: Symbol) -> Key:
    return (1, x.name, str(x.type))


@memoized
def _term_key(t: Term) -> Key:
    return _compound_key(t._tuple[0], t._tuple[1:])


def _compound_key(op: Any, args: tuple) -> Key:
    return (2, getattr(op, "name", repr(op)), tuple(term_key(a) for a in args))


def _is_coefficient(x: Any) -> bool:
    return not isinstance(x, (Symbol, Term))


def _base(op: Any, x: Any) -> Key:
    """The key of what ``x`` is a multiple of (in a sum) or a power of (in a product)."""
    if type(x) is Term:
        head, args = x._tuple[0], x._tuple[1:]
        if op is add and head is neg:
            return term_key(args[0])
        if op is add and head is mul and _is_coefficient(args[0]):
            rest = args[1:]
            return term_key(rest[0]) if len(rest) == 1 else _compound_key(mul, rest)
        if op is mul and head is pow and _is_coefficient(args[1]):
            return term_key(args[0])
    return term_key(x)


def arg_key(op: Any, x: Any) -> tuple[Key, Key]:
    """Sort key of ``x`` as an argument of ``op``: like terms are neighbours."""
    if type(x) is Term and op is add:
        return _sum_key(x)
    if type(x) is Term and op is mul:
        return _product_key(x)
    return (_base(op, x), term_key(x))


@memoized
def _sum_key(t: Term) -> tuple[Key, Key]:
    return (_base(add, t), _term_key(t))


@memoized
def _product_key(t: Term) -> tuple[Key, Key]:
    return (_base(mul, t), _term_key(t))


def sorted_args(op: Any, args: Any) -> list[Any]:
    """``args`` in the normal form's order for the AC Op ``op``."""
    return sorted(args, key=functools.partial(arg_key, op))


def combinable(t: Term, wanted: Callable[[Any], bool]) -> tuple[list, list]:
    """The arguments of the sum or product ``t`` that a relation may combine into one
    term (put first), and the others in their order: every ``wanted`` argument in
    integer arithmetic and logic, where any grouping has one value; in floating point
    only the leading run of them, which is a part of the left fold
    (``a * exp(x) * exp(y)`` is not ``a * exp(x + y)`` at ``a = 1e-300, x = y = 400``).

    >>> import relgraph as rg
    >>> x, i = rg.vector("x"), rg.vector("i", "int64")
    >>> number = lambda a: isinstance(a, int)
    >>> combinable(rg.add(2, i, 3), number), combinable(rg.add(2, x, 3), number)
    (([2, 3], [i]), ([2], [x, 3]))
    """
    args = t._tuple[1:]
    if regroups(t):
        return [a for a in args if wanted(a)], [a for a in args if not wanted(a)]
    n = next((k for k, a in enumerate(args) if not wanted(a)), len(args))
    return list(args[:n]), list(args[n:])
