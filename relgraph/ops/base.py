"""The base class of Ops, and numpy's dtype rule every Op's type rule uses.

An Op is called on concrete values to compute with numpy, or on terms (or logic
variables) to build a term, type-checked when it is ground.  Its arguments are its
*operands* (values) followed by its *parameters* (an axis, a shape, a dtype): the
parameters are plain Python data in the term, given positionally or by keyword,
and the ones left at their default are not stored (``sum(x)``, ``sum(x, 1)``).

The Ops themselves live by kind: :mod:`relgraph.ops.elemwise`, :mod:`relgraph.ops.reductions`,
:mod:`relgraph.ops.shape` and :mod:`relgraph.ops.products`; :mod:`relgraph.ops` lists them.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from cons.core import ConsPair
from etuples.core import ExpressionTuple
from unification.variable import Var

from relgraph.exceptions import RegistrationError, TypeCheckError
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.lvars import Rest
from relgraph.terms.operators import register_operator
from relgraph.terms.printing import Bare
from relgraph.terms.term import Term
from relgraph.terms.types import TensorType

__all__ = [
    "Op", "ALL_OPS", "PERFORM", "register_ops", "result_dtype", "dtype_key", "symbolic",
    "pullback",
]  # fmt: skip

# Arguments that make a call build a term: a Constant too, which is a leaf of terms
# (numpy would hand it back to Constant.__mul__ and recurse).
_SYMBOLIC = (Term, Symbol, Constant, Var, ExpressionTuple)


def symbolic(values: Sequence[Any]) -> bool:
    """Whether a call on ``values`` builds a term rather than computing."""
    return any(isinstance(a, _SYMBOLIC) or issubclass(type(a), ConsPair) for a in values)


class Op:
    """Base class of Ops.  Subclasses define the type rule and numpy semantics.

    Attributes
    ----------
    name : str
        The name used by the printer and the parser.
    nin : int or None
        Number of operands; ``None`` for variadic (two or more).
    params : tuple of (name, default)
        The parameters after the operands, in order.
    """

    name: str = "op"
    nin: int | None = None
    params: tuple[tuple[str, Any], ...] = ()
    #: Whether the Op is computed element by element (fused into loops when compiled).
    elementwise: bool = False
    #: Whether the Op only moves values (a transpose, a slice), so computes in no dtype.
    moves_only: bool = False
    #: Relative cost per element, for cost models (a multiply is 1).
    cost: float = 1.0
    #: The exact reference ``rg.check`` judges rewrites by: a function of mpmath numbers
    #: (one element; a reduction's takes a row as a list), or :data:`PERFORM` where
    #: numpy's own computation is exact on them (it moves values, or sums products at
    #: mpmath's precision).  None: no reference, and ``rg.check`` says so.
    exact: Any = None
    #: Whether the Op compares its operands (a bool result, exact in their common dtype).
    compares: bool = False
    #: Whether the first operand only selects between the others (``where``).
    selects: bool = False
    #: Whether its value at a NaN operand is a number, as numpy's (a comparison,
    #: ``isnan``, ``fmax``, ``pow``): its exact reference sees the NaN.  For every other Op the
    #: exact value of a NaN operand is NaN.
    sees_nan: bool = False
    #: Its name in scipy.special, whose ufunc numpy code may call on terms.
    scipy: str | None = None
    #: How a cotangent flows back through a node (reverse-mode differentiation):
    #: ``pullback(g, node)`` gives, per operand, the term of its cotangent (None where
    #: none flows: a comparison, an integer); ``g`` has the node's shape and dtype.  An
    #: elementwise Op's may have the node's (broadcast) shape: the caller sums it to
    #: the operand's.  None: no derivative, and ``rg.grad`` says so.  Declared with
    #: :func:`pullback` where the Op is defined.
    pullback: Any = None

    @property
    def keywords(self) -> tuple[str, ...]:
        """The names of the parameters, which calls and the parser accept as keywords."""
        return tuple(name for name, _ in self.params)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = self.bind(args, kwargs)
        n = len(self.operands(args))
        if symbolic(args[:n]):
            return self.make_term(*args)
        return self.perform(*args)

    def bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple:
        """``args`` with the keyword parameters put in place, trailing defaults dropped.

        >>> import relgraph as rg
        >>> x = rg.matrix("x")
        >>> rg.sum.bind((x,), {"keepdims": True}) == (x, None, True)
        True
        """
        if not self.params:
            if kwargs:
                raise TypeError(f"{self.name} takes no keyword {next(iter(kwargs))!r}")
            return tuple(args)
        n = self.nin if self.nin is not None else len(args)
        operands, given = list(args[:n]), list(args[n:])
        if len(given) > len(self.params):
            raise TypeError(f"{self.name} takes at most {len(self.params)} parameter(s)")
        values = given + [default for _, default in self.params[len(given) :]]
        for key, value in kwargs.items():
            names = self.keywords
            if key not in names:
                raise TypeError(f"{self.name} has no parameter {key!r} (it has {names})")
            if names.index(key) < len(given):
                raise TypeError(f"{self.name} got parameter {key!r} twice")
            values[names.index(key)] = value
        values = self.normalise(values)
        while values and _same(values[-1], self.params[len(values) - 1][1]):
            values.pop()
        return (*operands, *values)

    def normalise(self, params: list) -> list:
        """The parameters (all of them, defaults filled in) in their stored form."""
        return params

    def make_term(self, *args: Any) -> Term:
        """Build ``(self, *args)``; ground terms are type-checked at once.

        A pattern's rest variable stands for any number of arguments, so a term
        holding one is not held to the arity (``rg.add(xs)``).
        """
        operands = self.operands(args)
        if not any(isinstance(a, (Rest, Term)) and _holds_rest(a) for a in operands):
            self.check_arity(len(operands))
        term = Term((self, *args))
        if term._ground:
            typeof(term)
        return term

    def check_arity(self, n: int) -> None:
        """Raise :class:`TypeCheckError` if ``n`` operands do not fit this Op."""
        if self.nin is None:
            if n < 2:
                raise TypeCheckError(f"{self.name} needs at least 2 arguments, got {n}")
        elif n != self.nin:
            raise TypeCheckError(f"{self.name} takes {self.nin} argument(s), got {n}")

    def operands(self, args: Sequence[Any]) -> Sequence[Any]:
        """The arguments that are values (not parameters such as an axis)."""
        return args if self.nin is None else args[: self.nin]

    def param_values(self, args: Sequence[Any]) -> dict[str, Any]:
        """Every parameter's value in a node's arguments, defaults filled in."""
        given = list(args[len(self.operands(args)) :])
        return {name: given[k] if k < len(given) else d for k, (name, d) in enumerate(self.params)}

    def perform(self, *values: Any) -> Any:
        """Compute the Op on concrete numpy values."""
        raise NotImplementedError(f"Op {self.name} defines no perform(): it has no numpy values")

    def layout(self, args: Sequence[Any]) -> list[Any]:
        """How a node prints: strings, and the arguments still to print, in order.

        The default is function form with parameters as keywords, ``sum(x, axis=1)``.
        """
        operands = self.operands(args)
        pieces: list[Any] = [f"{self.name}("]
        for i, a in enumerate(operands):
            pieces += [", ", Bare(a)] if i else [Bare(a)]
        for (name, _), value in zip(self.params, args[len(operands) :]):
            pieces.append(f", {name}={value!r}")
        return [*pieces, ")"]

    def symbolic_shape(self, shapes: Any, node: Any, args: Sequence[tuple]) -> tuple:
        """The node's shape as symbolic dimensions, given its operands' (``args``);
        ``shapes`` records the equalities the Op implies (see the compiler)."""
        return shapes.from_type(node)

    def work(self, out: TensorType, ins: Sequence[TensorType]) -> float | None:
        """Elements the node computes over (for cost models), None if a shape is unknown.

        The default is the largest of its operands and result: one pass over them.
        """
        sizes = [t.size for t in (out, *ins)]
        known = [s for s in sizes if s is not None]
        return float(max(known)) if len(known) == len(sizes) else None

    def infer_type(self, types: Sequence[TensorType], args: Sequence[Any]) -> TensorType:
        """The output type, given the operand types (then None per parameter) and the
        raw arguments."""
        raise NotImplementedError(f"Op {self.name} defines no infer_type(): it has no types")

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> Any:
        # Ops are singletons: pickle them by their name in the module defining their class.
        module = sys.modules.get(type(self).__module__)
        if getattr(module, self.name, None) is self:
            return self.name
        return object.__reduce__(self)


#: An Op's ``exact`` when numpy's computation on mpmath numbers is the exact value.
PERFORM = "perform"

#: Every Op relgraph speaks, by name (the printer's and the parser's).  Each family
#: registers its Ops where it defines them; the tables other modules need (exact
#: references, costs, numpy names) are read from the Ops listed here.
ALL_OPS: dict[str, Op] = {}


def register_ops(*ops: Op) -> None:
    """Add ``ops`` to :data:`ALL_OPS`, and make each what the term operator of its
    name calls (``x + y`` calls the Op registered as ``add``).

    Examples
    --------
    >>> import relgraph as rg
    >>> ALL_OPS["add"] is rg.add
    True
    """
    for op in ops:
        if ALL_OPS.setdefault(op.name, op) is not op:
            raise RegistrationError(f"two Ops are named {op.name!r}")
        register_operator(op.name)(op)


def pullback(*ops: Op) -> Any:
    """Declare the decorated ``fn(g, node)`` as the pullback of ``ops`` (see
    :attr:`Op.pullback`).

    Examples
    --------
    >>> import relgraph as rg
    >>> x = rg.vector("x")
    >>> rg.pprint(rg.exp.pullback(rg.vector("g"), rg.exp(x))[0])
    '(g * exp(x))'
    """

    def declare(fn: Any) -> Any:
        for op in ops:
            op.pullback = fn
        return fn

    return declare


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _holds_rest(a: Any) -> bool:
    if type(a) is Rest:
        return True
    return type(a) is Term and not a._ground and any(_holds_rest(b) for b in a._tuple[1:])


def dtype_key(arg: Any, tp: TensorType) -> Any:
    """What numpy's promotion sees of an argument: Python scalars are "weak"
    (``2.0 * float32 -> float32``), so their Python type, else their dtype."""
    if isinstance(arg, (bool, int, float, complex)) and not isinstance(arg, np.generic):
        return type(arg)
    return tp.dtype


_WEAK_SAMPLE = {bool: False, int: 0, float: 0.0, complex: 0j}


def result_dtype(fn: Any, keys: tuple) -> np.dtype:
    """The dtype numpy gives ``fn`` on arguments of these dtypes (or weak scalar types);
    :class:`TypeCheckError` where numpy refuses them (``-`` of bools)."""
    dtype = _numpy_result_dtype(fn, keys)
    if isinstance(dtype, str):
        raise TypeCheckError(dtype)
    return dtype


@functools.lru_cache(maxsize=4096)
def _numpy_result_dtype(fn: Any, keys: tuple) -> np.dtype | str:
    samples = [_WEAK_SAMPLE[k] if k in _WEAK_SAMPLE else np.zeros(1, k) for k in keys]
    with np.errstate(all="ignore"):
        try:
            return np.asarray(fn(*samples)).dtype
        except TypeError as exc:  # cached as its message: numpy's refusal is the answer
            names = ", ".join(getattr(k, "__name__", str(k)) for k in keys)
            return f"numpy's {getattr(fn, '__name__', fn)} does not take ({names}): {exc}"
