"""Pattern variables: the logic variables rules are written with.

A :class:`LVar` is a kanren logic variable (a :class:`unification.Var`) that also
has the Python operators of terms, so a pattern reads like the program it
matches: ``rg.exp(rg.log(x))``, ``A @ (y + z)``.  It may carry a type
constraint (``ndim``, ``dtype``, ``constant``) checked where it binds.  A
:class:`Rest` stands for one or more arguments of a variadic Op:
``rg.add(x, xs)`` matches a sum of any length of two or more.

Examples
--------
>>> import relgraph as rg
>>> x, y = rg.lvars("x y")
>>> A = rg.lvar("A", ndim=2)
>>> rg.pprint(A @ (x + y))
'(?A @ (?x + ?y))'
>>> rg.pprint(rg.add(x, rg.rest("xs")))
'(?x + ?xs...)'
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from unification.variable import Var

from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.operators import TermOps
from relgraph.terms.term import Term

__all__ = ["LVar", "Rest", "lvar", "lvars", "rest", "is_lvar", "is_rest"]

_ids = itertools.count()
_ABSTRACT = {
    "bool": np.bool_,
    "integer": np.integer,
    "signed": np.signedinteger,
    "unsigned": np.unsignedinteger,
    "floating": np.floating,
    "complex": np.complexfloating,
    "inexact": np.inexact,
    "number": np.number,
}


class LVar(TermOps, Var):
    """A named logic variable of a pattern, optionally typed.

    Two calls with one name make two variables: a rule's variables are the
    objects its patterns hold, compared by identity.

    Attributes
    ----------
    name : str
    ndim : int or None
        The number of axes a bound value must have.
    dtype : numpy dtype, abstract numpy type, or None
        ``"float32"`` binds only float32 values; ``"floating"`` (or ``np.floating``)
        any float; also ``"integer"``, ``"signed"``, ``"unsigned"``, ``"complex"``,
        ``"inexact"``, ``"number"``, ``"bool"``.
    constant : bool or None
        ``True``: binds only numbers and array constants; ``False``: anything else.
    """

    __slots__ = ("name", "ndim", "dtype", "constant")
    # Equal LVars are one object (Var keeps one object per token, and each LVar's
    # token is new), so hashing by identity is Var's equality, without a Python call:
    # bindings are dicts keyed by these.
    __hash__ = object.__hash__

    def __new__(cls, name: str, *, ndim=None, dtype=None, constant=None):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"a pattern variable's name must be an identifier, got {name!r}")
        if ndim is not None and (not isinstance(ndim, int) or ndim < 0):
            raise ValueError(f"{name}: ndim must be a non-negative int, got {ndim!r}")
        obj = Var.__new__(cls, (name, next(_ids)))
        obj.name, obj.ndim, obj.constant = name, ndim, constant
        obj.dtype = _dtype_constraint(name, dtype)
        return obj

    def __repr__(self) -> str:
        return f"?{self.name}"

    __str__ = __repr__

    def __reduce__(self):
        return (_rebuild, (type(self), self.name, self.ndim, self.dtype, self.constant))

    def admits(self, value: Any) -> bool:
        """Whether ``value`` satisfies this variable's type constraint."""
        if self.constant is not None and self.constant != _is_constant(value):
            return False
        if self.ndim is None and self.dtype is None:
            return True
        try:
            tp = typeof(value)
        except Exception:
            return False
        if self.ndim is not None and tp.ndim != self.ndim:
            return False
        if self.dtype is None:
            return True
        if isinstance(self.dtype, np.dtype):
            return tp.dtype == self.dtype
        return bool(np.issubdtype(tp.dtype, self.dtype))

    def constraint(self) -> str:
        """The type constraint in words ('' when there is none)."""
        parts = []
        if self.ndim is not None:
            parts.append(f"ndim={self.ndim}")
        if self.dtype is not None:
            name = getattr(self.dtype, "__name__", str(self.dtype))
            parts.append(f"dtype={name}")
        if self.constant is not None:
            parts.append(f"constant={self.constant}")
        return ", ".join(parts)


class Rest(LVar):
    """One or more arguments of a variadic Op (``add``, ``mul``, ``maximum``...).

    In a pattern, ``rg.add(x, xs)`` matches any sum of two or more terms, with
    ``x`` any one of them (the Op is commutative) and ``xs`` the others, in
    order; a nested sum is flattened first.  Inside an argument,
    ``rg.add(A @ xs)`` matches a sum of products ``A @ v`` with one ``A``, and
    ``xs`` binds to the ``v`` of each.  On the right-hand side the same forms
    rebuild: ``rg.add(xs)`` is the sum of the bound terms (the one term alone
    if there is one).
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"?{self.name}..."

    __str__ = __repr__


def _rebuild(cls, name, ndim, dtype, constant):
    return cls(name, ndim=ndim, dtype=dtype, constant=constant)


def _dtype_constraint(name: str, dtype: Any) -> Any:
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype in _ABSTRACT:
        return _ABSTRACT[dtype]
    if isinstance(dtype, type) and issubclass(dtype, np.generic) and dtype.__subclasses__():
        return dtype  # an abstract numpy type such as np.floating
    try:
        return np.dtype(dtype)
    except TypeError:
        raise ValueError(
            f"{name}: dtype {dtype!r} is neither a numpy dtype nor one of {sorted(_ABSTRACT)}"
        ) from None


def _is_constant(value: Any) -> bool:
    return not isinstance(value, (Term, Symbol, Var)) and (
        type(value) is Constant or isinstance(value, (int, float, complex, np.generic))
    )


def lvar(name: str, *, ndim: int | None = None, dtype: Any = None, constant=None) -> LVar:
    """One pattern variable, optionally typed.

    Examples
    --------
    >>> import relgraph as rg
    >>> A = rg.lvar("A", ndim=2)
    >>> A.admits(rg.matrix("M")), A.admits(rg.vector("v"))
    (True, False)
    >>> rg.lvar("c", constant=True).admits(2.0)
    True
    """
    return LVar(name, ndim=ndim, dtype=dtype, constant=constant)


def lvars(names: str, **constraint: Any) -> list[LVar]:
    """Pattern variables named by a space- or comma-separated string.

    Examples
    --------
    >>> import relgraph as rg
    >>> x, y = rg.lvars("x y")
    >>> x, y
    (?x, ?y)
    """
    split = names.replace(",", " ").split()
    if not split:
        raise ValueError("lvars needs at least one name, as in rg.lvars('x y')")
    return [LVar(n, **constraint) for n in split]


def rest(name: str, **constraint: Any) -> Rest:
    """A variable for one or more arguments of a variadic Op.

    A constraint (``ndim``, ``dtype``, ``constant``) applies to each argument.

    Examples
    --------
    >>> import relgraph as rg
    >>> x, xs = rg.lvar("x"), rg.rest("xs")
    >>> rg.pprint(rg.add(x, xs))
    '(?x + ?xs...)'
    """
    return Rest(name, **constraint)


def is_lvar(x: Any) -> bool:
    """Whether ``x`` is a pattern variable (``isinstance`` says so of every kanren Var:
    unification's metaclass answers for its subclasses)."""
    return issubclass(type(x), LVar)


def is_rest(x: Any) -> bool:
    """Whether ``x`` is a :class:`Rest` variable."""
    return type(x) is Rest
