"""The best time of a few calls, taken once the machine is busy.

On the 2-core virtual machines these tables come from, a core that was idle for a
second runs the next call up to 20x slower (numpy's ``np.exp(x, out=o)`` on 10^6
doubles: 20 ms, then 3.7, 1.2, ... 0.8 ms), and only about ten calls later at full
speed.  A best-of-5 taken right after a wait (a compile, another peer's threads going
quiet) measured that ramp, for whichever peer came after the wait.  So every
measurement first calls the function for :data:`WARMUP` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["best", "WARMUP"]

WARMUP = 0.25  # seconds of calls before the timed ones


def best(fn: Callable[[], object], repeat: int, warmup: float = WARMUP) -> float:
    """The shortest of ``repeat`` timed calls of ``fn()``, in seconds, after calling it
    for ``warmup`` seconds (at least once)."""
    end = time.perf_counter() + warmup
    fn()
    while time.perf_counter() < end:
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
