"""scipy's functions that numpy's protocols do not reach, as traced code sees them.

``scipy.special.ndtr`` is a ufunc, so a traced value passes through it as through
``np.exp``.  ``scipy.special.logsumexp``, ``scipy.stats.norm.logpdf`` or
``scipy.linalg.solve_triangular`` are Python code that converts its arguments to
numpy arrays, which a traced value cannot become.  Numba's answer is to resolve a
jitted function's globals when it compiles; tracing does the same: :func:`with_twins`
gives the traced function (and the functions of the user's own it calls) a copy of its
globals in which these names stand for their *twins*, written here with numpy on the
traced values, with scipy's formulas and so scipy's values.  Nothing outside the trace
changes: not scipy, not the function's module.

A twin called without a traced argument calls scipy itself.  What a twin cannot
follow (``logsumexp(a, b=w)``, ``norm.ppf``) is an :class:`UnsupportedError` naming
it and what to write instead.  scipy.linalg's twins compute as with
``check_finite=False``: an infinity or a NaN gives LAPACK's values (as numpy.linalg
does), where scipy's default check raises ``ValueError``.

Examples
--------
>>> import numpy as np, relgraph as rg
>>> from scipy.special import logsumexp
>>> def nll(z, y):
...     return np.mean(logsumexp(z, axis=1) - np.sum(z * y, axis=1))
>>> rg.pprint(rg.trace(nll, rg.matrix("z"), rg.matrix("y")))
'mean(logsumexp(z, axis=1) - sum(z * y, axis=1))'
"""

from __future__ import annotations

import dis
import math
import os
import sys
import sysconfig
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special

from relgraph import ops
from relgraph.exceptions import UnsupportedError
from relgraph.frontend import numpy_api

__all__ = ["with_twins"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)  # scipy's _norm_pdf_logC
_SQRT_2PI = math.sqrt(2 * math.pi)


def _traced(*values: Any) -> bool:
    return any(hasattr(type(v), "__term__") for v in values)


def _on_terms(op: Any, *args: Any) -> Any:
    """``op`` on the terms of ``args``, as a traced value (of the type the traced
    arguments have: :mod:`relgraph.frontend.tracing` sits above this module)."""
    traced = next(type(a) for a in args if _traced(a))
    return traced(op(*(numpy_api.term_of(a) for a in args)))


def _is(value: Any, number: float) -> bool:
    """Whether ``value`` is that number (not a traced value, not an array)."""
    return isinstance(value, (int, float, np.number)) and value == number


def _refuse(name: str, what: str, instead: str) -> UnsupportedError:
    return UnsupportedError(
        f"{' '.join((name, what)).strip()} is not supported when traced: {instead}"
    )


# -- scipy.special -----------------------------------------------------------------


def _floating(x: Any) -> Any:
    return x if x.dtype.kind in "fc" else x.astype(np.float64)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):  # noqa: D103
    if b is not None:
        raise _refuse("scipy.special.logsumexp", "with b=", "write np.log(np.sum(b * np.exp(a)))")
    if return_sign:
        raise _refuse("scipy.special.logsumexp", "with return_sign=True", "use the default")
    return np.logaddexp.reduce(_floating(a), axis=axis, keepdims=keepdims)


def softmax(x, axis=None):  # noqa: D103
    shifted = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return shifted / np.sum(shifted, axis=axis, keepdims=True)


def log_softmax(x, axis=None):  # noqa: D103
    top = np.max(x, axis=axis, keepdims=True)
    shifted = x - np.where(np.isfinite(top), top, 0)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


# -- scipy.stats -------------------------------------------------------------------


class _Normal:
    """``scipy.stats.norm`` (frozen at ``loc`` and ``scale`` when called)."""

    def __init__(self, original: Any, loc: Any = 0.0, scale: Any = 1.0):
        self._original, self._loc, self._scale = original, loc, scale

    def __call__(self, loc: Any = 0.0, scale: Any = 1.0) -> _Normal:
        return _Normal(self._original(loc, scale), loc, scale)

    def __getattr__(self, name: str) -> Any:  # the methods it has no twin of
        method = getattr(self._original, name)
        if not callable(method):
            return method

        def untraced(*args: Any, **kwargs: Any) -> Any:
            if _traced(*args, *kwargs.values()):
                raise _refuse(
                    f"scipy.stats.norm.{name}", "", f"its traced methods are {_NORM_METHODS}"
                )
            return method(*args, **kwargs)

        return untraced

    def _standard(self, method: str, args: tuple, kwargs: dict) -> tuple[Any, Any] | None:
        """``(z, scale)`` for ``method(x, loc, scale)``; None if nothing is traced."""
        x, *rest = args
        loc, scale = (*rest, *(None, None))[:2]
        loc = kwargs.pop("loc", self._loc if loc is None else loc)
        scale = kwargs.pop("scale", self._scale if scale is None else scale)
        if kwargs:
            raise TypeError(f"scipy.stats.norm.{method}: unexpected {sorted(kwargs)}")
        if not _traced(x, loc, scale):
            return None
        if not _traced(x):  # scipy computes in float64
            x = np.asarray(x, np.float64)
        elif x.dtype != np.float64:
            x = x.astype(np.float64)
        z = x if _is(loc, 0) else x - loc
        return (z if _is(scale, 1) else z / scale), scale


def _norm_method(name: str, formula: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """``scipy.stats.norm``'s ``name`` as ``formula(z, scale)``, NaN where ``scale <= 0``
    (as scipy gives)."""

    def method(self: _Normal, *args: Any, **kwargs: Any) -> Any:
        found = self._standard(name, args, dict(kwargs))
        if found is None:
            return getattr(self._original, name)(*args, **kwargs)
        z, scale = found
        value = formula(z, scale)
        return np.where(scale > 0, value, np.nan) if _traced(scale) or scale <= 0 else value

    method.__name__ = name
    return method


_NORMAL_FORMULAS = {
    "logpdf": lambda z, s: -(z**2) / 2.0 - _LOG_SQRT_2PI - np.log(s),
    "pdf": lambda z, s: np.exp(-(z**2) / 2.0) / _SQRT_2PI / s,
    "cdf": lambda z, s: scipy.special.ndtr(z),
    "logcdf": lambda z, s: scipy.special.log_ndtr(z),
    "sf": lambda z, s: scipy.special.ndtr(-z),
    "logsf": lambda z, s: scipy.special.log_ndtr(-z),
}
for _name, _formula in _NORMAL_FORMULAS.items():
    setattr(_Normal, _name, _norm_method(_name, _formula))
_NORM_METHODS = ", ".join(_NORMAL_FORMULAS)


# -- scipy.linalg ------------------------------------------------------------------


def _plain(name: str, kwargs: dict, allowed: dict) -> None:
    for key, value in kwargs.items():
        if key not in allowed or (allowed[key] is not None and value != allowed[key]):
            raise _refuse(f"scipy.linalg.{name}", f"with {key}={value!r}", "leave the default")


def cholesky(a, lower=False, **kwargs):  # noqa: D103
    _plain("cholesky", kwargs, {"overwrite_a": None, "check_finite": None})
    factor = np.linalg.cholesky(a)
    return factor if lower else factor.T


def cho_factor(a, lower=False, **kwargs):  # noqa: D103
    return cholesky(a, lower, **kwargs), lower


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, **kwargs):  # noqa: D103
    _plain("solve_triangular", kwargs, {"overwrite_b": None, "check_finite": None})
    if unit_diagonal:
        raise _refuse("scipy.linalg.solve_triangular", "with unit_diagonal=True", "leave it")
    if trans in (1, 2, "T", "C"):
        a, lower = a.T, not lower
    elif trans not in (0, "N"):
        raise ValueError(f"scipy.linalg.solve_triangular: trans={trans!r}")
    return _on_terms(ops.solve_lower if lower else ops.solve_upper, a, b)


def cho_solve(c_and_lower, b, **kwargs):  # noqa: D103
    _plain("cho_solve", kwargs, {"overwrite_b": None, "check_finite": None})
    c, lower = c_and_lower
    y = solve_triangular(c, b, trans=0 if lower else 1, lower=lower)
    return solve_triangular(c, y, trans=1 if lower else 0, lower=lower)


def solve(a, b, **kwargs):  # noqa: D103
    _plain("solve", kwargs, {"overwrite_a": None, "overwrite_b": None, "check_finite": None,
                             "assume_a": None, "lower": None})  # fmt: skip
    return np.linalg.solve(a, b)


def inv(a, **kwargs):  # noqa: D103
    _plain("inv", kwargs, {"overwrite_a": None, "check_finite": None})
    return np.linalg.inv(a)


def det(a, **kwargs):  # noqa: D103
    _plain("det", kwargs, {"overwrite_a": None, "check_finite": None})
    return np.linalg.det(a)


# -- resolving a function's names ---------------------------------------------------

_TWINS: dict[str, dict[str, Callable[..., Any]]] = {
    "scipy.special": {"logsumexp": logsumexp, "softmax": softmax, "log_softmax": log_softmax},
    "scipy.linalg": {"cholesky": cholesky, "cho_factor": cho_factor, "cho_solve": cho_solve,
                     "solve_triangular": solve_triangular, "solve": solve, "inv": inv,
                     "det": det},
}  # fmt: skip


numpy_api.TRACEABLE.update(
    [f"{module}.{name}" for module, twins in _TWINS.items() for name in twins]
    + [f"scipy.stats.norm.{method}" for method in _NORMAL_FORMULAS]
)


def _twin(original: Any, twin: Callable[..., Any]) -> Callable[..., Any]:
    """``twin`` on traced arguments, ``original`` otherwise."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if _traced(*args, *kwargs.values(), *_nested(args)):
            return twin(*args, **kwargs)
        return original(*args, **kwargs)

    call.__name__, call.__doc__, call.__wrapped__ = twin.__name__, original.__doc__, original  # type: ignore[attr-defined]
    return call


def _nested(args: tuple) -> list:
    return [v for a in args if isinstance(a, tuple) for v in a]  # cho_solve((c, lower), b)


class _Namespace:
    """A scipy module as traced code sees it: its twins, and the module for the rest."""

    def __init__(self, module: types.ModuleType, twins: dict[str, Any]):
        self._module, self._twins = module, twins

    def __getattr__(self, name: str) -> Any:
        twin = self._twins.get(name)
        return twin if twin is not None else getattr(self._module, name)

    def __repr__(self) -> str:
        return f"<{self._module.__name__}, as relgraph traces it>"


def _loaded_twins() -> dict[int, Any]:
    """Each loaded scipy object with a twin, by id: the functions, ``scipy.stats.norm``,
    its frozen distributions' generator, and the modules themselves."""
    found: dict[int, Any] = {}
    spaces: dict[str, dict[str, Any]] = {}
    for name, twins in _TWINS.items():
        module = sys.modules.get(name)
        if module is not None:
            spaces[name] = {n: _twin(getattr(module, n), t) for n, t in twins.items()}
    stats = sys.modules.get("scipy.stats")
    if stats is not None:
        spaces["scipy.stats"] = {"norm": _Normal(stats.norm)}
    for name, twins in spaces.items():
        module = sys.modules[name]
        found[id(module)] = _Namespace(module, twins)
        found.update({id(getattr(module, n)): t for n, t in twins.items()})
    scipy = sys.modules.get("scipy")
    if scipy is not None and spaces:
        parts = {name.rpartition(".")[2]: found[id(sys.modules[name])] for name in spaces}
        found[id(scipy)] = _Namespace(scipy, parts)
    return found


def with_twins(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, or a copy of it whose global names (and closed-over variables) that are
    scipy callables with a twin, or scipy modules, stand for the twins; functions of
    the user's own that it calls are resolved the same way.  ``fn`` itself when
    nothing changes, or when its code assigns a global name (a copy of its globals
    would lose the assignment).

    >>> import scipy.special as sp
    >>> def f(x):
    ...     return sp.softmax(x)
    >>> with_twins(f) is f, with_twins(f).__globals__["sp"]
    (False, <scipy.special, as relgraph traces it>)
    """
    code = getattr(fn, "__func__", fn)  # a bound method: its function
    if "scipy" not in sys.modules or not isinstance(code, types.FunctionType) or not _users(code):
        return fn  # (rg.jit's own wrapper comes here too: nothing to build for it)
    return _resolved(fn, _loaded_twins(), {})


def _resolved(fn: Any, twins: dict[int, Any], memo: dict[int, Any]) -> Any:
    if isinstance(fn, types.MethodType):
        return types.MethodType(_resolved(fn.__func__, twins, memo), fn.__self__)
    if not isinstance(fn, types.FunctionType) or not _users(fn):
        return fn
    if id(fn) in memo:
        return memo[id(fn)]
    memo[id(fn)] = fn  # a recursive function calls itself as it is
    names = _global_names(fn.__code__)
    if names is None:
        return fn
    changed = {}
    for name in names & fn.__globals__.keys():
        value = fn.__globals__[name]
        new = _resolved_value(value, twins, memo)
        if new is not value:
            changed[name] = new
    closure = _cells(fn.__closure__, twins, memo)
    if not changed and all(a is b for a, b in zip(closure or (), fn.__closure__ or ())):
        return fn
    copy = types.FunctionType(
        fn.__code__, {**fn.__globals__, **changed}, fn.__name__, fn.__defaults__, closure
    )
    copy.__kwdefaults__, copy.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    copy.__dict__.update(fn.__dict__)
    memo[id(fn)] = copy
    return copy


def _resolved_value(value: Any, twins: dict[int, Any], memo: dict[int, Any]) -> Any:
    twin = twins.get(id(value))
    if twin is not None:
        return twin
    dist = type(getattr(value, "dist", None))  # a frozen distribution: norm(0, 2)
    if dist.__name__ == "norm_gen" and dist.__module__.startswith("scipy.stats"):
        return _Normal(value, *value.args, **value.kwds)
    return _resolved(value, twins, memo) if isinstance(value, types.FunctionType) else value


def _cells(closure: tuple | None, twins: dict[int, Any], memo: dict[int, Any]) -> tuple | None:
    """The closure with each cell whose value has a twin replaced by a new cell."""
    if closure is None:
        return None
    out = []
    for cell in closure:
        try:
            value = cell.cell_contents
        except ValueError:
            out.append(cell)
            continue
        new = _resolved_value(value, twins, memo)
        out.append(cell if new is value else types.CellType(new))
    return tuple(out)


def _global_names(code: types.CodeType) -> set[str] | None:
    """The names ``code`` (and the code nested in it) may read as globals; None if it
    assigns or deletes one."""
    names: set[str] = set()
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            return None
    names.update(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            inner = _global_names(const)
            if inner is None:
                return None
            names |= inner
    return names


# Installed libraries, the standard library and relgraph: code that is not the user's.
_NOT_USERS = tuple(
    os.path.normcase(os.path.realpath(p))
    for p in (
        *(sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib", "platstdlib")),
        os.path.dirname(os.path.dirname(__file__)),
    )
)


def _users(fn: types.FunctionType) -> bool:
    """Whether ``fn`` is the user's code."""
    path = os.path.normcase(os.path.realpath(fn.__code__.co_filename))
    return not path.startswith(_NOT_USERS)
