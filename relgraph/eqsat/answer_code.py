"""A compiled rule's right-hand side as straight-line code: looked up and added on
class ids without walking the pattern.

:class:`~relgraph.eqsat.compiled.CompiledRule` runs its right-hand side twice per
match: once when it is found (is the answer in the graph already, which type has it,
is every e-node it makes pure) and once when it is applied (add its e-nodes).  Both
walks are emitted here as one Python function each, part by part in post-order (the
operands before the e-node over them), as :mod:`relgraph.eqsat.compiled` emits its
left-hand side's matcher: no interpreting of the pattern per match, and no test that
the pattern decides (a variable's class always exists).

A right-hand side is given compiled (see :func:`program`): ``(VAR, slot)``,
``(LIT, value, leaf key, type, constant or None)`` or ``(APP, op, operands,
params)``.

>>> import relgraph as rg
>>> from relgraph.rewriting.patterns import compile_pattern
>>> x = rg.lvar("x")
>>> prog = program(compile_pattern(rg.exp(x) * 2.0), {x: 0})
>>> prog[0] == APP and [part[0] for part in prog[2]] == [APP, LIT]
True
>>> [f.__name__ for f in answer_code(prog)]
['walk', 'add']
"""

from __future__ import annotations

from typing import Any

from relgraph.eqsat.egraph import is_constant, leaf_key
from relgraph.rewriting.patterns import PLit, PVar
from relgraph.rewriting.promotion import constant_operand
from relgraph.terms.infer import typeof
from relgraph.terms.term import Term

__all__ = ["VAR", "LIT", "APP", "program", "answer_code", "Source"]

VAR, LIT, APP = 0, 1, 2


def program(p: Any, slots: dict) -> tuple:
    """Pattern ``p`` compiled, its variables by their slots in the bindings."""
    if isinstance(p, PVar):
        return (VAR, slots[p.var])
    if isinstance(p, PLit):
        constant = p.value if is_constant(p.value) else None
        return (LIT, p.value, leaf_key(p.value), typeof(p.value), constant)
    nin = p.op.nin
    operands = p.args if nin is None else p.args[:nin]
    params = tuple(lit.value for lit in ([] if nin is None else p.args[nin:]))
    return (APP, p.op, tuple(program(a, slots) for a in operands), params)


def answer_code(prog: tuple) -> tuple[Any, Any]:
    """The two functions of right-hand side ``prog``:

    * ``walk(b, m, memo, find, classes)``: the answer under bindings ``b`` as the
      graph has it, ``(root class or None, root type, classes below the root,
      e-nodes)``, each e-node ``(key or None for a new one, op, operand parts, type,
      whether it is pure)``, operands first.  ``m`` is the search phase's
      :class:`~relgraph.eqsat.compiled.ClassMatcher`: ``m.part(cid)`` gives a bound
      class as ``(class, type, constant or None)``, ``m.inferred(op, parts, params)``
      a new e-node's type (raising ``TypeCheckError``), ``m.is_pure`` and
      ``m.is_pure_new`` whether an e-node is pure.
    * ``add(g, b, types)``: the answer added to graph ``g`` (``types``: of its
      e-nodes, as ``walk`` found them), ``(class, root key, proof id as written)``.
    """
    return _Walker().function(prog), _Adder().function(prog)


class Source:
    """Lines of one generated function, and the values its names stand for (the
    right-hand sides here, and the left-hand sides' matchers of
    :mod:`relgraph.eqsat.compiled`)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"__name__": __name__}
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}{self.count}"

    def const(self, value: Any) -> str:
        name = self.name("k_")
        self.env[name] = value
        return name

    def line(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def compiled(self, header: str, result: str) -> Any:
        source = "\n".join([header, *self.lines, f"    return {result}"])
        exec(source, self.env)  # noqa: S102  (code built from a pattern's Ops and literals)
        return self.env[header.split()[1].split("(")[0]]


class _Walker(Source):
    def function(self, prog: tuple) -> Any:
        self.env.update(constant_operand=constant_operand, of_ground=Term.of_ground)
        self.line(1, "below, nodes = [], []")
        self.line(1, "part, inferred = m.part, m.inferred")
        self.line(1, "is_pure, is_pure_new = m.is_pure, m.is_pure_new")
        c, t, _, _ = self._part(prog, top=True)
        return self.compiled("def walk(b, m, memo, find, classes):", f"{c}, {t}, below, nodes")

    def _part(self, p: tuple, top: bool = False) -> tuple[str, str, str, bool]:
        """Emit part ``p``: the names of its class, type and constant, and whether
        its class always exists."""
        n = self.name("")
        c, t, k = f"c{n}", f"t{n}", f"k{n}"
        if p[0] == VAR:
            self.line(1, f"{c}, {t}, {k} = part(b[{p[1]}])")
            exists = True
        elif p[0] == LIT:
            found = f"f{n}"
            self.line(1, f"{found} = memo.get({self.const(p[2])})")
            self.line(1, f"{c} = None if {found} is None else find({found})")
            self.line(1, f"{t}, {k} = {self.const(p[3])}, {self.const(p[4])}")
            exists = False
        else:
            self._node(p, c, t, k)
            exists = False
        if not top:
            if exists:
                self.line(1, f"below.append({c})")
            else:
                self.line(1, f"if {c} is not None:")
                self.line(2, f"below.append({c})")
        return c, t, k, exists

    def _node(self, p: tuple, c: str, t: str, k: str) -> None:
        _, op, operands, params = p
        kids = [self._part(a) for a in operands]
        op_, params_ = self.const(op), self.const(params)
        parts = "(" + "".join(f"({kc}, {kt}, {kk}), " for kc, kt, kk, _ in kids) + ")"
        self.line(1, f"{k} = None")  # a part of constants is one (``-1`` is ``neg(1)``)
        constants = " and ".join(f"{kk} is not None" for _, _, kk, _ in kids) or "True"
        self.line(1, f"if {constants}:")
        args = "".join(f"{kk}, " for _, _, kk, _ in kids)
        self.line(2, f"{k} = constant_operand(of_ground(({op_}, {args}*{params_})))")
        self.line(1, f"{c} = None")
        maybe = [kc for kc, _, _, exists in kids if not exists]
        indent = 1
        if maybe:
            self.line(1, f"if {' and '.join(f'{m} is not None' for m in maybe)}:")
            indent = 2
        key, found = f"key{c[1:]}", f"found{c[1:]}"
        children = "(" + "".join(f"{kc}, " for kc, _, _, _ in kids) + ")"
        self.line(indent, f"{key} = ({op_}, {children}, {params_})")
        self.line(indent, f"{found} = memo.get({key})")
        self.line(indent, f"if {found} is not None:")
        self.line(indent + 1, f"{c} = find({found})")
        self.line(indent + 1, f"{t} = classes[{c}].type")
        self.line(indent + 1, f"nodes.append(({key}, {op_}, {parts}, {t}, is_pure({key})))")
        self.line(1, f"if {c} is None:")
        self.line(2, f"{t} = inferred({op_}, {parts}, {params_})")
        pure = f"is_pure_new({op_}, {t}, {parts})"
        self.line(2, f"nodes.append((None, {op_}, {parts}, {t}, {pure}))")


class _Adder(Source):
    def function(self, prog: tuple) -> Any:
        self.line(1, "types = iter(types)")
        result = self._part(prog)
        return self.compiled("def add(g, b, types):", "({}, {}, {})".format(*result))

    def _part(self, p: tuple) -> tuple[str, str, str]:
        """Emit the adding of part ``p``: the names of its class, key and proof id."""
        n = self.name("")
        c, key, pid = f"c{n}", f"key{n}", f"pid{n}"
        if p[0] == VAR:
            self.line(1, f"{c} = g.find(b[{p[1]}])")
            self.line(1, f"{key}, {pid} = ('class', {c}), g.shown_class_id(b[{p[1]}])")
        elif p[0] == LIT:
            self.line(1, f"{c}, {pid} = g.add_leaf({self.const(p[1])})")
            self.line(1, f"{key} = {self.const(p[2])}")
        else:
            _, op, operands, params = p
            kids = [self._part(a) for a in operands]
            op_, params_ = self.const(op), self.const(params)
            classes = "(" + "".join(f"{kc}, " for kc, _, _ in kids) + ")"
            pids = "(" + "".join(f"{kp}, " for _, _, kp in kids) + ")"
            self.line(1, f"{key} = ({op_}, {classes}, {params_})")
            written = f"({op_}, {pids}, {params_})"
            self.line(1, f"{c}, {pid} = g.add_node({key}, {written}, next(types))")
        return c, key, pid
