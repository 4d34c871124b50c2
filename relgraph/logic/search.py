"""The one thread that runs kanren searches, and how a caller stops it.

kanren nests a few Python frames (and their C stack) per list element that a goal
walks, so a relation over a 5,000-term sum needs far more than the main thread's
8 MiB stack and Python's default recursion limit.  Searches therefore run on one
long-lived worker thread, created once with a large stack and a recursion budget of
its own.  Nothing process-wide changes: ``sys.setrecursionlimit`` and
``threading.stack_size`` stay what the caller set (the stack size is set only for
the moment the worker is created, under a lock, and restored).

Callers wait in short slices, so Ctrl-C or a deadline reaches them at once.  A
cancelled search is asked to stop at its next :func:`check_cancelled`; one stuck
inside a goal gets an asynchronous ``KeyboardInterrupt`` (so it stops consuming CPU),
and a worker stuck in C code is abandoned and replaced.  Searches from several
threads queue for the worker: one at a time, never interleaved.
"""

from __future__ import annotations

import ctypes
import gc
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from relgraph.exceptions import SearchTimeout

__all__ = ["run_deep", "check_cancelled", "GOAL_STACK_BYTES", "GOAL_RECURSION_LIMIT"]

GOAL_STACK_BYTES = 512 * 1024 * 1024  # virtual: only the pages a search touches are used
GOAL_RECURSION_LIMIT = 250_000  # about 2 KiB of C stack per frame, with room to spare
GRACE_SECONDS = 0.25  # between asking a search to stop and interrupting it
ABANDON_SECONDS = 2.0  # then a worker stuck in C code is left behind


class _Job:
    __slots__ = ("fn", "args", "done", "value", "error", "cancel", "interrupted")

    def __init__(self, fn: Callable[..., Any], args: tuple):
        self.fn, self.args = fn, args
        self.done = threading.Event()
        self.cancel = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.interrupted = False


class _Worker:
    """A daemon thread taking jobs from a queue; ``job`` is the one it runs."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.lock = threading.Lock()  # guards `job` against a late interrupt
        self.job: _Job | None = None
        self.abandoned = False
        saved = threading.stack_size(GOAL_STACK_BYTES)  # callers hold _CREATE
        try:
            self.thread = threading.Thread(target=self.loop, name="relgraph-goals", daemon=True)
            self.thread.start()
        finally:
            threading.stack_size(saved)

    def loop(self) -> None:
        _LOCAL.job = None
        # An abandoned worker still serves what was queued on it before it ends.
        while not (self.abandoned and self.jobs.empty()):
            try:
                job = self.jobs.get()
                with self.lock:
                    self.job = _LOCAL.job = job
                self.run(job)
            except KeyboardInterrupt:  # an interrupt that arrived after its job ended
                pass

    def run(self, job: _Job) -> None:
        try:
            # Again per job: sys.setrecursionlimit resets every thread's budget.
            _deepen_this_thread(GOAL_RECURSION_LIMIT)
            if not job.cancel.is_set():
                job.value = job.fn(*job.args)
        except BaseException as exc:  # re-raised in the caller
            job.error = exc
        finally:
            with self.lock:
                self.job = _LOCAL.job = None
                if job.interrupted:  # only then: clearing flags the interpreter, and
                    _clear_interrupt(self.thread)  # under a profiler that flag hangs it
            job.done.set()

    def interrupt(self, job: _Job) -> None:
        """Raise ``KeyboardInterrupt`` inside ``job`` if it is still running."""
        with self.lock:
            if self.job is job:
                job.interrupted = True
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(_ident(self.thread)), ctypes.py_object(KeyboardInterrupt)
                )


_CREATE = threading.Lock()
_LOCAL = threading.local()
_worker: _Worker | None = None
_GC = threading.Lock()
_gc_holders = 0
_gc_was_enabled = False


def _the_worker() -> _Worker:
    global _worker
    with _CREATE:
        if _worker is None or _worker.abandoned:
            _worker = _Worker()
    return _worker


def _forget_worker_after_fork() -> None:
    global _worker, _gc_holders
    _worker, _gc_holders = None, 0  # its thread does not exist in the child


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_worker_after_fork)


def run_deep(fn: Callable[..., Any], *args: Any, timeout: float | None = None) -> Any:
    """Call ``fn(*args)`` on the search thread, whose stack fits deep kanren searches.

    Called from the search thread itself, it runs in place.  Exceptions propagate to
    the caller.  Ctrl-C in the caller, or ``timeout`` seconds passing (raising
    :class:`~relgraph.exceptions.SearchTimeout`), stops the search.

    Examples
    --------
    >>> run_deep(sum, [1, 2, 3])
    6
    """
    if getattr(_LOCAL, "job", None) is not None:
        return fn(*args)
    job = _Job(fn, args)
    worker = _the_worker()
    deadline = None if timeout is None else time.monotonic() + timeout
    _hold_gc()
    try:
        worker.jobs.put(job)
        # Short waits: a blocking wait would only see Ctrl-C once the search ended.
        while not job.done.wait(0.05):
            if deadline is not None and time.monotonic() > deadline:
                _stop(worker, job)
                raise SearchTimeout(f"the search did not finish within timeout={timeout} s")
    except BaseException:
        _stop(worker, job)
        raise
    finally:
        _release_gc()
    if job.error is not None:
        raise job.error
    return job.value


def _stop(worker: _Worker, job: _Job) -> None:
    """Ask ``job`` to stop, interrupt it, and leave a worker stuck in C code behind."""
    job.cancel.set()
    if job.done.wait(GRACE_SECONDS):
        return
    worker.interrupt(job)
    if not job.done.wait(ABANDON_SECONDS):
        worker.abandoned = True  # the next search gets a new worker


def check_cancelled() -> None:
    """Raise ``KeyboardInterrupt`` if the caller of :func:`run_deep` stopped the search."""
    job = getattr(_LOCAL, "job", None)
    if job is not None and job.cancel.is_set():
        raise KeyboardInterrupt("rewrite cancelled")


# -- garbage collection -----------------------------------------------------------
# A search allocates many short-lived objects the cyclic collector would scan over
# and over, and a collection on the search thread could finalise other libraries'
# thread-bound objects (egglog's e-graphs).  The collector is paused while any
# search runs and resumed, if it was on, when the last one ends.


def _hold_gc() -> None:
    global _gc_holders, _gc_was_enabled
    with _GC:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holders += 1


def _release_gc() -> None:
    global _gc_holders
    with _GC:
        _gc_holders -= 1
        if _gc_holders == 0 and _gc_was_enabled:
            gc.enable()


# -- the search thread's own recursion budget --------------------------------------
# CPython keeps the recursion budget per thread state and checks it against the
# interpreter's limit only when it runs out; raising the search thread's own budget
# leaves every other thread on the caller's limit.  The fields are written only where
# their layout is known and the values read there are what they must be; anywhere
# else a search deeper than the caller's limit raises RecursionError, which the
# driver reports with the relation's name.


class _ThreadState311(ctypes.Structure):
    _fields_ = [
        ("prev", ctypes.c_void_p),
        ("next", ctypes.c_void_p),
        ("interp", ctypes.c_void_p),
        ("initialized", ctypes.c_int),
        ("static", ctypes.c_int),
        ("recursion_remaining", ctypes.c_int),
        ("recursion_limit", ctypes.c_int),
    ]


def _deepen_this_thread(limit: int) -> bool:
    """Give the calling thread a recursion budget of ``limit``; False if not possible."""
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
        return False
    get = ctypes.pythonapi.PyThreadState_Get
    get.restype = ctypes.POINTER(_ThreadState311)
    state = get().contents
    current = sys.getrecursionlimit()
    used = state.recursion_limit - state.recursion_remaining
    if state.recursion_limit < current or not 0 <= used < 100:
        return False
    state.recursion_limit = max(limit, current)
    state.recursion_remaining = state.recursion_limit - used
    return True


def _clear_interrupt(thread: threading.Thread) -> None:
    """Drop an interrupt that was sent but not yet delivered."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(_ident(thread)), None)


def _ident(thread: threading.Thread) -> int:
    if thread.ident is None:  # never: the search thread is started when it is made
        raise RuntimeError("the search thread was not started")
    return thread.ident
