"""The tag vocabulary of relgraph's relation databases, declared in one place."""

LINALG = "linalg"  # linear algebra identities
EXPAND = "expand"  # rewrites toward more, smaller terms (distribution)
FACTOR = "factor"  # the reverse of expand: gather common factors
FAST_RUN = "fast_run"  # the default optimisation pipeline

__all__ = ["LINALG", "EXPAND", "FACTOR", "FAST_RUN"]
