"""Arrays kernels make on huge pages: the same arrays as numpy's (joins too), and
kernels that make them load from Numba's cache in a new process (``madvise`` is bound
by name)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import njit

import relgraph as rg
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


def _values(rng, dtype, shape):
    """Values of ``dtype`` with its extremes: +-0.0, +-inf, NaN, subnormals, limits."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        specials = [np.nan, -0.0, 0.0, np.inf, -np.inf, 5e-324, -1.5, 2.5, 3e38]
        with np.errstate(all="ignore"):
            return rng.choice(np.array(specials), shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.choice(np.array([info.min, info.max, 0, 1], dtype), shape)


JOINS = [
    ("stack", 0, (4, 3), (4, 3)), ("stack", 1, (4, 3), (4, 3)), ("stack", -1, (4, 3), (4, 3)),
    ("concatenate", 0, (2, 3), (5, 3)), ("concatenate", -1, (4, 1), (4, 2)),
    ("concatenate", 0, (0, 3), (2, 3)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("da", "db"),
    [("bool", "int8"), ("uint8", "float32"), ("int64", "uint64"), ("float32", "float64"),
     ("int32", "float64"), ("float64", "float64")],
)  # fmt: skip
def test_kernels_join_into_one_fresh_array_as_numpy_joins(da, db):
    """``stack`` and ``concatenate`` write each part into its place of one fresh array,
    converted to numpy's result dtype as they are written (values, dtype, signs of
    zeros and NaN as numpy's), and return it without a copy."""
    rng = np.random.default_rng(3)
    a, b = rg.matrix("a", da), rg.matrix("b", db)
    for name, axis, sa, sb in JOINS:
        f = rg.function([a, b], getattr(rg, name)([a, b], axis), compile="eager")
        assert f"np.{name}" not in f.source and "kernels.fresh((" in f.source
        assert ".copy()" not in f.source
        A, B = _values(rng, da, sa), _values(rng, db, sb)
        got, want = f(A, B), getattr(np, name)([A, B], axis=axis)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        if want.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_a_stack_of_numbers_is_a_vector():
    x, y = rg.scalar("x"), rg.scalar("y", "int64")
    f = rg.function([x, y], rg.stack([x, y * 2]), compile="eager")
    got = f(np.float64(-0.0), np.int64(3))
    np.testing.assert_array_equal(got, np.stack([-0.0, 6]))
    assert got.dtype == np.float64 and np.signbit(got[0])
    assert "np.array((" in f.source
