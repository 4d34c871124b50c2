"""The shape relations a compiled function checks before its kernel runs, and the
checks of its arguments' dtypes, ranks and types.

Broadcasting puts dimensions into groups whose values other than 1 must agree
(union-find over (input, axis) references and known sizes); a product's inner
dimensions must be equal.  Both are flattened when the function is built, so a call
only compares a few integers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relgraph.exceptions import TypeCheckError
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term, brief
from relgraph.terms.traverse import subterms
from relgraph.unionfind import UnionFind

__all__ = [
    "shape_checks", "check_shapes", "planned_shape", "checked_array", "checked_value",
    "refuse_subclass", "checked_out", "copied_into",
]  # fmt: skip

ONE = ("size", 1)


class _Shapes:
    def __init__(self, inputs):
        self.inputs = inputs
        self.sets: UnionFind = UnionFind()
        self.where: dict = {}  # group root -> the node that joined it
        self.equalities: list = []  # (dim, dim, node) that must be equal exactly

    def find(self, d):
        return self.sets.find(d)

    def join(self, a, b, node):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.sets.union(rb, ra)
            self.where[rb] = self.where.get(rb) or self.where.get(ra) or node

    def broadcast(self, shapes, node) -> tuple:
        """numpy broadcasting of symbolic shapes: dimensions aligned from the right
        join one group; the result keeps the first of each.  A fixed size 1 fits
        any dimension, so it joins nothing: ``(n, 1) - (1, m)`` needs no n == m."""
        ndim = max((len(s) for s in shapes), default=0)
        out = []
        for k in range(ndim):
            dims = [s[k - ndim + len(s)] for s in shapes if k - ndim + len(s) >= 0]
            dims = [d for d in dims if d != ONE] or [ONE]
            for other in dims[1:]:
                self.join(dims[0], other, node)
            out.append(dims[0])
        return tuple(out)

    def shape_of(self, x, shapes):
        if type(x) is Term:
            return shapes[x]
        if isinstance(x, Symbol):
            i = self.inputs.index(x)
            return tuple(
                ("in", i, k) if d is None else ("size", d) for k, d in enumerate(x.type.shape)
            )
        if isinstance(x, Constant):
            return tuple(("size", d) for d in x.value.shape)
        return ()

    def node_shape(self, node, args):
        return node.op.symbolic_shape(self, node, args)

    def equal(self, a, b, node) -> None:
        """Dimensions ``a`` and ``b`` must be equal exactly (no broadcasting)."""
        self.equalities.append((a, b, node))

    def exact(self, a, b, node) -> None:
        """Dimension ``a`` must equal ``b`` itself: an argument's own size, even where
        broadcasting joined it to others (``expand_as(g, x)`` has x's shape)."""
        self.equalities.append((a, b, node, True))

    def from_type(self, node) -> tuple:
        """The dimensions the node's type knows; unknown ones stand for themselves."""
        return tuple(("size", d) if d is not None else ("node", id(node), k)
                     for k, d in enumerate(typeof(node).shape))  # fmt: skip

    def groups(self):
        return self.sets.groups()


def shape_checks(inputs, outputs) -> tuple[list, list, list]:
    """(groups, equalities, plans): flat descriptions of the checks a call makes, and
    per output how its shape follows from the arguments' shapes (a ``(refs, sizes)``
    group per axis, as :func:`planned_shape` reads it), or None where a size is known
    only when the kernel runs (a reshape's)."""
    sh = _Shapes(list(inputs))
    shapes: dict = {}
    for out in outputs:
        for node in subterms(out):
            if node not in shapes:
                operands = node.op.operands(node.args)
                shapes[node] = sh.node_shape(node, [sh.shape_of(a, shapes) for a in operands])
    members = sh.groups()

    def described(root):
        dims = members.get(root, {root})
        refs = tuple(sorted((d[1], d[2]) for d in dims if d[0] == "in"))
        return refs, {d[1] for d in dims if d[0] == "size"}

    groups = [
        (*described(root), sh.where.get(root))
        for root in members
        if sum(len(part) for part in described(root)) > 1
    ]

    def own(d):
        if d[0] == "in":
            return ((d[1], d[2]),), set()
        return ((), {d[1]}) if d[0] == "size" else described(sh.find(d))

    # A dimension only a node's run knows (a slice of an unknown length) is not checked.
    equalities = []
    for a, b, node, *exact in sh.equalities:
        pair = described(sh.find(a)), own(b) if exact else described(sh.find(b))
        if (exact or sh.find(a) != sh.find(b)) and all(map(any, pair)) and pair[0] != pair[1]:
            equalities.append((*pair, node))
    plans = []
    for out in outputs:
        axes = [described(sh.find(d)) for d in sh.shape_of(out, shapes)]
        plans.append(None if any(not (r or s) for r, s in axes) else tuple(axes))
    return groups, equalities, plans


def planned_shape(plan: tuple, shapes: list) -> tuple[int, ...]:
    """The shape an output plan of :func:`shape_checks` gives for arguments of these
    shapes (which passed :func:`check_shapes`)."""
    return tuple(_group_value(refs, sizes, shapes, (), None) for refs, sizes in plan)


def _group_value(refs, sizes, shapes, inputs, node):
    """The size a group of broadcast dimensions stands for (raising if they clash)."""
    value = 1
    for size in sizes:
        if size != 1:
            value = size
    for i, axis in refs:
        v = shapes[i][axis]
        if v != 1:
            if value != 1 and v != value:
                raise TypeCheckError(_mismatch(refs, sizes, shapes, inputs, node))
            value = v
    return value


def _mismatch(refs, sizes, shapes, inputs, node) -> str:
    parts = [f"axis {a} of {inputs[i].name} is {shapes[i][a]}" for i, a in refs]
    parts += [f"a fixed size {s}" for s in sorted(sizes)]
    return f"shapes do not fit in {brief(node)}: " + ", ".join(parts)


def check_shapes(groups, equalities, shapes, inputs) -> None:
    for refs, sizes, node in groups:
        _group_value(refs, sizes, shapes, inputs, node)
    for (ra, sa), (rb, sb), node in equalities:
        a = _group_value(ra, sa, shapes, inputs, node)
        b = _group_value(rb, sb, shapes, inputs, node)
        if a != b:
            raise TypeCheckError(_mismatch(ra + rb, sa | sb, shapes, inputs, node))


# --- arguments --------------------------------------------------------------------------


def refuse_subclass(what: str, value: Any) -> None:
    """Refuse an ndarray subclass: a masked array's mask, ``np.matrix``'s ``*`` would be
    silently dropped by kernels that see only the data."""
    if isinstance(value, np.ndarray) and type(value) is not np.ndarray:
        raise TypeError(
            f"{what} is a {type(value).__module__}.{type(value).__name__}: compiled "
            "kernels would drop its meaning (a mask, matrix products); pass a plain "
            "np.ndarray (np.asarray, or .filled() for a masked array)"
        )


def checked_value(symbol: Symbol, value: Any) -> Any:
    t = symbol.type
    refuse_subclass(f"argument {symbol.name!r}", value)
    if isinstance(value, (bool, int, float, complex)) and t.ndim == 0:
        return np.asarray(value, dtype=t.dtype)[()]
    arr = checked_array(symbol, np.asarray(value))
    return arr[()] if t.ndim == 0 else arr


def checked_array(symbol: Symbol, arr: Any) -> Any:
    """``arr`` (a numpy or dask array) checked against the symbol's rank and fixed
    sizes, and cast to its dtype if that is safe; an unknown size (NaN) passes."""
    t = symbol.type
    if arr.ndim != t.ndim:
        raise TypeCheckError(
            f"argument {symbol.name!r} must be {t.ndim}-d, got an array of shape {arr.shape}"
        )
    if arr.dtype != t.dtype:
        if not np.can_cast(arr.dtype, t.dtype, casting="safe"):
            raise TypeCheckError(
                f"argument {symbol.name!r} is {t.dtype}; cannot safely cast {arr.dtype} to it"
            )
        arr = arr.astype(t.dtype)
    for axis, (want, got) in enumerate(zip(t.shape, arr.shape)):
        if want is not None and got == got and want != got:
            raise TypeCheckError(
                f"argument {symbol.name!r} must have shape {t.shape}: axis {axis} is {got}"
            )
    return arr


def checked_out(out: Any, values: list, inputs: tuple, out_types: list, single: bool) -> list:
    """A call's ``out=`` as one entry per output (of ``out_types``; the array alone
    for a ``single`` output), checked before any kernel runs: dtype, rank, layout, and
    no memory shared with an argument or another entry."""
    outs = [out] if single else list(out)
    if len(outs) != len(out_types):
        raise TypeError(f"out= needs {len(out_types)} entries, one per output")
    given: list[Any] = []
    for k, (o, t) in enumerate(zip(outs, out_types)):
        if o is None:
            continue
        if type(o) is not np.ndarray or o.dtype != t.dtype or o.ndim != t.ndim:
            raise TypeCheckError(
                f"out[{k}] must be a {t.ndim}-d {t.dtype} array, got {_describe(o)}"
            )
        if not (o.flags.writeable and o.flags.c_contiguous):
            raise TypeCheckError(f"out[{k}] must be a writeable C-contiguous array")
        for i, v in enumerate(values):
            if isinstance(v, np.ndarray) and np.may_share_memory(o, v):
                raise TypeCheckError(
                    f"out[{k}] shares memory with argument {inputs[i].name!r}: the "
                    "kernel would overwrite an input it still reads"
                )
        for j, other in given:
            if np.may_share_memory(o, other):
                raise TypeCheckError(f"out[{k}] shares memory with out[{j}]")
        given.append((k, o))
    return outs


def _describe(x: Any) -> str:
    return f"a {x.ndim}-d {x.dtype} array" if isinstance(x, np.ndarray) else type(x).__name__


def copied_into(outs: list, results: list) -> list:
    """``results`` with each one that has an ``out=`` array (``outs``: None where not)
    copied into it, once every shape is checked (nothing is written otherwise)."""
    for k, (o, r) in enumerate(zip(outs, results)):
        if o is not None and o.shape != np.shape(r):
            raise TypeCheckError(
                f"out[{k}] has shape {o.shape}, but output {k} has shape {np.shape(r)}"
            )
    for k, (o, r) in enumerate(zip(outs, results)):
        if o is None or o is r:
            continue
        np.copyto(o, r)
        results[k] = o
    return results
