"""Terms: etuple S-expressions whose heads are Ops.

A program is a :class:`Term`, an :class:`etuples.ExpressionTuple` subclass, so
kanren goals (``eq``, ``heado``, ``conso``, ``mapo``, ``assoc_flatten``) work on
it unchanged.  What the subclass adds is what large terms need:

* the hash is computed once, from the children's cached hashes, so hashing and
  inequality are O(1) and equality of the canonical terms the driver keeps is
  O(arity);
* ``cdr`` of a term is an :class:`Args` view and ``cons`` onto an ``Args`` is a
  new cell, both O(1), so ``mapo`` over n arguments and the reification of its
  answer are O(n) rather than O(n^2) tuple copying;
* ``_unify``/``_reify`` return at once for ground terms instead of walking them
  (:mod:`relgraph.logic.unify_hooks`);
* equality is iterative and compares each pair of nodes once.

The leaves are :class:`~relgraph.terms.leaves.Symbol` (typed inputs),
:class:`~relgraph.terms.leaves.Constant` (wrapped numpy arrays, so they hash) and plain
Python or numpy scalars.  Walking terms is :mod:`relgraph.terms.traverse`, typing them
:mod:`relgraph.terms.infer`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from cons.core import ConsPair
from etuples.core import ExpressionTuple
from unification.variable import Var, _glv

from relgraph.terms.leaves import Constant
from relgraph.terms.operators import OPERATORS, TermOps

__all__ = ["Term", "Args", "memoized", "brief", "negative_zero"]


def _show(x: Any) -> str:
    # The printer (relgraph.terms.printing) registers itself as "pprint".
    show = OPERATORS.get("pprint")
    if show is not None:
        return show(x)
    return ExpressionTuple.__str__(x) if type(x) is Term else repr(x)


def brief(term: Any, limit: int = 160) -> str:
    """``pprint(term)``, cut to ``limit`` characters for error messages.

    Examples
    --------
    >>> import relgraph as rg
    >>> brief(rg.add(*(rg.vector(f"v{i}") for i in range(100))), 20)
    '(v0 + v1 + v2 + v...'
    """
    text = _show(term)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _wrap(x: Any) -> Any:
    return Constant(x) if isinstance(x, np.ndarray) else x


def _atom_ground(x: Any) -> bool:
    """Whether ``x`` is known to contain no logic variable (False if unsure)."""
    kind = type(x)
    if kind is Term or kind is Args:
        return x._ground
    if kind is tuple:  # a parameter: the axes of a reduction, a shape, an index
        return _is_parameter(x)
    verdict = None if _glv else _ATOM_GROUND.get(kind)  # no object made a logic variable
    if verdict is not None:
        return verdict
    if isinstance(x, (Term, Args)):
        return x._ground
    verdict = not (isinstance(x, (Var, ExpressionTuple, list, tuple)) or _is_cons(x))
    if not _glv:  # then the type decides
        _ATOM_GROUND[kind] = verdict
    return verdict


_ATOM_GROUND: dict[type, bool] = {}


def _is_parameter(x: tuple) -> bool:
    """A tuple of ints and None, nested (``((1, None, None), 0)`` for ``x[1:, 0]``)."""
    return all(i is None or type(i) is int or (type(i) is tuple and _is_parameter(i)) for i in x)


def _is_cons(x: Any) -> bool:
    # Not isinstance: cons's metaclass says every non-empty sequence is a ConsPair.
    return issubclass(type(x), ConsPair)


class Term(TermOps, ExpressionTuple):
    """An application ``(op, arg, ...)``: an etuple with a cached hash.

    Terms are built by calling Ops or with Python operators; ``Term(seq)`` builds
    one without type checking (used for patterns with logic variables).  The
    class is final: hot loops test ``type(x) is Term``, which is far cheaper than
    an ``isinstance`` check against an ABC-registered ``Sequence``.

    Examples
    --------
    >>> from etuples import etuple
    >>> import relgraph as rg
    >>> x, y = rg.vector("x"), rg.vector("y")
    >>> x + y == etuple(rg.add, x, y)
    True
    >>> int(etuple(rg.add, 1, 2).evaled_obj)
    3
    """

    __slots__ = ("_hash", "_ground", "_type", "_memo")

    def __new__(cls, seq=(), **kwargs):
        return object.__new__(cls)

    def __init__(self, seq=()):
        items = tuple(_wrap(a) for a in seq)
        if not items:
            raise ValueError("a Term needs at least a head")
        self._tuple = items
        self._evaled_obj = ExpressionTuple.null
        self._parent = None
        self._hash = hash(items)
        self._ground = all(_atom_ground(a) for a in items)
        self._type = None
        self._memo: dict | None = None

    @classmethod
    def of_ground(cls, items: tuple) -> Term:
        """``Term(items)`` for items known to be ground and wrapped (the e-graph's
        views): no checks, so it is cheap."""
        self = object.__new__(cls)
        self._tuple = items
        self._evaled_obj = ExpressionTuple.null
        self._parent = None
        self._hash = hash(items)
        self._ground = True
        self._type = None
        self._memo = None
        return self

    @property
    def op(self) -> Any:
        """The head of the term."""
        return self._tuple[0]

    @property
    def args(self) -> tuple:
        """The arguments of the term."""
        return self._tuple[1:]

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        if self is other:
            return True
        if type(other) is Term:
            if self._hash != other._hash:
                return False
            a, b = self._tuple, other._tuple  # often the same children: no walk
            if len(a) == len(b) and all(x is y for x, y in zip(a, b)):
                return True
            return _structurally_equal(self, other)
        if isinstance(other, (ExpressionTuple, tuple)):
            return _structurally_equal(self, other)
        if isinstance(other, (int, float, complex, np.generic, np.ndarray, TermOps)):
            return False  # not NotImplemented: numpy would compare elementwise
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __getitem__(self, key):
        # A term is an etuple: an int or a slice reads its items, as kanren does.
        # Other keys (tuples, None, ...) index the array it computes.
        if isinstance(key, slice):
            return Args(self._tuple[key])
        if isinstance(key, (int, np.integer)):
            return self._tuple[key]
        return TermOps.__getitem__(self, key)

    def __str__(self):
        return _show(self)

    def __repr__(self):
        return f"Term({self})"

    def __reduce__(self):
        # A ground term's items are wrapped and ground already: rebuilt without checks.
        return (Term.of_ground if self._ground else Term, (self._tuple,))

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def memoized(fn: Callable[[Term], Any]) -> Callable[[Term], Any]:
    """``fn(term)`` computed once per term object and kept on it (terms are immutable).

    Unlike a cache keyed by the term, a hit costs no hashing or equality test.

    Examples
    --------
    >>> import relgraph as rg
    >>> calls = []
    >>> @memoized
    ... def size(t):
    ...     calls.append(t)
    ...     return len(t)
    >>> t = rg.vector("x") + 1
    >>> size(t), size(t), len(calls)
    (3, 3, 1)
    """

    @functools.wraps(fn)
    def memoized_fn(term: Term) -> Any:
        memo = term._memo
        if memo is None:
            memo = term._memo = {}
        try:
            return memo[fn]
        except KeyError:
            value = memo[fn] = fn(term)
            return value

    return memoized_fn


def _structurally_equal(a: Any, b: Any) -> bool:
    """Iterative structural equality; leaves must match in type, not just ``==``
    (and in sign: -0.0 is not 0.0 here).

    Each pair of nodes is compared once, so two DAGs with shared subterms compare
    in time linear in their DAGs, not in their (maybe exponential) trees.
    """
    stack = [(a, b)]
    compared: set[tuple[int, int]] = set()  # ids stay valid: a and b hold every node
    while stack:
        u, v = stack.pop()
        if u is v:
            continue
        if type(u) is Term:
            pair = (id(u), id(v))
            if pair in compared:
                continue
            compared.add(pair)
        u_seq = isinstance(u, (ExpressionTuple, tuple))
        v_seq = isinstance(v, (ExpressionTuple, tuple))
        if u_seq or v_seq:
            if not (u_seq and v_seq) or len(u) != len(v):
                return False
            if type(u) is Term and type(v) is Term and u._hash != v._hash:
                return False
            stack.extend(zip(u, v))
        elif type(u) is not type(v) or not bool(u == v) or negative_zero(u) != negative_zero(v):
            return False
    return True


def negative_zero(x: Any) -> bool:
    """Whether ``x`` is a float -0.0.  Python has ``0.0 == -0.0``, but ``x / 0.0`` and
    ``x / -0.0`` are inf and -inf: terms, and keys made of leaves, tell them apart.

    >>> negative_zero(-0.0), negative_zero(0.0), negative_zero(np.float32(-0.0))
    (True, False, True)
    """
    return isinstance(x, (float, np.floating)) and x == 0 and bool(np.signbit(x))


_MOD = (1 << 61) - 1  # polynomial hashing of argument lists, modulo a Mersenne prime
_BASE = 1_000_003


def _suffix_hashes(base: tuple) -> list[int]:
    """``tab[i]`` is the polynomial hash of ``base[i:]``; ``tab[len(base)] == 0``."""
    tab = [0] * (len(base) + 1)
    for i in range(len(base) - 1, -1, -1):
        tab[i] = (hash(base[i]) + _BASE * tab[i + 1]) % _MOD
    return tab


class Args(ExpressionTuple):
    """The argument list of a term, as ``cdr`` sees it.

    ``cdr`` of an ``Args`` is an O(1) view and ``cons`` onto one is an O(1) cell;
    the flat tuple is built once, when something asks for it.  kanren hashes the
    values it walks, so the hash is O(1) too: a polynomial hash shared by the
    views of one tuple.  It is consistent among ``Args`` but not with plain
    tuples, so convert with :func:`as_term` before mixing them as dict keys.
    In every other respect an etuple: ``(Args((add,)) + Args((x, y))).evaled_obj``
    is ``x + y``.
    """

    __slots__ = ("_first", "_rest", "_base", "_off", "_n", "_flat", "_gnd", "_h", "_tab")
    # ExpressionTuple's own fields (its slots), which mypy does not see as slots.
    _evaled_obj: Any
    _parent: Any
    _first: Any
    _rest: Any  # an Args, None in a view
    _base: tuple | None
    _flat: tuple | None

    def __new__(cls, seq=(), **kwargs):
        return object.__new__(cls)

    def __init__(self, seq=()):
        base = tuple(_wrap(a) for a in seq) if seq is not None else ()
        self._init_view(base, 0, None, None)

    def _init_view(self, base: tuple, off: int, ground: bool | None, tab: list | None) -> None:
        self._evaled_obj = ExpressionTuple.null
        self._parent = None
        self._first = None
        self._rest = None
        self._base = base
        self._off = off
        self._n = len(base) - off
        self._flat = base if off == 0 else None
        self._gnd = ground
        self._h = None
        self._tab = tab

    @classmethod
    def view(
        cls, base: tuple, off: int, ground: bool | None = None, tab: list | None = None
    ) -> Args:
        """The arguments ``base[off:]`` without copying them."""
        res = object.__new__(cls)
        res._init_view(base, off, ground, tab)
        return res

    @classmethod
    def cell(cls, first: Any, rest: Args) -> Args:
        """``cons(first, rest)`` in O(1)."""
        res = object.__new__(cls)
        res._evaled_obj = ExpressionTuple.null
        res._parent = None
        res._first = first
        res._rest = rest
        res._base = None
        res._off = 0
        res._n = rest._n + 1
        res._flat = None
        rest_ground = rest._gnd
        res._gnd = None if rest_ground is None else (rest_ground and _atom_ground(first))
        res._h = None
        res._tab = None
        return res

    @property
    def _tuple(self) -> tuple:
        if self._flat is None:
            firsts: list[Any] = []
            node = self
            while node._base is None:
                firsts.append(node._first)
                node = node._rest
            self._flat = tuple(firsts) + node._base[node._off :]
        return self._flat

    @property
    def _ground(self) -> bool:
        if self._gnd is None:
            self._gnd = all(_atom_ground(a) for a in self._tuple)
        return self._gnd

    def __len__(self):
        return self._n

    def __iter__(self):
        return iter(self._tuple)

    def __getitem__(self, key):
        if key == 0 and self._base is None:
            return self._first
        res = self._tuple[key]
        return Args(res) if isinstance(key, slice) else res

    def __add__(self, other):
        if isinstance(other, Args):
            if self._n <= 8:
                res = other
                for item in reversed(self._tuple):
                    res = Args.cell(item, res)
                return res
            return Args(self._tuple + other._tuple)
        if isinstance(other, (tuple, ExpressionTuple)):
            return Args(self._tuple + tuple(other))
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, (tuple, list)):
            return Args(tuple(other) + self._tuple)
        return NotImplemented

    def __hash__(self):
        if self._h is None:
            if self._base is None:
                self._h = (hash(self._first) + _BASE * hash(self._rest)) % _MOD
            else:
                if self._tab is None:
                    self._tab = _suffix_hashes(self._base)
                self._h = self._tab[self._off]
        return self._h

    def __eq__(self, other):
        if self is other:
            return True
        if isinstance(other, Args) and hash(self) != hash(other):
            return False
        if isinstance(other, (ExpressionTuple, tuple)):
            return _structurally_equal(self, other)
        if isinstance(other, (int, float, complex, np.generic, np.ndarray, TermOps)):
            return False  # not NotImplemented: numpy would compare elementwise
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __repr__(self):
        return f"Args({', '.join(map(str, self._tuple))})"

    __str__ = __repr__
