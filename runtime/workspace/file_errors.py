"""The workspace fence's refusals: a `FileError` carries the spec's `{errorKind, error,
hint, status}` and, when it is one, the fence rule it broke.

Every reader and writer of the workspace raises these (runtime/workspace/fence.py, fs.py,
the search child, the standing agents' tools); the file routes answer one with its own
body, `POST /workspace/init` passes it on as the kernel's `RelayedRefusal`, and the session
tools answer it as a tool error naming the rule. Like the fence, this module imports only
the standard library: the search child (`python -I`) uses it too.
"""

from __future__ import annotations

import errno
import stat as stat_module
from typing import Literal

Rule = Literal["outside_workspace", "symlink_escape", "symlink_swapped", "data_dir", "not_regular"]


class FileError(Exception):
    """A refused file operation: the spec's `{errorKind, error, hint, status}`; `rule` names
    the fence rule it broke, when it is one (the session tools say it in their words)."""

    def __init__(
        self, kind: str, status: int, message: str, hint: str, *, rule: Rule | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.message = message
        self.hint = hint
        self.rule = rule

    def body(self) -> dict[str, object]:
        return {
            "errorKind": self.kind,
            "error": self.message,
            "hint": self.hint,
            "status": self.status,
        }


def parse_error(message: str, hint: str = "fix the request and retry") -> FileError:
    return FileError("parse_error", 400, message, hint)


def not_found(shown: str) -> FileError:
    return FileError(
        "path_not_found", 404, f"path does not exist: {shown}", "check the path and retry"
    )


def outside_workspace(raw: str) -> FileError:
    return FileError(
        "path_outside_workspace",
        400,
        f"path escapes workspace: {raw}",
        "use a path inside the workspace",
        rule="outside_workspace",
    )


def symlink_escape(raw: str) -> FileError:
    return FileError(
        "symlink_escape",
        400,
        f"symlink resolves outside workspace: {raw}",
        "a symlink on this path points outside the workspace",
        rule="symlink_escape",
    )


def swapped(shown: str) -> FileError:
    """A component that was a directory (or the file itself) at the check and is a
    symlink at the open: never followed."""
    return FileError(
        "symlink_escape",
        400,
        f"a component of this path became a symlink after it was checked: {shown}",
        "the path changed while it was being opened; retry",
        rule="symlink_swapped",
    )


def in_data_dir(shown: str) -> FileError:
    return FileError(
        "permission_denied",
        403,
        f"this path is the daemon's own data directory: {shown}",
        "the store, logs and credentials are not workspace files",
        rule="data_dir",
    )


def not_regular(shown: str, mode: int) -> FileError:
    return FileError(
        "parse_error",
        400,
        f"path is not a regular file ({file_type(mode)}): {shown}",
        "name a regular file",
        rule="not_regular",
    )


def file_type(mode: int) -> str:
    """What a non-regular file is, as errors name it."""
    if stat_module.S_ISDIR(mode):
        return "a directory"
    if stat_module.S_ISFIFO(mode):
        return "a FIFO"
    if stat_module.S_ISSOCK(mode):
        return "a socket"
    if stat_module.S_ISCHR(mode) or stat_module.S_ISBLK(mode):
        return "a device"
    if stat_module.S_ISLNK(mode):
        return "a symlink"
    return "not a regular file"


def too_large(shown: str, size: int, limit: int) -> FileError:
    return FileError(
        "file_too_large",
        413,
        f"file is too large ({size} bytes, limit {limit}): {shown}",
        "read it in windows with readBytes (GET /file/bytes)",
    )


def os_error(err: OSError, shown: str) -> FileError:
    """The file error an `OSError` on `shown` means for the client."""
    if isinstance(err, FileNotFoundError | NotADirectoryError):
        return not_found(shown)
    if isinstance(err, PermissionError):
        return FileError(
            "permission_denied",
            403,
            f"permission denied: {shown}",
            "the daemon's user cannot access this path",
        )
    if isinstance(err, IsADirectoryError):
        return parse_error(f"path is not a regular file: {shown}", "name a file")
    if err.errno == errno.ELOOP:
        return swapped(shown)
    return FileError(
        "permission_denied",
        403,
        f"{type(err).__name__} on {shown}: {err.strerror or err}",
        "the file system refused the operation",
    )
