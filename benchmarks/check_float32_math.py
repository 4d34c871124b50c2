"""Every float32 through ``relgraph.backends.numba.vecmath32``, against the exact value.

Run from the repository root (about two minutes per function on two cores)::

    python benchmarks/check_float32_math.py [exp tanh log softplus log1p erf]

The tests sample about a million values per function; this runs each function on every
float32 of its domain (beyond it the result is a constant the specials check), in
chunks, against numpy's float64 function of the same input (exact to far below a float32
ulp), and prints the largest error in float32 ulp and where, and how many results
differ from the float64 one rounded where that is not finite or is zero (sign included).
It exits 1 if an error exceeds 2 ulp or a special differs.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import scipy.special
from numba import njit

from relgraph.backends.numba import vecmath32

# name: (the float64 reference, the largest magnitude checked, whether negatives are)
DOMAINS = {
    "exp": (np.exp, 105.0, True),
    "tanh": (np.tanh, 12.0, True),
    "log": (np.log, float(np.finfo(np.float32).max), False),
    "softplus": (lambda v: np.logaddexp(0.0, v), 110.0, True),
    "log1p": (np.log1p, float(np.finfo(np.float32).max), True),
    "erf": (scipy.special.erf, 4.0, True),
}
CHUNK = 1 << 25


def floats_up_to(top: float) -> np.ndarray:
    """Every float32 from +0.0 to ``top``, in order (by their bits)."""
    return np.arange(0, np.float32(top).view(np.int32) + 1, dtype=np.int32).view(np.float32)


def check(name: str) -> tuple[float, float, int]:
    """The largest error in ulp, where, and how many specials differ."""
    fn = getattr(vecmath32, name)
    exact, top, negatives = DOMAINS[name]

    @njit(error_model="numpy")
    def run(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])

    worst, at, specials = 0.0, 0.0, 0
    positive = floats_up_to(top)
    for sign in (1, -1) if negatives else (1,):
        for start in range(0, positive.size, CHUNK):
            x = positive[start : start + CHUNK] * np.float32(sign)
            got = np.empty_like(x)
            run(x, got)
            with np.errstate(all="ignore"):
                want = exact(x.astype(np.float64))
                rounded = want.astype(np.float32)
            plain = np.isfinite(rounded) & np.isfinite(got) & (rounded != 0)
            ulp = np.spacing(np.abs(rounded[plain])).astype(np.float64)
            err = np.abs(got[plain] - want[plain]) / ulp
            if err.size and err.max() > worst:
                worst, at = float(err.max()), float(x[plain][np.argmax(err)])
            same = (got == rounded) & (np.signbit(got) == np.signbit(rounded))
            same |= np.isnan(got) & np.isnan(rounded)
            specials += int((~plain & ~same).sum())
    return worst, at, specials


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"any of {', '.join(DOMAINS)} (default: all)")
    names = parser.parse_args(argv).names or list(DOMAINS)
    unknown = [n for n in names if n not in DOMAINS]
    if unknown:
        parser.error(f"no float32 function {', '.join(unknown)}: choose from {', '.join(DOMAINS)}")
    failed = False
    for name in names:
        worst, at, specials = check(name)
        print(f"{name}: at most {worst:.2f} ulp (at {at!r}), {specials} specials differ")
        failed |= worst > 2.0 or specials > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
