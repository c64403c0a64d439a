"""The workspace fence: the one way in and out of the workspace for every reader and writer.

The daemon's file routes, the session agent's tools, the search child, the standing
agents' tools, the `.gitignore` reader and `POST /workspace/init` all go through a
`Fence` (and so will the MCP tools). Its rules:

1. A path (relative to the workspace, or absolute inside it) is normalized lexically
   first: one that leaves the workspace is `path_outside_workspace` (400). It is then
   resolved (`os.path.realpath`: every component, every symlink); one that lands
   outside is `symlink_escape` (400), and one that lands on the daemon's data dir or
   inside it (`--workspace .` with the default `.data`: the store, logs, credentials)
   is `permission_denied` (403). A glob pattern is relative and has no `..` segment
   (`path_outside_workspace`): nothing walks the parents.
2. A checked path is opened without following any symlink: from a descriptor of the
   workspace root, each directory component is opened with `openat(O_NOFOLLOW |
   O_DIRECTORY)` and the file itself with `openat(O_NOFOLLOW)`. The checked path is the
   *resolved* one, so it has no symlink in it; a component swapped for a symlink after
   the check fails the open (`symlink_escape`) instead of being followed out. Writes go
   through the same descriptor of the parent directory: the temporary file is created
   there and renamed there (`runtime.workspace.files.write_at`).
3. Only regular files are opened: FIFOs, sockets and devices are refused before any open
   (an `lstat` relative to the parent's descriptor), the open itself is `O_NONBLOCK` (a
   FIFO swapped in after the stat cannot block it) and the opened descriptor is checked
   again with `fstat`. Every read is bounded in size (`read(limit=...)`).

Every refusal is a `FileError` carrying the spec's `errorKind`, an HTTP status and a hint;
the session tools turn it into a tool error naming the rule. This module imports only the
standard library: the search child (`python -I`) uses it too.
"""

from __future__ import annotations

import os
import stat as stat_module
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from runtime.workspace.file_errors import (
    FileError,
    file_type,
    in_data_dir,
    not_found,
    not_regular,
    os_error,
    outside_workspace,
    parse_error,
    swapped,
    symlink_escape,
    too_large,
)
from runtime.workspace.files import ABSENT, WORKSPACE_DIR_MODE, hash_fd, path_lock, write_at

DIRECTORY_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC

EntryKind = Literal["file", "directory", "symlink", "other"]


@dataclass(frozen=True)
class Entry:
    """A directory entry, never followed: a symlink is reported as one."""

    name: str
    kind: EntryKind


def entry_kind(mode: int) -> EntryKind:
    """What a stat's mode is, as listings and GET /stat name it."""
    if stat_module.S_ISREG(mode):
        return "file"
    if stat_module.S_ISDIR(mode):
        return "directory"
    if stat_module.S_ISLNK(mode):
        return "symlink"
    return "other"


@dataclass(frozen=True)
class Fence:
    """The workspace `root` (a real path) minus the daemon's `data_dir` when it lies inside.

    `alias` is the workspace as configured when that differs from its real path (a
    symlinked workspace): absolute paths under it are accepted too.
    """

    root: Path
    data_dir: Path | None = None
    alias: Path | None = None

    @classmethod
    def of(cls, workspace: Path, data_dir: Path | None = None) -> Fence:
        """The fence of `workspace`; `path_not_found` when it is not a directory."""
        root = Path(os.path.realpath(workspace))
        if not root.is_dir():
            raise FileError(
                "path_not_found",
                404,
                "the workspace directory does not exist",
                "start the daemon on an existing workspace",
            )
        return cls.trusted(root, data_dir, alias=Path(os.path.abspath(workspace)))

    @classmethod
    def trusted(
        cls, root: Path, data_dir: Path | None = None, *, alias: Path | None = None
    ) -> Fence:
        """The fence of an already resolved `root` (the search child's, from its caller)."""
        data = None if data_dir is None else Path(os.path.realpath(data_dir))
        if data is not None and data != root and root not in data.parents:
            data = None  # the data dir is elsewhere (or holds the workspace): nothing to hide
        return cls(root, data, None if alias == root else alias)

    # -- checks ----------------------------------------------------------------------

    def contains(self, real: Path) -> bool:
        """Whether the real path `real` is in the workspace and not in the data dir."""
        if real != self.root and self.root not in real.parents:
            return False
        data = self.data_dir
        return data is None or (real != data and data not in real.parents)

    def resolve(self, raw: str) -> Path:
        """The real path `raw` names inside the workspace, or the `FileError` refusing it."""
        if not raw or "\x00" in raw:
            raise parse_error("path must be a non-empty string without NUL bytes", "name a path")
        lexical: str | None = None
        for base in (self.root, self.alias):
            if base is None:
                continue
            joined = os.path.normpath(os.path.join(base, raw))
            if joined == str(base) or joined.startswith(str(base).rstrip("/") + "/"):
                lexical = joined
                break
        if lexical is None:
            raise outside_workspace(raw)
        real = Path(os.path.realpath(lexical))
        if real != self.root and self.root not in real.parents:
            raise symlink_escape(raw)
        if not self.contains(real):
            raise in_data_dir(raw)
        return real

    def relative(self, path: Path) -> str:
        """`path` (inside) relative to the workspace, POSIX form, `.` for the root."""
        return "." if path == self.root else path.relative_to(self.root).as_posix()

    @staticmethod
    def pattern(pattern: str) -> str:
        """A glob pattern the searches may walk: relative, no NUL, no `..` segment."""
        if not pattern or "\x00" in pattern:
            raise parse_error("pattern must be a non-empty string without NUL bytes")
        if pattern.startswith("/"):
            raise parse_error("pattern must be relative to cwd", "drop the leading /")
        if ".." in pattern.split("/"):
            raise FileError(
                "path_outside_workspace",
                400,
                f"pattern walks out of its directory (a `..` segment): {pattern}",
                "use a pattern without `..`; pass cwd to search another directory",
                rule="outside_workspace",
            )
        return pattern

    # -- opening, without following a symlink ----------------------------------------

    def _parts(self, path: Path) -> tuple[str, ...]:
        if not self.contains(path):
            # Every caller passes a checked path: this only trips on a programming error.
            raise symlink_escape(str(path))
        return () if path == self.root else path.relative_to(self.root).parts

    def _walk(self, parts: tuple[str, ...], shown: str, *, create: bool = False) -> int:
        """A descriptor of the directory `parts` names under the root, each component
        opened with O_NOFOLLOW from its parent's descriptor (with `create`, a missing one
        is made there first, `WORKSPACE_DIR_MODE`)."""
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as err:
            raise os_error(err, shown) from err
        try:
            for part in parts:
                made = create and _make_directory(part, fd)
                try:
                    child = os.open(part, DIRECTORY_FLAGS, dir_fd=fd)
                except NotADirectoryError as err:
                    info = _lstat(part, fd)
                    if info is not None and stat_module.S_ISLNK(info.st_mode):
                        raise swapped(shown) from err
                    raise os_error(err, shown) from err
                except OSError as err:
                    raise os_error(err, shown) from err
                os.close(fd)
                fd = child
                if made:
                    os.fchmod(fd, WORKSPACE_DIR_MODE)  # whatever the process umask
        except BaseException:
            os.close(fd)
            raise
        return fd

    @contextmanager
    def directory(self, path: Path) -> Iterator[int]:
        """A descriptor of the directory `path` (checked), closed on exit."""
        fd = self._walk(self._parts(path), self.relative(path))
        try:
            yield fd
        finally:
            os.close(fd)

    @contextmanager
    def parent(self, path: Path, *, create: bool = False) -> Iterator[tuple[int, str]]:
        """A descriptor of the directory holding `path` (checked, not the root), and the
        name of `path` in it; with `create`, missing directories are made on the way."""
        parts = self._parts(path)
        if not parts:
            raise parse_error("the workspace root is not a file", "name a file")
        fd = self._walk(parts[:-1], self.relative(path), create=create)
        try:
            yield fd, parts[-1]
        finally:
            os.close(fd)

    def lstat(self, path: Path) -> os.stat_result:
        """The stat of `path` itself (a symlink swapped in is reported as one)."""
        shown = self.relative(path)
        if path == self.root:
            with self.directory(path) as fd:
                return os.fstat(fd)
        with self.parent(path) as (fd, name):
            try:
                return os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError as err:
                raise os_error(err, shown) from err

    def exists(self, path: Path) -> bool:
        try:
            self.lstat(path)
        except FileError as err:
            if err.kind == "path_not_found":
                return False
            raise
        return True

    @contextmanager
    def open(self, path: Path) -> Iterator[int]:
        """A read-only descriptor of the regular file `path` (checked), closed on exit."""
        with self.parent(path) as (fd, name):
            file_fd = open_regular(fd, name, self.relative(path))
        try:
            yield file_fd
        finally:
            os.close(file_fd)

    def read(self, path: Path, *, limit: int) -> bytes:
        """The bytes of the regular file `path`; `file_too_large` past `limit` bytes."""
        shown = self.relative(path)
        with self.open(path) as fd:
            size = os.fstat(fd).st_size
            if size > limit:
                raise too_large(shown, size, limit)
            data = read_fd(fd, limit + 1)  # the file may grow after the fstat
        if len(data) > limit:
            raise too_large(shown, len(data), limit)
        return data

    def entries(self, path: Path, *, limit: int | None = None) -> list[Entry]:
        """The entries of the directory `path`, none followed (at most `limit` + 1, so the
        caller can tell there were more)."""
        found: list[Entry] = []
        with self.directory(path) as fd:
            try:
                with os.scandir(fd) as listing:
                    for entry in listing:
                        found.append(_entry(entry))
                        if limit is not None and len(found) > limit:
                            break
            except OSError as err:
                raise os_error(err, self.relative(path)) from err
        return found

    def file_hash(self, path: Path) -> str:
        """The content hash of the regular file `path`, `ABSENT` when there is none."""
        try:
            with self.open(path) as fd:
                return hash_fd(fd)
        except FileError as err:
            if err.kind == "path_not_found":
                return ABSENT
            raise

    def write(
        self, path: Path, data: bytes, *, expected: str | None = None, parents: bool = False
    ) -> None:
        """Replace `path` (checked) with `data` atomically, in its parent's descriptor; with
        `expected`, only if the file still hashes so (`HashMismatch` otherwise). The parent
        must exist (`path_not_found`), or with `parents` is made (`mkdir -p`, in the fence)."""
        with path_lock(path), self.parent(path, create=parents) as (fd, name):
            try:
                write_at(fd, name, data, expected=expected)
            except OSError as err:
                raise os_error(err, self.relative(path)) from err


def open_regular(dir_fd: int, name: str, shown: str) -> int:
    """`name` in `dir_fd`, opened read-only only if it is a regular file: refused from its
    lstat first (a FIFO, socket or device is never opened), opened O_NOFOLLOW|O_NONBLOCK
    (nothing swapped in can block or redirect the open), and checked again on the fd."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as err:
        raise os_error(err, shown) from err
    if stat_module.S_ISLNK(info.st_mode):
        raise swapped(shown)
    if not stat_module.S_ISREG(info.st_mode):
        raise not_regular(shown, info.st_mode)
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        raise os_error(err, shown) from err
    mode = os.fstat(fd).st_mode
    if not stat_module.S_ISREG(mode):
        os.close(fd)
        raise not_regular(shown, mode)
    return fd


def read_fd(fd: int, limit: int) -> bytes:
    """At most `limit` bytes of a regular file's descriptor."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1024 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _make_directory(name: str, dir_fd: int) -> bool:
    """Whether `name` was made in `dir_fd` (False: it is there already, or was made
    meanwhile; the open that follows refuses a symlink)."""
    try:
        os.mkdir(name, WORKSPACE_DIR_MODE, dir_fd=dir_fd)
    except FileExistsError:
        return False
    return True


def _lstat(name: str, dir_fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None


def _entry(entry: os.DirEntry[str]) -> Entry:
    try:
        if entry.is_symlink():
            return Entry(entry.name, "symlink")
        if entry.is_dir(follow_symlinks=False):
            return Entry(entry.name, "directory")
        if entry.is_file(follow_symlinks=False):
            return Entry(entry.name, "file")
    except OSError:
        pass
    return Entry(entry.name, "other")


__all__ = [
    "Entry",
    "EntryKind",
    "Fence",
    "FileError",
    "entry_kind",
    "file_type",
    "in_data_dir",
    "not_found",
    "not_regular",
    "open_regular",
    "os_error",
    "outside_workspace",
    "parse_error",
    "read_fd",
    "symlink_escape",
    "too_large",
]
