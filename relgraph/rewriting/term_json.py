"""Programs and rewrite reports as JSON data: what the rewrite cache keeps on disk.

Reading data never runs code (unlike a pickle): an Op is found by its name in a
relgraph module, a symbol, constant or scalar is rebuilt from its dtype and values,
and a report from its fields.  A term is stored as the rows of its distinct nodes,
children first, so a shared subterm is written once and a deep term needs no
recursion.

>>> import relgraph as rg
>>> x = rg.vector("x", "float32")
>>> t = rg.exp(x) + rg.exp(x) * -0.0
>>> loads(dumps(t)) == t
True
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from typing import Any

import numpy as np

from relgraph.ops.base import Op
from relgraph.rewriting.report import Application, RewriteReport, RuleStats
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term
from relgraph.terms.traverse import subterms
from relgraph.terms.types import TensorType

__all__ = ["dumps", "loads", "Unstorable"]

_RECORDS = {cls.__name__: cls for cls in (RewriteReport, RuleStats, Application)}


class Unstorable(ValueError):
    """A value the data format has no form for (an Op not defined in a module)."""


def dumps(value: Any) -> bytes:
    """``value`` (a program, a tuple of them, a report) as JSON bytes."""
    nodes: dict[Term, int] = {}
    rows: list[list] = []
    top = _encode(value, nodes, rows)
    return json.dumps({"rows": rows, "value": top}, allow_nan=False).encode()


def loads(data: bytes) -> Any:
    """The value :func:`dumps` wrote (ValueError if ``data`` is not such a value)."""
    try:
        doc = json.loads(data)
        nodes: list[Term] = []
        for row in doc["rows"]:
            head, *args = row
            nodes.append(Term((_op(head), *(_decode(a, nodes) for a in args))))
        return _decode(doc["value"], nodes)
    except (KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ValueError(f"not a stored value: {exc!r}") from None


def _encode(x: Any, nodes: dict, rows: list) -> Any:
    if type(x) is Term:
        if x not in nodes:
            for node in subterms(x):  # children first: each child has its row already
                if node not in nodes:
                    head, *args = node._tuple
                    rows.append([_head(head), *(_encode(a, nodes, rows) for a in args)])
                    nodes[node] = len(rows) - 1
        return {"n": nodes[x]}
    if x is None or type(x) in (bool, int, str):
        return x
    if type(x) is float:
        return {"f": x.hex()}  # exact, and inf, nan and -0.0 too
    if type(x) is complex:
        return {"c": [x.real.hex(), x.imag.hex()]}
    if isinstance(x, np.generic):
        return {"g": [x.dtype.str, x.tobytes().hex()]}
    if isinstance(x, (tuple, list)):
        return {"t" if type(x) is tuple else "l": [_encode(a, nodes, rows) for a in x]}
    if isinstance(x, Symbol):
        return {"S": [x.name, x.type.dtype.str, list(x.type.shape)]}
    if isinstance(x, Constant):
        v = np.ascontiguousarray(x.value)
        return {"C": [v.dtype.str, list(v.shape), v.tobytes().hex()]}
    if type(x) is slice:
        return {"sl": [_encode(p, nodes, rows) for p in (x.start, x.stop, x.step)]}
    if x is Ellipsis:
        return {"E": 0}
    if type(x).__name__ in _RECORDS and type(x) is _RECORDS[type(x).__name__]:
        fields = {f.name: _encode(getattr(x, f.name), nodes, rows) for f in dataclasses.fields(x)}
        return {"R": [type(x).__name__, fields]}
    raise Unstorable(f"no data form for {type(x).__name__} {x!r:.60}")


def _decode(x: Any, nodes: list) -> Any:
    if not isinstance(x, dict):
        return x
    ((tag, v),) = x.items()
    if tag == "n":
        return nodes[v]
    if tag == "f":
        return float.fromhex(v)
    if tag == "c":
        return complex(float.fromhex(v[0]), float.fromhex(v[1]))
    if tag == "g":
        return np.frombuffer(bytes.fromhex(v[1]), np.dtype(v[0]))[0]
    if tag in ("t", "l"):
        items = [_decode(a, nodes) for a in v]
        return tuple(items) if tag == "t" else items
    if tag == "S":
        name, dtype, shape = v
        return Symbol(name, TensorType(np.dtype(dtype), len(shape), tuple(shape)))
    if tag == "C":
        dtype, shape, data = v
        return Constant(np.frombuffer(bytes.fromhex(data), np.dtype(dtype)).reshape(shape))
    if tag == "sl":
        return slice(*(_decode(p, nodes) for p in v))
    if tag == "E":
        return Ellipsis
    if tag == "R":
        name, fields = v
        return _RECORDS[name](**{k: _decode(a, nodes) for k, a in fields.items()})
    raise ValueError(f"unknown tag {tag!r}")


def _head(op: Any) -> list[str]:
    """Where ``op`` is found by its name: its class's module, or :mod:`relgraph.ops`
    (which holds every built-in Op, ``Elemwise`` ones of several modules)."""
    module = type(op).__module__
    name: str = op.name if isinstance(op, Op) else ""
    for where in (module, "relgraph.ops"):
        if name and getattr(sys.modules.get(where), name, None) is op:
            return [where, name]
    raise Unstorable(f"the Op {op!r} is not found by its name in {module}")


def _op(head: list) -> Op:
    module, name = head
    if not (module == "relgraph" or module.startswith("relgraph.")):
        mod = sys.modules.get(module)  # a user's module: only if already imported
    else:
        mod = importlib.import_module(module)
    op = getattr(mod, name, None)
    if not isinstance(op, Op):
        raise ValueError(f"{module}.{name} is not an Op")
    return op
