"""Content hashes and atomic, serialized file writes.

A write goes to a random temporary file in the target directory, is fsynced,
and replaces the target with one `rename()`: a reader sees the old file or the
new one, never a part of either, and no temporary file outlives the call.
Writes to one path are serialized, within this process (a lock per path) and across
processes (an `flock` on the directory around the check and the rename), so a
compare-and-swap (`expected` hash checked just before the rename) holds between them.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

# The hash of a path where no file exists (a write that creates it expects this).
ABSENT: Final = "absent"

_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


class HashMismatch(Exception):
    """The file's content is not the one the write was decided on."""

    def __init__(self, expected: str, found: str) -> None:
        super().__init__(f"expected {expected}, found {found}")
        self.expected = expected
        self.found = found


def content_hash(data: bytes) -> str:
    """`sha256:` and 64 lowercase hex digits of the raw bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_hash(path: Path) -> str:
    """The content hash of the file at `path`, or `ABSENT` when there is none."""
    try:
        return content_hash(path.read_bytes())
    except FileNotFoundError:
        return ABSENT


def path_lock(path: Path) -> threading.RLock:
    """The (re-entrant) lock serializing this process's writes to `path`."""
    key = os.path.abspath(path)
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.RLock())


def atomic_write(path: Path, data: bytes, *, expected: str | None = None) -> None:
    """Replace `path` with `data` atomically; with `expected`, only if the file still hashes so.

    Creates missing parent directories. Keeps the permission bits of a file it replaces.
    Raises `HashMismatch` (nothing written) when `expected` no longer holds.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path_lock(path):
        # A short fixed prefix: `.{name}.` would push a long (valid) name past the file
        # system's 255-byte limit.
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=".agentrt-", suffix=".tmp")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            try:
                mode = path.stat().st_mode & 0o7777
            except FileNotFoundError:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.chmod(tmp, mode)
            # The check and the rename under the directory's lock: writers in other
            # processes (the API's file routes, the worker's tools) serialize here too.
            with _directory_lock(path.parent):
                if expected is not None:
                    found = file_hash(path)
                    if found != expected:
                        raise HashMismatch(expected, found)
                os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    _fsync_dir(path.parent)


@contextmanager
def _directory_lock(directory: Path) -> Iterator[None]:
    """An exclusive `flock` on the directory, held for a check-and-rename (a few syscalls)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
