"""Many programs at once: ``rg.rewrite_many`` and ``rg.compile_many`` on dask.distributed.

Programs are looked up in the rewrite cache (:mod:`relgraph.rewriting.cache`) here
first; only the others go to the workers, in batches, each with the rewriter.  A
worker looks in the cache again (another process may have done it), rewrites, and
keeps the result there.  A program that fails is an error of its own, in
:attr:`Batch.errors`; the others go on (a batch whose worker died is sent again one
program a task).  Without a client everything runs in
this process, with the same cache.
"""

from __future__ import annotations

import threading
import time
import traceback
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from relgraph.backends.numba.function import function
from relgraph.exceptions import ProgramError
from relgraph.rewriting import cache as rewrite_cache
from relgraph.terms.printing import brief
from relgraph.terms.traverse import checked_term

__all__ = ["rewrite_many", "compile_many", "Batch"]

# Tries more for a program alone in its task whose worker died: a task queued on a
# worker that another program killed counts that death against itself, and on a busy
# machine it was queued behind the same program again on its one retry (seen once in
# CI): two retries (the program at fault is tried three times too).
RETRIES = 2
# How long a batch waits while the cluster has no worker (they died and were not
# started again, or a cluster that scales from zero has not started one) before the
# programs not done fail; and how often it looks.
NO_WORKERS_TIMEOUT = 60.0
_POLL = 1.0


@dataclass
class Batch(Sequence):
    """The results of :func:`rewrite_many` or :func:`compile_many`, in input order.

    ``batch[i]`` is the i-th result, or raises the :class:`ProgramError` of a program
    that failed.  ``results`` holds None for those, ``errors`` the errors by index.
    """

    results: list[Any]
    errors: dict[int, ProgramError] = field(default_factory=dict)
    #: Whether each program's rewrite came from the cache.
    cached: list[bool] = field(default_factory=list)
    #: Wall-clock seconds the batch took.
    seconds: float = 0.0
    #: The reports as they came: those from the cache are read on first use.
    raw_reports: list[Any] = field(default_factory=list, repr=False)

    @property
    def reports(self) -> list[Any]:
        """Each program's rewrite report (None if it failed or was not rewritten)."""
        for i, r in enumerate(self.raw_reports):
            if isinstance(r, bytes):
                self.raw_reports[i] = rewrite_cache.report_of(r)
        return self.raw_reports

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        i = range(len(self))[i]
        if i in self.errors:
            raise self.errors[i]
        return self.results[i]

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    @property
    def ok(self) -> bool:
        """Whether every program succeeded."""
        return not self.errors

    def __repr__(self) -> str:
        return (
            f"Batch({len(self)} programs: {len(self) - len(self.errors)} done, "
            f"{len(self.errors)} failed, {sum(self.cached)} from the cache, "
            f"{self.seconds:.2f} s)"
        )


def rewrite_many(
    terms: Sequence[Any],
    query: Any,
    *,
    client: Any = None,
    cache: bool = True,
    progress: bool | None = None,
    batch_size: int | None = None,
) -> Batch:
    """Rewrite each term with ``query``, on a dask.distributed client.

    Parameters
    ----------
    terms : sequence of Term
        The programs (a term, or a tuple of terms).
    query : rewriter
        What ``rg.rewrite`` takes: ``optdb.query(include=[...])``, an
        :class:`~relgraph.EquilibriumRewriter`, a sequence of them.
    client : distributed.Client, "local" or None
        Where to run: a client; ``"local"`` for a ``LocalCluster`` started for the
        call (one worker process per core); None for this process.
    cache : bool
        Use the rewrite cache (``$RELGRAPH_CACHE_DIR``): a program rewritten before
        by the same query is not rewritten again.
    progress : bool, optional
        A tqdm bar; by default it appears if the batch takes more than a second.
    batch_size : int, optional
        Programs per task (default: about eight tasks per worker, at most 64 each).

    Returns
    -------
    Batch
        The rewritten programs in input order; ``batch.errors`` the failures (a
        program whose worker died; every program not done once the cluster has had
        no worker for ``NO_WORKERS_TIMEOUT`` seconds).

    Examples
    --------
    >>> import relgraph as rg
    >>> from relations import optdb
    >>> x = rg.vector("x")
    >>> batch = rg.rewrite_many([x * 1.0 - 0.0, rg.log(1 + rg.exp(x))],
    ...                         optdb.query(include=["fast_run"]), progress=False)
    >>> rg.pprint(batch[0]), rg.pprint(batch[1])
    ('x', 'softplus(x)')
    """
    _check_query(query)
    return _run(list(terms), query, client, cache, progress, batch_size, compile=False)


def compile_many(
    programs: Sequence[tuple[Sequence[Any], Any]],
    query: Any = None,
    *,
    client: Any = None,
    cache: bool = True,
    progress: bool | None = None,
    batch_size: int | None = None,
) -> Batch:
    """Rewrite (if ``query`` is given) and compile each ``(inputs, outputs)`` program.

    The workers rewrite and compile; the compiled kernels land in the kernel cache on
    their disk, and this process builds each :class:`~relgraph.Function` from there
    (on one machine that is a load, not a compile).  Parameters as
    :func:`rewrite_many`.

    Examples
    --------
    >>> import numpy as np, relgraph as rg
    >>> from relations import optdb
    >>> x, y = rg.vector("x"), rg.vector("y")
    >>> batch = rg.compile_many([([x], rg.exp(x) * 2.0), ([x, y], x @ y)],
    ...                         optdb.query(include=["fast_run"]), progress=False)
    >>> batch[1](np.ones(3), np.arange(3.0))
    array(3.)
    """
    if query is not None:
        _check_query(query)
    return _run(list(programs), query, client, cache, progress, batch_size, compile=True)


def _check_query(query: Any) -> None:
    if not hasattr(query, "apply"):
        raise TypeError(
            f"query must be a rewriter (db.query(...), rg.EquilibriumRewriter), got {query!r:.80}"
        )


# --- one program -----------------------------------------------------------------------


def _one(item: Any, rewriter: Any, query: str | None, compile: bool) -> tuple:
    """(result, report, from the cache) for one program; raises what it raises.
    ``query`` is the rewriter's fingerprint, or None for no cache."""
    inputs, program = item if compile else ((), item)
    report, cached = None, False
    if rewriter is not None:
        program, report, cached = _rewritten(program, rewriter, query)
    if compile:
        # Compiled here, so that the kernel is in the disk cache.
        function(inputs, list(program) if isinstance(program, tuple) else program, compile="eager")
        return (tuple(inputs), program), report, cached
    return program, report, cached


def _rewritten(program: Any, rewriter: Any, query: str | None) -> tuple:
    program = _checked(program)
    digest = rewrite_cache.key(program, query) if query else None
    if digest:
        found = rewrite_cache.load(digest)
        if found is not None:
            return found[0], found[1], True
    if isinstance(program, tuple):
        done = [rewriter.apply(p) for p in program]
        rewritten, report = tuple(d[0] for d in done), tuple(d[1] for d in done)
    else:
        rewritten, report = rewriter.apply(program)
    if digest:
        rewrite_cache.store(digest, rewritten, report)
    return rewritten, report, False


def _checked(program: Any) -> Any:
    if isinstance(program, (tuple, list)):
        return tuple(checked_term(p, "rewrite") for p in program)
    return checked_term(program, "rewrite")


def _from_cache(item: Any, query: str, compile: bool) -> tuple | None:
    """The cached rewrite of ``item``, looked up without rewriting (None if absent)."""
    program = item[1] if compile else item
    try:
        program = _checked(program)
        found = rewrite_cache.load(rewrite_cache.key(program, query))
    except Exception:  # a bad program: its task reports it
        return None
    if not found:
        return None
    result = (tuple(item[0]), found[0]) if compile else found[0]
    return result, found[1], True


def _batch_task(items: list, rewriter: Any, cache: bool, compile: bool) -> list:
    """A worker's task: each ``(index, program)`` done, or its error described."""
    # The worker's own fingerprint: its code decides what it rewrites.
    query = rewrite_cache.fingerprint(rewriter) if cache and rewriter is not None else None
    out = []
    for index, item in items:
        try:
            out.append((index, *_one(item, rewriter, query, compile), None))
        except Exception as exc:
            out.append((index, None, None, False, _error(index, item, exc)))
    return out


def _error(index: int, item: Any, exc: BaseException) -> ProgramError:
    details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        text = brief(item, 60)
    except Exception:
        text = f"{item!r:.60}"
    return ProgramError(index, text, f"{type(exc).__name__}: {exc}", details)


# --- the batch -------------------------------------------------------------------------


def _run(items, rewriter, client, cache, progress, batch_size, compile) -> Batch:
    start = time.perf_counter()
    _check_options(client, batch_size)
    n = len(items)
    done: dict[int, tuple] = {}
    query = rewrite_cache.fingerprint(rewriter) if cache and rewriter is not None else None
    if cache and rewriter is not None and query is None:
        warnings.warn(
            f"the rewrite cache cannot fingerprint {rewriter!r} (not an EquilibriumRewriter "
            "or a sequence of them): nothing is cached for it",
            RuntimeWarning,
            stacklevel=3,
        )
    if query is not None:
        for i, item in enumerate(items):
            found = _from_cache(item, query, compile)
            if found is not None:
                done[i] = (*found, None)
    todo = [(i, item) for i, item in enumerate(items) if i not in done]
    desc, delay = ("compile" if compile else "rewrite"), (1.0 if progress is None else 0.0)
    bar = tqdm(total=n, initial=len(done), unit="program", desc=desc, delay=delay,
               disable=progress is False)  # fmt: skip
    with bar:
        if todo:
            rows = _distributed(todo, rewriter, client, cache, compile, batch_size, bar)
            for index, *rest in rows:
                done[index] = tuple(rest)
    if compile:
        _build_functions(items, done)
    results = [done[i][0] for i in range(n)]
    errors = {i: done[i][3] for i in range(n) if done[i][3] is not None}
    return Batch(
        results=results,
        errors=errors,
        raw_reports=[done[i][1] for i in range(n)],
        cached=[done[i][2] for i in range(n)],
        seconds=time.perf_counter() - start,
    )


def _distributed(todo, rewriter, client, cache, compile, batch_size, bar) -> list:
    """Rows ``(index, result, report, cached, error)`` for the programs in ``todo``."""
    client, own = _client(client)
    if client is None:
        rows = []
        for row in todo:
            rows += _batch_task([row], rewriter, cache, compile)
            bar.update(1)
        return rows
    try:
        return _on_client(client, todo, rewriter, cache, compile, batch_size, bar)
    finally:
        if own:
            cluster = client.cluster
            client.close()
            cluster.close()


def _check_options(client: Any, batch_size: int | None) -> None:
    local = isinstance(client, str) and client == "local"
    if not (client is None or local or hasattr(client, "submit")):
        raise TypeError(f"client must be a distributed.Client, 'local' or None, got {client!r}")
    if batch_size is not None and not (isinstance(batch_size, int) and batch_size >= 1):
        raise ValueError(f"batch_size must be a positive number of programs, got {batch_size!r}")


def _client(client: Any) -> tuple[Any, bool]:
    """(the client to use or None, whether this call started it)."""
    if isinstance(client, str):  # "local"
        from distributed import Client, LocalCluster  # lazy: the dask extra

        cluster = LocalCluster(threads_per_worker=1, processes=True, dashboard_address=None)
        return Client(cluster), True
    return client, False


def _on_client(client, todo, rewriter, cache, compile, batch_size, bar) -> list:
    """Batches of programs as tasks.  The rewriter travels in each task, not as a
    scattered replica: a worker that dies with the only replica would make the
    scheduler cancel every task still to run.  A batch that fails (its worker died)
    is sent again one program a task, so that only the program at fault fails.  If the
    cluster has no worker for :data:`NO_WORKERS_TIMEOUT` seconds, the programs not
    done fail, saying so."""
    from distributed import as_completed  # lazy: the dask extra

    workers = max(1, len(client.scheduler_info().get("workers", {})))
    size = batch_size or max(1, min(64, len(todo) // (8 * workers)))
    chunk_of: dict[str, tuple[list, int]] = {}  # a task's programs, and its try
    submitted: list = []

    def submit(chunk: list, attempt: int = 0) -> Any:
        future = client.submit(_batch_task, chunk, rewriter, cache, compile, pure=False)
        chunk_of[future.key] = (chunk, attempt)
        submitted.append(future)
        return future

    pending = as_completed([submit(todo[k : k + size]) for k in range(0, len(todo), size)])
    rows: list = []
    with _Watch(client, submitted) as watch:
        try:
            for future in pending:
                chunk, attempt = chunk_of.pop(future.key)
                outcome = _outcome(future)
                if isinstance(outcome, list):
                    rows += outcome
                elif len(chunk) > 1 and not watch.gone:
                    for row in chunk:
                        pending.add(submit([row]))
                    continue
                elif attempt < RETRIES and not watch.gone:  # it may only have been
                    pending.add(submit(chunk, attempt + 1))  # queued where another died
                    continue
                else:
                    error = watch.gone or outcome
                    rows += [(i, None, None, False, _error(i, item, error)) for i, item in chunk]
                bar.update(len(chunk))
        except BaseException:
            client.cancel(submitted)
            raise
    return rows


def _outcome(future: Any) -> list | BaseException:
    """A completed task's rows (a result lost with its worker is computed again
    first), or the exception it failed with.  The exception is looked up rather than
    raised here, or if raised, its traceback is dropped: the client keeps the error
    of a failed task, and its traceback, through this frame and distributed's,
    would keep the batch's futures alive as long as the client (and the cluster
    computes the tasks of the futures held again after every worker death)."""
    if future.status == "finished":
        try:
            return future.result()
        except Exception as exc:  # cancelled meanwhile: the cluster lost its workers
            exc.__traceback__ = None
    return future.exception() or CancelledError(f"task {future.key} was cancelled")


class _Watch:
    """While a batch runs, a thread that looks at the cluster every :data:`_POLL`
    seconds; once it has had no worker for :data:`NO_WORKERS_TIMEOUT` seconds in a
    row, it cancels the batch's tasks (so that the waits on them end) and ``gone``
    is the error the programs not done fail with."""

    def __init__(self, client: Any, submitted: list):
        self.client, self.submitted = client, submitted
        self.gone: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="relgraph-fleet-watch", daemon=True)

    def __enter__(self) -> _Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        since = time.monotonic()
        while not self._stop.wait(_POLL):
            try:
                if self.client.scheduler_info().get("workers"):
                    since = time.monotonic()
                    continue
                if time.monotonic() - since > NO_WORKERS_TIMEOUT:
                    self.gone = RuntimeError(
                        f"not run: the cluster has had no workers for {NO_WORKERS_TIMEOUT:g} s "
                        "(they died and were not started again)"
                    )
                    self.client.cancel(list(self.submitted))
                    return
            except Exception:  # the client closed: the batch's waits end by themselves
                return


def _build_functions(items: list, done: dict) -> None:
    """The compiled Functions, built here from the workers' terms (and the kernel cache)."""

    for i, row in done.items():
        if row[3] is not None:
            continue
        inputs, program = row[0]
        try:
            compiled = function(inputs, list(program) if isinstance(program, tuple) else program)
        except Exception as exc:
            done[i] = (None, row[1], row[2], _error(i, items[i], exc))
            continue
        done[i] = (compiled, *row[1:])
