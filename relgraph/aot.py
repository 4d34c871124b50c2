"""Ahead-of-time builds of serial kernels, so a new process needs no Numba at all.

Numba's JIT cache still costs about 0.25 s per process before the first call (it
initialises LLVM and its runtime).  When a process that compiled a kernel exits, a
detached process builds the same serial kernel with ``numba.pycc`` into an
extension module next to it in the cache; later processes import that module (well
under a millisecond) and never import Numba.  The parallel kernel stays on the JIT
path, and so do kernels that call BLAS (BLAS from an extension module ran 2x slower).

Set ``RELGRAPH_AOT=0`` to never start a build.  A build that fails leaves nothing
behind, and the JIT path goes on working.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from relgraph.term import Symbol, typeof
from relgraph.types import TensorType

__all__ = ["signature", "cpu_fingerprint", "extension_path", "load", "start_build", "build"]

STALE_LOCK_SECONDS = 600


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


def load(directory: Path, name: str) -> Callable | None:
    """The kernel of a built extension module, or None if there is none."""
    path = extension_path(directory, name)
    if not path.exists():
        return None
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module.kernel


_PENDING: list[tuple[Path, str, str]] = []  # builds to start when this process exits


def start_build(source_path: Path, name: str, sig: str) -> None:
    """Build when this process exits, in a detached process (unless disabled).

    Waiting for the exit keeps the build from competing for cores with the work
    of the process that compiled the kernel.
    """
    if os.environ.get("RELGRAPH_AOT", "1") == "0":
        return
    if not _PENDING:
        atexit.register(_start_pending)
    _PENDING.append((source_path, name, sig))


def _start_pending() -> None:
    for source_path, name, sig in _PENDING:
        _spawn(source_path, name, sig)


def _spawn(source_path: Path, name: str, sig: str) -> None:
    """Start one detached build, unless one is already running or it failed before."""
    if (source_path.parent / f"{name}.failed").exists():
        return  # tried once; the JIT kernel serves
    lock = source_path.parent / f"{name}.building"
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        if time.time() - lock.stat().st_mtime < STALE_LOCK_SECONDS:
            return
        lock.unlink(missing_ok=True)  # a build that died long ago
        return _spawn(source_path, name, sig)
    os.close(fd)
    subprocess.Popen(
        [sys.executable, "-m", "relgraph.aot", str(source_path), name, sig],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def build(source_path: Path, name: str, sig: str) -> Path:
    """Compile the kernel in ``source_path`` into the extension module ``name``."""
    source_path = Path(source_path)
    directory = source_path.parent
    lock = directory / f"{name}.building"
    try:
        with warnings.catch_warnings():
            # pycc is "pending deprecation" with its replacement still in the works;
            # if a Numba release drops it, this build fails and the JIT path serves.
            warnings.simplefilter("ignore")
            from numba.pycc import CC

        # Import the kernel module under the name the JIT path gives it
        # (relgraph_kernel_<digest>): Numba's cache entries refer to it.
        module_name = "relgraph_kernel_" + source_path.stem.removeprefix("k_")
        spec = importlib.util.spec_from_file_location(module_name, source_path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        namespace: dict[str, Any] = {"kernel": module.kernel}
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
            os.replace(built, target)
        return target
    except Exception:
        (directory / f"{name}.failed").touch()
        raise
    finally:
        lock.unlink(missing_ok=True)


if __name__ == "__main__":
    os.nice(19)  # a background job: it must not slow the process that started it
    build(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
