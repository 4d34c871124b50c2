"""Terms: etuple S-expressions whose heads are Ops, and their leaves.

A program is a :class:`Term`, an :class:`etuples.ExpressionTuple` subclass, so
kanren goals (``eq``, ``heado``, ``conso``, ``mapo``, ``assoc_flatten``) work on
it unchanged.  What the subclass adds is what large terms need:

* the hash is computed once, from the children's cached hashes, so hashing and
  inequality are O(1) and equality of the canonical terms the driver keeps is
  O(arity);
* ``cdr`` of a term is an :class:`Args` view and ``cons`` onto an ``Args`` is a
  new cell, both O(1), so ``mapo`` over n arguments and the reification of its
  answer are O(n) rather than O(n^2) tuple copying;
* ``_unify``/``_reify`` return at once for ground terms instead of walking them;
* every traversal here is iterative: depth 100,000 is fine.

The leaves are :class:`Symbol` (typed inputs), :class:`Constant` (wrapped numpy
arrays, so they hash) and plain Python or numpy scalars.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any

import numpy as np
from cons.core import ConsError, ConsPair, _car, _cdr, car, cdr
from etuples.core import ExpressionTuple
from unification.core import _reify, _unify, construction_sentinel, unify
from unification.variable import Var

from relgraph.exceptions import TypeCheckError
from relgraph.state import State
from relgraph.types import TensorType

_default_unify = _unify.dispatch(object, object, dict)
if _unify.dispatch(ExpressionTuple, ExpressionTuple, dict) is _default_unify:
    # etuples skips registering its hooks, silently, when `packaging` is missing.
    raise ImportError(
        "etuples did not register its unification hooks, so no relation could match a "
        "term; install the 'packaging' package (pip install packaging)"
    )

__all__ = [
    "Term",
    "Args",
    "Symbol",
    "Constant",
    "scalar",
    "vector",
    "matrix",
    "tensor",
    "as_term",
    "checked_term",
    "typeof",
    "subterms",
    "substitute",
    "count_nodes",
    "memoized",
]


class TermOps:
    """Python operators that build terms: ``A @ (x + y)``, ``2.0 * x``, ``A.T``."""

    __slots__ = ()
    # numpy defers to these operators (``np.ones(3) * x`` is ``x.__rmul__``) instead of
    # treating a term as an object to compute with elementwise.
    __array_ufunc__ = None

    def __add__(self, other):
        return _ops().add(self, other)

    def __radd__(self, other):
        return _ops().add(other, self)

    def __sub__(self, other):
        return _ops().sub(self, other)

    def __rsub__(self, other):
        return _ops().sub(other, self)

    def __mul__(self, other):
        return _ops().mul(self, other)

    def __rmul__(self, other):
        return _ops().mul(other, self)

    def __truediv__(self, other):
        return _ops().true_div(self, other)

    def __rtruediv__(self, other):
        return _ops().true_div(other, self)

    def __pow__(self, other):
        return _ops().pow(self, other)

    def __rpow__(self, other):
        return _ops().pow(other, self)

    def __matmul__(self, other):
        return _ops().dot(self, other)

    def __rmatmul__(self, other):
        return _ops().dot(other, self)

    def __neg__(self):
        return _ops().neg(self)

    def __abs__(self):
        return _ops().abs(self)

    @property
    def T(self):
        """The transpose, ``transpose(self)``."""
        return _ops().transpose(self)


def _ops():
    # The operators need the Op instances, which need Term: resolve at call time.
    from relgraph import ops

    return ops


class Symbol(TermOps):
    """A typed input of a program; compares and hashes by (name, type).

    Examples
    --------
    >>> from relgraph import vector
    >>> vector("x") == vector("x"), vector("x") == vector("x", dtype="float32")
    (True, False)
    """

    __slots__ = ("name", "type", "_hash")

    def __init__(self, name: str, type: TensorType):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"symbol name must be a Python identifier, got {name!r}")
        if not isinstance(type, TensorType):
            raise TypeError(f"symbol type must be a TensorType, got {type!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "_hash", hash(("Symbol", name, type)))

    def __setattr__(self, key, value):
        raise AttributeError("Symbol is immutable")

    def __eq__(self, other):
        return self is other or (
            type(other) is Symbol and self.name == other.name and self.type == other.type
        )

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return self.name

    def __reduce__(self):
        return (Symbol, (self.name, self.type))


class Constant(TermOps):
    """A numpy array inside a term, frozen and hashed by dtype, shape and bytes.

    Examples
    --------
    >>> import numpy as np
    >>> Constant(np.arange(3)) == Constant(np.arange(3))
    True
    """

    __slots__ = ("value", "type", "_hash")

    def __init__(self, value: Any):
        arr = np.array(value, copy=True)
        arr.flags.writeable = False
        object.__setattr__(self, "value", arr)
        object.__setattr__(self, "type", TensorType(arr.dtype, arr.ndim, arr.shape))
        object.__setattr__(self, "_hash", hash((arr.dtype.str, arr.shape, arr.tobytes())))

    def __setattr__(self, key, value):
        raise AttributeError("Constant is immutable")

    def __eq__(self, other):
        return self is other or (
            type(other) is Constant
            and self._hash == other._hash
            and self.type == other.type
            and self.value.tobytes() == other.value.tobytes()
        )

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return np.array2string(self.value, threshold=6, separator=", ")

    def __reduce__(self):
        return (Constant, (np.array(self.value),))


def _wrap(x: Any) -> Any:
    return Constant(x) if isinstance(x, np.ndarray) else x


def _atom_ground(x: Any) -> bool:
    """Whether ``x`` is known to contain no logic variable (False if unsure)."""
    if isinstance(x, (Term, Args)):
        return x._ground
    if isinstance(x, (Var, ExpressionTuple, list, tuple)) or _is_cons(x):
        return False
    return True


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
            return self._hash == other._hash and _structurally_equal(self, other)
        if isinstance(other, (ExpressionTuple, tuple)):
            return _structurally_equal(self, other)
        if isinstance(other, (int, float, complex, np.generic, np.ndarray, TermOps)):
            return False  # not NotImplemented: numpy would compare elementwise
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __getitem__(self, key):
        if isinstance(key, slice):
            return Args(self._tuple[key])
        return self._tuple[key]

    def __str__(self):
        from relgraph.printing import pprint

        return pprint(self)

    def __repr__(self):
        return f"Term({self})"

    def __reduce__(self):
        return (Term, (self._tuple,))

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def _repr_html_(self) -> str:
        from relgraph.display import term_html

        return term_html(self)

    def _repr_svg_(self) -> str | None:
        from relgraph.display import svg, term_graph

        return svg(term_graph(self))


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
    """Iterative structural equality; leaves must match in type, not just ``==``.

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
        elif type(u) is not type(v) or not bool(u == v):
            return False
    return True


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
            firsts, node = [], self
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


# --- the cons/unification hooks, next to the types they extend -------------------


def _car_Term(z: Term) -> Any:
    return z._tuple[0]


def _cdr_Term(z: Term) -> Args:
    return Args.view(z._tuple, 1, z._ground)


def _car_Args(z: Args) -> Any:
    if z._n == 0:
        raise ConsError("Not a cons pair")
    return z._first if z._base is None else z._base[z._off]


def _cdr_Args(z: Args) -> Args:
    if z._n == 0:
        raise ConsError("Not a cons pair")
    if z._base is None:
        return z._rest
    if z._tab is None:
        z._tab = _suffix_hashes(z._base)  # shared by every later view of this tuple
    return Args.view(z._base, z._off + 1, z._gnd, z._tab)


_car.add((Term,), _car_Term)
_cdr.add((Term,), _cdr_Term)
_car.add((Args,), _car_Args)
_cdr.add((Args,), _cdr_Args)


def _unify_ground_fast(u, v, s):
    # Ground on both sides: unification is equality, which the cached hashes make
    # O(1) on mismatch.  Otherwise unify the flat tuples as etuples does.
    if u._ground and v._ground:
        return s if u == v else False
    return _unify(u._tuple, v._tuple, s)


for _types in ((Term, Term), (Args, Args), (Term, Args), (Args, Term)):
    _unify.add((*_types, Mapping), _unify_ground_fast)


def _unify_cons_seq(u, v, s):
    # cons's _unify_Cons as a function (car, then cdr): our car/cdr are O(1)
    # and never consume an iterator, so no tee and no generator are needed.
    try:
        s = unify(car(u), car(v), s)
        return False if s is False else _unify(cdr(u), cdr(v), s)
    except ConsError:
        return False


def _unify_never(u, v, s):
    return False


def _unify_items(u, v, s):
    # A Python list of arguments (built by a relation) against a term's Args.
    u, v = tuple(u), tuple(v)
    return _unify(u, v, s) if len(u) == len(v) else False


for _list in (list, tuple):
    _unify.add((_list, Args, Mapping), _unify_items)
    _unify.add((Args, _list, Mapping), _unify_items)


for _seq in (Term, Args):
    _unify.add((ConsPair, _seq, Mapping), _unify_cons_seq)
    _unify.add((_seq, ConsPair, Mapping), _unify_cons_seq)
# A numpy scalar is never an expression; unification's fallback ``u == v`` would
# compare it with the expression's items elementwise.  For etuples and cons lists
# (other libraries' types) only in relgraph's own searches, whose state is a State.
_NEVER = [(Term, Mapping), (Args, Mapping), (Term, State), (Args, State)]
for _seq, _state in [*_NEVER, (ExpressionTuple, State), (ConsPair, State)]:
    _unify.add((np.generic, _seq, _state), _unify_never)
    _unify.add((_seq, np.generic, _state), _unify_never)


def _reify_Term(u: Term, s: Mapping):
    if u._ground:
        return u
    return _reify_items(u, s, Term)


def _reify_Args(u: Args, s: Mapping):
    if u._ground:
        return u
    return _reify_items(u, s, Args)


def _reify_items(u, s, ctor):
    res = []
    for item in u._tuple:
        r = _reify(item, s)
        if isinstance(r, Generator):
            r = yield r
        res.append(r)
    yield construction_sentinel
    yield ctor(res)


_reify.add((Term, Mapping), _reify_Term)
_reify.add((Args, Mapping), _reify_Args)


# --- symbols ---------------------------------------------------------------------


def tensor(
    name: str, dtype: object = "float64", shape: tuple | None = None, ndim: int | None = None
) -> Symbol:
    """A symbol of any number of dimensions.

    Examples
    --------
    >>> tensor("T", ndim=3).type
    TensorType(float64, shape=(?, ?, ?))
    """
    if ndim is None:
        if shape is None:
            raise ValueError(f"tensor {name!r}: give ndim or shape")
        ndim = len(shape)
    return Symbol(name, TensorType(dtype, ndim, shape))


def scalar(name: str, dtype: object = "float64") -> Symbol:
    """A 0-d symbol.

    Examples
    --------
    >>> scalar("s", "int64").type
    TensorType(int64, shape=())
    """
    return Symbol(name, TensorType(dtype, 0, ()))


def vector(name: str, dtype: object = "float64", shape: tuple | int | None = None) -> Symbol:
    """A 1-d symbol; ``shape`` may be ``(n,)`` or ``n``.

    Examples
    --------
    >>> vector("x", shape=3).type
    TensorType(float64, shape=(3,))
    """
    if isinstance(shape, int):
        shape = (shape,)
    return Symbol(name, TensorType(dtype, 1, shape))


def matrix(name: str, dtype: object = "float64", shape: tuple | None = None) -> Symbol:
    """A 2-d symbol.

    Examples
    --------
    >>> matrix("A", shape=(2, None)).type
    TensorType(float64, shape=(2, ?))
    """
    return Symbol(name, TensorType(dtype, 2, shape))


# --- traversal -------------------------------------------------------------------


def _is_expression(x: Any) -> bool:
    # Lists count too: kanren builds them (``conso(op, [x], q)``, mapo's default).
    return isinstance(x, (ExpressionTuple, list)) or _is_cons(x)


def as_term(x: Any) -> Any:
    """Convert an etuple / cons / list / ``Args`` expression into a :class:`Term`.

    Returns ``None`` if ``x`` contains a logic variable.  Leaves and ground terms
    come back unchanged; the walk is iterative and shares converted subterms.

    Examples
    --------
    >>> from etuples import etuple
    >>> import relgraph as rg
    >>> x = rg.vector("x")
    >>> as_term(etuple(rg.neg, etuple(rg.neg, x))) == -(-x)
    True
    >>> from unification import var
    >>> as_term(etuple(rg.neg, var())) is None
    True
    """
    if type(x) is Term and x._ground:
        return x
    if isinstance(x, Var):
        return None
    if not _is_expression(x):
        return _wrap(x)
    done: dict[int, Any] = {}  # ids are stable: x keeps every node alive
    stack = [(x, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        if type(node) is Term and node._ground:
            done[id(node)] = node
            continue
        if _is_cons(node):
            node_items = _cons_items(node)
        else:
            node_items = tuple(node)
        if not expanded:
            stack.append((node, True))
            for child in node_items:
                if isinstance(child, Var):
                    return None
                if _is_expression(child) and id(child) not in done:
                    stack.append((child, False))
            continue
        items = [done[id(c)] if _is_expression(c) else c for c in node_items]
        done[id(node)] = Term(items)
    return done[id(x)]


def checked_term(x: Any, action: str) -> Any:
    """``as_term(x)``, type-checked; a logic variable in it is an error.

    ``action`` names what the term is for, in the message ("rewrite", "compile").
    """
    term = as_term(x)
    if term is None:
        raise TypeCheckError(f"cannot {action} {x}: it contains a logic variable")
    typeof(term)
    return term


def _cons_items(node: ConsPair) -> tuple:
    items = []
    while _is_cons(node):
        items.append(node.car)
        node = node.cdr
    if isinstance(node, Var):
        return (*items, node)  # an improper list: as_term sees the var and fails
    return (*items, *node)


def subterms(term: Any) -> Iterator[Term]:
    """Distinct compound subterms, children before parents, each once.

    Distinct by structure: two equal subterms built separately count once.

    Examples
    --------
    >>> import relgraph as rg
    >>> x = rg.vector("x")
    >>> [str(t) for t in subterms(rg.exp(x) + rg.exp(x))]
    ['exp(x)', '(exp(x) + exp(x))']
    """
    if type(term) is not Term:
        return
    seen: set[Term] = set()
    stack: list[tuple[Term, bool]] = [(term, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        for child in reversed(node._tuple):
            if type(child) is Term and child not in seen:
                stack.append((child, False))


def count_nodes(term: Any) -> int:
    """Number of distinct compound subterms (applications) of a term.

    Examples
    --------
    >>> import relgraph as rg
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> count_nodes(A @ x + A @ y)
    3
    """
    return sum(1 for _ in subterms(term))


def substitute(term: Any, replace: Callable[[Term], Any]) -> Any:
    """Rebuild ``term`` bottom-up; ``replace(node)`` may return a new node.

    Shared subterms are visited once.  Nodes whose children did not change are
    kept, so the result shares everything that was not rewritten.
    """
    done: dict[Term, Any] = {}
    for node in subterms(term):
        args = node._tuple
        new = tuple(done[a] if type(a) is Term else a for a in args)
        rebuilt = node if all(n is o for n, o in zip(new, args)) else Term(new)
        done[node] = replace(rebuilt)
    return done[term] if type(term) is Term else term


# --- types -----------------------------------------------------------------------


def typeof(term: Any) -> TensorType:
    """The :class:`TensorType` of a term, inferred from its Ops and cached.

    Raises :class:`TypeCheckError` naming the offending subterm.

    Examples
    --------
    >>> import relgraph as rg
    >>> A, x = rg.matrix("A", shape=(3, 4)), rg.vector("x")
    >>> typeof(A @ x)
    TensorType(float64, shape=(3,))
    >>> typeof(2 * x.T)
    TensorType(float64, shape=(?,))
    """
    if type(term) is not Term:
        return _leaf_type(term)
    if term._type is None:
        # Only the untyped part is walked, so typing a new node over typed
        # children is O(arity).
        stack: list[tuple[Term, bool]] = [(term, False)]
        while stack:
            node, expanded = stack.pop()
            if node._type is not None:
                continue
            if expanded:
                node._type = _infer_node(node)
                continue
            stack.append((node, True))
            stack.extend((a, False) for a in node._tuple if type(a) is Term and a._type is None)
    return term._type


def _leaf_type(x: Any) -> TensorType:
    if isinstance(x, (Symbol, Constant)):
        return x.type
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return TensorType(np.asarray(x).dtype, 0, ())
    if isinstance(x, Var):
        raise TypeCheckError(f"cannot type a logic variable {x}: the term is a pattern")
    raise TypeCheckError(f"{x!r} of type {type(x).__name__} is not a term")


def _infer_node(node: Term) -> TensorType:
    op = node._tuple[0]
    infer = getattr(op, "infer_type", None)
    if infer is None:
        raise TypeCheckError(f"head {op!r} of {node} is not an Op")
    args = node._tuple[1:]
    types = [a._type if type(a) is Term else _leaf_type(a) for a in args]
    try:
        return infer(types, args)
    except TypeCheckError as exc:
        from relgraph.printing import brief

        raise TypeCheckError(f"ill-typed term {brief(node)}: {exc}") from None
