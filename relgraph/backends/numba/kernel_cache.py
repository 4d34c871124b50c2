"""The kernel cache: generated kernels in memory and on disk, verified before use.

A kernel is kept by its generated source: in memory for the process, and on disk
(``RELGRAPH_CACHE_DIR``, default ``~/.cache/relgraph``) as ``kernels/k_<digest>.py``,
where ``digest`` hashes the source and the helpers it inlines.  Numba keeps the
compiled machine code beside it.

Nothing on disk is trusted (see :mod:`relgraph.cache_files`): the directory must be
this user's alone; a kernel file must hold exactly the source its name was made
from, or it is written again (atomically); Numba's cache entries for a kernel are
loaded only if they match the signed list of their digests written when they were
made (else they are removed and the kernel compiled afresh).  A cache directory
that cannot be written means no disk cache for this process, with one warning.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from relgraph.cache_files import (
    cache_root,
    read_signed,
    refusal_of,
    warn_once,
    write_atomic,
    write_signed,
)
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Symbol
from relgraph.terms.types import TensorType

__all__ = ["cache_dir", "compile_kernel", "kernel_path", "signature"]

# Numba invalidates its disk cache by the kernel file's timestamp only, so the file
# name also carries a fingerprint of the helpers a kernel inlines.
_HELPERS = hashlib.sha256(
    b"".join(
        Path(str(getattr(importlib.util.find_spec(m), "origin", ""))).read_bytes()
        for m in (
            "relgraph.backends.numba.intmath",
            "relgraph.backends.numba.kernels",
            "relgraph.backends.numba.linalg_kernels",
            "relgraph.backends.numba.order_kernels",
            "relgraph.backends.numba.sort_network",
            "relgraph.backends.numba.hugepages",
            "relgraph.backends.numba.reduce_kernels",
            "relgraph.backends.numba.llvmfloat",
            "relgraph.backends.numba.vecmath",
            "relgraph.backends.numba.vecmath32",
            "relgraph.backends.numba.vecspecial",
            "relgraph.backends.numba.lowering",
        )
    )
).hexdigest()[:12]
# Compiled kernels by source and signature (one source serves inputs of several
# dtypes): they live as long as the process.
_KERNELS: dict[tuple[str, str], Callable] = {}
_LOCK = threading.Lock()
_fallback: Path | None = None  # a private directory when the cache cannot be written


def cache_dir() -> Path:
    """Where generated kernels and Numba's compiled code are kept on disk."""
    return cache_root() / "kernels"


def _usable_dir() -> tuple[Path, bool]:
    """The cache directory, or a private temporary one (and False) if it is not writable."""
    directory = cache_dir()
    problem = refusal_of(directory.name)
    if problem is None:
        try:
            probe = directory / f".probe.{os.getpid()}.{threading.get_ident()}"
            probe.write_bytes(b"")
            probe.unlink()
            return directory, True
        except OSError as exc:
            problem = str(exc)
    warn_once("kernels", f"the kernel cache {directory} is not used ({problem}); kernels "
              "are compiled for this process only")  # fmt: skip
    return _private_dir(), False


def _private_dir() -> Path:
    global _fallback
    if _fallback is None:
        _fallback = Path(tempfile.mkdtemp(prefix="relgraph-kernels-"))
        atexit.register(shutil.rmtree, _fallback, True)
    return _fallback


def kernel_path(directory: Path, source: str, signature: str = "") -> Path:
    """The file of ``source`` compiled for ``signature`` in ``directory``: written if
    missing or not exactly it.  One file per signature, so Numba's index of a file
    lists one entry (two processes adding entries to one index can mix them up)."""
    digest = hashlib.sha256(f"{_HELPERS}{signature}\n{source}".encode()).hexdigest()[:24]
    path = directory / f"k_{digest}.py"
    try:
        intact = path.read_text() == source
    except (OSError, UnicodeDecodeError):
        intact = False
    if not intact:
        if path.exists():
            _purge_numba_cache(path)  # compiled from other text
        # Readers see the old file or the new one, never half of one.
        if not write_atomic(path, source.encode()):
            raise OSError(f"cannot write {path}")
    return path


def signature(inputs: Sequence[Symbol], outputs: Sequence[Any], slots: Sequence[int] = ()) -> str:
    """The Numba signature of a kernel: C-contiguous arrays in (read-only ones too),
    results as a tuple.  It is the kernel's only one: callers make other arrays
    C-contiguous first, so a call never waits for Numba to compile another.

    ``slots`` are the outputs that take a buffer argument (after the inputs).

    Examples
    --------
    >>> import relgraph as rg
    >>> x, s = rg.vector("x"), rg.scalar("s", "int64")
    >>> signature([x, s], [x * s, rg.sum(x)])
    'Tuple((float64[:], float64,))(Array(float64, 1, "C", readonly=True), int64)'
    """
    results = ", ".join(_numba_type(typeof(o), "A") for o in outputs)
    args = ", ".join(
        [_numba_type(s.type, "readonly") for s in inputs]
        + [_numba_type(typeof(outputs[k]), "C") for k in slots]  # out buffers
    )
    return f"Tuple(({results},))({args})"


def _numba_type(t: TensorType, layout: str) -> str:
    """``t`` as Numba spells it: any layout ("A"), C order ("C", which BLAS and flat
    loops use in place), or C order and possibly read-only (which writable arrays
    fit too)."""
    name = "boolean" if t.dtype.kind == "b" else t.dtype.name
    if t.ndim == 0:
        return name
    if layout == "readonly":
        return f'Array({name}, {t.ndim}, "C", readonly=True)'
    dims = [":"] * t.ndim
    if layout == "C":
        dims[-1] = "::1"
    return f"{name}[{', '.join(dims)}]"


def compile_kernel(source: str, signature: str) -> Callable:
    """The kernel of ``source``, from memory or Numba (its disk cache if verified).

    ``signature`` is the kernel's Numba signature; the kernel is compiled for it at
    once, so a broken cache entry shows here and is replaced.
    """
    with _LOCK:
        found = _KERNELS.get((source, signature))
        if found is not None:
            return found
        _import_numba()
        directory, persistent = _usable_dir()
        try:
            kernel = _jit(kernel_path(directory, source, signature), signature, persistent)
        except OSError as exc:  # a full disk: compiled for this process, in memory
            warn_once("kernels-full", f"the kernel cache {directory} cannot be written "
                      f"({exc}); kernels are compiled for this process only")  # fmt: skip
            kernel = _in_memory(source, signature)
        _KERNELS[source, signature] = kernel
        return kernel


def _import_numba() -> None:
    """Import Numba, the first time with its error-message highlighting off.

    Numba colours messages with colorama, whose ``init``/``deinit`` replace
    ``sys.stdout`` and ``sys.stderr`` and put back what they saw: even a compile that
    succeeds formats messages (the overloads it tries and rejects).  Run on the
    background compiler, that would undo a ``redirect_stdout`` the caller's thread
    makes meanwhile (its output lost to the old stream).  The setting is read once,
    when Numba is imported, and the environment is left as it was.
    """
    if "numba" in sys.modules:
        return
    name = "NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING"
    before = os.environ.get(name)
    os.environ[name] = before or "1"
    try:
        importlib.import_module("numba")
    finally:
        if before is None:
            del os.environ[name]


def _jit(path: Path, signature: str, persistent: bool) -> Callable:
    """Import the kernel module and compile it for ``signature``, from Numba's cache
    if its entries are the ones this user's processes wrote (else they are removed
    and the kernel compiled again); then sign the entries Numba has written."""
    if persistent and not _numba_entries_verified(path):
        _purge_numba_cache(path)
    try:
        kernel = _import_and_compile(path, signature)
    except OSError:
        raise
    except Exception:  # a Numba cache entry of another Numba version
        _purge_numba_cache(path)
        kernel = _import_and_compile(path, signature)
    if persistent:
        write_signed(_manifest(path), json.dumps(_numba_entries(path)).encode())
    return kernel


def _in_memory(source: str, signature: str) -> Callable:
    """The kernel compiled from ``source`` with no file and no Numba disk cache."""
    namespace: dict = {}
    exec(compile(source.replace("cache=True", "cache=False"), "<relgraph kernel>", "exec"),
         namespace)  # fmt: skip
    kernel = namespace["kernel"]
    kernel.compile(signature)
    kernel.disable_compile()
    return kernel


def _manifest(path: Path) -> Path:
    return path.with_suffix(".numba")


def _numba_entries(path: Path) -> dict[str, str]:
    """Numba's cache files of the kernel module at ``path``, with their digests."""
    return {
        entry.name: hashlib.sha256(entry.read_bytes()).hexdigest()
        for entry in sorted((path.parent / "__pycache__").glob(f"{path.stem}.*"))
    }


def _numba_entries_verified(path: Path) -> bool:
    """Whether every Numba cache file of the kernel is one the signed manifest lists
    (loading an unlisted one would run whatever machine code it holds)."""
    try:
        entries = _numba_entries(path)
    except OSError:
        return False
    if not entries:
        return True
    signed = read_signed(_manifest(path))
    return signed is not None and json.loads(signed) == entries


def _import_and_compile(path: Path, signature: str) -> Callable:
    name = f"relgraph_kernel_{path.stem.removeprefix('k_')}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module spec for {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    module.kernel.compile(signature)
    module.kernel.disable_compile()
    return module.kernel


def _purge_numba_cache(path: Path) -> None:
    """Remove Numba's cached index and code of the kernel module at ``path``."""
    for entry in (path.parent / "__pycache__").glob(f"{path.stem}.*"):
        entry.unlink(missing_ok=True)
