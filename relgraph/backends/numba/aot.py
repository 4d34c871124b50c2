"""Ahead-of-time builds of serial kernels, so a new process needs no Numba at all.

Numba's JIT cache still costs about 0.25 s per process before the first call (it
initialises LLVM and its runtime).  When a process that compiled a kernel exits, a
detached process builds the same serial kernel with ``numba.pycc`` into an
extension module next to it in the cache; later processes import that module (well
under a millisecond) and never import Numba.  The parallel kernel stays on the JIT
path, and so do kernels that call BLAS (BLAS from an extension module ran 2x slower).

Builds wait in a queue in the cache directory (``aot-queue/``); at most one builder
process per cache directory works through it, holding an ``flock`` on
``aot-builder.lock`` that the system releases if the builder dies.  A job is signed
(:mod:`relgraph.cache_files`) with the SHA-256 of the kernel source it was queued
for, and the builder compiles the source only if it still is that text.  A built
module is loaded only if its SHA-256 matches the one signed beside it when it was
built, so a truncated, edited or foreign file is removed instead of being run.

Set ``RELGRAPH_AOT=0`` to never start a build.  A build that fails leaves nothing
behind, and the JIT path goes on working.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from relgraph.cache_files import read_signed, write_signed
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Symbol
from relgraph.terms.types import TensorType

__all__ = ["signature", "cpu_fingerprint", "extension_path", "load", "start_build", "build"]

fcntl: Any
try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no builder lock, so no builds
    fcntl = None

QUEUE = "aot-queue"
BUILDER_LOCK = "aot-builder.lock"


@functools.cache
def cpu_fingerprint() -> str:
    """A short hash of this CPU's model and features, read without importing Numba."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    described = [ln for ln in lines if ln.startswith(("flags", "Features", "model name"))][:2]
    text = platform.machine() + platform.processor() + "".join(described)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _numba_type(t: TensorType, contiguous: bool) -> str:
    name = "boolean" if t.dtype.kind == "b" else t.dtype.name
    if t.ndim == 0:
        return name
    dims = [":"] * t.ndim
    if contiguous:
        dims[-1] = "::1"  # C order: BLAS and flat loops use the data in place
    return f"{name}[{', '.join(dims)}]"


def signature(inputs: Sequence[Symbol], outputs: Sequence[Any], slots: Sequence[int] = ()) -> str:
    """The Numba signature of a kernel: C-contiguous arrays in, results as a tuple.

    Callers make non-contiguous arguments contiguous first (rare, and a copy).
    ``slots`` are the outputs that take a buffer argument (after the inputs).

    Examples
    --------
    >>> import relgraph as rg
    >>> x, s = rg.vector("x"), rg.scalar("s", "int64")
    >>> signature([x, s], [x * s, rg.sum(x)])
    'Tuple((float64[:], float64,))(float64[::1], int64)'
    """
    results = ", ".join(_numba_type(typeof(o), contiguous=False) for o in outputs)
    args = ", ".join(
        [_numba_type(s.type, contiguous=True) for s in inputs]
        + [_numba_type(typeof(outputs[k]), contiguous=True) for k in slots]  # out buffers
    )
    return f"Tuple(({results},))({args})"


def extension_path(directory: Path, name: str) -> Path:
    """Where the extension module ``name`` lives in the cache directory."""
    return directory / (name + importlib.machinery.EXTENSION_SUFFIXES[0])


def _checksum_path(directory: Path, name: str) -> Path:
    return directory / f"{name}.sha256"


def _digest(path: Path) -> str:
    return _sha256(path.read_bytes())


def load(directory: Path, name: str) -> Callable | None:
    """The kernel of a built extension module, or None if there is none or it is not
    the file that was built (then it is removed, and built again later)."""
    path = extension_path(directory, name)
    checksum = _checksum_path(directory, name)
    if not path.exists():
        return None
    try:
        intact = read_signed(checksum) == _digest(path).encode()
    except OSError:
        intact = False
    if intact:
        try:
            loader = importlib.machinery.ExtensionFileLoader(name, str(path))
            spec = importlib.util.spec_from_file_location(name, path, loader=loader)
            if spec is None:
                raise ImportError(f"no module spec for {path}")
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            return module.kernel
        except (ImportError, AttributeError, OSError):
            pass
    path.unlink(missing_ok=True)
    checksum.unlink(missing_ok=True)
    return None


_PENDING: list[tuple[Path, str, str]] = []  # builds to queue when this process exits


def start_build(source_path: Path, name: str, sig: str) -> None:
    """Queue a build when this process exits, for one background builder (unless disabled).

    Waiting for the exit keeps the build from competing for cores with the work
    of the process that compiled the kernel.
    """
    if os.environ.get("RELGRAPH_AOT", "1") == "0" or fcntl is None:
        return
    if not _PENDING:
        atexit.register(_start_pending)
    _PENDING.append((source_path, name, sig))


def _start_pending() -> None:
    directories = {job[0].parent for job in _PENDING if _queue(*job)}
    for directory in directories:
        _spawn(directory)


def _queue(source_path: Path, name: str, sig: str) -> bool:
    """Add a build to its directory's queue, unless it was built or failed before."""
    directory = source_path.parent
    if (directory / f"{name}.failed").exists() or extension_path(directory, name).exists():
        return False
    queue = directory / QUEUE
    try:
        queue.mkdir(exist_ok=True)
        text = source_path.read_bytes()
    except OSError:
        return False
    job = {"source": source_path.name, "name": name, "sig": sig, "sha256": _sha256(text)}
    return write_signed(queue / f"{name}.job", json.dumps(job).encode())


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _spawn(directory: Path) -> None:
    """Start the directory's builder unless one is running already."""
    if _builder_running(directory):
        return
    subprocess.Popen(
        [sys.executable, "-m", "relgraph.backends.numba.aot", str(directory)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _builder_running(directory: Path) -> bool:
    fd = os.open(directory / BUILDER_LOCK, os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken here
    return False


def run_queue(directory: Path) -> int:
    """Build every queued kernel of ``directory``, one at a time; the number built.

    Returns at once if another builder holds the directory's lock.
    """
    built = 0
    while True:
        fd = os.open(directory / BUILDER_LOCK, os.O_CREAT | os.O_RDWR)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return built
            built += _drain(directory / QUEUE)
        finally:
            os.close(fd)
        # A job queued while the lock was held, after the last look, is built too.
        if not any((directory / QUEUE).glob("*.job")):
            return built


def _drain(queue: Path) -> int:
    built = 0
    while jobs := sorted(queue.glob("*.job")):
        signed = read_signed(jobs[0])  # a job this user's processes queued, or none
        jobs[0].unlink(missing_ok=True)
        if signed is None:
            continue
        job = json.loads(signed)
        try:
            build(queue.parent / job["source"], job["name"], job["sig"], job["sha256"])
            built += 1
        except Exception:
            pass  # marked .failed: the JIT kernel serves
    return built


def build(source_path: Path, name: str, sig: str, sha256: str) -> Path:
    """Compile the kernel in ``source_path`` into the extension module ``name``, if
    the file still holds the source whose SHA-256 is ``sha256`` (else ValueError)."""
    source_path = Path(source_path)
    directory = source_path.parent
    try:
        text = source_path.read_bytes()  # read once: what is verified is what is built
        if _sha256(text) != sha256:
            raise ValueError(f"{source_path} is not the kernel source it was queued as")
        with warnings.catch_warnings():
            # pycc is "pending deprecation" with its replacement still in the works;
            # if a Numba release drops it, this build fails and the JIT path serves.
            warnings.simplefilter("ignore")
            from numba.pycc import CC  # lazy: deprecated, warns on import; builder only

        # The verified text, compiled without Numba's disk cache (whose entries
        # this process has not verified).
        namespace: dict[str, Any] = {}
        code = text.decode().replace("cache=True", "cache=False")
        exec(compile(code, str(source_path), "exec"), namespace)
        # pycc compiles what it exports with fixed flags (Python's error model, whose
        # zero-division checks stop vectorisation): export a wrapper that calls the
        # kernel, which keeps its own @njit options.
        n_args = namespace["kernel"].py_func.__code__.co_argcount
        params = ", ".join(f"a{i}" for i in range(n_args))
        exec(f"def export({params}):\n    return kernel({params})\n", namespace)
        with tempfile.TemporaryDirectory(dir=directory) as tmp:
            cc = CC(name)
            cc.output_dir = tmp
            cc.verbose = False
            cc.target_cpu = "host"  # the name carries cpu_fingerprint(): no sharing across CPUs
            cc.export("kernel", sig)(namespace["export"])
            cc.compile()
            built = extension_path(Path(tmp), name)
            target = extension_path(directory, name)
            # The checksum first: a loader that sees the module sees its checksum.
            if not write_signed(_checksum_path(directory, name), _digest(built).encode()):
                raise OSError(f"cannot write the checksum of {name}")
            os.replace(built, target)
        return target
    except Exception:
        (directory / f"{name}.failed").touch()
        raise


if __name__ == "__main__":
    os.nice(19)  # a background job: it must not slow the process that started it
    run_queue(Path(sys.argv[1]))
