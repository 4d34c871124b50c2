"""The cache directory's files: who may write them, and entries read only once
authenticated.

relgraph keeps generated kernels, Numba's compiled code and rewritten programs
under ``$RELGRAPH_CACHE_DIR`` (default ``~/.cache/relgraph``).
Reading any of them could change a result or, for compiled code, run code, so:

* the directory must belong to this user and be writable by nobody else; any other
  is refused (one warning, then no disk cache for the process);
* every entry carries an HMAC-SHA256 of its name and bytes, keyed by a random
  secret made once per cache directory in ``secret`` (mode 0600, this user's):
  an entry whose MAC does not verify is not an entry, and is written again;
* rewritten programs are stored as data (JSON), never as pickles.

Sharing a cache directory between users or machines therefore means sharing its
secret: whoever can read the secret can write entries that are trusted.  Copy a
cache only between accounts that trust each other; otherwise let each build its own.

A cache that cannot be written (a full disk, a read-only mount) means no disk cache,
with one warning, never a failed call.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
import stat
import tempfile
import threading
import warnings
from pathlib import Path

__all__ = ["cache_root", "refusal", "refusal_of", "sign", "write_atomic", "write_signed",
           "read_signed", "warn_once"]  # fmt: skip

_SECRET = "secret"
_MAC = 32  # bytes of an HMAC-SHA256
_warned: set[str] = set()
_lock = threading.Lock()


def cache_root() -> Path:
    """``$RELGRAPH_CACHE_DIR``, or ``~/.cache/relgraph``."""
    return Path(os.environ.get("RELGRAPH_CACHE_DIR") or Path.home() / ".cache" / "relgraph")


def warn_once(what: str, message: str) -> None:
    """One RuntimeWarning per ``what`` per process."""
    with _lock:
        if what in _warned:
            return
        _warned.add(what)
    warnings.warn(f"relgraph: {message}", RuntimeWarning, stacklevel=3)


def refusal(directory: Path) -> str | None:
    """Why ``directory`` cannot hold a cache (None if it can): made if missing, it
    must be a directory of this user's that nobody else can write."""
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = os.stat(directory)
    except OSError as exc:
        return f"it cannot be made ({exc})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it belongs to another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"others can write it (mode {stat.filemode(st.st_mode)})"
    if not os.access(directory, os.W_OK | os.X_OK):
        return "it cannot be written"
    return None


def refusal_of(part: str) -> str | None:
    """Why the cache, or its folder ``part``, cannot be used (None if both can)."""
    root = cache_root()
    return refusal(root) or refusal(root / part)


def sign(path: Path, data: bytes) -> bytes:
    """The MAC of ``data`` as the entry named ``path.name`` of its cache directory."""
    key = _secret(str(cache_root()))
    return hmac.new(key, path.name.encode() + b"\0" + data, hashlib.sha256).digest()


def write_atomic(path: Path, data: bytes) -> bool:
    """Write ``path`` whole or not at all (readers see the old file or the new one).
    False, with one warning, when it cannot be written (a full disk)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        warn_once("write", f"the cache {path.parent} cannot be written ({exc}); going on "
                  "without keeping entries on disk")  # fmt: skip
        return False
    return True


def write_signed(path: Path, data: bytes) -> bool:
    """Keep ``data`` at ``path`` with its MAC in front."""
    try:
        mac = sign(path, data)
    except OSError as exc:
        warn_once("secret", f"the cache's secret cannot be made ({exc}); no disk cache")
        return False
    return write_atomic(path, mac + data)


def read_signed(path: Path) -> bytes | None:
    """The data kept at ``path``, or None if it is missing or its MAC does not verify
    (written by someone without the secret, truncated, or damaged)."""
    try:
        blob = path.read_bytes()
        mac = sign(path, blob[_MAC:])
    except OSError:
        return None
    return blob[_MAC:] if hmac.compare_digest(blob[:_MAC], mac) else None


@functools.lru_cache(maxsize=16)
def _secret(root: str) -> bytes:
    """The cache's secret: 32 random bytes, made once (atomically: every process reads
    the same one) in a file only this user can read."""
    path = Path(root) / _SECRET
    if not path.exists():
        Path(root).mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".secret-")  # mode 0600
        try:
            os.write(fd, secrets.token_bytes(32))
            os.close(fd)
            try:
                os.link(tmp, path)  # fails if another process made it first
            except FileExistsError:
                pass
        finally:
            os.unlink(tmp)
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077 or st.st_size != 32:
        raise OSError(f"{path} is not a private 32-byte file (mode {stat.filemode(st.st_mode)})")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise OSError(f"{path} belongs to another user")
    return path.read_bytes()
