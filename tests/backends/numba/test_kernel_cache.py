"""The kernel cache trusts nothing on disk: edited, truncated or corrupt entries are
replaced, never used, and an unwritable cache directory still compiles."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import relgraph as rg
from relgraph.backends.numba.kernel_cache import kernel_path
from relgraph.backends.numba.lowering import lower

SCRIPT = (
    "import numpy as np, relgraph as rg; x = rg.vector('x'); "
    "print(rg.function([x], rg.exp(x) * 2.5 + x, compile='eager')(np.ones(3)).tolist())"
)
EXPECTED = (np.exp(np.ones(3)) * 2.5 + 1).tolist()


def run(cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, RELGRAPH_CACHE_DIR=str(cache))
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )


def result(done: subprocess.CompletedProcess) -> list:
    assert done.returncode == 0, done.stderr[-2000:]
    return eval(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def warm(tmp_path):
    """A cache directory after one process compiled the kernel."""
    np.testing.assert_allclose(result(run(tmp_path)), EXPECTED)
    return tmp_path


def the(pattern: str, cache: Path) -> Path:
    (found,) = (cache / "kernels").glob(pattern)
    return found


def test_an_edited_kernel_file_is_replaced(warm):
    kernel = the("k_*.py", warm)
    kernel.write_text(kernel.read_text().replace("2.5", "3.5"))  # one flipped digit
    np.testing.assert_allclose(result(run(warm)), EXPECTED)
    assert "2.5" in kernel.read_text() and "3.5" not in kernel.read_text()


def test_a_truncated_kernel_file_is_replaced(warm):
    kernel = the("k_*.py", warm)
    kernel.write_text(kernel.read_text()[:40])
    np.testing.assert_allclose(result(run(warm)), EXPECTED)


def test_a_corrupt_numba_index_is_rebuilt(warm):
    for index in (warm / "kernels" / "__pycache__").glob("*.nbi"):
        index.write_bytes(b"\x80\x04garbage" * 10)
    for data in (warm / "kernels" / "__pycache__").glob("*.nbc"):
        data.write_bytes(data.read_bytes()[:20])
    np.testing.assert_allclose(result(run(warm)), EXPECTED)
    np.testing.assert_allclose(result(run(warm)), EXPECTED)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_cache_directory_warns_once_and_compiles(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels").chmod(0o500)
    done = run(tmp_path)
    np.testing.assert_allclose(result(done), EXPECTED)
    assert done.stderr.count("kernels are compiled for this process only") == 1


def test_a_cache_directory_that_is_a_file_warns_once_and_compiles(tmp_path):
    (tmp_path / "kernels").write_text("not a directory")
    done = run(tmp_path)
    np.testing.assert_allclose(result(done), EXPECTED)
    assert done.stderr.count("kernels are compiled for this process only") == 1


def test_kernel_path_writes_exactly_the_source(tmp_path):
    path = kernel_path(tmp_path, "print('a')\n")
    assert path.read_text() == "print('a')\n"
    path.write_text("print('b')\n")
    assert kernel_path(tmp_path, "print('a')\n").read_text() == "print('a')\n"


def test_only_generated_kernels_use_numbas_disk_cache():
    # Numba's cache index is not safe for two processes writing it at once: each may
    # pick the same data file for a different signature (or a different closure of one
    # factory), and a process then runs the other's machine code (a min that sums).
    # relgraph's own modules never use it; a generated kernel file holds one signature.
    package = Path(rg.__file__).parent
    users = [
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if "cache=True" in p.read_text() or '"cache": True' in p.read_text()
    ]
    assert sorted(users) == ["backends/numba/kernel_cache.py", "backends/numba/lowering.py"]
    source = lower([rg.matrix("M")], [rg.min(rg.matrix("M"), axis=0)]).source
    assert source.count("cache=True") == 1  # the kernel's own decorator


def test_a_kernel_file_holds_one_signature(warm):
    index = the("__pycache__/k_*.nbi", warm)
    data = list(index.parent.glob(index.name.split(".py")[0] + "*.nbc"))
    assert len(data) == 1


def test_a_cached_kernel_calls_its_own_helpers(tmp_path):
    """Numba names compiled code by name, argument types and a per-process counter: a
    kernel loaded from the cache into a process that compiled a sibling helper first
    (the mean of rows beside the sum of rows) must still call its own."""
    env = dict(os.environ, RELGRAPH_CACHE_DIR=str(tmp_path))
    script = """
import sys, numpy as np, relgraph as rg
T = rg.tensor("T", ndim=3)
a = np.arange(24.0).reshape(2, 3, 4)
first, then = sys.argv[1:]
for kind in (first, then):
    got = rg.function([T], getattr(rg, kind)(T, axis=(0, 2)) * 2.0, compile="eager")(a)
    want = getattr(np, kind)(a, axis=(0, 2)) * 2.0
    assert np.allclose(got, want), (kind, got, want)
"""
    for order in (("sum", "mean"), ("mean", "sum"), ("prod", "max"), ("min", "prod")):
        done = subprocess.run(
            [sys.executable, "-c", script, *order], env=env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-1500:]


def test_one_source_for_two_dtypes_is_two_kernels_in_two_files(tmp_path, monkeypatch):
    # `x < y` reads the same for int8 and int64 inputs: the kernel is kept by source
    # and signature, and each signature has a file (and a Numba index) of its own.
    import relgraph.backends.numba.kernel_cache as K

    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(K, "_KERNELS", {})
    a, b, c, d = (rg.vector(n, t) for n, t in zip("abab", ["int8"] * 2 + ["int64"] * 2))
    f = rg.function([a, b], a < b, compile="eager")
    g = rg.function([c, d], c < d, compile="eager")
    assert f.source == g.source and f.kernel is not g.kernel
    small = np.array([-128, 101], np.int8)
    np.testing.assert_array_equal(f(small, small[::-1]), [True, False])
    np.testing.assert_array_equal(g(np.array([2**40, 3]), np.array([1, 2**40])), [False, True])
    files = [p for p in K.cache_dir().glob("k_*.py") if p.read_text() == f.source]
    assert len(files) == 2
