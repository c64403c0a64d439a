"""Content hashes and atomic, serialized file writes.

A write goes to a random temporary file in the target directory, is fsynced,
and replaces the target with one `rename()`: a reader sees the old file or the
new one, never a part of either, and no temporary file outlives the call.
Writes to one path are serialized, within this process (a lock per path) and across
processes (an `flock` on the directory around the check and the rename), so a
compare-and-swap (`expected` hash checked just before the rename) holds between them.

`write_at` does all of it relative to a descriptor of the directory (the workspace fence,
`runtime.workspace.fence`, opens it without following a symlink): the temporary file is
created there, the target is read (never followed) and renamed there. A replaced file
keeps its permission bits. A new file gets `WORKSPACE_FILE_MODE` (0644), a new directory
`WORKSPACE_DIR_MODE` (0755), whatever the process umask: agentrt's processes run under
umask 077 so that its own state is private (runtime/file_modes.py), but what it writes in
the workspace is the user's file, and gets the mode the user's own tools would give it
under the usual umask 022 (readable by the git, editors, build tools and servers that
read the project), with no per-write `os.umask` (it races between threads).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import secrets
import stat
import threading
from pathlib import Path
from typing import Final

# The hash of a path where no file exists (a write that creates it expects this).
ABSENT: Final = "absent"
# The "hash" of a name that is there but is no regular file (a symlink, a FIFO, ...):
# never the hash a write expects, so a compare-and-swap on it fails.
NOT_REGULAR: Final = "not-a-regular-file"

# The modes of what agentrt creates in the workspace (see the module's docstring), and the
# umask of the commands it runs there (the shell tool), for the same reason.
WORKSPACE_UMASK: Final = 0o022
WORKSPACE_FILE_MODE: Final = 0o666 & ~WORKSPACE_UMASK
WORKSPACE_DIR_MODE: Final = 0o777 & ~WORKSPACE_UMASK

_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()
_TEMP_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class HashMismatch(Exception):
    """The file's content is not the one the write was decided on."""

    def __init__(self, expected: str, found: str) -> None:
        super().__init__(f"expected {expected}, found {found}")
        self.expected = expected
        self.found = found


def content_hash(data: bytes) -> str:
    """`sha256:` and 64 lowercase hex digits of the raw bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def hash_fd(fd: int) -> str:
    """The content hash of a regular file's descriptor, read from its start."""
    digest = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, 1024 * 1024):
        digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def hash_at(dir_fd: int, name: str) -> str:
    """The content hash of `name` in `dir_fd`: `ABSENT` when there is nothing by that name,
    `NOT_REGULAR` when it is not a regular file (never followed, never blocking)."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return ABSENT
    if not stat.S_ISREG(info.st_mode):
        return NOT_REGULAR
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return ABSENT
    except OSError:
        return NOT_REGULAR  # a symlink swapped in since the stat (ELOOP)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return NOT_REGULAR
        return hash_fd(fd)
    finally:
        os.close(fd)


def path_lock(path: Path) -> threading.RLock:
    """The (re-entrant) lock serializing this process's writes to `path`."""
    key = os.path.abspath(path)
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.RLock())


def atomic_write(path: Path, data: bytes, *, expected: str | None = None) -> None:
    """Replace `path` with `data` atomically; with `expected`, only if the file still hashes so.

    Creates missing parent directories (the path is the caller's: a workspace path goes
    through `runtime.workspace.fence.Fence.write` instead). Keeps the permission bits of a
    file it replaces. Raises `HashMismatch` (nothing written) when `expected` no longer holds.
    """
    make_directories(path.parent)
    with path_lock(path):
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            write_at(dir_fd, path.name, data, expected=expected)
        finally:
            os.close(dir_fd)


def write_at(dir_fd: int, name: str, data: bytes, *, expected: str | None = None) -> None:
    """Replace `name` in the directory `dir_fd` with `data` atomically (see the module).

    With `expected`, only if `name` still hashes so (`ABSENT`: only if nothing is there),
    checked under the directory's `flock` just before the rename; `HashMismatch` then, and
    nothing is written. The caller holds `path_lock` of the target when it needs its own
    read-check-write to be serialized within the process.
    """
    # A short fixed prefix: `.{name}.` would push a long (valid) name past the file
    # system's 255-byte limit.
    tmp = f".agentrt-{secrets.token_hex(8)}.tmp"
    mode = _kept_mode(dir_fd, name)
    fd = os.open(tmp, _TEMP_FLAGS, 0o600, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, WORKSPACE_FILE_MODE if mode is None else mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        # The check and the rename under the directory's lock: writers in other
        # processes (the API's file routes, the worker's tools) serialize here too.
        fcntl.flock(dir_fd, fcntl.LOCK_EX)
        try:
            if expected is not None:
                found = hash_at(dir_fd, name)
                if found != expected:
                    raise HashMismatch(expected, found)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        finally:
            fcntl.flock(dir_fd, fcntl.LOCK_UN)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise
    try:
        os.fsync(dir_fd)
    except OSError:
        pass


def make_directories(directory: Path) -> None:
    """`mkdir -p`, each directory it creates `WORKSPACE_DIR_MODE` whatever the umask."""
    missing: list[Path] = []
    while not directory.is_dir():
        missing.append(directory)
        if directory.parent == directory:
            break
        directory = directory.parent
    for created in reversed(missing):
        try:
            created.mkdir()
        except FileExistsError:
            continue  # made meanwhile (or a file: the write then fails on it)
        os.chmod(created, WORKSPACE_DIR_MODE)


def _kept_mode(dir_fd: int, name: str) -> int | None:
    """The permission bits of the regular file `name` replaces, None for a new file."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None
