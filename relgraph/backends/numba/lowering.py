"""Lower a term DAG to the source of one Numba function.

The DAG is walked once.  Elementwise nodes are grouped into maximal *regions*,
each computed by one loop with no temporaries: a node is materialised (gets an
array) only if it is an output, feeds a non-elementwise Op, or is shared by two
regions, so every subterm is computed once.  Inside a region a shared node is a
scalar local.  Non-elementwise Ops give their own statement
(:mod:`relgraph.backends.numba.arrays`).

The source depends only on the structure and types of the graph, not on symbol
names, so it is also the cache key for compiled kernels.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from relgraph.backends.numba.arrays import array_code, kept_twin, parallel_code, row_loop
from relgraph.backends.numba.columns import column_folds, emit_column_loop
from relgraph.backends.numba.elementwise import libm_code, scalar_code
from relgraph.backends.numba.products import product_into
from relgraph.backends.numba.regions import (
    BROADCAST,
    emit_fused_product,
    emit_loops,
    fused_products,
)
from relgraph.backends.numba.rowloops import emit_row_loop, epilogues
from relgraph.backends.numba.scalars import (
    dtype_expr,
    is_integral,
    literal,
    scalar_source,
    strong_scalar_source,
)
from relgraph.exceptions import LoweringError
from relgraph.ops.shape import Join
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.printing import brief
from relgraph.terms.term import Term
from relgraph.terms.traverse import subterms

__all__ = ["LoweringError", "Lowered", "lower"]

PARALLEL_MIN = 1 << 16  # input elements from which the parallel kernel is used
# Nodes per kernel computed by vecmath's vectorising functions; the rest call libm.
# Each copy costs LLVM 30-60 ms to optimise (100 chained tanh, all vectorised: 2.7 s
# and 0.23 GB; 200: 7 s).
INLINED_MAX = 16


@dataclass(frozen=True)
class Lowered:
    """The generated module source, and which inputs its loops read."""

    source: str
    loop_inputs: tuple[int, ...]  # input positions read by fused loops
    out_slots: tuple[int, ...]  # output positions the kernel may write into a given buffer
    fused: tuple[Term, ...] = ()  # products whose rows regions compute (regions.py)


def lower(
    inputs: Sequence[Symbol],
    outputs: Sequence[Any],
    parallel: bool = False,
    broadcast: bool = True,
) -> Lowered:
    """Generate the module source defining ``kernel(a0, a1, ...)``.

    With ``parallel`` the outer loops are ``prange`` loops over both cores; that
    kernel takes about three times longer to compile, so it is built only when a
    large input first arrives.  Without ``broadcast``, a region that can run flat
    has only its flat loop, and raises ``ValueError(BROADCAST)`` when shapes differ.

    Examples
    --------
    >>> import relgraph as rg
    >>> x, y = rg.vector("x"), rg.vector("y")
    >>> src = lower([x, y], [rg.exp(x) * y + x], parallel=True).source
    >>> src.count("for i in prange(")  # one fused loop
    1
    """
    return _Generator(inputs, outputs, parallel, broadcast).module()


def _check_compilable(node: Term) -> None:
    """Refuse, before any code is generated, a node whose dtype Numba cannot compute."""
    dtype = typeof(node).dtype
    if dtype.kind not in "biuf" or dtype == np.float16:
        raise LoweringError(
            f"{brief(node)} computes in {dtype} (numpy's result dtype for its arguments), "
            "which compiled kernels do not support; use float32 or float64 inputs "
            "(numpy computes exp of int8, uint8 and bool in float16)"
        )


def _broadcast_dim(name: str, sizes: list[str]) -> str:
    """``name = `` the broadcast length of these sizes, through a function call: Numba's
    parallel array analysis draws wrong equalities from ``n = 1; if s != 1: n = s``
    (it gave wrong rows in a parallel softmax).  One size is its own length."""
    if len(sizes) < 2:
        return f"{name} = {sizes[0] if sizes else 1}"
    return f"{name} = kernels.broadcast_dim(({', '.join(sizes)}))"


class _Generator:
    broadcast_dim = staticmethod(_broadcast_dim)  # for the loops of other modules
    BROADCAST = BROADCAST

    def __init__(
        self, inputs: Sequence[Symbol], outputs: Sequence[Any], parallel: bool, broadcast: bool
    ):
        self.parallel = parallel
        self.broadcast = broadcast
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.names: dict[Any, str] = {s: f"a{i}" for i, s in enumerate(self.inputs)}
        self.lines: list[str] = []
        self.globals: list[str] = []
        self.leaves_seen: list[tuple[str, int]] = []
        self.static_shapes: dict[str, tuple] = {}  # leaf name -> its shape in the type
        # Elementwise outputs of ndim >= 1, and float matrix products, take a buffer
        # argument o<j>: the kernel writes into it when its shape fits (see
        # compiler.Function), else allocates.
        self.slots: dict[Term, int] = {}
        for k, out in enumerate(outputs):
            if type(out) is not Term or out in self.slots:
                continue
            if out.op.elementwise and typeof(out).ndim > 0 or product_into(out):
                self.slots[out] = k
        self.nodes = [n for out in self.outputs for n in subterms(out)]
        self.nodes = list(dict.fromkeys(self.nodes))  # distinct, children first
        for node in self.nodes:
            _check_compilable(node)
        self.readers: dict[Term, set[Term]] = {}  # node -> the nodes that read it
        for n in self.nodes:
            for a in n.args:
                if type(a) is Term:
                    self.readers.setdefault(a, set()).add(n)
        # Reductions of an elementwise region (or of an array) along its last axis run
        # in the region's own loop: the region gets no array (row softmax reads x three
        # times), and a region that reads them back can run in their rows.
        self.row_loops = {}
        for n in self.nodes:
            x = n.args[0] if n.args else None
            spec = row_loop(n.op, n) if isinstance(x, (Symbol, Constant, Term)) else None
            if spec is not None:
                self.row_loops[n] = spec
        self.column_loops = {n: f for n in self.nodes if (f := column_folds(n)) is not None}
        for n in list(self.column_loops):
            kept = kept_twin(n)
            if kept is not None and kept[0] in self.column_loops:
                del self.column_loops[n]  # reshapes its twin's vector: the program folds once
        self.materialised = self._materialised()
        vectorised = [n for n in self.nodes if _inlines(n)]
        self.inlined = set(vectorised[:INLINED_MAX])
        for loops in (self.row_loops, self.column_loops):
            for n in [n for n in loops if n.args[0] in self.materialised]:
                del loops[n]  # its operand is an array anyway
        self.arrays_ops = {n for n in self.nodes if not n.op.elementwise} - {
            *self.row_loops, *self.column_loops}  # fmt: skip
        self.epilogues = epilogues(self)
        self.fused = fused_products(self)
        self.into = self._products_into_outputs()
        self.over = self._regions_over_products()

    def _products_into_outputs(self) -> dict[Term, str]:
        """Products written straight into an output's buffer (``product_into``): an
        output's own, or one read only by the elementwise region computing that
        output, one per output (a second would overwrite the first); product ->
        buffer."""
        in_rows = set(self.epilogues.values())
        into = {}
        for k, root in enumerate(self.slots):
            if not root.op.elementwise:  # the output is the product
                into[root] = f"o{k}"
            elif root in self.materialised and root not in in_rows:
                p = next(self._products_only_read_by(root), None)
                if p is not None:
                    into[p] = f"o{k}"
        return into

    def _regions_over_products(self) -> dict[Term, Term]:
        """Regions that are no output and run in place over a product that they alone
        read (``tanh(X @ W + b)``: no second product-sized array) and whose rows they
        do not compute; root -> product."""
        regions = self.materialised - set(self.slots) - set(self.epilogues.values())
        found = {
            root: next((p for p in self._products_only_read_by(root) if p not in self.fused), None)
            for root in regions
        }
        return {root: p for root, p in found.items() if p is not None}

    def _products_only_read_by(self, root: Term) -> Iterator[Term]:
        """The float matrix products that only the region computing ``root`` reads, of
        its dtype and rank (a float32 product cannot hold a float64 ``root``)."""
        region = set(self._region(root, self.materialised))
        read = dict.fromkeys(a for n in region for a in n.args if type(a) is Term)
        t = typeof(root)
        for p in read:
            if p not in self.outputs and self.readers[p] <= region and product_into(p):
                if typeof(p).dtype == t.dtype and typeof(p).ndim == t.ndim:
                    yield p

    # -- which elementwise nodes get arrays -----------------------------------------

    def _materialised(self) -> set[Term]:
        elementwise = {n for n in self.nodes if n.op.elementwise}
        outs = {o for o in self.outputs if type(o) is Term}
        computes = elementwise | set(self.row_loops) | set(self.column_loops)  # inline
        # What a loop of higher rank reads (a scalar; log(w) of a vector beside a matrix)
        # is computed once, before it: LLVM hoists no libm call (lgamma(nu / 2) per element).
        rank = {n: typeof(n).ndim for n in self.nodes}
        chosen = {
            n
            for n in elementwise
            if n in outs
            or any(c not in computes or rank[c] > rank[n] for c in self.readers.get(n, ()))
        }
        while True:  # a node reached from two region roots is computed once, as an array
            owners: dict[Term, set[Term]] = {}
            for root in chosen:
                for n in self._region(root, chosen):
                    owners.setdefault(n, set()).add(root)
            shared = {n for n, roots in owners.items() if len(roots) > 1 and n not in chosen}
            if not shared:
                return chosen
            # Promote only the topmost shared nodes: what they contain is then
            # reached through them alone.
            inner = {m for n in shared for m in self._region(n, chosen) if m is not n}
            chosen |= shared - inner

    def _region(self, root: Term, chosen: set[Term]) -> list[Term]:
        """Elementwise nodes computed in ``root``'s loop, children first."""
        order, seen, stack = [], set(), [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if node in seen:
                continue
            seen.add(node)
            stack.append((node, True))
            for a in node.args:
                if type(a) is Term and a.op.elementwise and a not in chosen:
                    stack.append((a, False))
        return order

    # -- module --------------------------------------------------------------------

    def module(self) -> Lowered:
        in_rows = set(self.epilogues.values())  # computed in a row loop's rows
        for node in self.nodes:
            if node in in_rows:
                continue
            if node in self.materialised:
                self._emit_region(node)
            elif node in self.row_loops:
                emit_row_loop(self, node, *self.row_loops[node])
            elif node in self.column_loops:
                if node not in self.names:  # (a kept twin is)
                    emit_column_loop(self, node, self.column_loops[node])
            elif node in self.fused:
                emit_fused_product(self, node)
            elif not node.op.elementwise and node not in self.names:  # (a kept twin is)
                self._emit_array_op(node)
        # An output that only moves values (a transpose, a slice) may be a view of an
        # input or a constant: it is returned as an array of its own.  A join is one.
        results = ", ".join(
            f"{self._value(o)}.copy()"
            if typeof(o).ndim > 0
            and (isinstance(o, (Symbol, Constant)) or o.op.moves_only and type(o.op) is not Join)
            else self._value(o)
            for o in self.outputs
        )
        params = ", ".join(
            [f"a{i}" for i in range(len(self.inputs))] + [f"o{j}" for j in range(len(self.slots))]
        )
        body = "\n".join("    " + line for line in self.lines) or "    pass"
        # Only the prange loops run in parallel: Numba's other "parallel" rewrites
        # would turn the BLAS product in kernels.dot into a much slower parfor.
        parallel = (
            "{'prange': True, 'numpy': False, 'reduction': False, 'setitem': False, "
            "'stencil': False, 'fusion': False, 'comprehension': False, 'inplace_binop': False}"
            if any("prange(" in line for line in self.lines)
            else "False"
        )
        source = "\n".join(
            [
                "# Generated by relgraph.backends.numba.lowering; the source is the cache key.",
                "import math",
                "import numpy as np",
                "from numba import njit, prange",
                "from relgraph.backends.numba import intmath, kernels, linalg_kernels",
                "from relgraph.backends.numba import vecmath, vecmath32, vecspecial",
                *self.globals,
                "",
                "",
                f'@njit(cache=True, nogil=True, parallel={parallel}, error_model="numpy")',
                f"def kernel({params}):",
                body,
                f"    return ({results},)",
                "",
            ]
        )
        fused = tuple(n for n in self.nodes if n in self.fused)
        return Lowered(source, self._loop_inputs(), tuple(self.slots.values()), fused)

    def _loop_inputs(self) -> tuple[int, ...]:
        """Positions of the inputs the fused loops read, as they are or through views
        (``x[1:] * x[:-1]``: x, whose size says whether a call is large)."""
        nodes = {name: node for node, name in self.names.items()}
        read = set()
        for name, _ in self.leaves_seen:
            node = nodes.get(name)
            while type(node) is Term and node.op.moves_only:
                node = node.args[0]
            read.add(node)
        return tuple(i for i, s in enumerate(self.inputs) if s in read)

    def _name(self, node: Term) -> str:
        if node not in self.names:
            self.names[node] = f"t{len(self.names)}"
        return self.names[node]

    def _value(self, x: Any) -> str:
        """The expression for an array-level value: a name, a constant."""
        if type(x) is Term or isinstance(x, Symbol):
            if x not in self.names:
                raise LoweringError(f"{brief(x)} is not an input of the function")
            return self.names[x]
        if isinstance(x, Constant):
            if x in self.names:
                return self.names[x]
            name = self.names[x] = f"c{len(self.globals)}"
            data = x.value.tobytes().hex()
            dtype, shape = x.value.dtype.str, x.value.shape
            if not shape:  # a scalar (Numba would not read a 0-d array as one)
                self.globals.append(f"{name} = {strong_scalar_source(x.value)}")
                return name
            self.globals.append(
                f"{name} = np.frombuffer(bytes.fromhex({data!r}), {dtype!r}).reshape({shape!r})"
            )
            return name
        if isinstance(x, float) and not np.isfinite(x):
            return literal(x, np.dtype(np.float64))
        return repr(x)

    def _emit_array_op(self, node: Term) -> None:
        kept = kept_twin(node)
        if node in self.into:  # BLAS writes an output's buffer
            code = str(product_into(node)).replace("{buffer}", self.into[node])
        elif kept is not None and (kept[0] in self.arrays_ops or kept[0] in self.column_loops):
            twin, reshape = kept  # the program reduces both ways: once
            if twin in self.column_loops and twin not in self.names:
                emit_column_loop(self, twin, self.column_loops[twin])
            elif twin not in self.names:
                self._emit_array_op(twin)
            code = reshape.replace("{twin}", self.names[twin])
        else:
            code = (parallel_code(node.op, node) if self.parallel else None) or array_code(
                node.op, node
            )
        dtype = dtype_expr(typeof(node).dtype)
        operands = [self._value(a) for a in node.op.operands(node.args)]
        name = self._name(node)  # a template may fill its result in more lines
        first, *more = code.format(*operands, dtype=dtype, out=name).split("\n")
        self.lines += [f"{name} = {first}", *more]

    # -- fused elementwise regions -------------------------------------------------

    def _leaves(self, region: list[Term]) -> list[tuple[str, int]]:
        """(name, ndim) of the arrays a region reads."""
        leaves: list[tuple[str, int]] = []
        members = set(region)
        for node in region:
            for a in node.op.operands(node.args):
                if type(a) is Term and a in members:
                    continue
                if isinstance(a, (Symbol, Constant)) or type(a) is Term:
                    name, nd = self._value(a), typeof(a).ndim
                    if nd > 0 and (name, nd) not in leaves:
                        leaves.append((name, nd))
                        self.static_shapes[name] = typeof(a).shape
        self.leaves_seen.extend(leaves)
        return leaves

    def _loads(self, leaves, index: list[str], last: str, indent: str) -> tuple[dict, dict, str]:
        """How each leaf is read inside loops over ``index`` (right-aligned): generic
        loads (a broadcast axis has stride 0), loads for when no leaf broadcasts along
        the last axis (contiguous, so the loop vectorises), and that condition.  An
        axis the type knows to have length 1 is read at 0."""
        d = len(index)
        generic, fast, same = {}, {}, []
        for name, nd in leaves:
            static = self.static_shapes[name]
            g, f = [], []
            for j in range(nd):
                k = j + d - nd
                if static[j] == 1:
                    g.append("0")
                    f.append("0")
                    continue
                shape = self.shape_of(name)
                self.lines.append(f"{indent}{name}_s{j} = 0 if {shape}[{j}] == 1 else 1")
                g.append(f"{index[k]} * {name}_s{j}")
                f.append(index[k] if k == d - 1 else g[-1])
            if static[nd - 1] != 1:
                same.append(f"{self.shape_of(name)}[{nd - 1}] == {last}")
            generic[name], fast[name] = f"{name}[{', '.join(g)}]", f"{name}[{', '.join(f)}]"
        return generic, fast, " and ".join(same) or "True"

    def fast_or_generic(
        self, same: str, fill: Any, fast: dict, generic: dict, indent: str
    ) -> None:
        """``fill(fast)`` under ``if same:``, else ``fill(generic)``; in the kernel built
        without broadcasting, rows that broadcast along their last axis raise
        BROADCAST instead (the general kernel runs them)."""
        self.lines.append(f"{indent}if {same}:")
        fill(fast)
        self.lines.append(f"{indent}else:")
        if self.broadcast:
            fill(generic)
        else:
            self.lines.append(f"{indent}    raise ValueError({BROADCAST!r})")

    def shape_of(self, name: str) -> str:
        """The expression of the shape of leaf ``name`` (a fused product has no array)."""
        fused = any(self.names.get(p) == name for p in self.fused)
        return f"{name}_shape" if fused else f"{name}.shape"

    def _leaf(self, x: Any) -> list[tuple[str, int]]:
        """A leaf operand read as the only "region" value."""
        name = self._value(x)
        self.static_shapes[name] = typeof(x).shape
        self.leaves_seen.append((name, typeof(x).ndim))
        return [(name, typeof(x).ndim)]

    @staticmethod
    def op_keeps_dims(node: Term) -> bool:
        return bool(node.op.param_values(node.args).get("keepdims"))

    def _emit_region(self, root: Term) -> None:
        region = self._region(root, self.materialised)
        out_type = typeof(root)
        out = self._name(root)
        leaves = self._leaves(region)
        if out_type.ndim == 0:
            scalars = {name: name for name, _ in leaves}
            self.lines.extend(self._body(region, scalars))
            self.lines.append(f"{out} = {self._local(root)}")
            return
        emit_loops(self, root, region, leaves, out, out_type)

    def _local(self, node: Term, prefix: str = "e_") -> str:
        return f"{prefix}{self._name(node)}"

    def _body(self, region: list[Term], load: dict[str, str], prefix: str = "e_") -> list[str]:
        """Scalar statements computing each region node from loaded leaves."""
        lines = []
        members = set(region)
        for node in region:
            op = node.op
            dtype = typeof(node).dtype
            code = scalar_code(op, dtype, op.operands(node.args))
            if _inlines(node) and node not in self.inlined:
                code = libm_code(op)  # over the budget of inlined functions: libm
            if code is None:
                raise LoweringError(
                    f"Op {op!r} has no Numba lowering for {dtype} results (in {brief(node)})"
                )
            operands = op.operands(node.args)
            args = [
                self._scalar(a, members, load, node, prefix, k) for k, a in enumerate(operands)
            ]
            if dtype.kind == "f" and not op.selects:
                # numpy converts integer operands to the float loop's dtype first (a
                # uint64 beside an int64 is not wrapped into int64, as Numba does).
                args = [
                    f"{dtype_expr(dtype)}({arg})" if is_integral(a) else arg
                    for a, arg in zip(operands, args)
                ]
            if op.nin is None:  # variadic: fold the binary template
                expr = args[0]
                for a in args[1:]:
                    expr = code.format(expr, a)
            else:
                expr = code.format(*args)
            # numpy keeps small dtypes, and an expression's type in Numba can differ from
            # numpy's (sign of a uint8 is an int64 there): every value has numpy's dtype.
            expr = f"{dtype_expr(dtype)}({expr})"
            lines.append(f"{self._local(node, prefix)} = {expr}")
        return lines

    def _scalar(self, a: Any, region: set[Term], load: dict[str, str], node, prefix, k) -> str:
        if type(a) is Term and a in region:
            return self._local(a, prefix)
        if isinstance(a, (Symbol, Constant)) or type(a) is Term:
            name = self._value(a)
            return load.get(name, name)
        return scalar_source(a, node, k)


def _inlines(node: Term) -> bool:
    """Whether ``node``'s code inlines a vecmath, vecmath32 or vecspecial function."""
    if not node.op.elementwise:
        return False
    code = scalar_code(node.op, typeof(node).dtype, node.op.operands(node.args)) or ""
    return ("vecmath" in code or "vecspecial." in code) and bool(libm_code(node.op))
