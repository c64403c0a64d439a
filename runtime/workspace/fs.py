"""Workspace file operations shared by the daemon's file routes and the session agent's
file tools: confinement, text reads with their profile, byte windows, stat, listing,
create/replace and exact-text edits written atomically with a compare-and-swap.

Every failure is a `FileError` carrying the spec's `errorKind`, an HTTP status and a
hint; paths in results are relative to the workspace (POSIX form, `.` for the root).

Confinement: a path (relative to the workspace, or absolute) is first normalized
lexically (`..` folded); one that leaves the workspace is `path_outside_workspace`.
It is then resolved with `os.path.realpath` (every symlink, the file's own and those of
its directories); one that lands outside is `symlink_escape`. Nothing outside the
workspace is read, written or even stat'ed for the caller.
"""

from __future__ import annotations

import os
import re
import stat as stat_module
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from runtime.workspace.files import HashMismatch, atomic_write, content_hash, path_lock
from runtime.workspace.text import (
    Encoding,
    LineEnding,
    NotText,
    TextProfile,
    decode,
    decode_prefix,
    encode,
    line_ending_of,
    normalize,
    sniff_encoding,
)

MAX_TEXT_BYTES: Final = 8 * 1024 * 1024  # text reads and edits refuse larger files
DEFAULT_BYTES_WINDOW: Final = 65_536
MAX_BYTES_WINDOW: Final = 262_144
MAX_LIST_ENTRIES: Final = 1000
HASH_PATTERN: Final = re.compile(r"sha256:[0-9a-f]{64}")
STALE_HINT: Final = "re-read the file and retry with the latest hash"


class FileError(Exception):
    """A refused file operation: the spec's `{errorKind, error, hint, status}`."""

    def __init__(self, kind: str, status: int, message: str, hint: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.message = message
        self.hint = hint

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
    return FileError(
        "permission_denied",
        403,
        f"{type(err).__name__} on {shown}: {err.strerror or err}",
        "the file system refused the operation",
    )


# -- confinement ------------------------------------------------------------------------


def workspace_root(workspace: Path) -> Path:
    """The workspace's real path; `path_not_found` when it does not exist."""
    real = Path(os.path.realpath(workspace))
    if not real.is_dir():
        raise FileError(
            "path_not_found",
            404,
            "the workspace directory does not exist",
            "start the daemon on an existing workspace",
        )
    return real


def confine(root: Path, raw: str, *, workspace: Path | None = None) -> Path:
    """The real path `raw` names inside `root` (real), or the `FileError` refusing it.

    `workspace` is the workspace as configured (maybe through a symlink): an absolute
    path under it is accepted too.
    """
    if not raw or "\x00" in raw:
        raise parse_error("path must be a non-empty string without NUL bytes", "name a path")
    lexical: str | None = None
    candidates = [root] if workspace is None else [root, Path(os.path.abspath(workspace))]
    for base in candidates:
        joined = os.path.normpath(os.path.join(base, raw))
        if joined == str(base) or joined.startswith(str(base).rstrip("/") + "/"):
            lexical = joined
            break
    if lexical is None:
        raise FileError(
            "path_outside_workspace",
            400,
            f"path escapes workspace: {raw}",
            "use a path inside the workspace",
        )
    real = Path(os.path.realpath(lexical))
    if real != root and root not in real.parents:
        raise FileError(
            "symlink_escape",
            400,
            f"symlink resolves outside workspace: {raw}",
            "a symlink on this path points outside the workspace",
        )
    return real


def relative(root: Path, path: Path) -> str:
    return "." if path == root else path.relative_to(root).as_posix()


# -- reads ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextRead:
    path: str
    content: str
    profile: TextProfile
    size_bytes: int
    returned_bytes: int
    truncated: bool
    hash: str
    original_line_count: int
    has_more: bool


def _regular_file(root: Path, path: Path) -> tuple[str, os.stat_result]:
    shown = relative(root, path)
    try:
        info = path.stat()
    except OSError as err:
        raise os_error(err, shown) from err
    if not stat_module.S_ISREG(info.st_mode):
        raise parse_error(f"path is not a regular file: {shown}", "name a file, not a directory")
    return shown, info


def _too_large(shown: str, size: int) -> FileError:
    return FileError(
        "file_too_large",
        413,
        f"file is too large for a text read ({size} bytes, limit {MAX_TEXT_BYTES}): {shown}",
        "read it in windows with readBytes (GET /file/bytes)",
    )


def _binary(shown: str) -> FileError:
    return FileError(
        "binary_file", 422, f"binary file: {shown}", "use readBytes for binary content"
    )


def read_raw(root: Path, path: Path) -> bytes:
    """The bytes of a regular text-sized file (`file_too_large` past the text limit)."""
    shown, info = _regular_file(root, path)
    if info.st_size > MAX_TEXT_BYTES:
        raise _too_large(shown, info.st_size)
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_TEXT_BYTES + 1)  # the file may grow after the stat
    except OSError as err:
        raise os_error(err, shown) from err
    if len(data) > MAX_TEXT_BYTES:
        raise _too_large(shown, len(data))
    return data


def decode_file(root: Path, path: Path, data: bytes) -> tuple[str, TextProfile]:
    try:
        return decode(data)
    except NotText as err:
        raise _binary(relative(root, path)) from err


def read_text(
    root: Path,
    path: Path,
    *,
    max_bytes: int | None = None,
    line: int | None = None,
    limit: int | None = None,
) -> TextRead:
    """A text file, whole or a slice: `line` (1-based) and `limit` lines, or the first
    `max_bytes` bytes (after the BOM). The hash is always the whole file's."""
    data = read_raw(root, path)
    shown = relative(root, path)
    text, profile = decode_file(root, path, data)
    lines = text.split("\n")
    digest = content_hash(data)
    bom_len = len(encode("", TextProfile(profile.encoding, profile.bom)))
    body_len = len(data) - bom_len
    if line is not None or limit is not None:
        start = (line or 1) - 1
        end = len(lines) if limit is None else min(len(lines), start + limit)
        content = "\n".join(lines[start:end])
        returned = len(encode(content, TextProfile(profile.encoding, False, profile.line_ending)))
        has_more = end < len(lines)
        truncated = start > 0 or has_more
    else:
        content, returned, has_more = text, body_len, False
        truncated = False
    if max_bytes is not None:
        window = encode(content, TextProfile(profile.encoding, False, profile.line_ending))
        if len(window) > max_bytes:
            try:
                content, returned = decode_prefix(window[:max_bytes], profile.encoding)
            except NotText as err:
                raise _binary(shown) from err
            content = normalize(content) if profile.line_ending == "crlf" else content
            has_more = truncated = True
    return TextRead(
        path=shown,
        content=content,
        profile=profile,
        size_bytes=len(data),
        returned_bytes=returned,
        truncated=truncated,
        hash=digest,
        original_line_count=len(lines),
        has_more=has_more,
    )


@dataclass(frozen=True)
class BytesRead:
    path: str
    offset: int
    size_bytes: int
    data: bytes
    truncated: bool
    hash: str | None


def read_bytes(
    root: Path, path: Path, *, offset: int = 0, max_bytes: int = DEFAULT_BYTES_WINDOW
) -> BytesRead:
    """A window of raw bytes; the hash only when the window is the whole file."""
    shown, _ = _regular_file(root, path)
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(offset)
            data = handle.read(max_bytes)
            whole = None
            if offset == 0 and len(data) == size and not handle.read(1):
                whole = content_hash(data)
    except OSError as err:
        raise os_error(err, shown) from err
    return BytesRead(
        path=shown,
        offset=offset,
        size_bytes=size,
        data=data,
        truncated=offset + len(data) < size,
        hash=whole,
    )


@dataclass(frozen=True)
class StatResult:
    path: str
    type: Literal["file", "directory", "symlink", "other"]
    size_bytes: int
    modified_ms: float


def stat(root: Path, path: Path) -> StatResult:
    shown = relative(root, path)
    try:
        info = path.stat()
    except OSError as err:
        raise os_error(err, shown) from err
    if stat_module.S_ISREG(info.st_mode):
        kind: Literal["file", "directory", "symlink", "other"] = "file"
    elif stat_module.S_ISDIR(info.st_mode):
        kind = "directory"
    else:
        kind = "other"
    return StatResult(
        path=shown, type=kind, size_bytes=info.st_size, modified_ms=info.st_mtime_ns / 1e6
    )


@dataclass(frozen=True)
class ListEntry:
    name: str
    kind: Literal["file", "directory", "symlink", "other"]


def list_directory(root: Path, path: Path) -> tuple[str, list[ListEntry], bool]:
    """The entries of a directory (symlinks reported as such, never followed)."""
    shown = relative(root, path)
    if not path.exists():
        raise not_found(shown)
    if not path.is_dir():
        raise parse_error(f"path is not a directory: {shown}", "name a directory")
    entries: list[ListEntry] = []
    truncated = False
    try:
        with os.scandir(path) as listing:
            for entry in listing:
                if len(entries) >= MAX_LIST_ENTRIES:
                    truncated = True
                    break
                if entry.is_symlink():
                    kind: Literal["file", "directory", "symlink", "other"] = "symlink"
                elif entry.is_dir(follow_symlinks=False):
                    kind = "directory"
                elif entry.is_file(follow_symlinks=False):
                    kind = "file"
                else:
                    kind = "other"
                entries.append(ListEntry(entry.name, kind))
    except OSError as err:
        raise os_error(err, shown) from err
    entries.sort(key=lambda e: (e.kind != "directory", e.name))
    return shown, entries, truncated


# -- writes -----------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteResult:
    path: str
    created: bool
    size_bytes: int
    hash: str
    profile: TextProfile
    replacements: int = 0


def check_hash(value: object) -> str:
    """An `expectedHash`: `sha256:` and 64 lowercase hex digits, else `parse_error`."""
    if not isinstance(value, str) or not HASH_PATTERN.fullmatch(value):
        raise parse_error(
            "`expectedHash` must match sha256:<64 lowercase hex chars>",
            "send the hash GET /file returned for the file",
        )
    return value


def _mismatch(expected: str, found: str) -> FileError:
    return FileError("hash_mismatch", 409, f"expected {expected}, found {found}", STALE_HINT)


def _store(root: Path, path: Path, data: bytes, expected: str | None) -> None:
    """Write atomically (temporary file, fsync, hash re-checked, rename); no directory is
    created: a missing parent is `path_not_found`."""
    parent = path.parent
    if not parent.is_dir():
        raise not_found(relative(root, parent))
    try:
        atomic_write(path, data, expected=expected)
    except HashMismatch as err:
        if expected == "absent":
            raise FileError(
                "file_already_exists",
                409,
                f"file already exists: {relative(root, path)}",
                "use mode replace with the file's hash to overwrite it",
            ) from err
        raise _mismatch(err.expected, err.found) from err
    except OSError as err:
        raise os_error(err, relative(root, path)) from err


def write_text(
    root: Path,
    path: Path,
    content: str,
    *,
    mode: Literal["create", "replace"],
    expected_hash: str | None = None,
    encoding: Encoding | None = None,
    bom: bool | None = None,
    line_ending: LineEnding | None = None,
) -> WriteResult:
    """Create (never overwriting) or replace (compare-and-swap on `expected_hash`) a text
    file. A replace keeps the file's encoding, BOM and line endings unless overridden."""
    shown = relative(root, path)
    if path.is_dir():
        raise parse_error(f"path is not a regular file: {shown}", "name a file")
    with path_lock(path):
        if mode == "create":
            if path.exists():
                raise FileError(
                    "file_already_exists",
                    409,
                    f"file already exists: {shown}",
                    "use mode replace with the file's hash to overwrite it",
                )
            base = TextProfile(line_ending=line_ending_of(content))
            expected = "absent"
        else:
            expected_hash = check_hash(expected_hash)
            if not path.exists():
                raise not_found(shown)
            current = read_raw(root, path)
            if content_hash(current) != expected_hash:
                raise _mismatch(expected_hash, content_hash(current))
            try:
                _, base = decode(current)
            except NotText:
                base = TextProfile()
            expected = expected_hash
        chosen = encoding or base.encoding
        profile = TextProfile(
            encoding=chosen,
            bom=(base.bom or chosen != "utf-8") if bom is None else bom,
            line_ending=line_ending or base.line_ending,
        )
        if profile.encoding != "utf-8" and not profile.bom:
            # Without its BOM a UTF-16 file reads as binary: it is always written with it.
            raise parse_error(
                f"`encoding` {profile.encoding} is written with its BOM", "leave `bom` unset"
            )
        text = normalize(content) if profile.line_ending == "crlf" else content
        data = encode(text, profile)
        if len(data) > MAX_TEXT_BYTES:
            raise _too_large(shown, len(data))
        _store(root, path, data, expected)
    return WriteResult(
        path=shown,
        created=mode == "create",
        size_bytes=len(data),
        hash=content_hash(data),
        profile=profile,
    )


def edit_text(
    root: Path, path: Path, old_text: str, new_text: str, *, expected_hash: str | None
) -> WriteResult:
    """Replace the one occurrence of `old_text`; the file's profile is kept. With
    `expected_hash`, only if the file still hashes so (checked again before the rename)."""
    shown = relative(root, path)
    if not old_text:
        raise parse_error(
            f"oldText must be a non-empty string for edit on {shown}", "name the text to replace"
        )
    with path_lock(path):
        if not path.exists():
            raise not_found(shown)
        current = read_raw(root, path)
        digest = content_hash(current)
        if expected_hash is not None and digest != expected_hash:
            raise _mismatch(expected_hash, digest)
        text, profile = decode_file(root, path, current)
        old, new = old_text, new_text
        if profile.line_ending == "crlf":  # the text is in `\n` form: so are the spans
            old, new = normalize(old_text), normalize(new_text)
        count = text.count(old)
        if count == 0:
            preview = old_text if len(old_text) <= 80 else old_text[:77] + "..."
            raise FileError(
                "text_not_found",
                422,
                f"oldText not found in {shown}",
                f"searched for: {preview!r}",
            )
        if count > 1:
            raise FileError(
                "ambiguous_text_match",
                422,
                f"oldText appears {count} times in {shown}",
                "pass a larger oldText span that occurs exactly once",
            )
        data = encode(text.replace(old, new, 1), profile)
        if len(data) > MAX_TEXT_BYTES:
            raise _too_large(shown, len(data))
        _store(root, path, data, digest)
    return WriteResult(
        path=shown,
        created=False,
        size_bytes=len(data),
        hash=content_hash(data),
        profile=profile,
        replacements=1,
    )


__all__ = [
    "DEFAULT_BYTES_WINDOW",
    "MAX_BYTES_WINDOW",
    "MAX_TEXT_BYTES",
    "FileError",
    "TextProfile",
    "check_hash",
    "confine",
    "edit_text",
    "list_directory",
    "read_bytes",
    "read_text",
    "relative",
    "sniff_encoding",
    "stat",
    "workspace_root",
    "write_text",
]
