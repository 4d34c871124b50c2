"""relgraph on dask, side by side with dask.array, and a corpus rewritten on dask.distributed.

Run from the repository root after ``pip install -e ".[test,bench]"``::

    python benchmarks/bench_dask.py                     # the full run (about 5 minutes)
    python benchmarks/bench_dask.py --elements 1e8 --programs 400   # smaller

One ``LocalCluster`` of 2 worker processes with 1 thread each (this machine has 2
cores), used by every row.

* Arrays: ``exp(x)*y + log1p(z*z) - x/y`` on three float64 vectors of ``--elements``
  each (4e8: 3.2 GB each, 9.6 GB for the three inputs, held in the workers' memory
  so that neither side times making them), and a row softmax of a square matrix of
  as many elements, chunked ``--chunk`` elements per chunk (1e7 = 80 MB).  relgraph
  is ``rg.function`` called with the dask arrays; dask.array is the same expression
  written with ``da``.  Both results are streamed into a sink that keeps nothing
  (``da.store``), so peak worker memory above the inputs shows what a chunk needs.
  Times are medians of ``--repeat`` runs after a first run (which compiles).
* Corpus: ``--programs`` random programs of ``--nodes`` nodes (the programs of
  bench_canonicalize) rewritten with ``fast_run``: in this process one by one
  (no cache), then with ``rg.rewrite_many`` on the cluster with an empty rewrite
  cache (cold) and again (warm).  The workers import relgraph before the clock
  starts.  Goals: warm at least 20x faster than cold; cold within 1.3x of the
  single-process time divided by the workers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time

import numpy as np


class Discard:
    """A ``da.store`` target that keeps nothing."""

    def __setitem__(self, key, value) -> None:
        pass


class PeakMemory:
    """The peak resident memory of the workers above what they held at the start."""

    def __init__(self, client):
        import psutil

        pids = client.run(os.getpid).values()
        self.procs = [psutil.Process(p) for p in pids]
        self.base = [p.memory_info().rss for p in self.procs]
        self.peak = list(self.base)
        self.stop = threading.Event()

    def _sample(self) -> None:
        while not self.stop.is_set():
            for k, p in enumerate(self.procs):
                self.peak[k] = max(self.peak[k], p.memory_info().rss)
            self.stop.wait(0.02)

    def __enter__(self):
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()

    @property
    def excess_mb(self) -> float:
        return max(p - b for p, b in zip(self.peak, self.base)) / 2**20


def timed_store(client, make, repeat: int) -> tuple[float, float, float, int]:
    """(first run s, median of the rest s, peak worker MB above the start, tasks)."""
    import dask.array as da

    out = make()
    tasks = len(out.__dask_graph__())
    t0 = time.perf_counter()
    da.store(out, Discard(), lock=False)  # compiles the kernels on each worker
    first = time.perf_counter() - t0
    with PeakMemory(client) as memory:
        times = []
        for _ in range(repeat):
            out = make()
            t0 = time.perf_counter()
            da.store(out, Discard(), lock=False)
            times.append(time.perf_counter() - t0)
    return first, statistics.median(times), memory.excess_mb, tasks


def expr_rows(client, n: int, chunk: int, repeat: int) -> list[tuple]:
    import dask.array as da
    from distributed import wait

    import relgraph as rg

    # One task makes the three chunks of a position, so they live on one worker and
    # neither side pays for moving inputs between workers.
    xyz = da.random.default_rng(0).random((3, n), chunks=(3, chunk)) + 0.5
    x, y, z = client.persist([xyz[0], xyz[1], xyz[2]])
    wait([x, y, z])
    del xyz
    X, Y, Z = rg.vector("x"), rg.vector("y"), rg.vector("z")
    f = rg.function([X, Y, Z], rg.exp(X) * Y + rg.log1p(Z * Z) - X / Y, compile="eager")
    head = slice(0, min(n, 1_000_000))
    np.testing.assert_allclose(
        f(x, y, z)[head].compute(), (da.exp(x) * y + da.log1p(z * z) - x / y)[head].compute()
    )
    rows = [
        ("expr", "relgraph", *timed_store(client, lambda: f(x, y, z), repeat)),
        ("expr", "dask.array",
         *timed_store(client, lambda: da.exp(x) * y + da.log1p(z * z) - x / y, repeat)),
    ]  # fmt: skip
    client.cancel([x, y, z])
    return rows


def softmax_rows(client, n: int, chunk: int, repeat: int) -> list[tuple]:
    import dask.array as da
    from distributed import wait

    import relgraph as rg

    rng = da.random.default_rng(1)
    side = int(round(n**0.5))
    block = (max(1, chunk // min(side, 5_000)), min(side, 5_000))
    m = client.persist(rng.standard_normal((side, side), chunks=block))
    wait(m)
    M = rg.matrix("M")
    e = rg.exp(M - rg.max(M, axis=1, keepdims=True))
    g = rg.function([M], e / rg.sum(e, axis=1, keepdims=True), compile="eager")

    def dask_softmax():
        ed = da.exp(m - m.max(axis=1, keepdims=True))
        return ed / ed.sum(axis=1, keepdims=True)

    np.testing.assert_allclose(g(m)[:200].compute(), dask_softmax()[:200].compute())
    rows = [
        ("softmax", "relgraph", *timed_store(client, lambda: g(m), repeat)),
        ("softmax", "dask.array", *timed_store(client, dask_softmax, repeat)),
    ]
    client.cancel(m)
    return rows


def corpus(client, programs: int, nodes: int, workers: int) -> dict:
    from bench_canonicalize import program

    import relgraph as rg
    from relations import optdb

    query = optdb.query(include=["fast_run"])
    terms = [program(nodes, seed) for seed in range(programs)]
    query.apply(terms[0])  # build the matchers, as the workers do on their first task
    t0 = time.perf_counter()
    single = [query.apply(t)[0] for t in terms]
    single_s = time.perf_counter() - t0
    client.run(lambda: __import__("relations"))  # imports, not rewriting
    cold = rg.rewrite_many(terms, query, client=client, progress=False)
    warm = rg.rewrite_many(terms, query, client=client, progress=False)
    assert cold.ok and list(cold) == single and list(warm) == single
    assert not any(cold.cached) and all(warm.cached)
    return {
        "single": single_s, "cold": cold.seconds, "warm": warm.seconds, "workers": workers,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=float, default=4e8)
    parser.add_argument("--chunk", type=float, default=1e7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--programs", type=int, default=2000)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--part", choices=["all", "arrays", "corpus"], default="all")
    args = parser.parse_args()
    # A fresh cache, which the workers inherit: kernels compile, the corpus is cold.
    os.environ["RELGRAPH_CACHE_DIR"] = tempfile.mkdtemp(prefix="relgraph-bench-dask-")
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, memory_limit="11GiB", dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        if args.part in ("all", "arrays"):
            report_arrays(client, int(args.elements), int(args.chunk), args.repeat)
        if args.part in ("all", "corpus"):
            report_corpus(client, args.programs, args.nodes)


def report_arrays(client, n: int, chunk: int, repeat: int) -> None:
    mib = chunk * 8 / 2**20
    print(f"arrays: {n:.0e} float64 elements per input ({n * 8 / 1e9:.1f} GB), "
          f"chunks of {chunk:.0e} ({mib:.0f} MiB), 2 workers x 1 thread")  # fmt: skip
    rows = expr_rows(client, n, chunk, repeat) + softmax_rows(client, n, chunk, repeat)
    print("| case | library | first run | median | tasks | peak worker memory above inputs |")
    print("|---|---|---|---|---|---|")
    for case, lib, first, med, peak, tasks in rows:
        print(f"| {case} | {lib} | {first:.2f} s | {med:.2f} s | {tasks} | {peak:.0f} MiB |")
    for case in ("expr", "softmax"):
        ours, theirs = (r[3] for r in rows if r[0] == case)
        print(f"{case}: dask.array / relgraph = {theirs / ours:.2f}x (goal >= 2x)")


def report_corpus(client, programs: int, nodes: int) -> None:
    c = corpus(client, programs, nodes, 2)
    print(f"\ncorpus: {programs} programs of {nodes} nodes, fast_run")
    print(f"single process {c['single']:.1f} s; rewrite_many on 2 workers: cold "
          f"{c['cold']:.1f} s, warm {c['warm']:.2f} s")  # fmt: skip
    print(f"warm speed-up: {c['cold'] / c['warm']:.1f}x (goal >= 20x)")
    print(f"cold / (single / workers): {c['cold'] / (c['single'] / 2):.2f} (goal <= 1.3)")


if __name__ == "__main__":
    main()
