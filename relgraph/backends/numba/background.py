"""The background compiler: one thread per process compiles kernels while calls run on
the evaluation tier (numpy), so that no caller waits for Numba.

Jobs are plain callables, run one at a time in the order submitted; a job reports its
own outcome (the function it compiles for switches to its kernel, or says once why it
could not).  The thread is a daemon: it never keeps the interpreter alive; at exit
the queued jobs are dropped and the one running is given a minute to finish.  A
forked child starts with no thread and an empty queue (the parent's thread does not
exist there); :data:`COMPILER.generation` tells a function that its job was lost, so
it submits again.

>>> import threading
>>> done = threading.Event()
>>> COMPILER.submit(done.set), done.wait(10)
(True, True)
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
from collections.abc import Callable

__all__ = ["COMPILER", "BackgroundCompiler"]

EXIT_GRACE = 60.0  # seconds an exiting interpreter waits for the compile in progress


class BackgroundCompiler:
    """One daemon thread running compile jobs in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Held while a job runs: a fork waits for it, so the child never inherits a
        # compiler lock (Numba's, the import lock) held by a thread it does not have.
        self._busy = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._queue: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.generation = getattr(self, "generation", 0) + 1

    def submit(self, job: Callable[[], object]) -> bool:
        """Run ``job`` on the compiler thread; False once the interpreter is exiting."""
        with self._lock:
            if self._closed:
                return False
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._work, name="relgraph-compiler", daemon=True
                )
                self._thread.start()
            self._queue.put(job)
        return True

    def _work(self) -> None:
        while (job := self._queue.get()) is not None:
            with self._busy:
                if self._closed:  # the interpreter is exiting: the rest is dropped
                    return
                try:
                    job()
                except BaseException:  # a job reports its own failure; the thread goes on
                    pass

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until every job submitted so far has run; False on timeout."""
        with self._lock:
            if self._thread is None:  # nothing was ever submitted here
                return True
        done = threading.Event()
        return self.submit(done.set) and done.wait(timeout)

    def close(self, grace: float = EXIT_GRACE) -> None:
        """Take no new job, drop the queued ones, and wait (``grace`` seconds at most)
        for the one running: an exit in the middle of LLVM could crash the process."""
        with self._lock:
            self._closed = True
            self._queue.put(None)
        if self._busy.acquire(timeout=grace):
            self._busy.release()

    def before_fork(self) -> None:
        """Fork between jobs, never during one."""
        self._busy.acquire()

    def after_fork_in_parent(self) -> None:
        self._busy.release()

    def after_fork(self) -> None:
        """In a forked child: no thread, no queue, a new generation."""
        self._lock, self._busy = threading.Lock(), threading.Lock()
        self._reset()


COMPILER = BackgroundCompiler()
atexit.register(COMPILER.close)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=COMPILER.before_fork,
        after_in_parent=COMPILER.after_fork_in_parent,
        after_in_child=COMPILER.after_fork,
    )
