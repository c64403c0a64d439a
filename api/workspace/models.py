"""What the workspace file routes answer (spec session-daemon-http-protocol, "Routes des
fichiers de l'espace de travail"), and the bodies of the two mutation routes.

Shapes follow the spec, and the reference daemon's recorded answers where the spec leaves
them open (`/list`, `/glob`, `/stat`, `nextCursor`/`hasMore` of `/file`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from api.input_bounds import MAX_PATH_CHARS
from api.openapi import omittable
from runtime.workspace.ignore import MatchedIgnore

EncodingName = Literal["utf-8", "utf-16le", "utf-16be"]
LineEndingName = Literal["lf", "crlf"]


class FileRead(BaseModel):
    """GET /file: a text file, whole or a slice; `hash` is always the whole file's."""

    kind: Literal["file"] = "file"
    path: str
    content: str
    encoding: EncodingName
    bom: bool
    lineEnding: LineEndingName
    sizeBytes: int
    returnedBytes: int
    truncated: bool
    hash: str
    matchedIgnore: MatchedIgnore = None
    originalLineCount: int
    nextCursor: None = None
    hasMore: bool


class FileBytes(BaseModel):
    """GET /file/bytes: a window of raw bytes; `hash` only when it covers the whole file."""

    kind: Literal["file_bytes"] = "file_bytes"
    path: str
    offset: int
    sizeBytes: int
    returnedBytes: int
    truncated: bool
    contentBase64: str
    hash: str | SkipJsonSchema[None] = omittable("Present when the window is the whole file.")


class FileStat(BaseModel):
    """GET /stat."""

    kind: Literal["stat"] = "stat"
    path: str
    type: Literal["file", "directory", "symlink", "other"]
    sizeBytes: int
    modifiedMs: float


class ListEntryModel(BaseModel):
    name: str
    kind: Literal["file", "directory", "symlink", "other"]
    ignored: bool = False


class DirectoryList(BaseModel):
    """GET /list: a directory's entries (symlinks are reported, never followed)."""

    kind: Literal["list"] = "list"
    path: str
    entries: list[ListEntryModel]
    truncated: bool
    matchedIgnore: MatchedIgnore = None


class GlobResult(BaseModel):
    """GET /glob: workspace-relative paths of the files matching `pattern`."""

    kind: Literal["glob"] = "glob"
    pattern: str
    cwd: str
    matches: list[str]
    count: int
    truncated: bool
    durationMs: int


class FileWritten(BaseModel):
    """POST /file/write: 201 when the file was created, 200 when replaced."""

    kind: Literal["file_write"] = "file_write"
    path: str
    mode: Literal["create", "replace"]
    created: bool
    sizeBytes: int
    hash: str
    encoding: EncodingName
    bom: bool
    lineEnding: LineEndingName
    matchedIgnore: MatchedIgnore = None


class FileEdited(BaseModel):
    """POST /file/edit."""

    kind: Literal["file_edit"] = "file_edit"
    path: str
    replacements: int
    sizeBytes: int
    hash: str
    encoding: EncodingName
    bom: bool
    lineEnding: LineEndingName
    matchedIgnore: MatchedIgnore = None


class _FileBody(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    path: str = Field(min_length=1, max_length=MAX_PATH_CHARS)


class WriteFileBody(_FileBody):
    content: str
    mode: Literal["create", "replace"]
    expectedHash: str | None = Field(
        default=None,
        pattern="^sha256:[0-9a-f]{64}$",
        description="Required by `replace`: the raw bytes' hash (GET /file `hash`).",
    )
    encoding: EncodingName | None = None
    bom: bool | None = None
    lineEnding: LineEndingName | None = None


class EditFileBody(_FileBody):
    oldText: str = Field(min_length=1, description="Must occur exactly once.")
    newText: str
    expectedHash: str = Field(pattern="^sha256:[0-9a-f]{64}$")
