"""The ``relgraph`` command line.

    relgraph rewrite "A @ (x + y)" --include linalg --symbols "A:matrix,x:vector,y:vector"

Bad input (unparseable or unsafe expressions, unknown tags, bad symbol specs)
prints one line to stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

import relgraph as rg
from relgraph.exceptions import RelgraphError

__all__ = ["main", "parse_symbols"]

_KINDS = {"scalar": rg.scalar, "vector": rg.vector, "matrix": rg.matrix}


def parse_symbols(spec: str) -> dict[str, rg.Symbol]:
    """Parse ``"A:matrix,x:vector:float32"`` into symbols.

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
    rw.add_argument("expr", help='an expression, e.g. "A @ (x + y)"')
    rw.add_argument("--include", nargs="+", required=True, metavar="TAG")
    rw.add_argument("--require", nargs="+", default=[], metavar="TAG")
    rw.add_argument("--exclude", nargs="+", default=[], metavar="TAG")
    rw.add_argument("--symbols", default="", help='e.g. "A:matrix,x:vector:float32"')
    rw.add_argument("--profile", action="store_true", help="print the rewrite report")
    rw.add_argument(
        "--check",
        action="store_true",
        help="evaluate input and result on random data and compare (numpy)",
    )
    rw.add_argument("--size", type=int, default=8, help="dimension length for --check")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``relgraph`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return _rewrite(args)
    except RelgraphError as exc:
        print(f"relgraph: error: {exc}", file=sys.stderr)
        return 2


def _rewrite(args: argparse.Namespace) -> int:
    from relations import optdb  # the engine does not import the library at module level

    symbols = parse_symbols(args.symbols)
    term = rg.parse(args.expr, **symbols)
    rewriter = optdb.query(include=args.include, require=args.require, exclude=args.exclude)
    result, report = rg.rewrite(term, rewriter, report=True)
    print(rg.pprint(result))
    if args.profile:
        print(report)
    if args.check:
        return _check(term, result, symbols, args.size)
    return 0


def _check(term, result, symbols: dict[str, rg.Symbol], size: int) -> int:
    rng = np.random.default_rng(0)
    inputs = {
        s: rng.standard_normal((size,) * s.type.ndim).astype(s.type.dtype)
        for s in symbols.values()
    }
    expected, got = rg.evaluate(term, inputs), rg.evaluate(result, inputs)
    ok = np.allclose(expected, got, rtol=1e-9, atol=1e-12, equal_nan=True)
    diff = float(np.max(np.abs(np.asarray(expected) - np.asarray(got)), initial=0.0))
    print(
        f"check on random {size}-long inputs: max |difference| = {diff:.3g} "
        f"({'same' if ok else 'DIFFERENT'})"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
