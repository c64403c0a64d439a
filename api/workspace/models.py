"""What the workspace file routes answer (spec session-daemon-http-protocol, "Routes des
fichiers de l'espace de travail"), and the bodies of the two mutation routes: wire models
(runtime/wire.py), snake_case here and the spec's camelCase on the wire.

Shapes follow the spec, and the reference daemon's recorded answers where the spec leaves
them open (`/list`, `/glob`, `/stat`, `nextCursor`/`hasMore` of `/file`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import ErrorDetails

from api.input_bounds import MAX_PATH_CHARS
from api.requests import DaemonBody
from runtime.failures import InvalidRequest, WireError
from runtime.wire import WireBody, WireModel, omittable
from runtime.workspace.ignore import MatchedIgnore

EncodingName = Literal["utf-8", "utf-16le", "utf-16be"]
LineEndingName = Literal["lf", "crlf"]


class FileRead(WireModel):
    """GET /file: a text file, whole or a slice; `hash` is always the whole file's."""

    kind: Literal["file"] = "file"
    path: str
    content: str
    encoding: EncodingName
    bom: bool
    line_ending: LineEndingName
    size_bytes: int
    returned_bytes: int
    truncated: bool
    hash: str
    matched_ignore: MatchedIgnore = None
    original_line_count: int
    next_cursor: None = None
    has_more: bool


class FileBytes(WireModel):
    """GET /file/bytes: a window of raw bytes; `hash` only when it covers the whole file."""

    kind: Literal["file_bytes"] = "file_bytes"
    path: str
    offset: int
    size_bytes: int
    returned_bytes: int
    truncated: bool
    content_base64: str
    hash: str | SkipJsonSchema[None] = omittable("Present when the window is the whole file.")


class FileStat(WireModel):
    """GET /stat."""

    kind: Literal["stat"] = "stat"
    path: str
    type: Literal["file", "directory", "symlink", "other"]
    size_bytes: int
    modified_ms: float


class ListEntryModel(WireModel):
    name: str
    kind: Literal["file", "directory", "symlink", "other"]
    ignored: bool = False


class DirectoryList(WireModel):
    """GET /list: a directory's entries (symlinks are reported, never followed)."""

    kind: Literal["list"] = "list"
    path: str
    entries: list[ListEntryModel]
    truncated: bool
    matched_ignore: MatchedIgnore = None


class GlobResult(WireModel):
    """GET /glob: workspace-relative paths of the files matching `pattern`."""

    kind: Literal["glob"] = "glob"
    pattern: str
    cwd: str
    matches: list[str]
    count: int
    truncated: bool
    duration_ms: int


class FileWritten(WireModel):
    """POST /file/write: 201 when the file was created, 200 when replaced."""

    kind: Literal["file_write"] = "file_write"
    path: str
    mode: Literal["create", "replace"]
    created: bool
    size_bytes: int
    hash: str
    encoding: EncodingName
    bom: bool
    line_ending: LineEndingName
    matched_ignore: MatchedIgnore = None


class FileEdited(WireModel):
    """POST /file/edit."""

    kind: Literal["file_edit"] = "file_edit"
    path: str
    replacements: int
    size_bytes: int
    hash: str
    encoding: EncodingName
    bom: bool
    line_ending: LineEndingName
    matched_ignore: MatchedIgnore = None


class _FileBody(WireBody):
    # Unknown fields are allowed (the spec's file bodies), over WireBody's `forbid`.
    model_config = ConfigDict(extra="allow", strict=True)

    path: str = Field(min_length=1, max_length=MAX_PATH_CHARS)


class WriteFileBody(_FileBody):
    content: str
    mode: Literal["create", "replace"]
    expected_hash: str | None = Field(
        default=None,
        pattern="^sha256:[0-9a-f]{64}$",
        description="Required by `replace`: the raw bytes' hash (GET /file `hash`).",
    )
    encoding: EncodingName | None = None
    bom: bool | None = None
    line_ending: LineEndingName | None = None


class EditFileBody(_FileBody):
    old_text: str = Field(min_length=1, description="Must occur exactly once.")
    new_text: str
    expected_hash: str = Field(pattern="^sha256:[0-9a-f]{64}$")


# -- the bodies of the workspace mutations (read with read_body, parsed by their refusals) --


class ToolEnableBody(DaemonBody):
    enabled: bool

    @classmethod
    def refusal(cls, error: ErrorDetails) -> WireError:
        return InvalidRequest(
            message="`enabled` is required and must be a boolean", code="invalid_enabled_flag"
        )


class InitBody(DaemonBody):
    force: bool = False

    @classmethod
    def refusal(cls, error: ErrorDetails) -> WireError:
        return InvalidRequest(message="`force` must be a boolean", code="invalid_force_flag")
