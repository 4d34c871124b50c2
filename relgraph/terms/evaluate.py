"""The numpy reference evaluator: what every rewrite is checked against."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from relgraph.exceptions import TypeCheckError
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term
from relgraph.terms.traverse import subterms

__all__ = ["evaluate", "evaluate_all"]


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
    return evaluate_all([term], inputs)[0]


def evaluate_all(terms: Sequence[Any], inputs: Mapping[Symbol, Any]) -> list[Any]:
    """:func:`evaluate` of each of ``terms``, computing what they share once.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> x = rg.vector("x")
    >>> evaluate_all([rg.exp(x) + 1.0, rg.exp(x) * 2.0], {x: np.zeros(2)})
    [array([2., 2.]), array([2., 2.])]
    """
    values: dict[Term, Any] = {}
    with np.errstate(all="ignore"):
        for term in terms:
            for node in subterms(term):
                if node in values:
                    continue
                args = [
                    values[a] if type(a) is Term else _leaf_value(a, inputs)
                    for a in node._tuple[1:]
                ]
                values[node] = node._tuple[0].perform(*args)
    return [values[t] if type(t) is Term else _leaf_value(t, inputs) for t in terms]


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
