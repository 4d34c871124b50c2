"""Indexing traced arrays: reads with integer arrays, and writes (``x[key] = v``,
``x += v``) as numpy makes them, or a clear error where a term cannot follow them.

A write replaces the traced value's term: ``np.where`` of the old values and the new
ones where ``key`` selects (:func:`written`); an in-place operator's result is cast
to the array's dtype as numpy casts it (:func:`cast_in_place`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relgraph import ops
from relgraph.exceptions import TraceError
from relgraph.frontend import numpy_api
from relgraph.terms.infer import typeof
from relgraph.terms.operators import TermOps
from relgraph.terms.term import Term

__all__ = ["is_array", "array_index", "written", "cast_in_place", "copies", "MaskedSelection",
           "is_mask", "with_in_place_operators"]  # fmt: skip

_ALL = slice(None)


def is_array(entry: Any) -> bool:
    """Whether an index entry is an array (a traced value, a term, an ndarray, a list)."""
    return isinstance(entry, (TermOps, np.ndarray, list)) or hasattr(type(entry), "__term__")


def array_index(term: Any, entries: tuple, text: str) -> Any:
    """``x[...]`` with integer arrays in the key: one axis indexed by an array
    (``x[idx]``, ``x[:, idx]``) is ``take``; one element per row
    (``x[np.arange(n), idx]``) is ``take_along_axis``."""
    ndim = typeof(term).ndim
    marks = [k for k, e in enumerate(entries) if e is None or e is Ellipsis]
    if any(entries[k] is None for k in marks) or len(marks) > 1:
        raise TraceError(f"{text}[...]: an array index with None is not supported")
    if marks:
        k = marks[0]
        entries = entries[:k] + (_ALL,) * (ndim - len(entries) + 1) + entries[k + 1 :]
    entries = entries + (_ALL,) * (ndim - len(entries))
    arrays = [k for k, e in enumerate(entries) if is_array(e)]
    index = [numpy_api.term_of(entries[k]) for k in arrays]
    if any(typeof(i).dtype == np.bool_ for i in index):
        raise TraceError(_masked_read(text))
    rest = [e for k, e in enumerate(entries) if k not in arrays]
    if len(arrays) == 1 and all(type(e) is slice and e == _ALL for e in rest):
        return ops.take(term, index[0], arrays[0])
    if arrays == [0, 1] and ndim == 2 and _counts_rows(index[0]) and typeof(index[1]).ndim == 1:
        picked = ops.take_along_axis(term, ops.expand_dims(index[1], 1), 1)
        return ops.getitem(picked, (_ALL, 0))
    raise TraceError(
        f"{text}[...]: this array index is not supported: index one axis with an array "
        "(x[idx], x[:, idx]) or pick one element per row (x[np.arange(n), idx]); "
        "np.take and np.take_along_axis say the rest"
    )


def written(term: Any, key: Any, value: Any, text: str) -> Any:
    """``term`` with ``value`` written at ``key`` (numpy's casting to its dtype)."""
    dtype = typeof(term).dtype
    value = numpy_api.term_of(value)
    if typeof(value).dtype != dtype:
        value = ops.astype(value, dtype.name)
    entries = key if isinstance(key, tuple) else (key,)
    masks = [e for e in entries if is_array(e)]
    if masks:
        mask = numpy_api.term_of(masks[0])
        if len(entries) != 1 or typeof(mask).dtype != np.bool_ or typeof(value).ndim:
            raise TraceError(
                f"{text}[...] = ...: only x[mask] = number and basic indices (slices, "
                "integers) can be written when tracing; use np.where for the rest"
            )
        return ops.where(mask, value, term)
    part = ops.getitem(term, key)
    stored = type(part) is Term and part.op is ops.getitem and len(part.args) > 1
    where_key = part.args[1] if stored else ()
    if None in where_key:
        raise TraceError(f"{text}[...] = ...: a write with None in the index is not supported")
    selected = ops.scatter_as(ops.expand_as(True, part), term, where_key)
    return ops.where(selected, ops.scatter_as(ops.expand_as(value, part), term, where_key), term)


def _counts_rows(index: Any) -> bool:
    """Whether an index is the constant ``0, 1, ..., n - 1`` (``np.arange(n)``)."""
    value = getattr(index, "value", None)
    return value is not None and value.ndim == 1 and np.array_equal(value, np.arange(len(value)))


def copies(entries: tuple, ndim: int) -> bool:
    """Whether numpy's basic index ``entries`` gives a copy (a numpy scalar: an integer
    per axis, ``x[2]`` of a vector) rather than a view of the array."""
    return len(entries) == ndim and all(
        isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in entries
    )


def cast_in_place(target: Any, result: Any, text: str) -> Any:
    """``result`` (of ``target OP value``) as numpy's in-place ``target OP= value``
    stores it: cast to ``target``'s dtype where the ``same_kind`` rule allows, in
    ``target``'s shape; numpy's error otherwise."""
    old, new = typeof(target), typeof(result)
    if not np.can_cast(new.dtype, old.dtype, "same_kind"):
        raise TypeError(
            f"{text}: Cannot cast ufunc output from dtype('{new.dtype}') to "
            f"dtype('{old.dtype}') with casting rule 'same_kind' (numpy's error)"
        )
    known = None not in old.shape and None not in new.shape
    if new.ndim != old.ndim or (known and new.shape != old.shape):
        raise ValueError(
            f"{text}: non-broadcastable output operand with shape {old.shape} doesn't "
            f"match the broadcast shape {new.shape} (numpy's error)"
        )
    return result if new.dtype == old.dtype else ops.astype(result, old.dtype.name)


def _masked_read(text: str) -> str:
    return (
        f"{text}[mask]: the result's shape depends on the values, which tracing does not "
        "know: write np.where(mask, x, 0) (or a masked sum) instead"
    )


def is_mask(entries: tuple) -> bool:
    """Whether a key is one boolean array (``x[x < 0]``)."""
    return len(entries) == 1 and is_array(entries[0]) and (
        typeof(numpy_api.term_of(entries[0])).dtype == np.bool_
    )  # fmt: skip


class MaskedSelection:
    """``x[mask]`` of a traced array, for an in-place operator with a number only
    (``x[x < 0] *= 0.1``, which writes ``np.where(mask, x * 0.1, x)``, cast as numpy
    casts): any other use is the TraceError of reading ``x[mask]``, whose size depends
    on the values."""

    __slots__ = ("base", "key", "seen", "value", "text")

    def __init__(self, base: Any, key: Any, text: str):
        self.base, self.key, self.seen, self.text = base, key, base.term, text
        self.value: Any = None  # the base's new values, once an operator has run

    def _in_place(self, ufunc: np.ufunc, other: Any, symbol: str) -> MaskedSelection:
        text = f"{self.text}[mask] {symbol}= ..."
        if typeof(numpy_api.term_of(other)).ndim:
            raise TraceError(
                f"{text}: only a number combines with x[mask] in place when tracing (the "
                "selection's size depends on the values); write np.where(mask, x OP v, x)"
            )
        current = self.seen if self.value is None else self.value
        result = ufunc(current, numpy_api.term_of(other))
        self.value = cast_in_place(self.seen, result, text)
        return self

    def written_into(self, base: Any, key: Any) -> Any:
        """The base's new values where ``base[key] = self`` ends ``base[key] OP= v``;
        None for another write."""
        same = base is self.base and key is self.key and base.term is self.seen
        if not same or self.value is None:
            return None
        return ops.where(numpy_api.term_of(self.key), self.value, self.seen)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TraceError(_masked_read(self.text))

    __term__ = __array__ = __array_ufunc__ = __array_function__ = __bool__ = _refuse
    __iter__ = __len__ = __getitem__ = __setitem__ = __neg__ = __abs__ = _refuse


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
              "or", "xor", "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne"):  # fmt: skip
    for _form in ("__{}__", "__r{}__"):
        setattr(MaskedSelection, _form.format(_name), MaskedSelection._refuse)


#: Python's in-place operators: (method name, numpy's ufunc, the operator's symbol).
IN_PLACE = (
    ("__iadd__", np.add, "+"), ("__isub__", np.subtract, "-"), ("__imul__", np.multiply, "*"),
    ("__itruediv__", np.true_divide, "/"), ("__ifloordiv__", np.floor_divide, "//"),
    ("__imod__", np.remainder, "%"), ("__ipow__", np.power, "**"),
    ("__iand__", np.bitwise_and, "&"), ("__ior__", np.bitwise_or, "|"),
    ("__ixor__", np.bitwise_xor, "^"), ("__ilshift__", np.left_shift, "<<"),
    ("__irshift__", np.right_shift, ">>"),
)  # fmt: skip


def with_in_place_operators(cls: type) -> type:
    """``cls`` with each of :data:`IN_PLACE` calling ``self._in_place(ufunc, other,
    symbol)``."""
    for name, ufunc, symbol in IN_PLACE:
        setattr(cls, name, lambda self, other, u=ufunc, s=symbol: self._in_place(u, other, s))
    return cls


with_in_place_operators(MaskedSelection)
