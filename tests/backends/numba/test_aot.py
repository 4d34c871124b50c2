"""Ahead-of-time kernels: a later process loads them without importing Numba."""

import hashlib
import os
import subprocess
import sys

import numpy as np

import relgraph as rg
from relgraph.backends.numba import aot
from relgraph.backends.numba.kernel_cache import aot_name, cache_dir
from relgraph.backends.numba.lowering import lower

SCRIPT = """
import sys, numpy as np, relgraph as rg
x, y = rg.vector("x"), rg.vector("y")
f = rg.function([x, y], rg.exp(x) * y + rg.log1p(y * y) - x / y, compile="eager")
print(f(np.array([0.5, 1.0]), np.array([1.0, 2.0])).tolist(), "numba" in sys.modules)
"""


def test_a_built_kernel_is_loaded_without_numba(tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    env = dict(os.environ, RELGRAPH_CACHE_DIR=str(tmp_path), RELGRAPH_AOT="0")
    run = [sys.executable, "-c", SCRIPT]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    assert first.split()[-1] == "True"  # no ahead-of-time build yet: Numba's JIT ran
    (source,) = cache_dir().glob("k_*.py")
    x, y = rg.vector("x"), rg.vector("y")
    term = rg.exp(x) * y + rg.log1p(y * y) - x / y
    sig = aot.signature([x, y], [term], lower([x, y], [term]).out_slots)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    aot.build(source, aot_name(source.read_text(), sig), sig, digest)  # as a background build
    later = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    expected = (np.exp([0.5, 1.0]) * [1.0, 2.0] + np.log1p([1.0, 4.0]) - [0.5, 0.5]).tolist()
    values, numba_loaded = later.rsplit(" ", 1)
    np.testing.assert_allclose(eval(values), expected, rtol=1e-15)
    assert numba_loaded.strip() == "False"


def test_builds_wait_for_the_process_to_exit_and_share_one_builder(tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_AOT", "1")
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(aot, "_PENDING", [])
    started = []
    monkeypatch.setattr(aot, "_spawn", lambda d: started.append(d))
    for k in range(10):
        (tmp_path / f"k_{k}.py").write_text(f"# kernel {k}\n")
        aot.start_build(tmp_path / f"k_{k}.py", f"aot_{k}", "Tuple((float64,))(float64)")
    assert started == [] and len(aot._PENDING) == 10
    aot._start_pending()  # what atexit runs
    assert started == [tmp_path]  # one builder for the directory, ten queued jobs
    assert len(list((tmp_path / aot.QUEUE).glob("*.job"))) == 10


def test_one_builder_at_a_time_and_a_dead_one_blocks_nothing(tmp_path):
    import fcntl

    fd = os.open(tmp_path / aot.BUILDER_LOCK, os.O_CREAT | os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a builder is at work
    assert aot._builder_running(tmp_path)
    assert aot.run_queue(tmp_path) == 0  # a second builder leaves at once
    os.close(fd)  # the builder exits (or is killed): the system drops its lock
    assert not aot._builder_running(tmp_path)


def test_the_builder_works_through_the_queue(tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    built = []
    monkeypatch.setattr(aot, "build", lambda src, name, sig, sha256: built.append(name))
    for k in range(3):
        (tmp_path / f"k_{k}.py").write_text(f"# kernel {k}\n")
        aot._queue(tmp_path / f"k_{k}.py", f"aot_{k}", "sig")
    assert aot.run_queue(tmp_path) == 3 and sorted(built) == ["aot_0", "aot_1", "aot_2"]
    assert not list((tmp_path / aot.QUEUE).glob("*.job"))


def test_builds_are_not_started_when_disabled(tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_AOT", "0")
    monkeypatch.setattr(aot, "_PENDING", [])
    aot.start_build(tmp_path / "k_x.py", "aot_x", "Tuple((float64,))(float64)")
    assert aot._PENDING == []


def test_a_failed_build_is_marked_and_not_queued_again(tmp_path, monkeypatch):
    source = tmp_path / "k_bad.py"
    source.write_text("def kernel(a0):\n    return (undefined_name,)\n")
    try:
        aot.build(
            source, "aot_bad", "Tuple((float64,))(float64)", aot._sha256(source.read_bytes())
        )
    except Exception:
        pass
    assert (tmp_path / "aot_bad.failed").exists()
    assert not aot._queue(source, "aot_bad", "Tuple((float64,))(float64)")
