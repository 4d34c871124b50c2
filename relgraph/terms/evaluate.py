"""The numpy reference evaluator: what every rewrite is checked against."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from relgraph.exceptions import TypeCheckError
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term
from relgraph.terms.traverse import subterms

__all__ = ["evaluate"]


def evaluate(term: Any, inputs: Mapping[Symbol, Any]) -> Any:
    """Evaluate a term with numpy, given a value for each symbol.

    Shared subterms are computed once; the walk is iterative.  Floating point
    warnings are silenced: a NaN or inf result is a result.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> evaluate(A @ (x + y), {A: np.eye(2), x: np.ones(2), y: np.arange(2.0)})
    array([1., 2.])
    """
    values: dict[Term, Any] = {}
    with np.errstate(all="ignore"):
        for node in subterms(term):
            args = [
                values[a] if type(a) is Term else _leaf_value(a, inputs) for a in node._tuple[1:]
            ]
            values[node] = node._tuple[0].perform(*args)
    if type(term) is Term:
        return values[term]
    return _leaf_value(term, inputs)


def _leaf_value(x: Any, inputs: Mapping[Symbol, Any]) -> Any:
    if isinstance(x, Symbol):
        if x not in inputs:
            raise KeyError(f"no value given for symbol {x.name!r}")
        value = np.asarray(inputs[x])
        if value.ndim != x.type.ndim:
            raise TypeCheckError(
                f"symbol {x.name!r} is {x.type.ndim}-d, got a value of shape {value.shape}"
            )
        return value
    if isinstance(x, Constant):
        return x.value
    return x
