"""Patterns: terms with pattern variables, compiled into matchers and builders.

A pattern is a term whose leaves may be :class:`~relgraph.terms.lvars.LVar` and whose
variadic argument lists may hold one :class:`~relgraph.terms.lvars.Rest` part.
:func:`compile_pattern` turns it into a tree of small node objects, each with

* ``match(term, bindings)``: the bindings (``{LVar: value}``) under which the
  pattern equals ``term``, lazily (a commutative Op with a rest part may match in
  several ways);
* ``build(bindings)``: the term the pattern stands for, ``None`` when a
  variable is unbound;
* ``explain(term, bindings)``: why it does not match, in words (for ``rg.why``).

Matching is plain Python over the term's tuples, no kanren stream: a failed
match costs a few attribute tests.  :func:`quick_test` compiles the pattern's
fixed heads and arities into one Python function, a filter run before matching.

Examples
--------
>>> import relgraph as rg
>>> x, y = rg.lvars("x y")
>>> p = compile_pattern(rg.exp(rg.log(x)))
>>> a = rg.vector("a")
>>> [b[x] for b in p.match(rg.exp(rg.log(a)), {})]
[a]
>>> list(p.match(rg.exp(a), {}))
[]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from unification.variable import Var

from relgraph.exceptions import PatternError
from relgraph.rewriting.promotion import regroups
from relgraph.rewriting.relation import is_associative, is_commutative
from relgraph.terms.lvars import LVar, Rest, is_lvar
from relgraph.terms.printing import brief
from relgraph.terms.term import Term, negative_zero

__all__ = [
    "compile_pattern",
    "variables",
    "substitute_vars",
    "quick_test",
    "PatternError",
    "same",
]

Bindings = dict


def same(a: Any, b: Any) -> bool:
    """Equality as a repeated variable needs it: terms structurally, numbers by value
    and sign (``0.0`` is not ``-0.0``)."""
    if a is b:
        return True
    if type(a) is Term or type(b) is Term:
        return type(a) is type(b) and a == b
    try:
        return bool(a == b) and negative_zero(a) == negative_zero(b)
    except (TypeError, ValueError):
        return False


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return brief(value)


class PVar:
    """A pattern variable at a leaf."""

    depth = 0

    def __init__(self, var: LVar):
        self.var = var

    def match(self, t: Any, b: Bindings) -> Iterator[Bindings]:
        v = self.var
        if v in b:
            if same(b[v], t):
                yield b
        elif v.admits(t):
            yield {**b, v: t}

    def build(self, b: Bindings) -> Any:
        return b.get(self.var)

    def explain(self, t: Any, b: Bindings) -> str:
        v = self.var
        if v in b:
            return f"{v} is {_show(b[v])} already, here it would be {_show(t)}"
        return f"{_show(t)} does not satisfy {v}'s {v.constraint()}"


class PLit:
    """A leaf that must be equal: a symbol, a constant, a number."""

    depth = 0

    def __init__(self, value: Any):
        self.value = value

    def match(self, t: Any, b: Bindings) -> Iterator[Bindings]:
        if same(self.value, t):
            yield b

    def build(self, b: Bindings) -> Any:
        return self.value

    def explain(self, t: Any, b: Bindings) -> str:
        return f"expected {_show(self.value)}, found {_show(t)}"


class PRest:
    """A rest variable directly in an argument list: binds a tuple of one or more."""

    depth = 0

    def __init__(self, var: Rest):
        self.var = var

    def match_many(self, items: list, b: Bindings) -> Iterator[Bindings]:
        v, run = self.var, tuple(items)
        if v in b:
            bound = b[v]
            if len(bound) == len(run) and all(map(same, bound, run)):
                yield b
        elif all(v.admits(i) for i in run):
            yield {**b, v: run}

    def build_many(self, b: Bindings) -> list | None:
        value = b.get(self.var)
        return None if value is None else list(value)

    def explain_many(self, items: list, b: Bindings) -> str:
        v = self.var
        if v in b:
            return f"{v} is {_show(b[v])} already, here it would be {_show(tuple(items))}"
        bad = next(i for i in items if not v.admits(i))
        return f"{_show(bad)} does not satisfy {v}'s {v.constraint()}"


class PEach:
    """An argument holding rest variables (``A @ xs`` in ``add(A @ xs)``): one copy per
    item, each rest variable binding the tuple of what it matched in each copy."""

    def __init__(self, template: Any, rests: list[Rest]):
        self.template = template
        self.rests = rests
        self.depth = template.depth

    def match_many(self, items: Any, b: Bindings) -> Iterator[Bindings]:
        before = {v: b[v] for v in self.rests if v in b}
        cur = {k: w for k, w in b.items() if k not in before}
        got: dict[Rest, list] = {v: [] for v in self.rests}
        for item in items:
            found = next(self.template.match(item, cur), None)
            if found is None:
                return
            cur = dict(found)
            for v in self.rests:
                got[v].append(cur.pop(v))
        for v, value in before.items():
            if len(value) != len(got[v]) or not all(map(same, value, got[v])):
                return
        yield {**cur, **{v: tuple(vals) for v, vals in got.items()}}

    def build_many(self, b: Bindings) -> list | None:
        found = [b.get(v) for v in self.rests]
        values = [v for v in found if v is not None]
        if len(values) < len(found) or len({len(v) for v in values}) != 1:
            return None
        out = []
        for row in zip(*values):
            item = self.template.build({**b, **dict(zip(self.rests, row))})
            if item is None:
                return None
            out.append(item)
        return out

    def explain_many(self, items: list, b: Bindings) -> str:
        cur = {k: w for k, w in b.items() if k not in self.rests}
        for item in items:
            found = next(self.template.match(item, cur), None)
            if found is None:
                return f"in {_show(item)}: {self.template.explain(item, cur)}"
            cur = {k: w for k, w in found.items() if k not in self.rests}
        return "the items match, but not the terms the rest variables hold already"


class PApp:
    """An application of an Op, with an optional rest part among its arguments."""

    def __init__(self, op: Any, args: list, rest: Any, at: int, commutative: bool, assoc: bool):
        self.op, self.args = op, args  # the fixed arguments (rest part removed)
        self.rest, self.at = rest, at  # the rest part and its index among the arguments
        self.commutative, self.assoc = commutative, assoc
        # A binary pattern over a commutative Op also matches the other order (``1 + x``
        # fires on ``x + 1``), unless both arguments are variables: then that only
        # swaps the bindings.
        two = rest is None and len(args) == 2
        self.swaps = commutative and two and not all(isinstance(a, PVar) for a in args)
        parts = [*args, rest] if rest is not None else args
        self.depth = 1 + max((a.depth for a in parts), default=0)

    def items(self, t: Term) -> list:
        """The arguments of ``t`` a rest part divides: flattened if the Op is associative."""
        return list(self.iter_items(t))

    def iter_items(self, t: Term) -> Iterator[Any]:
        """:meth:`items`, lazily: a failed match stops before flattening a long sum.
        A float sum splices only its left-nested chain, the rest of its fold
        (``x + (y + z)`` is no sum of three), unless the run regroups floats."""
        if not self.assoc:
            yield from t._tuple[1:]
            return
        op, stack = self.op, list(reversed(t._tuple[1:]))
        anywhere, first = regroups(t), True
        while stack:
            a = stack.pop()
            if type(a) is Term and a._tuple[0] is op and (anywhere or first):
                stack.extend(reversed(a._tuple[1:]))
            else:
                first = False
                yield a

    def match(self, t: Any, b: Bindings) -> Iterator[Bindings]:
        if type(t) is not Term or t._tuple[0] is not self.op:
            return
        if self.rest is None:
            targs = t._tuple[1:]
            if len(targs) == len(self.args):
                yield from _match_seq(self.args, targs, 0, b)
                if self.swaps and not same(targs[0], targs[1]):
                    yield from _match_seq(self.args, targs[::-1], 0, b)  # x + 1 as 1 + x
            return
        if not self.args and type(self.rest) is PEach:  # every argument alike: stream them
            yield from self.rest.match_many(self.iter_items(t), b)
            return
        items = self.items(t)
        if len(items) <= len(self.args):
            return
        if self.commutative and regroups(t):
            yield from self._pick(items, 0, (), b)
            return
        # In place: a float sum folds from the left, so its arguments stay in their
        # order but for the first two (x + y is y + x, exactly).
        orders = [items]
        if self.commutative and self.args and not same(items[0], items[1]):
            orders.append([items[1], items[0], *items[2:]])
        k = self.at
        for order in orders:
            head, tail = order[:k], order[len(order) - (len(self.args) - k) :]
            for b1 in _match_seq(self.args, head + tail, 0, b):
                yield from self.rest.match_many(order[k : len(order) - len(tail)], b1)

    def _pick(self, items: list, k: int, used: tuple, b: Bindings) -> Iterator[Bindings]:
        if k == len(self.args):
            yield from self.rest.match_many([a for i, a in enumerate(items) if i not in used], b)
            return
        for i, item in enumerate(items):
            if i not in used:
                for b1 in self.args[k].match(item, b):
                    yield from self._pick(items, k + 1, (*used, i), b1)

    def build(self, b: Bindings) -> Any:
        args = []
        for p in self.args:
            value = p.build(b)
            if value is None:
                return None
            args.append(value)
        if self.rest is not None:
            more = self.rest.build_many(b)
            if more is None:
                return None
            args[self.at : self.at] = more
            if len(args) == 1:
                return args[0]  # a variadic Op of one argument is that argument
        return Term((self.op, *args))

    def explain(self, t: Any, b: Bindings) -> str:
        if type(t) is not Term:
            return f"expected a {self.op.name}(...) term, found {_show(t)}"
        if t._tuple[0] is not self.op:
            return f"expected head {self.op.name}, found {t._tuple[0]} in {_show(t)}"
        if self.rest is None:
            targs = t._tuple[1:]
            if len(targs) != len(self.args):
                hint = ""
                if len(targs) > len(self.args) and self.assoc:
                    hint = " (use a rest variable, rg.rest)"
                return (
                    f"{self.op.name} has {len(targs)} arguments in {_show(t)}, the pattern "
                    f"{len(self.args)}{hint}"
                )
            return _explain_seq(self.args, targs, b)
        items = self.items(t)
        if len(items) <= len(self.args):
            return f"{_show(t)} has {len(items)} arguments, the pattern needs at least " + str(
                len(self.args) + 1
            )
        for p in self.args:
            if not any(next(p.match(i, b), None) is not None for i in items):
                return f"no argument of {_show(t)} matches: " + p.explain(items[0], b)
        return self.rest.explain_many(items, b)


def _match_seq(ps: list, ts: Any, i: int, b: Bindings) -> Iterator[Bindings]:
    if i == len(ps):
        yield b
        return
    for b1 in ps[i].match(ts[i], b):
        yield from _match_seq(ps, ts, i + 1, b1)


def _explain_seq(ps: list, ts: Any, b: Bindings) -> str:
    """The first argument that does not match, given the bindings of those before it."""
    for p, t in zip(ps, ts):
        found = next(p.match(t, b), None)
        if found is None:
            return p.explain(t, b)
        b = found
    return "the arguments match one by one, but not all together"


def compile_pattern(pattern: Any, *, inside: frozenset = frozenset()) -> Any:
    """The matcher/builder tree of ``pattern`` (see the module docs).

    ``inside`` holds the rest variables an enclosing :class:`PEach` repeats over;
    there they stand for one item each.
    """

    if type(pattern) is Rest:
        if pattern in inside:
            return PVar(pattern)
        raise PatternError(
            f"rest variable {pattern} must be an argument of a variadic Op such as "
            "rg.add or rg.mul (rg.add(x, xs)), or inside one (rg.add(A @ xs))"
        )
    if is_lvar(pattern):
        return PVar(pattern)
    if isinstance(pattern, Var):
        raise PatternError(
            f"{pattern} is a plain kanren variable: write patterns with rg.lvars('x y')"
        )
    if type(pattern) is not Term:
        return PLit(pattern)
    op, raw = pattern._tuple[0], pattern._tuple[1:]
    rest_at = [i for i, a in enumerate(raw) if _rests(a) - inside]
    if not rest_at:
        args = [compile_pattern(a, inside=inside) for a in raw]
        return PApp(op, args, None, 0, is_commutative(op), is_associative(op))
    if getattr(op, "nin", 0) is not None:
        names = ", ".join(sorted(str(v) for a in raw for v in _rests(a)))
        raise PatternError(
            f"{op.name} takes a fixed number of arguments, so the rest variable {names} "
            "cannot be one of them (rest variables go in rg.add, rg.mul, ...)"
        )
    if len(rest_at) > 1:
        raise PatternError(f"{brief(pattern)} has two rest parts; one argument list takes one")
    k = rest_at[0]
    item = raw[k]
    rest: PRest | PEach | None = PRest(item) if type(item) is Rest else None
    if rest is None:
        rests = sorted(_rests(item) - inside, key=lambda v: v.name)
        rest = PEach(compile_pattern(item, inside=inside | frozenset(rests)), rests)
    args = [compile_pattern(a, inside=inside) for i, a in enumerate(raw) if i != k]
    return PApp(op, args, rest, k, is_commutative(op), is_associative(op))


def _rests(x: Any) -> frozenset:
    """The rest variables in ``x`` that no variadic Op inside ``x`` takes as its own."""
    if type(x) is Rest:
        return frozenset([x])
    if type(x) is Term and not x._ground and getattr(x._tuple[0], "nin", 0) is not None:
        return frozenset().union(*(_rests(a) for a in x._tuple[1:]))
    return frozenset()


def substitute_vars(pattern: Any, replace: Any) -> Any:
    """``pattern`` with each logic variable ``v`` in it (pattern variables and kanren's)
    replaced by ``replace(v)``."""
    if isinstance(pattern, Var):
        return replace(pattern)
    if type(pattern) is Term and not pattern._ground:
        return Term(tuple(substitute_vars(a, replace) for a in pattern._tuple))
    return pattern


def variables(pattern: Any) -> set[LVar]:
    """The pattern variables (rest variables included) of a pattern."""
    if is_lvar(pattern):
        return {pattern}
    if type(pattern) is Term and not pattern._ground:
        return set().union(*(variables(a) for a in pattern._tuple[1:]))
    return set()


def quick_test(compiled: Any) -> Any:
    """A function ``t -> bool``, False when ``compiled`` cannot match ``t`` because a
    fixed head or arity differs; ``None`` when the pattern fixes nothing (a variable)."""
    if not isinstance(compiled, PApp):
        return None
    key = _shape(compiled)
    if key not in _QUICK:
        _QUICK[key] = _compile_quick(compiled)
    return _QUICK[key]


_QUICK: dict = {}  # one filter per pattern shape: rules of one shape share it


def _shape(p: Any) -> Any:
    """What :func:`quick_test` tests of a pattern: heads and arities where fixed."""
    if not isinstance(p, PApp):
        return None
    if p.rest is not None:
        return (p.op,)
    if p.swaps:  # either order
        return (p.op, len(p.args), "either", tuple(_shape(a) for a in p.args))
    return (p.op, len(p.args), tuple(_shape(a) for a in p.args))


def _anything(t: Any) -> bool:
    return True


def _compile_quick(compiled: PApp) -> Any:
    lines: list[str] = ["def quick(n0):"]
    # __name__: the function's module, which pickling (dask's cloudpickle) would
    # otherwise search for among every module loaded.
    env: dict[str, Any] = {"Term": Term, "__name__": __name__}
    counter = iter(range(1, 10_000))

    def emit(p: PApp, name: str) -> None:
        k = len(env)
        env[f"op{k}"] = p.op
        lines.append(f"    if type({name}) is not Term or {name}._tuple[0] is not op{k}:")
        lines.append("        return False")
        if p.rest is not None:
            return  # the arguments' positions vary
        lines.append(f"    a_{name} = {name}._tuple")
        lines.append(f"    if len(a_{name}) != {len(p.args) + 1}:")
        lines.append("        return False")
        if p.swaps:  # either order: the arguments' own filters, both ways
            k = len(env)
            env[f"q{k}"], env[f"r{k}"] = (quick_test(a) or _anything for a in p.args)
            first, second = f"a_{name}[1]", f"a_{name}[2]"
            lines.append(f"    if not ((q{k}({first}) and r{k}({second})) or "
                         f"(q{k}({second}) and r{k}({first}))):")  # fmt: skip
            lines.append("        return False")
            return
        for i, a in enumerate(p.args, 1):
            if isinstance(a, PApp):
                child = f"n{next(counter)}"
                lines.append(f"    {child} = a_{name}[{i}]")
                emit(a, child)

    emit(compiled, "n0")
    lines.append("    return True")
    exec("\n".join(lines), env)  # noqa: S102  (code built from Op references only)
    return env["quick"]
