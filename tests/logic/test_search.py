"""The search thread: deep searches, Ctrl-C, timeouts and threads never crash or leak."""

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from local_relations import dot_distributeo, localdb

import relgraph as rg
from relgraph.logic import search as worker


def busy_o(a, b):
    """A relation stuck inside one application: it never answers, never yields."""

    def goal(state):
        while True:
            pass
        yield state  # pragma: no cover

    return goal


def cpu_seconds_over(seconds: float) -> float:
    start = time.process_time()
    time.sleep(seconds)
    return time.process_time() - start


def test_concurrent_rewrites_leave_process_settings_alone():
    limit, stack = sys.getrecursionlimit(), threading.stack_size()
    vs = [rg.vector(f"v{i}") for i in range(200)]
    t = rg.add(*[v * 1 + 0 for v in vs])
    q = localdb.query(include=["fast_run"])
    with ThreadPoolExecutor(4) as ex:
        results = list(ex.map(lambda i: rg.rewrite(t, q), range(8)))
    assert all(r == results[0] for r in results)
    assert sys.getrecursionlimit() == limit and threading.stack_size() == stack
    # one long-lived search thread, not one per call
    assert sum(th.name == "relgraph-goals" for th in threading.enumerate()) == 1


def test_the_search_thread_has_a_deep_budget_of_its_own():
    def depth(n):
        return 0 if n == 0 else depth(n - 1) + 1

    assert worker.run_deep(depth, 20_000) == 20_000
    with pytest.raises(RecursionError):
        depth(20_000)  # the caller's own limit still holds


def run_script(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env
    )


def test_a_deep_rewrite_while_another_thread_finishes_does_not_abort():
    code = """
import relgraph as rg, threading, time
from relations import optdb
A, x = rg.matrix("A"), rg.vector("x"); vs = [rg.vector(f"v{i}") for i in range(3000)]
def slowo(a, b):
    def goal(S):
        time.sleep(1.0); return iter(())
    return goal
t1 = threading.Thread(target=lambda: rg.rewrite(x + 1.0, rg.EquilibriumRewriter([slowo])))
t1.start(); time.sleep(0.2)
out, q = [], optdb.query(include=["linalg"])
t2 = threading.Thread(target=lambda: out.append(rg.rewrite(A @ rg.add(*vs), q)))
t2.start(); t1.join(); t2.join(); print("finished", len(out[0].args))
"""
    done = run_script(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "finished 3000" in done.stdout


def test_a_rewrite_under_a_profiler_finishes():
    """cProfile (Jupyter's %prun) saw the search thread's "no interrupt" signal forever."""
    code = """
import cProfile, relgraph as rg
from relations import optdb
x = rg.vector("x")
with cProfile.Profile():
    print(rg.pprint(rg.rewrite(rg.log(1.0 + rg.exp(x)), optdb.query(include=["fast_run"]))))
"""
    done = run_script(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "softplus(x)" in done.stdout


def test_ctrl_c_during_a_deep_rewrite_does_not_abort():
    code = """
import os, signal, threading, sys, relgraph as rg
from relations import optdb
A = rg.matrix("A"); vs = [rg.vector(f"v{i}") for i in range(5000)]
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try: rg.rewrite(A @ rg.add(*vs), optdb.query(include=["linalg"]))
except KeyboardInterrupt: print("interrupted")
else: print("finished first")
print("limit", sys.getrecursionlimit())
"""
    done = run_script(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "limit 1000" in done.stdout


def test_a_timeout_stops_a_relation_stuck_in_one_application():
    x = rg.vector("x")
    start = time.monotonic()
    with pytest.raises(rg.SearchTimeout, match="timeout=0.3"):
        rg.rewrite(x + 1.0, rg.EquilibriumRewriter([busy_o], timeout=0.3))
    assert time.monotonic() - start < 3.0
    assert cpu_seconds_over(0.5) < 0.25  # the stuck goal no longer spins
    assert rg.rewrite(x + 1.0, dot_distributeo) == x + 1.0  # the next search runs


def test_ctrl_c_stops_a_relation_stuck_in_one_application(ctrl_c):
    ctrl_c(0.3)
    with pytest.raises(KeyboardInterrupt):
        rg.rewrite(rg.vector("x") + 1.0, [busy_o])
    assert cpu_seconds_over(0.5) < 0.25


def test_explore_timeout_bounds_a_stuck_relation():
    start = time.monotonic()
    space = rg.explore(rg.vector("x") + 1.0, [busy_o], timeout=0.3)
    assert space.stopped_by == "timeout"
    assert time.monotonic() - start < 3.0
    assert cpu_seconds_over(0.5) < 0.25


def test_bad_timeout_is_refused():
    with pytest.raises(ValueError, match="timeout"):
        rg.EquilibriumRewriter([dot_distributeo], timeout=0)


def test_rewrites_timeout_bounds_a_stuck_relation():
    start = time.monotonic()
    with pytest.raises(rg.SearchTimeout):
        list(rg.rewrites(rg.vector("x") + 1.0, busy_o, timeout=0.3))
    assert time.monotonic() - start < 3.0
