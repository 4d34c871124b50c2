"""The tag vocabulary of relgraph's relation databases, declared in one place.

>>> sorted(TAGS) == sorted([FAST_RUN, CANONICALIZE, STABILIZE, SPECIALIZE, LINALG,
...                         EXPAND, FACTOR, UNSAFE, REASSOCIATE, NO_SIGNED_ZEROS])
True
"""

FAST_RUN = "fast_run"
CANONICALIZE = "canonicalize"
STABILIZE = "stabilize"
SPECIALIZE = "specialize"
LINALG = "linalg"
EXPAND = "expand"
FACTOR = "factor"
UNSAFE = "unsafe"
REASSOCIATE = "reassociate"
NO_SIGNED_ZEROS = "no_signed_zeros"

TAGS: dict[str, str] = {
    FAST_RUN: "the default pipeline: safe rewrites toward a simpler, faster, stabler program",
    CANONICALIZE: "one normal form per program: AC order, identities, folding, like terms",
    STABILIZE: "numerically stable forms (log1p, expm1, log-sum-exp)",
    SPECIALIZE: "cheaper forms of the canonical one (x - y, x / y, x * x, product order)",
    LINALG: "linear algebra identities",
    EXPAND: "toward more, smaller terms (distribution); never selected with its factor",
    FACTOR: "the reverse of expand: gather common factors",
    UNSAFE: "valid on part of the domain only (x / x -> 1); selected only when named",
    REASSOCIATE: "float sums and products regrouped (x * (y * z) -> x * y * z), which can "
    "overflow or round where the written grouping does not; selected only when named",
    NO_SIGNED_ZEROS: "may give 0.0 where numpy gives -0.0, or the reverse (x + 0 -> x at "
    "x = -0.0), as C compilers' -fno-signed-zeros; selected only when named",
}

__all__ = [
    "FAST_RUN",
    "CANONICALIZE",
    "STABILIZE",
    "SPECIALIZE",
    "LINALG",
    "EXPAND",
    "FACTOR",
    "UNSAFE",
    "REASSOCIATE",
    "NO_SIGNED_ZEROS",
    "TAGS",
]
