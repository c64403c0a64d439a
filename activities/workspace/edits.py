"""The text of a file to edit, and what an `edit` makes of it."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any, Final

from activities.workspace.arguments import optional_bool, required_str
from activities.workspace.paths import relative, tool_error
from runtime.tools.results import ToolError
from runtime.workspace.fence import Fence
from runtime.workspace.file_errors import FileError
from runtime.workspace.text import NotText, decode, normalize

MAX_FILE_BYTES: Final = 8 * 1024 * 1024  # read_file / edit refuse larger files


def read_existing(fence: Fence, path: Path) -> str | None:
    """The text of an existing file (None when absent), decoded as the file routes do (BOM
    dropped, CRLF as `\n`); refuses directories, huge files and non-regular files."""
    data = read_existing_bytes(fence, path)
    return None if data is None else decode_text(data)


def decode_text(data: bytes) -> str:
    """The text of a file's bytes as the tools show it (binary: decoded lossily)."""
    try:
        return decode(data)[0]
    except NotText:
        return data.decode("utf-8", errors="replace")


def read_existing_bytes(fence: Fence, path: Path) -> bytes | None:
    """The bytes of the file a write or edit targets, through the fence (None when absent):
    a FIFO, socket or device is refused before it is opened, never read."""
    shown = relative(fence, path)
    try:
        info = fence.lstat(path)
    except FileError as err:
        if err.kind == "path_not_found":
            return None
        raise tool_error(err, shown) from err
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"Path is a directory: {shown}")
    if info.st_size > MAX_FILE_BYTES:
        raise ToolError(f"File is too large ({info.st_size} bytes): {shown}")
    try:
        return fence.read(path, limit=MAX_FILE_BYTES)
    except FileError as err:
        raise tool_error(err, shown) from err


def edited(fence: Fence, path: Path, old_text: str | None, args: dict[str, Any]) -> tuple[str, int]:
    """The file's content after an `edit`, and the number of replacements."""
    old_string = required_str(args, "old_string", allow_empty=True)
    new_string = required_str(args, "new_string", allow_empty=True)
    replace_all = optional_bool(args, "replace_all")
    shown = relative(fence, path)
    if old_text is None:
        if old_string == "":
            return new_string, 1
        raise ToolError(f"File not found: {shown}")
    if old_string == "":
        raise ToolError(f"old_string is empty but {shown} already exists.")
    if old_string == new_string:
        raise ToolError("old_string and new_string are identical: no change to apply.")
    if old_string not in old_text and normalize(old_string) in old_text:
        # A CRLF file is edited in `\n` form (runtime.workspace.text).
        old_string, new_string = normalize(old_string), normalize(new_string)
    count = old_text.count(old_string)
    if count == 0:
        raise ToolError(f"old_string was not found in {shown}.")
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string matches {count} times in {shown}: add context to make it unique, "
            "or set replace_all."
        )
    replaced = count if replace_all else 1
    size = len(old_text) + replaced * (len(new_string) - len(old_string))
    if size > MAX_FILE_BYTES:
        # Refused before building it: replace_all of a short string in a large file can ask
        # for gigabytes, copied with the GIL held.
        raise ToolError(
            f"The edit would make {shown} too large ({size} characters, over {MAX_FILE_BYTES})."
        )
    if replace_all:
        return old_text.replace(old_string, new_string), count
    return old_text.replace(old_string, new_string, 1), 1
