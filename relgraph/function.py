"""``rg.function``: compile terms into one Numba kernel and call it safely.

Arguments are checked against the symbols' types before any kernel runs (count,
safe dtype casts, ndim, known shapes, and the shape relations the graph implies,
e.g. the inner dimensions of a product).  Kernels are cached by their generated
source: in memory, and on disk across processes (``RELGRAPH_CACHE_DIR``, default
``~/.cache/relgraph``), where Numba keeps the compiled machine code.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from relgraph.exceptions import TypeCheckError
from relgraph.lowering import lower
from relgraph.ops import Dot, Elemwise, Reduce, Transpose
from relgraph.printing import brief
from relgraph.term import Constant, Symbol, Term, as_term, subterms, typeof

__all__ = ["function", "Function", "cache_dir"]

# Compiled kernels by source, and lowered graphs by (inputs, outputs): caches
# are the point of this module, so they live as long as the process.
_KERNELS: dict[str, Callable] = {}
_FUNCTIONS: dict[tuple, Function] = {}


def cache_dir() -> Path:
    """Where generated kernels and Numba's compiled code are kept on disk."""
    root = os.environ.get("RELGRAPH_CACHE_DIR") or Path.home() / ".cache" / "relgraph"
    return Path(root) / "kernels"


def function(inputs: Sequence[Symbol], outputs: Any) -> Function:
    """Compile ``outputs`` (a term or a list of terms) as a function of ``inputs``.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> f = rg.function([A, x, y], A @ x + rg.exp(y))
    >>> f(np.eye(2), np.array([1.0, 2.0]), np.zeros(2))
    array([2., 3.])
    >>> f(np.eye(2), np.array([1.0, 2.0]), np.zeros(3))
    Traceback (most recent call last):
    ...
    relgraph.exceptions.TypeCheckError: shapes do not fit in ((A @ x) + exp(y)): dimension 2 ...
    """
    single = not isinstance(outputs, (list, tuple))
    outs = tuple(_checked_term(o) for o in ([outputs] if single else outputs))
    ins = tuple(inputs)
    for s in ins:
        if not isinstance(s, Symbol):
            raise TypeError(f"inputs must be symbols, got {s!r}")
    if len(set(ins)) != len(ins):
        raise TypeError(f"an input symbol is listed twice: {[s.name for s in ins]}")
    key = (ins, outs, single)
    found = _FUNCTIONS.get(key)
    if found is None:
        found = _FUNCTIONS[key] = Function(ins, outs, single)
    return found


def _checked_term(t: Any) -> Any:
    term = as_term(t)
    if term is None:
        raise TypeCheckError(f"cannot compile {t}: it contains a logic variable")
    typeof(term)
    return term


class Function:
    """A compiled function of some symbols; call it with numpy arrays."""

    def __init__(self, inputs: tuple[Symbol, ...], outputs: tuple[Any, ...], single: bool):
        missing = _free_symbols(outputs) - set(inputs)
        if missing:
            names = ", ".join(sorted(s.name for s in missing))
            raise TypeCheckError(f"the outputs use symbols that are not inputs: {names}")
        self.inputs, self.outputs, self.single = inputs, outputs, single
        self.source = lower(inputs, outputs).source
        self.kernel = _compile(self.source)
        self.constraints = _shape_constraints(inputs, outputs)
        # Numba returns 0-d results as Python scalars: restore their dtype.
        self.scalar_dtypes = [t.dtype if t.ndim == 0 else None for t in map(typeof, outputs)]

    def __repr__(self) -> str:
        args = ", ".join(s.name for s in self.inputs)
        outs = ", ".join(brief(o, 60) for o in self.outputs)
        return f"Function(({args}) -> {outs})"

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.inputs):
            names = ", ".join(s.name for s in self.inputs)
            raise TypeError(f"expected {len(self.inputs)} arguments ({names}), got {len(args)}")
        values = [_checked_value(s, a) for s, a in zip(self.inputs, args)]
        shapes = [np.shape(v) for v in values]
        for check in self.constraints:
            check(shapes)
        results = self.kernel(*values)
        results = tuple(
            r if dtype is None else np.asarray(r, dtype)
            for r, dtype in zip(results, self.scalar_dtypes)
        )
        return results[0] if self.single else list(results)


def _free_symbols(outputs: Sequence[Any]) -> set[Symbol]:
    found = {o for o in outputs if isinstance(o, Symbol)}
    for out in outputs:
        for node in subterms(out):
            found.update(a for a in node.args if isinstance(a, Symbol))
    return found


def _checked_value(symbol: Symbol, value: Any) -> Any:
    t = symbol.type
    if isinstance(value, (bool, int, float, complex)) and t.ndim == 0:
        return np.asarray(value, dtype=t.dtype)[()]
    arr = np.asarray(value)
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
        if want is not None and want != got:
            raise TypeCheckError(
                f"argument {symbol.name!r} must have shape {t.shape}: axis {axis} is {got}"
            )
    return arr[()] if t.ndim == 0 else arr


def _compile(source: str) -> Callable:
    found = _KERNELS.get(source)
    if found is not None:
        return found
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"k_{digest}.py"
    if not path.exists():  # never rewrite: Numba's disk cache is keyed on the file
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)
    name = f"relgraph_kernel_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _KERNELS[source] = module.kernel
    return module.kernel


# --- shape relations checked before the kernel runs ---------------------------------
# A dimension is an int (known), ("in", i, axis) (axis of input i) or ("bc", d, e)
# (the broadcast of two dimensions).


def _shape_constraints(inputs, outputs) -> list[Callable]:
    index = {s: i for i, s in enumerate(inputs)}
    shapes: dict[Any, tuple] = {}
    checks: list[Callable] = []

    def shape_of(x):
        if type(x) is Term:
            return shapes[x]
        if isinstance(x, Symbol):
            return tuple(
                d if d is not None else ("in", index[x], k) for k, d in enumerate(x.type.shape)
            )
        if isinstance(x, Constant):
            return x.value.shape
        return ()

    for out in outputs:
        for node in subterms(out):
            if node in shapes:
                continue
            arg_shapes = [shape_of(a) for a in node.args]
            shapes[node] = _node_shape(node, arg_shapes, checks, inputs)
    return checks


def _node_shape(node, arg_shapes, checks, inputs) -> tuple:
    op = node.op
    if isinstance(op, Elemwise):
        ndim = max(len(s) for s in arg_shapes)
        out = []
        for k in range(ndim):
            dims = [s[k - ndim + len(s)] for s in arg_shapes if k - ndim + len(s) >= 0]
            dim = dims[0]
            for other in dims[1:]:
                if other != dim:
                    checks.append(_check(node, dim, other, inputs, broadcast=True))
                    dim = ("bc", dim, other)
            out.append(dim)
        return tuple(out)
    if isinstance(op, Dot):
        a, b = arg_shapes
        if a[-1] != b[0]:
            checks.append(_check(node, a[-1], b[0], inputs, broadcast=False))
        return a[:-1] + b[1:]
    if isinstance(op, Transpose):
        return arg_shapes[0][::-1]
    if isinstance(op, Reduce):
        x = arg_shapes[0]
        if len(node.args) == 1 or typeof(node).ndim == 0:
            return ()
        axis = node.args[1]
        axes = {a % len(x) for a in (axis if isinstance(axis, tuple) else (axis,))}
        return tuple(d for k, d in enumerate(x) if k not in axes)
    return tuple(typeof(node).shape)


def _value(dim, shapes) -> int:
    if isinstance(dim, int):
        return dim
    if dim[0] == "in":
        return shapes[dim[1]][dim[2]]
    a, b = _value(dim[1], shapes), _value(dim[2], shapes)
    return b if a == 1 else a


def _describe(dim, inputs) -> str:
    if isinstance(dim, int):
        return "a constant"
    if dim[0] == "in":
        return f"axis {dim[2]} of {inputs[dim[1]].name}"
    return f"the broadcast of {_describe(dim[1], inputs)} and {_describe(dim[2], inputs)}"


def _check(node, d1, d2, inputs, broadcast: bool) -> Callable:
    def check(shapes) -> None:
        a, b = _value(d1, shapes), _value(d2, shapes)
        if a == b or (broadcast and (a == 1 or b == 1)):
            return
        raise TypeCheckError(
            f"shapes do not fit in {brief(node)}: dimension {a} ({_describe(d1, inputs)}) "
            f"vs {b} ({_describe(d2, inputs)})"
        )

    return check
