"""The ``relgraph`` command line.

    relgraph rewrite "A @ (x + y)" --include linalg --symbols "A:matrix,x:vector,y:vector"
    relgraph explore "A @ x + A @ y" --include linalg --symbols "A:matrix,x:vector,y:vector"

Bad input (unparseable or unsafe expressions, unknown tags, bad symbol specs)
prints one line to stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np

import relgraph as rg
from relgraph.exceptions import RelgraphError

__all__ = ["main", "parse_symbols"]

_KINDS = {"scalar": rg.scalar, "vector": rg.vector, "matrix": rg.matrix}


def parse_symbols(spec: str) -> dict[str, rg.Symbol]:
    """Parse ``"A:matrix,x:vector:float32"`` into symbols.

    Examples
    --------
    >>> parse_symbols("A:matrix,x:vector:float32")
    {'A': A, 'x': x}
    """
    symbols: dict[str, rg.Symbol] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        parts = item.split(":")
        if len(parts) not in (2, 3) or parts[1] not in _KINDS:
            raise RelgraphError(
                f"bad symbol spec {item!r}: expected name:kind[:dtype], kind one of "
                f"{', '.join(_KINDS)}"
            )
        name, kind = parts[0], parts[1]
        dtype = parts[2] if len(parts) == 3 else "float64"
        try:
            symbols[name] = _KINDS[kind](name, dtype)
        except (TypeError, ValueError) as exc:
            raise RelgraphError(f"bad symbol spec {item!r}: {exc}") from None
    return symbols


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="relgraph", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rw = sub.add_parser("rewrite", help="rewrite an expression with relations from optdb")
    _add_query(rw)
    rw.add_argument("--profile", action="store_true", help="print the rewrite report")
    rw.add_argument(
        "--check",
        action="store_true",
        help="evaluate input and result on random data and compare (numpy)",
    )
    rw.add_argument(
        "--compile",
        action="store_true",
        help="also compile the result with Numba, run it on the random data, check it "
        "against numpy and print timings",
    )
    rw.add_argument("--size", type=int, default=8, help="dimension length of the random data")
    ex = sub.add_parser(
        "explore", help="explore the rewrite space of an expression; print the best term"
    )
    _add_query(ex)
    ex.add_argument("--max-terms", type=int, default=1000, metavar="N")
    ex.add_argument("--max-depth", type=int, default=None, metavar="D")
    ex.add_argument("--timeout", type=float, default=None, metavar="SECONDS")
    ex.add_argument(
        "--directions", nargs="+", default=["forward", "backward"], choices=["forward", "backward"]
    )
    ex.add_argument("--svg", metavar="FILE", help="write the space as SVG (needs Graphviz's dot)")
    return parser


def _add_query(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("expr", help='an expression, e.g. "A @ (x + y)"')
    parser.add_argument("--include", nargs="+", required=True, metavar="TAG")
    parser.add_argument("--require", nargs="+", default=[], metavar="TAG")
    parser.add_argument("--exclude", nargs="+", default=[], metavar="TAG")
    parser.add_argument("--symbols", default="", help='e.g. "A:matrix,x:vector:float32"')


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``relgraph`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return _rewrite(args) if args.command == "rewrite" else _explore(args)
    except RelgraphError as exc:
        print(f"relgraph: error: {exc}", file=sys.stderr)
        return 2


def _query(args: argparse.Namespace) -> tuple[dict[str, rg.Symbol], rg.Term, object]:
    from relations import optdb  # the engine does not import the library at module level

    symbols = parse_symbols(args.symbols)
    term = rg.parse(args.expr, **symbols)
    rewriter = optdb.query(include=args.include, require=args.require, exclude=args.exclude)
    return symbols, term, rewriter


def _explore(args: argparse.Namespace) -> int:
    from relgraph.display import space_graph, svg

    _, term, rewriter = _query(args)
    if args.max_terms < 1 or (args.max_depth is not None and args.max_depth < 0):
        raise RelgraphError("--max-terms must be positive and --max-depth non-negative")
    space = rg.explore(
        term,
        rewriter,
        directions=args.directions,
        max_terms=args.max_terms,
        max_depth=args.max_depth,
        timeout=args.timeout,
    )
    best = space.best()
    status = "complete" if space.complete else f"cut off by {space.stopped_by}"
    print(rg.pprint(best))
    print(f"cost {space.cost(best):g} (start {space.cost(term):g})")
    print(f"explored {len(space)} terms in {space.elapsed:.2f} s ({status})")
    derivation = space.explain(best)
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
    result, report = rg.rewrite(term, rewriter, report=True)
    print(rg.pprint(result))
    if args.profile:
        print(report)
    status = 0
    if args.check or args.compile:
        inputs = _random_inputs(symbols, args.size)
        expected = rg.evaluate(term, inputs)
        status |= _report("rewritten (numpy)", expected, rg.evaluate(result, inputs), args.size)
        if args.compile:
            status |= _compiled(result, symbols, inputs, expected, args.size)
    return status


def _random_inputs(symbols: dict[str, rg.Symbol], size: int) -> dict[rg.Symbol, np.ndarray]:
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


def _compiled(result, symbols, inputs, expected, size: int) -> int:
    ordered = list(symbols.values())
    args = [inputs[s] for s in ordered]
    start = time.perf_counter()
    f = rg.function(ordered, result)
    got = f(*args)
    first = time.perf_counter() - start
    status = _report("compiled (Numba)", expected, got, size)
    kernel = _best_of(lambda: f(*args))
    reference = _best_of(lambda: rg.evaluate(result, inputs))
    print(
        f"compile + first call {first:.3f} s; per call: kernel {kernel * 1e6:.1f} us, "
        f"numpy evaluation {reference * 1e6:.1f} us"
    )
    return status


def _best_of(fn, repeat: int = 20) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


if __name__ == "__main__":
    sys.exit(main())
