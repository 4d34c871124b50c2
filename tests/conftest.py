import os

# Numba colours its messages with colorama, whose init/deinit swap sys.stdout: run on
# the background compiler, that loses a doctest's output ("Got nothing") when a
# kernel compiles meanwhile.  relgraph imports Numba with highlighting off when it is
# the first to import it; a test module importing Numba directly comes first here.
os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import relgraph as rg

# Derandomized: the same examples on every run, so a busy machine or another seed
# never turns the suite red ("deep" explores at random).
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep", max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")


@pytest.fixture
def syms():
    """The documentation's symbols: matrices A, B and vectors x, y, z, w."""
    A, B = rg.matrix("A"), rg.matrix("B")
    x, y, z, w = (rg.vector(n) for n in "xyzw")
    return A, B, x, y, z, w


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def ctrl_c():
    """``ctrl_c(seconds)``: press Ctrl-C after ``seconds``, as a user at a terminal would.

    Python's SIGINT handler is installed for the test: a process started in the
    background (``cmd &``) inherits SIGINT ignored, and then Ctrl-C never arrives.
    """
    import _thread
    import signal
    import threading

    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    timers = []

    def press(seconds: float) -> None:
        timers.append(threading.Timer(seconds, _thread.interrupt_main))
        timers[-1].start()

    yield press
    for timer in timers:
        timer.cancel()
        timer.join()
    signal.signal(signal.SIGINT, saved)


@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory):
    """Each test module that uses it compiles into a fresh cache directory."""
    mp = pytest.MonkeyPatch()
    mp.setenv("RELGRAPH_CACHE_DIR", str(tmp_path_factory.mktemp("kernels")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def dask_client(tmp_path_factory):
    """A dask.distributed client of a ``LocalCluster`` with 2 worker processes, which
    share a fresh relgraph cache directory with this process."""
    distributed = pytest.importorskip("distributed")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RELGRAPH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        with (
            distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            yield client


@pytest.fixture(autouse=True)
def _background_compiles_finish_in_their_test():
    """A test's background compiles end within it: a later test (with another cache
    directory, or counting files) never sees them."""
    from relgraph.backends.numba.background import COMPILER

    yield
    assert COMPILER.idle(600), "the background compiler did not finish"
