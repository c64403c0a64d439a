"""Workspace file operations shared by the daemon's file routes and the session agent's
file tools: text reads with their profile, byte windows, stat, listing, create/replace and
exact-text edits written atomically with a compare-and-swap.

Every path comes from the workspace fence (`runtime.workspace.fence.Fence.resolve`: inside
the workspace, outside the data dir, every symlink resolved) and every access goes
through it (opened without following a symlink, regular files only, reads bounded).
Every failure is a `FileError` carrying the spec's `errorKind`, an HTTP status and a
hint; paths in results are relative to the workspace (POSIX form, `.` for the root).
"""

from __future__ import annotations

import os
import re
import stat as stat_module
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from runtime.workspace.fence import Entry, EntryKind, Fence, entry_kind, read_fd
from runtime.workspace.file_errors import FileError, not_found, os_error, parse_error, too_large
from runtime.workspace.files import ABSENT, HashMismatch, content_hash, path_lock
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


def _too_large(shown: str, size: int) -> FileError:
    return too_large(shown, size, MAX_TEXT_BYTES)


def _binary(shown: str) -> FileError:
    return FileError(
        "binary_file", 422, f"binary file: {shown}", "use readBytes for binary content"
    )


def read_raw(fence: Fence, path: Path) -> bytes:
    """The bytes of a regular text-sized file (`file_too_large` past the text limit)."""
    return fence.read(path, limit=MAX_TEXT_BYTES)


def decode_file(fence: Fence, path: Path, data: bytes) -> tuple[str, TextProfile]:
    try:
        return decode(data)
    except NotText as err:
        raise _binary(fence.relative(path)) from err


def read_text(
    fence: Fence,
    path: Path,
    *,
    max_bytes: int | None = None,
    line: int | None = None,
    limit: int | None = None,
) -> TextRead:
    """A text file, whole or a slice: `line` (1-based) and `limit` lines, or the first
    `max_bytes` bytes (after the BOM). The hash is always the whole file's."""
    data = read_raw(fence, path)
    shown = fence.relative(path)
    text, profile = decode_file(fence, path, data)
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
    fence: Fence, path: Path, *, offset: int = 0, max_bytes: int = DEFAULT_BYTES_WINDOW
) -> BytesRead:
    """A window of raw bytes; the hash only when the window is the whole file."""
    shown = fence.relative(path)
    with fence.open(path) as fd:
        try:
            size = os.fstat(fd).st_size
            os.lseek(fd, offset, os.SEEK_SET)
            data = read_fd(fd, max_bytes)
            whole = None
            if offset == 0 and len(data) == size and not os.read(fd, 1):
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
    type: EntryKind
    size_bytes: int
    modified_ms: float


def stat(fence: Fence, path: Path) -> StatResult:
    """The path's own stat (it is resolved: a symlink only if one was swapped in since)."""
    info = fence.lstat(path)
    return StatResult(
        path=fence.relative(path),
        type=entry_kind(info.st_mode),
        size_bytes=info.st_size,
        modified_ms=info.st_mtime_ns / 1e6,
    )


ListEntry = Entry


def list_directory(fence: Fence, path: Path) -> tuple[str, list[Entry], bool]:
    """The entries of a directory (symlinks reported as such, never followed)."""
    shown = fence.relative(path)
    if not stat_module.S_ISDIR(fence.lstat(path).st_mode):
        raise parse_error(f"path is not a directory: {shown}", "name a directory")
    entries = fence.entries(path, limit=MAX_LIST_ENTRIES)
    truncated = len(entries) > MAX_LIST_ENTRIES
    entries = sorted(entries[:MAX_LIST_ENTRIES], key=lambda e: (e.kind != "directory", e.name))
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


def _store(fence: Fence, path: Path, data: bytes, expected: str | None) -> None:
    """Write atomically (temporary file, fsync, hash re-checked, rename) in the parent's
    descriptor; no directory is created: a missing parent is `path_not_found`."""
    try:
        fence.write(path, data, expected=expected)
    except HashMismatch as err:
        if expected == ABSENT:
            raise _exists(fence.relative(path)) from err
        raise _mismatch(err.expected, err.found) from err


def _exists(shown: str) -> FileError:
    return FileError(
        "file_already_exists",
        409,
        f"file already exists: {shown}",
        "use mode replace with the file's hash to overwrite it",
    )


def _existing(fence: Fence, path: Path) -> os.stat_result | None:
    """The stat of the target of a write (None when absent); a directory is refused."""
    try:
        info = fence.lstat(path)
    except FileError as err:
        if err.kind == "path_not_found":
            return None
        raise
    if stat_module.S_ISDIR(info.st_mode):
        raise parse_error(f"path is not a regular file: {fence.relative(path)}", "name a file")
    return info


def write_text(
    fence: Fence,
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
    shown = fence.relative(path)
    with path_lock(path):
        existing = _existing(fence, path)
        if mode == "create":
            if existing is not None:
                raise _exists(shown)
            base = TextProfile(line_ending=line_ending_of(content))
            expected = ABSENT
        else:
            expected_hash = check_hash(expected_hash)
            if existing is None:
                raise not_found(shown)
            current = read_raw(fence, path)
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
        _store(fence, path, data, expected)
    return WriteResult(
        path=shown,
        created=mode == "create",
        size_bytes=len(data),
        hash=content_hash(data),
        profile=profile,
    )


def edit_text(
    fence: Fence, path: Path, old_text: str, new_text: str, *, expected_hash: str | None
) -> WriteResult:
    """Replace the one occurrence of `old_text`; the file's profile is kept. With
    `expected_hash`, only if the file still hashes so (checked again before the rename)."""
    shown = fence.relative(path)
    if not old_text:
        raise parse_error(
            f"oldText must be a non-empty string for edit on {shown}", "name the text to replace"
        )
    with path_lock(path):
        if _existing(fence, path) is None:
            raise not_found(shown)
        current = read_raw(fence, path)
        digest = content_hash(current)
        if expected_hash is not None and digest != expected_hash:
            raise _mismatch(expected_hash, digest)
        text, profile = decode_file(fence, path, current)
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
        _store(fence, path, data, digest)
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
    "Entry",
    "Fence",
    "FileError",
    "ListEntry",
    "TextProfile",
    "check_hash",
    "edit_text",
    "list_directory",
    "not_found",
    "os_error",
    "parse_error",
    "read_bytes",
    "read_text",
    "sniff_encoding",
    "stat",
    "write_text",
]
