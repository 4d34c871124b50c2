"""The ``relgraph`` command line: rewrite, explore and compile array expressions.

    relgraph rewrite "log(1 + exp(x))" --symbols "x:vector" --compile
    relgraph rewrite "A @ (x + y)" --include linalg --symbols "A:matrix:3x4,x:vector,y:vector"
    relgraph explore "A @ x + A @ y" --include linalg --symbols "A:matrix,x:vector,y:vector"
    relgraph jit docs/examples/logistic.py:log_likelihood --args "X:1000x8,w:8,y:1000"
    relgraph tags

Bad input (unparseable or unsafe expressions, unknown tags, bad symbol specs,
unsupported dtypes, bad options) prints one line to stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
import time
import unicodedata
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from relgraph.backends.numba.function import function
from relgraph.eqsat.cost import shape_cost
from relgraph.eqsat.explore import explore
from relgraph.exceptions import RelgraphError
from relgraph.frontend.jit import jit
from relgraph.frontend.parse import parse
from relgraph.frontend.tracing import flatten
from relgraph.rewriting.library import default_library
from relgraph.rewriting.sequence import rewrite
from relgraph.terms.evaluate import evaluate
from relgraph.terms.leaves import Symbol, matrix, scalar, tensor, vector
from relgraph.terms.printing import pprint
from relgraph.terms.term import Term
from relgraph.ui.display import has_dot, space_graph, svg

__all__ = ["main", "parse_symbols"]

_KINDS = {"scalar": scalar, "vector": vector, "matrix": matrix}


_SHAPE = re.compile(r"^\d+(x\d+)*$")


def parse_symbols(spec: str) -> dict[str, Symbol]:
    """Parse ``"A:matrix:3x4,x:vector:float32"`` into symbols.

    Each item is ``name:kind``, then optionally a dtype and a shape (``3x4``), in any
    order.  Names are normalised as Python normalises identifiers (NFKC), so they
    match the names in a parsed expression.

    Examples
    --------
    >>> parse_symbols("A:matrix:3x4,x:vector:float32")
    {'A': A, 'x': x}
    >>> parse_symbols("A:matrix:3x4")["A"].type
    TensorType(float64, shape=(3, 4))
    """
    symbols: dict[str, Symbol] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        parts = item.split(":")
        if not 2 <= len(parts) <= 4 or parts[1] not in _KINDS:
            raise RelgraphError(
                f"bad symbol spec {item!r}: expected name:kind[:dtype][:shape], kind one of "
                f"{', '.join(_KINDS)}, shape like 3x4"
            )
        name, kind = unicodedata.normalize("NFKC", parts[0]), parts[1]
        if name in symbols:
            raise RelgraphError(f"bad symbol spec {item!r}: {name!r} is declared twice")
        dtype, shape = "float64", None
        for extra in parts[2:]:
            if _SHAPE.match(extra):
                shape = tuple(int(d) for d in extra.split("x"))
            else:
                dtype = extra
        symbols[name] = _symbol(item, name, kind, dtype, shape)
    return symbols


def _symbol(item: str, name: str, kind: str, dtype: str, shape: tuple | None) -> Symbol:
    ndim = {"scalar": 0, "vector": 1, "matrix": 2}[kind]
    if shape is not None and len(shape) != ndim:
        raise RelgraphError(f"bad symbol spec {item!r}: a {kind} has {ndim} dimension(s)")
    try:
        return tensor(name, dtype, shape=shape, ndim=ndim)
    except (TypeError, ValueError) as exc:
        raise RelgraphError(f"bad symbol spec {item!r}: {exc}") from None


def _version() -> str:
    try:
        return version("relgraph")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="relgraph", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"relgraph {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    rw = sub.add_parser("rewrite", help="rewrite an expression with relations from optdb")
    _add_query(rw)
    rw.add_argument("--profile", action="store_true", help="print the rewrite report")
    rw.add_argument(
        "--trace",
        action="store_true",
        help="print every rewrite in order: pass, position, relation, before -> after",
    )
    rw.add_argument(
        "--check",
        action="store_true",
        help="evaluate input and result on random data and compare (numpy)",
    )
    rw.add_argument(
        "--compile",
        action="store_true",
        help="also compile the result with Numba, run it on the random data, check it "
        "against numpy and compare its time with numpy running the input",
    )
    rw.add_argument(
        "--size", type=_positive_int, default=8, help="dimension length of the random data"
    )
    ex = sub.add_parser(
        "explore", help="explore the rewrite space of an expression; print the best term"
    )
    _add_query(ex)
    ex.add_argument(
        "--method", choices=["egraph", "bfs"], default="egraph",
        help="equality saturation (default), or term by term breadth-first",
    )  # fmt: skip
    ex.add_argument(
        "--max-nodes", type=_positive_int, default=10_000, metavar="N",
        help="e-graph: stop at N e-nodes (default 10000)",
    )  # fmt: skip
    ex.add_argument(
        "--max-iterations", type=_positive_int, default=30, metavar="N",
        help="e-graph: stop after N rounds of search and merge (default 30)",
    )  # fmt: skip
    ex.add_argument(
        "--schedule", choices=["default", "saturate"], default="default",
        help="e-graph: 'default' simplifies, explores both ways for 3 rounds, then "
        "simplifies again; 'saturate' runs every relation both ways until nothing changes",
    )  # fmt: skip
    ex.add_argument(
        "--max-terms", type=_positive_int, default=None, metavar="N",
        help="bfs: stop after N distinct terms (default 1000)",
    )  # fmt: skip
    ex.add_argument(
        "--max-depth", type=int, default=None, metavar="D",
        help="bfs: stop at D rewrite steps from the start (default: no limit)",
    )  # fmt: skip
    ex.add_argument(
        "--timeout", type=float, default=None, metavar="SECONDS",
        help="stop after this many seconds (default: as rg.explore, 5 s for the e-graph, no "
        "limit for bfs)",
    )  # fmt: skip
    ex.add_argument(
        "--directions", nargs="+", default=["forward", "backward"],
        choices=["forward", "backward"], help="which ways to run the relations (default both)",
    )  # fmt: skip
    ex.add_argument("--svg", metavar="FILE", help="write the space as SVG (needs Graphviz's dot)")
    jit = sub.add_parser(
        "jit",
        help="rg.jit a numpy function from a Python file; run it on random data against numpy",
    )
    jit.add_argument("target", help="FILE.py:FUNCTION, a function written with numpy")
    jit.add_argument(
        "--args", required=True, metavar="SPEC",
        help='name:shape[:dtype] (shape 1000x8, or scalar) or name=NUMBER per parameter, '
        'comma-separated, e.g. "X:1000x8,w:8,eps=1e-5"',
    )  # fmt: skip
    jit.add_argument(
        "--scale", type=float, default=1.0,
        help="the random data is normal with this standard deviation (default 1)",
    )  # fmt: skip
    for flag, default, what in (("--include", ["fast_run"], "select"), ("--require", [], "keep "
                                "only"), ("--exclude", [], "drop")):  # fmt: skip
        jit.add_argument(flag, nargs="+", default=default, metavar="TAG", help=f"{what} relations")
    jit.add_argument(
        "--relations", nargs="+", default=[], metavar="FILE.py:NAME",
        help="your own relations, rules or databases (or a list of them), as FILE.py:NAME or "
        "module:NAME: they run after the query, which then runs again",
    )  # fmt: skip
    sub.add_parser("tags", help="list the databases, tags and relations of optdb")
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _add_query(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("expr", help='an expression, e.g. "A @ (x + y)"')
    parser.add_argument(
        "--include", nargs="+", default=["fast_run"], metavar="TAG",
        help="select relations with any of these tags or names (default: fast_run)",
    )  # fmt: skip
    parser.add_argument(
        "--require", nargs="+", default=[], metavar="TAG",
        help="keep only relations with all of these tags",
    )  # fmt: skip
    parser.add_argument(
        "--exclude", nargs="+", default=[], metavar="TAG",
        help="drop relations with any of these tags or names",
    )  # fmt: skip
    parser.add_argument(
        "--symbols", default="",
        help='name:kind[:dtype][:shape], comma-separated, e.g. "A:matrix:3x4,x:vector:float32"',
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``relgraph`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    commands = {"rewrite": _rewrite, "explore": _explore, "tags": _tags, "jit": _jit}
    try:
        return commands[args.command](args)
    except RelgraphError as exc:
        print(f"relgraph: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # data of the sizes asked for does not fit
        print(f"relgraph: error: the data does not fit in memory ({exc}); give a smaller "
              "size", file=sys.stderr)  # fmt: skip
        return 2
    except BrokenPipeError:  # `relgraph tags | head`: the reader left, which is fine
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - no flush error at exit
        return 0


def _tags(args: argparse.Namespace) -> int:
    library = default_library()
    print("tags:")
    for tag, meaning in library.tags.items():
        print(f"  {tag:14} {meaning}")
    print("databases (in the order optdb runs them) and their relations:")
    for entry in library.db.entries():
        print(f"  {entry.name}")
        for inner in entry.obj.entries():
            print(f"    {inner.name:24} {', '.join(sorted(inner.tags))}")
    return 0


def _query(args: argparse.Namespace) -> tuple[dict[str, Symbol], Term, object]:
    symbols = parse_symbols(args.symbols)
    term = parse(args.expr, **symbols)
    rewriter = default_library().db.query(
        include=args.include, require=args.require, exclude=args.exclude
    )
    return symbols, term, rewriter


def _explore(args: argparse.Namespace) -> int:
    if args.svg and not has_dot():  # before the work, not after it
        raise RelgraphError("--svg needs Graphviz's `dot` program on the PATH")
    if args.max_depth is not None and args.max_depth < 0:
        raise RelgraphError("--max-depth must be non-negative")
    if args.timeout is not None and not args.timeout > 0:
        raise RelgraphError("--timeout must be a positive number of seconds")
    if args.method == "egraph" and (args.max_terms is not None or args.max_depth is not None):
        raise RelgraphError("--max-terms and --max-depth are budgets of --method bfs")
    _, term, rewriter = _query(args)
    budgets = (
        {
            "max_nodes": args.max_nodes,
            "max_iterations": args.max_iterations,
            "schedule": args.schedule,
        }
        if args.method == "egraph"
        else {"max_terms": args.max_terms, "max_depth": args.max_depth}
    )
    space = explore(
        term, rewriter, directions=args.directions,
        timeout="default" if args.timeout is None else args.timeout, method=args.method,
        **budgets,
    )  # fmt: skip
    best = space.best()
    status = "complete" if space.complete else f"cut off by {space.stopped_by}"
    print(pprint(best))
    print(f"cost {space.cost(best):g} (start {space.cost(term):g})")
    if args.method == "egraph":
        status = "saturated" if space.saturated else f"stopped by {space.stopped_by}"
        print(
            f"e-graph of {len(space)} e-nodes in {space.classes} classes, "
            f"{space.elapsed:.2f} s ({status})"
        )
    else:
        print(f"explored {len(space)} terms in {space.elapsed:.2f} s ({status})")
    derivation = space.explain()  # the best term's (the e-graph has it already)
    print(f"derivation ({len(derivation)} steps):")
    print(derivation)
    if args.svg:
        picture = svg(space_graph(space))
        if picture is None:
            raise RelgraphError("--svg needs Graphviz's `dot` program on the PATH")
        try:
            with open(args.svg, "w", encoding="utf-8") as f:
                f.write(picture)
        except OSError as exc:
            raise RelgraphError(f"cannot write --svg {args.svg}: {exc.strerror}") from None
        print(f"wrote {args.svg}")
    return 0


def _rewrite(args: argparse.Namespace) -> int:
    symbols, term, rewriter = _query(args)
    result, report = rewrite(term, rewriter, report=True, trace=args.trace)
    if args.trace:
        for step in report.applied:
            print(step)
    print(pprint(result))
    cost, before = shape_cost(result), shape_cost(term)  # Op weights where sizes are open
    print(f"cost {cost:g} (input {before:g}); rewritten in {report.time:.3f} s")
    if args.profile:
        print(report)
    status = 0
    if args.check or args.compile:
        inputs = _random_inputs(symbols, args.size)
        with np.errstate(all="ignore"):
            expected = evaluate(term, inputs)
            got = evaluate(result, inputs)
        status |= _report("rewritten (numpy)", expected, got, args.size)
        if args.compile:
            status |= _compiled(term, result, symbols, inputs, expected, args.size)
    return status


def _jit(args: argparse.Namespace) -> int:
    fn = _load_function(args.target)
    data = _arrays(args.args, args.scale)
    mine = [r for spec in args.relations for r in _relations(spec)]
    try:
        f = jit(fn, include=args.include, require=args.require, exclude=args.exclude,
                relations=mine)  # fmt: skip
    except TypeError as exc:  # not a relation: named by rg.jit
        raise RelgraphError(f"--relations: {exc}") from None
    start = time.perf_counter()
    try:
        got = f(**data)  # the first result: numpy runs the rewritten program meanwhile
    except RelgraphError:  # a trace or type error says what it is itself
        raise
    except TypeError as exc:  # the names given do not fit the function's parameters
        raise RelgraphError(f"--args do not fit {args.target}: {exc}") from None
    first = time.perf_counter() - start
    f.wait()
    ready = time.perf_counter() - start
    spec = f.last
    if spec is None:  # pragma: no cover - a call specializes
        raise RelgraphError(f"{args.target} was not specialized")
    print(f"traced:    {_text(spec.traced)}")
    print(f"rewritten: {_text(spec.rewritten)}")
    times = ", ".join(f"{k} {spec.seconds[k]:.3f} s" for k in ("trace", "rewrite"))
    print(f"cost {spec.cost_after:g} (traced {spec.cost_before:g}); {times}")
    tier = "compiled kernel" if spec.function.ready else "numpy (the kernel did not compile)"
    print(f"first result after {first:.3f} s (numpy tier); {tier} ready after {ready:.3f} s")
    with np.errstate(all="ignore"):
        want = fn(**data)
        reference = _best_of(lambda: fn(**data), 5)
    ours = _best_of(lambda: f(**data), 5)
    status = 0
    for k, (w, g) in enumerate(zip(flatten(want), flatten(got))):
        status |= _agreement(k, np.asarray(w, np.float64), np.asarray(g, np.float64))
    print(
        f"per call: rg.jit {ours * 1e3:.3f} ms, numpy {reference * 1e3:.3f} ms "
        f"({reference / ours:.1f}x)"
    )
    return status


def _load_function(target: str):
    fn = _load(target, "target", "function")
    if not callable(fn):
        raise RelgraphError(f"bad target {target!r}: {fn!r} is not a function")
    return fn


def _relations(spec: str) -> list:
    """The relations ``--relations FILE.py:NAME`` names: one, or a list or tuple of them."""
    found = _load(spec, "--relations", "relation")
    return list(found) if isinstance(found, (list, tuple)) else [found]


def _load(target: str, what: str, kind: str) -> Any:
    """The object ``NAME`` of ``FILE.py:NAME`` (the file run as a module) or
    ``module:NAME`` (imported)."""
    path, _, name = target.rpartition(":")
    if not path or not name.isidentifier():
        form = kind.upper()
        raise RelgraphError(f"bad {what} {target!r}: expected FILE.py:{form} or module:{form}")
    if path.endswith(".py"):
        spec = importlib.util.spec_from_file_location(f"relgraph_cli_{name}", path)
        if spec is None or spec.loader is None or not os.path.isfile(path):
            raise RelgraphError(f"bad {what} {target!r}: no Python file {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(path)
        except ImportError as exc:
            raise RelgraphError(f"bad {what} {target!r}: {exc}") from None
    if not hasattr(module, name):
        raise RelgraphError(f"bad {what} {target!r}: {path} defines no {kind} {name!r}")
    return getattr(module, name)


def _arrays(spec: str, scale: float) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    arrays: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, equals, number = item.partition("=")
        if equals:  # a number: a numpy scalar input (not a constant of the program)
            arrays[name.strip()] = _number(item, number.strip())
            continue
        parts = item.split(":")
        shaped = _SHAPE.match(parts[1]) or parts[1] == "scalar" if len(parts) > 1 else False
        if not 2 <= len(parts) <= 3 or not shaped or parts[0] in arrays:
            raise RelgraphError(
                f"bad --args item {item!r}: expected name:shape[:dtype], a shape like 1000x8, "
                "each name once"
            )
        shape = () if parts[1] == "scalar" else tuple(int(d) for d in parts[1].split("x"))
        try:
            dtype = np.dtype(parts[2] if len(parts) == 3 else "float64")
        except TypeError:
            raise RelgraphError(f"bad --args item {item!r}: {parts[2]!r} is no dtype") from None
        arrays[parts[0]] = (rng.normal(0.0, scale, shape)).astype(dtype)
    return arrays


def _number(item: str, text: str) -> np.generic:
    try:
        value = int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
    except ValueError:
        raise RelgraphError(f"bad --args item {item!r}: {text!r} is not a number") from None
    return np.int64(value) if isinstance(value, int) else np.float64(value)


def _agreement(k: int, want: np.ndarray, got: np.ndarray) -> int:
    """Print how output ``k`` compares with numpy's; 1 if it differs where numpy is finite."""
    finite = np.isfinite(want)
    with np.errstate(all="ignore"):
        ok = np.allclose(got[finite], want[finite], rtol=1e-9, atol=1e-12)
        gap = np.abs(got[finite] - want[finite]) / np.maximum(np.abs(want[finite]), 1e-300)
    if want.ndim == 0:
        if not finite:  # numpy overflowed (or has no value): nothing to agree with
            what = "finite: the rewritten program avoids it" if np.isfinite(got) else "the same"
            print(f"output {k}: numpy gives {want.item()} (it overflows or has no value); "
                  f"rg.jit gives {got.item():.10g}, {what}")  # fmt: skip
            return 0
        verdict = "same" if ok else "DIFFERENT"
        print(f"output {k}: numpy {want.item():.10g}, rg.jit {got.item():.10g} ({verdict})")
        return 0 if ok else 1
    print(
        f"output {k}: max relative difference from numpy where numpy is finite "
        f"{np.max(gap, initial=0.0):.2g} ({'same' if ok else 'DIFFERENT'}); not finite: numpy "
        f"{np.size(want) - np.count_nonzero(finite)}, rg.jit "
        f"{np.size(got) - np.count_nonzero(np.isfinite(got))}"
    )
    return 0 if ok else 1


def _text(program) -> str:
    return ", ".join(pprint(p) for p in flatten(program))


def _random_inputs(symbols: dict[str, Symbol], size: int) -> dict[Symbol, np.ndarray]:
    # In (0.5, 1.5): inside the domain of log, sqrt and division.
    rng = np.random.default_rng(0)
    return {
        s: rng.uniform(0.5, 1.5, (size,) * s.type.ndim).astype(s.type.dtype)
        for s in symbols.values()
    }


def _report(label: str, expected, got, size: int) -> int:
    ok = np.allclose(expected, got, rtol=1e-9, atol=1e-12, equal_nan=True)
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf
        gap = np.abs(np.asarray(expected, float) - np.asarray(got, float))
    diff = float(np.nanmax(gap, initial=0.0))
    verdict = "same" if ok else "DIFFERENT"
    print(f"check {label} on random {size}-long inputs: max |difference| = {diff:.3g} ({verdict})")
    return 0 if ok else 1


def _compiled(term, result, symbols, inputs, expected, size: int) -> int:
    ordered = list(symbols.values())
    args = [inputs[s] for s in ordered]
    start = time.perf_counter()
    f = function(ordered, result, compile="eager")  # it times the kernel, not numpy
    got = f(*args)
    first = time.perf_counter() - start
    status = _report("compiled (Numba)", expected, got, size)
    kernel = _best_of(lambda: f(*args))
    with np.errstate(all="ignore"):
        reference = _best_of(lambda: evaluate(term, inputs))
    print(
        f"compile + first call {first:.3f} s; per call: compiled rewrite {kernel * 1e6:.1f} us, "
        f"numpy on the input {reference * 1e6:.1f} us ({reference / kernel:.1f}x)"
    )
    return status


WARMUP = 0.25  # seconds of calls before timing: an idle core runs its first calls slowly


def _best_of(fn, repeat: int = 20) -> float:
    """The best of ``repeat`` timed calls, after :data:`WARMUP` seconds of calls (on
    virtual machines a core that sat idle runs the next calls up to 20x slower, and
    numpy's run leaves the other core idle), the same for every contender."""
    until = time.perf_counter() + WARMUP
    while time.perf_counter() < until:
        fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


if __name__ == "__main__":
    sys.exit(main())
