"""Large outputs reuse released memory, and never memory a result still uses."""

import threading

import numpy as np

import relgraph as rg
from relgraph.backends.numba import buffers

SHAPE = (1024, 256)  # 2 MiB of float64: above buffers.MIN_BYTES


def test_a_held_result_and_its_views_are_never_handed_out_again():
    held = buffers.empty(SHAPE, np.float64)
    held[...] = 1.0
    views = [held[::2], held.T, held.reshape(-1), held[3]]
    del held
    fresh = [buffers.empty(SHAPE, np.float64) for _ in range(4)]
    for f in fresh:
        f[...] = 7.0
        assert not any(np.shares_memory(f, v) for v in views)
    assert all(float(v.min()) == 1.0 for v in views)


def test_released_memory_is_reused():
    a = buffers.empty(SHAPE, np.float64)
    address = a.ctypes.data
    del a
    b = buffers.empty(SHAPE, np.float64)
    assert b.ctypes.data == address
    assert buffers.empty((10,), np.float64).base is None  # small: numpy's own


def test_compiled_results_stay_as_they_were(rng):
    x = rg.vector("x")
    f = rg.function([x], rg.exp(x) + 1.0, compile="eager")
    a = rng.normal(size=300_000)
    first = f(a)
    kept = first.copy()
    later = [f(a * k) for k in (2.0, 3.0, 4.0)]
    np.testing.assert_array_equal(first, kept)
    for k, r in zip((2.0, 3.0, 4.0), later):
        np.testing.assert_allclose(r, np.exp(a * k) + 1.0, rtol=1e-14)
        assert not np.shares_memory(r, first)


def test_threads_get_distinct_blocks():
    got: list = []

    def grab():
        for _ in range(50):
            a = buffers.empty(SHAPE, np.float64)
            a[0, 0] = threading.get_ident()
            got.append(a)
            if len(got) > 20:
                got.pop(0)  # released while others allocate

    threads = [threading.Thread(target=grab) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    live = list(got)
    assert len({a.ctypes.data for a in live}) == len(live)


def test_the_pool_keeps_at_most_its_limit_of_released_memory():
    big = (buffers.MAX_BYTES // 8 // 3 + 1024,)  # a third of the limit, and a bit
    arrays = [buffers.empty(big, np.float64) for _ in range(6)]
    del arrays  # released at once, with no allocation after them
    assert buffers._held <= buffers.MAX_BYTES and not buffers._released
