"""The kernel cache: generated kernels in memory and on disk, verified before use.

A kernel is kept by its generated source: in memory for the process, and on disk
(``RELGRAPH_CACHE_DIR``, default ``~/.cache/relgraph``) as ``kernels/k_<digest>.py``,
where ``digest`` hashes the source and the helpers it inlines.  Numba keeps the
compiled machine code beside it, and a background build may add an ahead-of-time
extension module (:mod:`relgraph.aot`).

Nothing on disk is trusted: a kernel file must hold exactly the source its name was
made from, or it is written again (atomically); Numba's cache entries for a kernel
that fails to load are removed and the kernel compiled afresh; an extension module
must match the checksum written when it was built.  A cache directory that cannot be
written means no disk cache for this process, with one warning.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

from relgraph import aot

__all__ = ["cache_dir", "compile_kernel", "aot_name", "kernel_path"]

# Numba invalidates its disk cache by the kernel file's timestamp only, so the file
# name also carries a fingerprint of the helpers a kernel inlines.
_HELPERS = hashlib.sha256(
    b"".join(
        Path(importlib.util.find_spec(m).origin).read_bytes()
        for m in ("relgraph.kernels", "relgraph.vecmath", "relgraph.lowering")
    )
).hexdigest()[:12]
# Compiled kernels by (source, signature): they live as long as the process.
_KERNELS: dict[tuple[str, str | None], Callable] = {}
_LOCK = threading.Lock()
_fallback: Path | None = None  # a private directory when the cache cannot be written


def cache_dir() -> Path:
    """Where generated kernels and Numba's compiled code are kept on disk."""
    root = os.environ.get("RELGRAPH_CACHE_DIR") or Path.home() / ".cache" / "relgraph"
    return Path(root) / "kernels"


def _usable_dir() -> tuple[Path, bool]:
    """The cache directory, or a private temporary one (and False) if it is not writable."""
    global _fallback
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".probe.{os.getpid()}.{threading.get_ident()}"
        probe.write_bytes(b"")
        probe.unlink()
        return directory, True
    except OSError as exc:
        if _fallback is None:
            warnings.warn(
                f"relgraph: the kernel cache {directory} cannot be written ({exc}); "
                "kernels are compiled for this process only",
                RuntimeWarning,
                stacklevel=4,
            )
            _fallback = Path(tempfile.mkdtemp(prefix="relgraph-kernels-"))
            atexit.register(shutil.rmtree, _fallback, True)
        return _fallback, False


def kernel_path(directory: Path, source: str) -> Path:
    """The file of ``source`` in ``directory``: written if missing or not exactly it."""
    digest = hashlib.sha256((_HELPERS + source).encode()).hexdigest()[:24]
    path = directory / f"k_{digest}.py"
    try:
        intact = path.read_text() == source
    except (OSError, UnicodeDecodeError):
        intact = False
    if not intact:
        if path.exists():
            _purge_numba_cache(path)  # compiled from other text
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)  # readers see the old file or the new one, never half
    return path


def compile_kernel(source: str, signature: str, aot_ok: bool = True) -> Callable:
    """The kernel of ``source``: from memory, a verified ahead-of-time build, or Numba.

    ``signature`` is the kernel's Numba signature; the JIT kernel is compiled for it at
    once, so a broken cache entry shows here and is replaced.  With ``aot_ok`` a
    missing ahead-of-time build is queued for the processes that come later.
    """
    key = (source, signature if aot_ok else None)
    with _LOCK:
        found = _KERNELS.get(key)
        if found is not None:
            return found
        directory, persistent = _usable_dir()
        path = kernel_path(directory, source)
        kernel = None
        if aot_ok and persistent:
            name = aot_name(source, signature)
            kernel = aot.load(directory, name)
            if kernel is None:
                aot.start_build(path, name, signature)
        if kernel is None:
            kernel = _jit(path, signature)
        _KERNELS[key] = kernel
        return kernel


def aot_name(source: str, signature: str) -> str:
    """The module name of a kernel's ahead-of-time build: it is built for one signature
    and for this CPU's features."""
    key = _HELPERS + source + signature + aot.cpu_fingerprint()
    return "aot_" + hashlib.sha256(key.encode()).hexdigest()[:24]


def _jit(path: Path, signature: str) -> Callable:
    """Import the kernel module and compile it for ``signature`` (from Numba's cache if
    it is sound; a cache entry that fails to load is removed and compiled again)."""
    try:
        return _import_and_compile(path, signature)
    except Exception:  # a corrupt or foreign Numba cache entry
        _purge_numba_cache(path)
        return _import_and_compile(path, signature)


def _import_and_compile(path: Path, signature: str) -> Callable:
    name = f"relgraph_kernel_{path.stem.removeprefix('k_')}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    module.kernel.compile(signature)
    return module.kernel


def _purge_numba_cache(path: Path) -> None:
    """Remove Numba's cached index and code of the kernel module at ``path``."""
    for entry in (path.parent / "__pycache__").glob(f"{path.stem}.*"):
        entry.unlink(missing_ok=True)
