"""Gradients: ``rg.grad``, ``rg.value_and_grad`` and ``rg.vjp``, of terms and of
numpy functions, stabilised by the same relations as any program.

The program is rewritten first (``fast_run`` by default: ``log(1 + exp(z))`` becomes
``softplus(z)``), so that its derivative is taken of the stable form; each Op's
pullback (declared beside the Op) is applied once per node of the DAG, from the
output back (:mod:`relgraph.ops.autodiff`); the gradient is rewritten again and, on
a function, compiled with the value into one kernel.

Conventions where the derivative is not unique, as JAX's: ``maximum``/``minimum``
and ``max``/``min`` split the cotangent evenly among ties; ``abs`` has 0 at 0;
``clip`` passes it to ``x`` where ``lo <= x <= hi``; comparisons, ``sign``,
``floor``, ``ceil`` and casts to integers pass none (zero).  ``prod`` has no gradient
yet (the error says what to write); an Op without a derivative is named in a
:class:`relgraph.GradientError`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from relgraph.exceptions import GradientError
from relgraph.frontend.jit import JitFunction, jit_query, jit_rewriter
from relgraph.frontend.tracing import name_of, positional_names
from relgraph.ops.autodiff import differentiable, vjp_terms
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Constant, Symbol
from relgraph.terms.term import Term, brief

__all__ = ["grad", "value_and_grad", "vjp"]

_TERMS = (Term, Symbol, Constant)


def grad(
    f: Any,
    wrt: Symbol | Sequence[Symbol] | None = None,
    *,
    argnums: int | Sequence[int] = 0,
    include: Iterable[str] = ("fast_run",),
    exclude: Iterable[str] = (),
    require: Iterable[str] = (),
    **jit_options: Any,
) -> Any:
    """The gradient of a scalar term, or of a numpy function (compiled as ``rg.jit``).

    Parameters
    ----------
    f : Term or callable
        A term with a 0-d float result, or a function of arrays (written with numpy)
        returning one.
    wrt : Symbol or sequence of Symbol
        For a term: the symbol(s) to differentiate with respect to.  A single symbol
        gives one gradient term, a sequence a list of them.
    argnums : int or sequence of int
        For a function: which positional argument(s); an int gives the gradient, a
        sequence a tuple of gradients.
    include, exclude, require : iterable of str
        The query on ``relations.optdb`` that rewrites the program before it is
        differentiated and the gradient after (``include=()``: neither).
    **jit_options
        For a function: passed to :func:`relgraph.jit` (``compile``, ``static_argnames``...).

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> z = rg.vector("z")
    >>> rg.pprint(rg.grad(rg.sum(rg.log(1 + rg.exp(z))), z))
    'sigmoid(z)'
    >>> @rg.grad
    ... def dloss(z):
    ...     return np.sum(np.log(1 + np.exp(z)))
    >>> dloss(np.array([-800.0, 0.0, 800.0])).tolist()  # exp(z)/(1+exp(z)) is NaN at 800
    [0.0, 0.5, 1.0]
    """
    return _differentiate(f, wrt, argnums, False, (include, exclude, require), jit_options)


def value_and_grad(
    f: Any,
    wrt: Symbol | Sequence[Symbol] | None = None,
    *,
    argnums: int | Sequence[int] = 0,
    include: Iterable[str] = ("fast_run",),
    exclude: Iterable[str] = (),
    require: Iterable[str] = (),
    **jit_options: Any,
) -> Any:
    """``(value, gradient)``: as :func:`grad`, with the (rewritten) value beside it.
    On a function, both come from one compiled kernel.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> x = rg.vector("x")
    >>> value, dx = rg.value_and_grad(rg.sum(x * x), x)
    >>> rg.pprint(value), rg.pprint(dx)
    ('sum(x * x)', '(2 * x)')
    >>> f = rg.value_and_grad(lambda w, b: np.sum((w * 3.0 + b) ** 2), argnums=(0, 1))
    >>> f(np.array([1.0, 2.0]), np.float64(1.0))
    (np.float64(65.0), (array([24., 42.]), np.float64(22.0)))
    """
    return _differentiate(f, wrt, argnums, True, (include, exclude, require), jit_options)


def vjp(
    term: Any,
    wrt: Symbol | Sequence[Symbol],
    cotangent: Any,
    *,
    include: Iterable[str] = ("fast_run",),
    exclude: Iterable[str] = (),
    require: Iterable[str] = (),
) -> Any:
    """The vector-Jacobian product ``cotangent . d term / d wrt`` of a term of any
    shape: ``cotangent`` (a term, symbol or array) has ``term``'s shape.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> A, x, v = rg.matrix("A"), rg.vector("x"), rg.vector("v")
    >>> rg.pprint(rg.vjp(rg.tanh(A @ x), x, v))  # expand_as: checks it has x's shape
    'expand_as(A.T @ (v * square(reciprocal(cosh(A @ x)))), x)'
    """
    rewriter = jit_rewriter(jit_query(include, exclude, require))
    output = _checked_output(term, rewriter)
    seed = cotangent if isinstance(cotangent, _TERMS) else Constant(np.asarray(cotangent))
    want, have = typeof(output), typeof(seed)
    if have.ndim != want.ndim or any(
        a is not None and b is not None and a != b for a, b in zip(have.shape, want.shape)
    ):
        raise GradientError(
            f"the cotangent has shape {have.shape}, but {brief(term, 60)} has {want.shape}"
        )
    return _gradients(output, wrt, seed, rewriter)


def _differentiate(
    f: Any, wrt: Any, argnums: Any, value: bool, query: tuple, jit_options: dict
) -> Any:
    if isinstance(f, _TERMS):
        if wrt is None:
            raise TypeError("rg.grad of a term needs wrt: the symbol(s) to differentiate by")
        rewriter = jit_rewriter(jit_query(*query))
        output = _checked_output(f, rewriter, scalar=True)
        grads = _gradients(output, wrt, _one(output), rewriter)
        return (output, grads) if value else grads
    if isinstance(f, JitFunction):
        f = f.fn  # differentiate the numpy function it compiles
    if not callable(f):
        raise TypeError(f"rg.grad needs a term or a function, got {f!r:.80}")
    if wrt is not None:
        raise TypeError("rg.grad of a function takes argnums=, not wrt (a term's symbols)")
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums or not all(isinstance(n, int) and n >= 0 for n in nums):
        raise TypeError(f"argnums must be a non-negative int or a tuple of them, got {argnums!r}")
    names = _positional_names(f, max(nums) + 1)
    derive = _deriver(f, [names[n] for n in nums], isinstance(argnums, int), value)
    return JitFunction(f, **jit_options, query=jit_query(*query), derive=derive)


def _deriver(fn: Callable[..., Any], names: list[str], single: bool, value: bool) -> Any:
    """What :class:`JitFunction` applies to a signature's rewritten program."""

    def derive(symbols: Sequence[Symbol], program: Any) -> Any:
        by_name = {s.name: s for s in symbols}
        missing = [n for n in names if n not in by_name]
        if missing:
            raise GradientError(
                f"rg.grad of {name_of(fn)}: argument {missing[0]!r} is a Python number or "
                "static: pass an array (np.float64(...)) to differentiate with respect to it"
            )
        if not isinstance(program, _TERMS):
            raise GradientError(
                f"rg.grad of {name_of(fn)} needs one array result, got {type(program).__name__}"
            )
        output = _scalar(program, name_of(fn))
        grads = _gradients(output, [by_name[n] for n in names], _one(output), None)
        grads = grads[0] if single else tuple(grads)
        return (output, grads) if value else grads

    return derive


def _positional_names(fn: Callable[..., Any], n: int) -> list[str]:
    names = positional_names(list(inspect.signature(fn).parameters.values()), n)
    if len(names) < n:
        raise TypeError(f"argnums: {name_of(fn)} has {len(names)} positional parameters")
    return names


def _checked_output(term: Any, rewriter: Any, scalar: bool = False) -> Any:
    if not isinstance(term, _TERMS):
        raise TypeError(f"rg.grad needs a term, got {term!r:.80}")
    output = rewriter.apply(term)[0] if rewriter is not None and type(term) is Term else term
    return _scalar(output, brief(term, 60)) if scalar else _float(output, brief(term, 60))


def _scalar(output: Any, what: str) -> Any:
    if typeof(output).ndim != 0:
        raise GradientError(
            f"rg.grad needs a scalar (0-d) result, but {what} has shape "
            f"{typeof(output).shape}: sum it, or use rg.vjp with a cotangent"
        )
    return _float(output, what)


def _float(output: Any, what: str) -> Any:
    if not differentiable(output):
        raise GradientError(f"{what} is {typeof(output).dtype}: gradients need a float result")
    return output


def _one(output: Any) -> Any:
    return np.ones((), typeof(output).dtype)[()]


def _gradients(output: Any, wrt: Any, seed: Any, rewriter: Any) -> Any:
    symbols = [wrt] if isinstance(wrt, Symbol) else list(wrt)
    for s in symbols:
        if not isinstance(s, Symbol):
            raise TypeError(f"wrt must be symbols, got {s!r:.60}")
        if not differentiable(s):
            raise GradientError(
                f"{s.name} is {s.type.dtype}: gradients are taken by float symbols"
            )
    grads = vjp_terms(output, symbols, seed)
    if rewriter is not None:
        grads = [rewriter.apply(g)[0] if type(g) is Term else g for g in grads]
    return grads[0] if isinstance(wrt, Symbol) else grads
