"""``rg.jit``: a numpy function traced, rewritten and compiled once per signature.

The first call with a new signature (the dtype and ndim of each array argument, the
values of static arguments, the sizes the code reads: ``n, d = X.shape``) traces the
function (:mod:`relgraph.frontend.tracing`), rewrites the term with the default
pipeline or the query given, and compiles it with :func:`relgraph.function`.  The
rewritten term is kept in memory and on disk (:mod:`relgraph.rewriting.cache`), the
kernel too (:mod:`relgraph.backends.numba.kernel_cache`), so a new process neither
rewrites nor compiles again.  Later calls look the signature up and run the kernel.
"""

from __future__ import annotations

import functools
import inspect
import operator
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relgraph.backends.numba.function import MAX_NODES, TIERS, Function, function
from relgraph.backends.numba.scalars import is_weak
from relgraph.backends.numba.shapes import refuse_subclass
from relgraph.eqsat.cost import op_cost
from relgraph.exceptions import TraceError
from relgraph.frontend.scipy_api import with_twins
from relgraph.frontend.tracing import (
    MAX_CONSTANT_BYTES,
    SizeUnknown,
    Traced,
    flatten,
    name_of,
    numpy_results,
    outputs_of,
    rebuild,
    symbols_for,
)
from relgraph.rewriting import cache as rewrite_cache
from relgraph.rewriting.db import RelationDB
from relgraph.rewriting.driver import EquilibriumRewriter
from relgraph.rewriting.library import default_library
from relgraph.rewriting.report import RewriteReport
from relgraph.rewriting.sequence import SequenceRewriter
from relgraph.terms.leaves import Symbol
from relgraph.terms.printing import brief
from relgraph.terms.term import Term
from relgraph.terms.traverse import free_symbols
from relgraph.terms.types import TensorType

__all__ = ["jit", "JitFunction", "Specialization", "jit_query", "jit_rewriter"]


def jit(
    fn: Callable[..., Any] | None = None,
    *,
    include: Iterable[str] = ("fast_run",),
    exclude: Iterable[str] = (),
    require: Iterable[str] = (),
    static_argnames: Iterable[str] = (),
    max_constant_bytes: int = MAX_CONSTANT_BYTES,
    max_nodes: int = MAX_NODES,
    disk_cache: bool = True,
    compile: str = "background",
    relations: Iterable[Any] = (),
) -> Any:
    """Trace, rewrite and compile ``fn`` on its first call with each new signature.

    Use as ``@rg.jit``, ``@rg.jit(include=[...])`` or ``rg.jit(fn, ...)``.

    A Python scalar argument (``f(x, 2)``) is a constant of the traced program, as
    numpy's "weak" scalars are (``int8_array * 2`` stays int8): each value is its
    own specialization.  Pass ``np.float64(2.0)`` or a 0-d array for an input that
    changes without recompiling.

    Parameters
    ----------
    fn : callable
        A function of arrays written with numpy, returning an array or a (nested)
        tuple or list of them.
    include, exclude, require : iterable of str
        The query on ``relations.optdb`` that rewrites the traced term (default:
        the ``fast_run`` pipeline, safe rewrites only); ``include=()`` skips rewriting.
    static_argnames : iterable of str
        Parameters whose values (hashable) the function is specialised on, such as
        an axis, instead of becoming inputs.
    max_constant_bytes : int
        The largest array the function may close over (it becomes a constant).
    max_nodes : int
        Passed to :func:`relgraph.function`.
    disk_cache : bool
        Keep rewritten terms on disk for other processes.
    compile : {"background", "eager", "never"}
        As :func:`relgraph.function`: by default the first calls of a signature run
        its rewritten program with numpy while its kernel compiles in the background.
    relations : iterable
        Your own relations (goal constructors, ``rg.rule`` rules), databases or
        rewriters: they run after the query, which then runs again.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> @rg.jit
    ... def softplus(z):
    ...     return np.log(1 + np.exp(z))
    >>> softplus(np.array([0.0, 800.0])).tolist()  # numpy: inf at 800
    [0.6931471805599453, 800.0]
    >>> rg.pprint(softplus.traced), rg.pprint(softplus.rewritten)
    ('log(1 + exp(z))', 'softplus(z)')
    >>> scale = rg.jit(lambda x, s: x * s)
    >>> scale(np.array([100, 50], np.int8), 2)  # wraps in int8, as numpy does
    array([-56, 100], dtype=int8)
    """
    if fn is None:
        return functools.partial(
            jit,
            include=include,
            exclude=exclude,
            require=require,
            static_argnames=static_argnames,
            max_constant_bytes=max_constant_bytes,
            max_nodes=max_nodes,
            disk_cache=disk_cache,
            compile=compile,
            relations=relations,
        )
    return JitFunction(
        fn,
        query=jit_query(include, exclude, require),
        relations=relations,
        static_argnames=tuple(static_argnames),
        max_constant_bytes=max_constant_bytes,
        max_nodes=max_nodes,
        disk_cache=disk_cache,
        compile=compile,
    )


@dataclass
class Specialization:
    """What :func:`jit` made of a function for one signature.

    Attributes
    ----------
    signature : tuple
        ``(dtype, ndim)`` per argument, then the static arguments' values.
    inputs : tuple of Symbol
    traced, rewritten : Term or a (nested) tuple or list of terms
        The program as traced and as rewritten.
    report : RewriteReport or None
        None when the rewrite was read from the disk cache or skipped.
    function : Function
        The compiled kernel.
    cost_before, cost_after : float
        :func:`relgraph.op_cost` of the traced and the rewritten program.
    seconds : dict
        Time spent tracing, rewriting and compiling.
    deliver : callable or None
        Turns the kernel's results into what the function returns (its nesting, numpy
        scalars where numpy gives them); None where they are that already.
    """

    signature: tuple
    inputs: tuple[Symbol, ...]
    traced: Any
    rewritten: Any
    report: RewriteReport | None
    function: Function
    cost_before: float
    cost_after: float
    seconds: dict[str, float] = field(default_factory=dict)
    from_disk: bool = False
    deliver: Callable[[Any], Any] | None = None

    def __repr__(self) -> str:
        names = ", ".join(f"{s.name}: {_type_text(s.type)}" for s in self.inputs)
        return (
            f"Specialization(({names}) -> {_brief(self.rewritten)}, cost "
            f"{self.cost_before:g} -> {self.cost_after:g})"
        )


@dataclass(frozen=True)
class _Call:
    """One call's arguments as the tracer sees them."""

    key: tuple  # the signature the specialization is kept under
    values: tuple  # the arguments the kernel takes, in order
    names: tuple[str, ...]  # the input symbols' names
    invoke: Callable[..., Any]  # calls the function with traced values in their place


class JitFunction:
    """A function compiled per signature by :func:`jit`; call it as the function.

    ``derive(inputs, program)``, when given, makes another program of the rewritten
    one (its gradient: :func:`relgraph.grad`), rewritten in turn and compiled instead.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        query: tuple,
        static_argnames: Iterable[str] = (),
        max_constant_bytes: int = MAX_CONSTANT_BYTES,
        max_nodes: int = MAX_NODES,
        disk_cache: bool = True,
        compile: str = "background",
        derive: Callable[[tuple[Symbol, ...], Any], Any] | None = None,
        relations: Iterable[Any] = (),
    ):
        if not callable(fn):
            raise TypeError(f"rg.jit needs a function, got {fn!r}")
        if compile not in TIERS:
            raise ValueError(f"compile must be one of {TIERS}, got {compile!r}")
        static_argnames = tuple(static_argnames)
        self.fn = fn
        self.query = query
        self.derive = derive
        # a bad query or relation fails here, not at the first call
        self.rewriter = jit_rewriter(query, relations)
        self.signature = inspect.signature(fn)
        unknown = set(static_argnames) - set(self.signature.parameters)
        if unknown:
            raise TypeError(f"static_argnames: {name_of(fn)} has no parameter {sorted(unknown)}")
        self.static_argnames = static_argnames
        self.max_constant_bytes, self.max_nodes = max_constant_bytes, max_nodes
        self.disk_cache = disk_cache
        self.compile = compile
        self.specializations: dict[tuple, Specialization] = {}
        # The arguments whose sizes the traced code reads, by signature.
        self._sized: dict[tuple, tuple[int, ...]] = {}
        self.last: Specialization | None = None
        # The fast path's (specialization, how to call it) by the arguments' keys.
        self._runs: dict[tuple, tuple[Specialization, Callable[..., Any]]] = {}
        # The last positional call's specialization; None after Python scalars
        self._again: Specialization | None = None
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    @property
    def ready(self) -> bool:
        """Whether every signature called so far runs its compiled kernel."""
        return all(s.function.ready for s in list(self.specializations.values()))

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the kernels of the signatures called so far; returns :attr:`ready`.

        Examples
        --------
        >>> import numpy as np, relgraph as rg
        >>> f = rg.jit(lambda x: np.exp(x) - 1.0)
        >>> f(np.zeros(3)), f.wait(), f.ready
        (array([0., 0., 0.]), True, True)
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        for spec in list(self.specializations.values()):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            spec.function.wait(left)
        return self.ready

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs or self.static_argnames:
            call = self._bind(args, kwargs)
            self.last = spec = self._lookup(call)
            return _caller(spec)(*call.values)
        # A loop's case: the last call's types, shapes and dtypes (its kernel's checks)
        again = self._again
        if again is not None and again.function.repeat_call is not None:
            found = again.function.repeat_call(args, None)
            if found is not None:
                self.last = again
                return found if again.deliver is None else again.deliver(found)
        # The common case: positional arrays, keyed by (type, dtype, ndim) in C.
        try:
            key, exact = tuple(map(_SIGNATURE_OF, args)), True
        except AttributeError:  # a Python scalar (a constant of the program), a list
            key, exact = tuple(map(_loose_key, args)), False
        found = self._runs.get(key)
        if found is None:
            found = self._runs[key] = self._runner(args)
        self.last, run = found
        result = run(*args)
        self._again = self.last if exact else None  # by sizes, run picked self.last
        return result

    def _runner(self, args: tuple) -> tuple[Specialization, Callable[..., Any]]:
        """The specialization for positional ``args`` and how to call it with such
        arguments: without the Python scalars (constants of its program), and by the
        sizes of the arguments whose sizes the traced code read."""
        keep = [i for i, a in enumerate(args) if not is_weak(a)]
        weak = len(keep) < len(args)
        bound = (lambda a: self._bind(a, {})) if weak else self._positional
        call = bound(args)
        spec = self._lookup(call)
        if call.key not in self._sized:
            caller = _caller(spec)
            return spec, (lambda *a: caller(*[a[i] for i in keep])) if weak else caller

        runs: dict[tuple, tuple[Specialization, Callable[..., Any]]] = {}

        def by_sizes(*args: Any) -> Any:  # the function reads sizes: they pick the kernel
            values = [args[i] for i in keep]
            positions = self._sized[call.key]  # more, if a later trace read more
            sizes = (positions, *(np.shape(values[i]) for i in positions))
            found = runs.get(sizes)
            if found is None:
                spec = self._lookup(bound(args))
                found = runs[sizes] = (spec, _caller(spec))
            self.last = found[0]
            return found[1](*values)

        return spec, by_sizes

    def _lookup(self, call: _Call) -> Specialization:
        """The specialization for a call: by its signature, and the sizes of the
        arguments whose sizes the traced code read."""
        key = _sized_key(call, self._sized.get(call.key, ()))
        return self.specializations.get(key) or self._specialize(call)

    def specialize(self, *args: Any, **kwargs: Any) -> Specialization:
        """Trace, rewrite and compile for these arguments' signature, without running."""
        weak = any(map(is_weak, args))
        call = self._bind(args, kwargs) if kwargs or self.static_argnames or weak else None
        call = call or self._positional(args)
        spec = self._lookup(call)
        spec.function.wait(timeout=0)  # "background": the kernel starts compiling now
        return spec

    def _positional(self, args: tuple) -> _Call:
        names = [s.name for s in symbols_for(self.fn, tuple(_signature_type(a) for a in args))]
        key = tuple(_key_of(a) for a in args)
        return _Call(key, tuple(args), tuple(names), self.fn)

    def _bind(self, args: tuple, kwargs: dict) -> _Call:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{name_of(self.fn)}: {exc}") from None
        static: list[tuple] = []
        for name in self.static_argnames:
            value = bound.arguments.get(name, self.signature.parameters[name].default)
            try:
                hash(value)
            except TypeError:
                raise TypeError(f"static argument {name}={value!r} is not hashable") from None
            static.append((name, value))
        names, values = [], []
        for name, value in bound.arguments.items():
            kind = self.signature.parameters[name].kind
            if name in self.static_argnames:
                continue
            if kind is inspect.Parameter.VAR_KEYWORD:
                raise TypeError(f"{name_of(self.fn)}: **{name} cannot be traced")
            items = value if kind is inspect.Parameter.VAR_POSITIONAL else (value,)
            suffixes = range(len(items)) if kind is inspect.Parameter.VAR_POSITIONAL else [""]
            for suffix, item in zip(suffixes, items):
                if is_weak(item):  # a constant of the program, as numpy's weak scalars
                    static.append((f"{name}{suffix}", type(item), repr(item)))
                else:
                    names.append(f"{name}{suffix}")
                    values.append(item)
        key = (*((n, *_key_of(v)) for n, v in zip(names, values)), *static)

        @functools.wraps(self.fn)
        def invoke(*traced: Any) -> Any:
            arguments, it = dict(bound.arguments), iter(traced)
            for name, value in arguments.items():
                kind = self.signature.parameters[name].kind
                if name in self.static_argnames:
                    continue
                if kind is inspect.Parameter.VAR_POSITIONAL:
                    arguments[name] = tuple(v if is_weak(v) else next(it) for v in value)
                elif not is_weak(value):
                    arguments[name] = next(it)
            call = inspect.BoundArguments(self.signature, arguments)
            return with_twins(self.fn)(*call.args, **call.kwargs)

        return _Call(key, tuple(values), tuple(names), invoke)

    def _specialize(self, call: _Call) -> Specialization:
        with self._lock:
            key = _sized_key(call, self._sized.get(call.key, ()))
            found = self.specializations.get(key)
            if found is None:
                found = self._build(call)
                self.specializations[found.signature] = found
            return found

    def _trace(self, call: _Call, scalars: list) -> tuple[list[Symbol], Any]:
        """The call's input symbols and the traced program (``scalars``: see
        :func:`~relgraph.frontend.tracing.outputs_of`).  Where the code reads a
        size (``x.shape[1]``), the arguments that size depends on are typed with
        their shapes, and the function traced again; later calls are specialised on
        those sizes (and only those)."""
        shaped: set[int] = set(self._sized.get(call.key, ()))
        while True:
            symbols = [
                Symbol(n, _signature_type(v, i in shaped))
                for i, (n, v) in enumerate(zip(call.names, call.values))
            ]
            try:
                scalars.clear()
                args = [Traced(s) for s in symbols]
                traced = outputs_of(call.invoke, args, self.max_constant_bytes, scalars)
                break
            except SizeUnknown as exc:
                depends = free_symbols([exc.term])
                more = {i for i, s in enumerate(symbols) if s in depends} - shaped
                if not more:
                    raise
                shaped |= more
        if shaped:
            self._sized[call.key] = tuple(sorted(shaped))
        return symbols, traced

    def _build(self, call: _Call) -> Specialization:
        t0 = time.perf_counter()
        scalars: list[bool] = []
        symbols, traced = self._trace(call, scalars)
        t1 = time.perf_counter()
        rewritten, report, from_disk = self._rewrite(traced)
        if self.derive is not None:
            rewritten, again, _ = self._rewrite(self.derive(tuple(symbols), rewritten))
            report = RewriteReport.joined(tuple(r for r in (report, again) if r is not None))
        t2 = time.perf_counter()
        outputs = flatten(rewritten)
        single = not isinstance(rewritten, (tuple, list))
        compiled = function(
            symbols,
            outputs[0] if single else outputs,
            max_nodes=self.max_nodes,
            lazy=True,
            compile=self.compile,
        )
        if self.compile == "eager":  # compiles the kernel these arguments need, only it
            compiled(*call.values)
        # "background": the call that follows runs numpy, then submits the kernel
        t3 = time.perf_counter()
        return Specialization(
            signature=_sized_key(call, self._sized.get(call.key, ())),
            inputs=tuple(symbols),
            traced=traced,
            rewritten=rewritten,
            report=report,
            function=compiled,
            cost_before=_cost(traced),
            cost_after=_cost(rewritten),
            seconds={"trace": t1 - t0, "rewrite": t2 - t1, "compile": t3 - t2},
            from_disk=from_disk,
            deliver=numpy_results(*_results_as(traced, rewritten, scalars, self.derive)),
        )

    def _rewrite(self, traced: Any) -> tuple[Any, RewriteReport | None, bool]:
        if self.rewriter is None:
            return traced, None, False
        query = rewrite_cache.fingerprint(self.rewriter) if self.disk_cache else None
        digest = rewrite_cache.key(traced, query) if query else None
        if digest:
            found = rewrite_cache.load(digest)
            if found is not None:
                return found[0], rewrite_cache.report_of(found[1]), True
        outs = flatten(traced)
        done = [self.rewriter.apply(o) if type(o) is Term else (o, None) for o in outs]
        rewritten = rebuild(traced, iter([d[0] for d in done]))
        reports = tuple(d[1] for d in done if d[1] is not None)
        report = reports[0] if len(reports) == 1 else RewriteReport.joined(reports)
        if digest:
            rewrite_cache.store(digest, rewritten, report)
        return rewritten, report, False

    # -- what it did -------------------------------------------------------------------

    def _latest(self) -> Specialization:
        if self.last is None:
            raise TraceError(
                f"{name_of(self.fn)} has not been called yet: call it, or use .specialize(...)"
            )
        return self.last

    @property
    def traced(self) -> Any:
        """The traced program of the latest call's signature."""
        return self._latest().traced

    @property
    def rewritten(self) -> Any:
        """The rewritten program of the latest call's signature."""
        return self._latest().rewritten

    @property
    def report(self) -> RewriteReport | None:
        """The rewrite report of the latest call's signature."""
        return self._latest().report

    def __repr__(self) -> str:
        return f"<rg.jit {name_of(self.fn)}: {len(self.specializations)} signature(s)>"


def _caller(spec: Specialization) -> Callable[..., Any]:
    """Runs the kernel and gives the results as the function returned them."""
    f, deliver = spec.function, spec.deliver
    return f.__call__ if deliver is None else (lambda *args: deliver(f(*args)))


def _results_as(traced: Any, rewritten: Any, scalars: list, derive: Any) -> tuple[Any, list]:
    """The results' nesting, and which are numpy scalars where 0-d: the function's;
    for a program ``derive`` made (a value and gradients), every 0-d result."""
    if derive is None:
        return traced, scalars
    return rewritten, [True] * len(flatten(rewritten))


def jit_query(include: Iterable[str], exclude: Iterable[str], require: Iterable[str]) -> tuple:
    """A query on the default library, in the form :class:`JitFunction` keeps."""
    for name, tags in (("include", include), ("exclude", exclude), ("require", require)):
        if isinstance(tags, str):
            raise TypeError(f"{name} takes a list of tags, got the string {tags!r}")
    return tuple(sorted(include)), tuple(sorted(exclude)), tuple(sorted(require))


def jit_rewriter(query: tuple, relations: Iterable[Any] = ()) -> Any:
    """The rewriter of a :func:`jit_query` (None when it includes nothing and no
    relations are given).  A user's ``relations`` (relations, rules, databases, or
    rewriters such as a query's result) run after the query, and the query again
    after them, so that what they make is simplified as any program is."""
    include, exclude, require = query
    base = (
        default_library().db.query(include=include, exclude=exclude, require=require)
        if include
        else None
    )
    relations = list(relations)
    if not relations:
        return base
    mine = [r for r in relations if not hasattr(r, "apply") and not isinstance(r, RelationDB)]
    steps: list[tuple[str, Any]] = [("yours", EquilibriumRewriter(mine))] if mine else []
    for r in relations:
        if isinstance(r, RelationDB):
            steps.append((r.name, r.query(include=[r.name])))
        elif hasattr(r, "apply"):
            steps.append((getattr(r, "name", "rewriter"), r))
    if base is not None:
        steps = [("query", base), *steps, ("query again", base)]
    return SequenceRewriter(steps, name="jit")


def _key_of(a: Any) -> tuple:
    refuse_subclass("an argument", a)
    # A dask array is typed by its dtype and rank: np.asarray would compute it.
    arr = a if hasattr(a, "__dask_graph__") else np.asarray(a)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"rg.jit: cannot pass a {type(a).__name__} as an array: {a!r:.60}")
    return (arr.dtype, arr.ndim)


_SIGNATURE_OF = operator.attrgetter("__class__", "dtype", "ndim")


def _loose_key(a: Any) -> tuple:
    if is_weak(a):  # a constant of the program: its value picks the specialization
        return (type(a), repr(a))
    return (type(a), *_key_of(a))


def _signature_type(a: Any, sized: bool = False) -> TensorType:
    dtype, ndim = _key_of(a)
    if not sized:
        return TensorType(dtype, ndim)
    shape = tuple(np.shape(a))
    if not all(isinstance(d, (int, np.integer)) for d in shape):  # a dask array's nan
        raise TraceError(
            f"the code reads the sizes of an argument whose shape {shape} is not known"
        )
    return TensorType(dtype, ndim, tuple(int(d) for d in shape))


def _sized_key(call: _Call, positions: tuple[int, ...]) -> tuple:
    """A call's signature, with the shapes of the arguments whose sizes are read."""
    if not positions:
        return call.key
    return (*call.key, ("sizes", tuple(tuple(np.shape(call.values[i])) for i in positions)))


def _cost(program: Any) -> float:
    return float(sum(op_cost(o) for o in flatten(program) if type(o) is Term))


def _brief(program: Any) -> str:
    if isinstance(program, (tuple, list)):
        return "(" + ", ".join(_brief(p) for p in program) + ")"
    return brief(program, 60)


def _type_text(t: TensorType) -> str:
    return f"{t.dtype}[{t.ndim}-d]"
