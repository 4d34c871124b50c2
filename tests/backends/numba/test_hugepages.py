"""Arrays kernels make on huge pages: the same arrays as numpy's, and kernels that
make them load from Numba's cache in a new process (``madvise`` is bound by name)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import njit

from relgraph.backends.numba.hugepages import ADVISED_BYTES, fresh, moved


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, np.bool_])
def test_fresh_arrays_are_empty_arrays_of_the_shape_and_dtype(dtype):
    for shape in [(0,), (3, 4), (ADVISED_BYTES // np.dtype(dtype).itemsize + 5,)]:
        a = fresh(shape, dtype)
        assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous
        a[...] = 1
        assert a.all()


@pytest.mark.parametrize(
    ("shape", "order"),
    [((5, 7), (1, 0)), ((4, 5, 6), (2, 0, 1)), ((4, 5, 6), (0, 2, 1)), ((1300, 1000), (1, 0))],
)
def test_moved_is_numpys_contiguous_transpose(shape, order):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    for source in (x, x[..., ::-1], np.asfortranarray(x)):
        got = moved(source, order)
        expected = np.ascontiguousarray(np.transpose(source, order))
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(got, expected)


def test_a_kernel_that_makes_fresh_arrays_is_cached_and_loads_in_a_new_process(tmp_path):
    (tmp_path / "kmod.py").write_text(
        textwrap.dedent(
            """
            import numpy as np
            from numba import njit
            from relgraph.backends.numba.hugepages import fresh

            @njit(cache=True, nogil=True)
            def kernel(n):
                a = fresh((n,), np.float64)
                a[:] = 2.0
                return a.sum()
            """
        )
    )
    script = (
        "import warnings; warnings.simplefilter('error'); import kmod; "
        "print(kmod.kernel(1 << 20), sum(kmod.kernel.stats.cache_hits.values()))"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
            check=True,
        ).stdout.split()
        for _ in range(2)
    ]  # fmt: skip
    assert runs == [["2097152.0", "0"], ["2097152.0", "1"]]


def test_fresh_is_callable_from_other_kernels():
    @njit
    def doubled(x):
        out = fresh(x.shape, x.dtype)
        out[...] = 2 * x
        return out

    x = np.arange(ADVISED_BYTES // 8 + 3, dtype=np.float64)
    np.testing.assert_array_equal(doubled(x), 2 * x)
