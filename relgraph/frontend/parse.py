"""A safe parser from Python expression text to terms: ``ast``, never ``eval``.

Accepted: names of the given symbols, numbers, ``+ - * / ** @``, comparisons,
unary ``-`` and ``+``, ``.T``, basic indexing (``x[1:, ::2]``, ``x[None]``,
``M[:, 0]``), and calls of the known functions (``exp``, ``log``,
``sum(x, axis=0)``, ``astype(x, dtype='float32')``, ``concatenate([x, y], axis=0)``).
Anything else is rejected with a :class:`ParseError`
that names it and where it is.  Numbers are never combined while parsing, so
``10 ** 10 ** 10`` costs nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

from relgraph import ops
from relgraph.exceptions import ParseError, TypeCheckError
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Symbol
from relgraph.terms.term import Term

__all__ = ["parse", "FUNCTIONS"]

MAX_SOURCE = 100_000
MAX_LITERAL = 2.0**53  # beyond this, float64 cannot hold the integer exactly

FUNCTIONS: dict[str, ops.Op] = {
    name: op for name, op in ops.ALL_OPS.items() if name not in ("add", "sub", "mul", "pow")
}

_BINARY = {
    ast.Add: ops.add,
    ast.Sub: ops.sub,
    ast.Mult: ops.mul,
    ast.Div: ops.true_div,
    ast.Pow: ops.pow,
    ast.FloorDiv: ops.floor_divide,
    ast.Mod: ops.remainder,
    ast.BitAnd: ops.bitwise_and,
    ast.BitOr: ops.bitwise_or,
    ast.BitXor: ops.bitwise_xor,
    ast.LShift: ops.left_shift,
    ast.RShift: ops.right_shift,
}


_COMPARE = {
    ast.Lt: ops.less,
    ast.LtE: ops.less_equal,
    ast.Gt: ops.greater,
    ast.GtE: ops.greater_equal,
    ast.Eq: ops.equal,
    ast.NotEq: ops.not_equal,
}


def parse(text: str, **symbols: Symbol | Callable[[str], Symbol]) -> Any:
    """Parse ``text`` into a term.

    Parameters
    ----------
    text : str
    **symbols
        Each name used in ``text``: a :class:`Symbol`, or a constructor such as
        ``rg.matrix`` that is called with the name.

    Examples
    --------
    >>> import relgraph as rg
    >>> t = rg.parse("A @ (x + y)", A=rg.matrix, x=rg.vector, y=rg.vector)
    >>> rg.pprint(t)
    '(A @ (x + y))'
    >>> rg.parse("x.__class__", x=rg.vector)
    Traceback (most recent call last):
    ...
    relgraph.exceptions.ParseError: col 1: attribute '__class__' is not allowed (only .T)
    """
    if not isinstance(text, str):
        raise ParseError(f"expected a string, got {type(text).__name__}")
    if len(text) > MAX_SOURCE:
        raise ParseError(f"expression is {len(text)} characters long; the limit is {MAX_SOURCE}")
    env = {name: _symbol(name, s) for name, s in symbols.items()}
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ParseError(f"invalid syntax at col {exc.offset}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ParseError("expression is nested too deeply") from None
    try:
        term = _Builder(env).build(tree.body)
    except RecursionError:
        raise ParseError("expression is nested too deeply") from None
    try:
        typeof(term)
    except TypeCheckError as exc:
        raise ParseError(str(exc)) from None
    return term


def _symbol(name: str, given: Any) -> Symbol:
    if isinstance(given, Symbol):
        if given.name != name:
            raise ParseError(f"symbol {name!r} was given a symbol named {given.name!r}")
        return given
    if callable(given):
        return given(name)
    raise ParseError(f"symbol {name!r}: expected a Symbol or a constructor, got {given!r}")


_SPECIAL_FLOATS = {"inf": float("inf"), "nan": float("nan")}


class _Builder:
    """Turns an accepted ``ast`` expression into a term, rejecting the rest."""

    def __init__(self, env: Mapping[str, Symbol]):
        self.env = env

    def build(self, node: ast.AST) -> Any:
        method = getattr(self, f"build_{type(node).__name__}", None)
        if method is None:
            raise ParseError(f"{_where(node)}: {_describe(node)} is not allowed")
        return method(node)

    def build_Name(self, node: ast.Name) -> Any:
        if node.id in self.env:
            return self.env[node.id]
        if node.id in _SPECIAL_FLOATS:  # as Python and numpy print them
            return _SPECIAL_FLOATS[node.id]
        known = ", ".join(sorted(self.env)) or "none"
        raise ParseError(f"{_where(node)}: unknown name {node.id!r} (symbols: {known})")

    def build_Constant(self, node: ast.Constant) -> Any:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParseError(f"{_where(node)}: literal {value!r} is not a number")
        if abs(value) > MAX_LITERAL:
            raise ParseError(f"{_where(node)}: literal {value!r} is too large")
        return value

    def build_BinOp(self, node: ast.BinOp) -> Any:
        left, right = self.build(node.left), self.build(node.right)
        if isinstance(node.op, ast.MatMult):
            return Term((ops.product_op(left, right), left, right))
        op = _BINARY.get(type(node.op))
        if op is None:
            raise ParseError(f"{_where(node)}: operator {type(node.op).__name__} is not allowed")
        return Term((op, left, right))

    def build_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise ParseError(f"{_where(node)}: chained comparisons are not allowed")
        op = _COMPARE.get(type(node.ops[0]))
        if op is None:
            raise ParseError(f"{_where(node)}: {type(node.ops[0]).__name__} is not allowed")
        return Term((op, self.build(node.left), self.build(node.comparators[0])))

    def build_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.build(node.operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            if isinstance(operand, (int, float)):
                return -operand
            return Term((ops.neg, operand))
        if isinstance(node.op, ast.Invert):
            return Term((ops.invert, operand))
        raise ParseError(f"{_where(node)}: operator {type(node.op).__name__} is not allowed")

    def build_Attribute(self, node: ast.Attribute) -> Any:
        if node.attr != "T":
            raise ParseError(f"{_where(node)}: attribute {node.attr!r} is not allowed (only .T)")
        return Term((ops.transpose, self.build(node.value)))

    def build_Call(self, node: ast.Call) -> Any:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        op = FUNCTIONS.get(name) if name is not None and name not in self.env else None
        if op is None:
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in FUNCTIONS:
                module = ast.unparse(func.value)
                raise ParseError(
                    f"{_where(node)}: {module}.{func.attr}: functions are named without a "
                    f"module in expressions: write {func.attr}(...)"
                )
            known = ", ".join(sorted(FUNCTIONS))
            raise ParseError(
                f"{_where(node)}: {_describe(node.func)} is not a known function ({known})"
            )
        args = [self._argument(a, op, i) for i, a in enumerate(node.args)]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg not in op.keywords:
                raise ParseError(f"{_where(kw.value)}: keyword {kw.arg!r} is not allowed here")
            default = dict(op.params)[kw.arg]
            kwargs[kw.arg] = self._parameter(kw.value, f"the {kw.arg} of {name}", default)
        try:
            bound = op.bind(args, kwargs)
            op.check_arity(len(op.operands(bound)))
        except (TypeCheckError, TypeError) as exc:
            raise ParseError(f"{_where(node)}: {exc}") from None
        return Term((op, *bound))

    def _argument(self, node: ast.AST, op: ops.Op, position: int) -> Any:
        """A positional argument: an operand, a list of them (``concatenate``), or past
        the operands a parameter (``sum(x, 1)``)."""
        if isinstance(node, ast.List):
            return [self.build(e) for e in node.elts]
        k = position - (op.nin or 0)
        if op.nin is not None and 0 <= k < len(op.params):
            key, default = op.params[k]
            return self._parameter(node, f"the {key} of {op.name}", default)
        return self.build(node)

    def _parameter(self, node: ast.AST, what: str, default: Any = None) -> Any:
        """An axis, a shape, a dtype name, True/False or None: plain data; a number
        where the parameter's default is one (a quantile's q)."""
        if isinstance(node, ast.Tuple):
            return tuple(self._parameter(e, what) for e in node.elts)
        if isinstance(node, ast.Constant) and (
            node.value is None or isinstance(node.value, (bool, str))
        ):
            return node.value
        value = self.build(node) if not isinstance(node, ast.Name) else None
        if type(default) is float and isinstance(value, (int, float)):
            return value
        if not isinstance(value, int):
            raise ParseError(
                f"{_where(node)}: {what} must be an integer, a tuple of integers, "
                "True/False, None or a dtype name"
            )
        return value

    def build_Subscript(self, node: ast.Subscript) -> Any:
        value = self.build(node.value)
        entries = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        key = tuple(self._index(e) for e in entries)
        try:
            args = ops.getitem.bind((value, key), {})
        except TypeCheckError as exc:
            raise ParseError(f"{_where(node)}: {exc}") from None
        return Term((ops.getitem, *args))

    def _index(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Slice):
            parts = (node.lower, node.upper, node.step)
            bounds = (None if p is None else self._parameter(p, "a slice bound") for p in parts)
            return slice(*bounds)
        if isinstance(node, ast.Constant) and node.value in (None, Ellipsis):
            return node.value
        return self._parameter(node, "an index")


def _where(node: ast.AST) -> str:
    return f"col {getattr(node, 'col_offset', 0) + 1}"


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"attribute {node.attr!r}"
    if isinstance(node, ast.Lambda):
        return "lambda"
    if isinstance(node, ast.Name):
        return repr(node.id)
    return type(node).__name__
