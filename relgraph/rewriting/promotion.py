"""Where the algebra of relations holds: arithmetic within one dtype.

Relations are written as identities of real numbers (``x * (x * y) = (x * x) * y``,
``exp(z) ** 2 = exp(z + z)``, ``sum(2 * x) = 2 * sum(x)``).  numpy computes each node
in the dtype promotion gives it, so those identities hold only where no promotion
happens in the part of the program a rewrite changes:

* bool arithmetic is logic (``True + True`` is ``True``: ``+`` is OR, ``*`` is AND);
* a node whose operands have another dtype than its result (int64 times float64,
  ``int / int``, ``exp`` of an int, the int64 ``sum`` of an int8 vector) computes its
  operands in their own, narrower dtype first: moving an operation across it moves it
  into another dtype, where it can wrap around or overflow.

A node is *pure* when neither happens: its value is one ring or field operation in its
own dtype (modular for integers).  A rewrite keeps the values of a program, up to float
rounding, when every node it removes or creates is pure; the driver and the one-step
API refuse any other answer.

A sum or product of many arguments folds from the left.  In integer arithmetic and
logic every grouping and order of its arguments has one value; in floating point
each rounds and overflows differently (``a * (exp(x) * exp(y))`` is inf where
``a * exp(x) * exp(y)`` is 2.7e47, at ``a = 1e-300, x = y = 400``), so only a leading
run of arguments is a part of the fold there (:func:`run_starts`), unless the run
regroups floats as a query that selects a relation marked
:func:`~relgraph.rewriting.relation.reassociates` asks (:func:`regrouping`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from relgraph.terms.evaluate import evaluate
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term, memoized
from relgraph.terms.traverse import subterms

__all__ = [
    "is_pure", "pure_throughout", "keeps_values", "any_order", "regroups", "run_starts",
    "regrouping", "pure_operation", "constant_operand",
]  # fmt: skip

_REGROUPING: ContextVar[bool] = ContextVar("relgraph_regrouping", default=False)

_CONSTANTS = (bool, int, float, complex, np.generic, Constant)


def _constant_fits(value: Any, dtype: np.dtype) -> bool:
    """Whether a constant operand converts into ``dtype`` without changing the operation.

    A Python float is weak: numpy rounds it to a float dtype, as a literal would be.
    Any other constant must convert exactly (``np.int64(-1)`` into float64 does).
    """
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            return info.min <= value <= info.max
        return dtype.kind in "fc"
    if isinstance(value, float):
        return dtype.kind in "fc"
    array = np.asarray(getattr(value, "value", value))
    if not np.can_cast(array.dtype, dtype, casting="same_kind") and array.dtype.kind != "b":
        return False
    with np.errstate(all="ignore"):
        return bool(np.array_equal(array.astype(dtype), array, equal_nan=array.dtype.kind in "fc"))


@memoized
def is_pure(node: Term) -> bool:
    """Whether ``node`` computes one operation in its own dtype (see the module docs).

    Examples
    --------
    >>> import relgraph as rg
    >>> x8, y = rg.vector("x8", "int8"), rg.vector("y")
    >>> is_pure(2 * x8), is_pure(rg.sum(x8)), is_pure(x8 * y)
    (True, False, False)
    >>> b = rg.vector("b", "bool")
    >>> is_pure(b + b)
    False
    """
    op = node._tuple[0]
    operands = op.operands(node._tuple[1:])
    return pure_operation(op, typeof(node).dtype, operands, _dtype_of, constant_operand)


def _dtype_of(arg: Any) -> np.dtype:
    return typeof(arg).dtype


def pure_operation(
    op: Any,
    dtype: np.dtype,
    operands: Sequence[Any],
    dtype_of: Callable[[Any], np.dtype],
    constant_of: Callable[[Any], Any],
) -> bool:
    """:func:`is_pure` on the parts of a node: its Op, its dtype, its operands (terms,
    or the e-graph's classes) with the dtype and the constant value (None if not a
    constant) of each.

    >>> import numpy as np
    >>> import relgraph as rg
    >>> f8, i8 = np.dtype("float64"), np.dtype("int64")
    >>> dtypes = {"x": f8, "i": i8}
    >>> pure_operation(rg.mul, f8, ["x", "x"], dtypes.get, lambda a: None)
    True
    >>> pure_operation(rg.mul, f8, ["x", "i"], dtypes.get, lambda a: None)
    False
    """
    if op.moves_only:  # moves values, computes nothing
        return True
    if op.compares:  # exact when both sides have one dtype
        dtype, operands = dtype_of(operands[0]), operands[1:]
    elif op.selects:  # the condition selects; only the branches are values
        operands = operands[1:]
    elif dtype.kind == "b":
        return False
    for arg in operands:
        if dtype_of(arg) == dtype:
            continue
        value = constant_of(arg)
        if value is None or not _constant_fits(value, dtype):
            return False
    return True


def any_order(node: Term) -> bool:
    """Whether every grouping and order of the arguments of the sum or product
    ``node`` computes its value by its dtype alone: integers wrap around and bools are
    logic; floats round.

    >>> import relgraph as rg
    >>> any_order(rg.vector("i", "uint8") + 3), any_order(rg.vector("x") + 3)
    (True, False)
    """
    return typeof(node).dtype.kind in "biu"


def regroups(node: Term) -> bool:
    """Whether every grouping and order of the arguments of the sum or product
    ``node`` computes its value: integers wrap around and bools are logic, floats round
    (unless within :func:`regrouping`).

    >>> import relgraph as rg
    >>> regroups(rg.vector("i", "int8") * 3), regroups(rg.vector("x") * 3)
    (True, False)
    >>> def regroupo(a, b): ...
    >>> with regrouping([rg.Rule(rg.reassociates(regroupo), "regroupo")]):
    ...     regroups(rg.vector("x") * 3)
    True
    """
    return _REGROUPING.get() or any_order(node)


@contextmanager
def regrouping(rules: Iterable[Any]) -> Iterator[None]:
    """Within it (in this thread), float sums and products count as regroupable if
    one of ``rules`` (relations or rules) is marked
    :func:`~relgraph.rewriting.relation.reassociates`, or if they did already: the
    driver and the e-graph run a query's rules so, and a marked rule matches so."""
    marked = (getattr(getattr(r, "relation", r), "reassociates", False) for r in rules)
    token = _REGROUPING.set(_REGROUPING.get() or any(marked))
    try:
        yield
    finally:
        _REGROUPING.reset(token)


def run_starts(node: Term) -> int:
    """How many leading arguments of ``node`` (an associative Op's term) a run of its
    arguments may start at and stand for its part of the fold: any in integer
    arithmetic, the first in floating point, none where ``node`` is not pure.

    >>> import relgraph as rg
    >>> i, x = rg.vector("i", "int64"), rg.vector("x")
    >>> run_starts(rg.add(i, i, i)), run_starts(rg.add(x, x, x)), run_starts(rg.add(x, i, i))
    (3, 1, 0)
    """
    if not is_pure(node):
        return 0
    return len(node._tuple) - 1 if regroups(node) else 1


def _bottom_up(term: Term, fn: Any) -> Any:
    """``fn(node)`` for ``term`` and its subterms, children first, each kept on its node.

    ``fn`` reads its children's values from their ``_memo[fn]``; the walk stops at
    nodes that have one already, so asking again after a rewrite costs the new nodes.
    """
    order, stack = [], [term]
    while stack:
        node = stack.pop()
        if node._memo is not None and fn in node._memo:
            continue
        order.append(node)
        stack.extend(a for a in node._tuple if type(a) is Term)
    for node in reversed(order):
        memo = node._memo if node._memo is not None else {}
        node._memo = memo
        if fn not in memo:
            memo[fn] = fn(node)
    return _memo(term)[fn]


def _memo(node: Term) -> dict:
    # Filled bottom-up by _memoized before a node's own entry is read.
    return node._memo if node._memo is not None else {}


def _pure_below(node: Term) -> bool:
    return is_pure(node) and all(_memo(a)[_pure_below] for a in node._tuple if type(a) is Term)


def _symbolic_below(node: Term) -> bool:
    return any(
        isinstance(a, Symbol) or (type(a) is Term and _memo(a)[_symbolic_below])
        for a in node._tuple
    )


def pure_throughout(term: Any) -> bool:
    """Whether every compound subterm of ``term`` is pure; kept on each term."""
    return type(term) is not Term or _bottom_up(term, _pure_below)


def constant_operand(arg: Any) -> Any:
    """The value of an operand that is a constant expression (``-1`` is ``neg(1)``)."""
    if type(arg) is Term and not _bottom_up(arg, _symbolic_below):
        with np.errstate(all="ignore"):
            try:
                return evaluate(arg, {})
            except Exception:  # a constant numpy refuses to compute: not a constant
                return None
    return arg if isinstance(arg, _CONSTANTS) else None


def keeps_values(before: Any, after: Any) -> bool:
    """Whether replacing ``before`` by ``after`` keeps the program's values.

    True when every node that ``after`` creates and every node it removes is pure;
    unchanged subterms compute what they computed before, whatever their dtypes.

    Examples
    --------
    >>> import relgraph as rg
    >>> x, y = rg.vector("x", "int64"), rg.vector("y")
    >>> keeps_values(x * (x * y), (x * x) * y)   # x * x would wrap around in int64
    False
    >>> f, g = rg.vector("f"), rg.vector("g")
    >>> keeps_values(f * (f * g), (f * f) * g)
    True
    """
    if pure_throughout(before) and pure_throughout(after):
        return True
    old, new = set(subterms(before)), set(subterms(after))
    return all(is_pure(n) for n in old ^ new)
