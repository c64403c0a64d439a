"""The daemon's workspace file routes (spec session-daemon-http-protocol): GET /file,
/file/bytes, /stat, /list, /glob, and the strict mutation routes POST /file/write and
/file/edit. router → runtime.workspace.fs through the workspace fence
(runtime.workspace.fence, the one the session agent's tools use too), synchronous file work
run on a thread; no Temporal involved. The `.gitignore` is matched without a regex that
can backtrack (runtime.workspace.ignore); GET /glob runs in a search child, at most
`search_children` at once per process (429 `rate_limit_exceeded` over it).

Every answer, success or error, carries `Cache-Control: no-store` and
`X-Content-Type-Options: nosniff`; errors are `{errorKind, error, hint, status}`.
"""

from __future__ import annotations

import asyncio
import base64
import stat
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, cast

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute
from starlette.responses import JSONResponse

from api.deps import SettingsDep
from api.errors import ApiError, json_error
from api.input_bounds import MAX_PATH_CHARS
from api.openapi import errors, json_body
from api.requests import read_body
from api.security import require_configured_token
from api.workspace.models import (
    DirectoryList,
    EditFileBody,
    FileBytes,
    FileEdited,
    FileRead,
    FileStat,
    FileWritten,
    GlobResult,
    ListEntryModel,
    WriteFileBody,
)
from runtime.settings import Settings
from runtime.workspace import fs
from runtime.workspace.fence import Fence
from runtime.workspace.ignore import Ignore, MatchedIgnore, matched_ignore
from runtime.workspace.search import (
    SEARCH_TIMEOUT_SECONDS,
    SearchBusy,
    SearchFailed,
    run_search,
)
from runtime.workspace.text import ENCODINGS, LINE_ENDINGS, Encoding, LineEnding

FILE_HEADERS: Final = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
MAX_PATTERN_CHARS: Final = 1024


class FileRoute(APIRoute):
    """Answers `FileError`s (and any `ApiError` of the route's guards) in place, and adds
    the no-store / nosniff headers to every answer of the route."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def file_handler(request: Request) -> Response:
            try:
                response = await handler(request)
            except fs.FileError as err:
                response = JSONResponse(err.body(), status_code=err.status)
            except OSError as err:
                # A file-system refusal no narrower check caught (a name too long, EACCES
                # on a parent, ...): the file error of its kind, never a 500.
                error = fs.os_error(err, "the requested path")
                response = JSONResponse(error.body(), status_code=error.status)
            except ApiError as err:
                # Malformed JSON keeps the spec's common body (`{"error": "Invalid JSON in
                # request body"}`, every route); the guards' 401 keeps theirs.
                response = json_error(err.status, err.body, err.headers)
            response.headers.update(FILE_HEADERS)
            return response

        return file_handler


router = APIRouter(route_class=FileRoute)

_Done = TypeVar("_Done", fs.TextRead, fs.WriteResult)


# -- parameters -------------------------------------------------------------------------


def _param(name: str, schema: dict[str, Any], description: str, required: bool = False) -> Any:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "schema": schema,
        "description": description,
    }


PATH_PARAM = _param(
    "path",
    {"type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS},
    "Relative to the workspace, or absolute inside it.",
    required=True,
)


def _doc(*parameters: dict[str, Any]) -> dict[str, Any]:
    return {"parameters": list(parameters)}


def _path(request: Request) -> str:
    raw = request.query_params.get("path")
    if not raw:
        raise fs.parse_error("path query parameter is required", "pass ?path=<file>")
    if len(raw) > MAX_PATH_CHARS:
        raise fs.parse_error(f"path is longer than {MAX_PATH_CHARS} characters")
    return raw


def _int(request: Request, name: str, *, minimum: int, maximum: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    bound = f" between {minimum} and {maximum}" if maximum is not None else f" >= {minimum}"
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise fs.parse_error(f"`{name}` must be an integer{bound}")
    value = int(raw)
    if value < minimum or (maximum is not None and value > maximum):
        raise fs.parse_error(f"`{name}` must be an integer{bound}")
    return value


def _with_ignore(fence: Fence, done: _Done) -> tuple[_Done, MatchedIgnore]:
    """What a route did, and how the workspace's `.gitignore` matches its path (read in
    the same worker thread: the file system is never touched on the event loop)."""
    return done, matched_ignore(fence, done.path)


def workspace_fence(settings: Settings) -> Fence:
    """The fence of the daemon's workspace (as configured, maybe through a symlink),
    without its data dir when it lies inside (`--workspace .` with the default `.data`:
    the store, logs and device-flow credentials are never served or written)."""
    configured = settings.workspace.expanduser() if settings.workspace else None
    return Fence.of(configured or settings.resolved_workspace, settings.resolved_data_dir)


def _target(settings: Settings, raw: str) -> tuple[Fence, Path]:
    fence = workspace_fence(settings)
    return fence, fence.resolve(raw)


def search_busy(err: SearchBusy) -> ApiError:
    """The rate limiter's 429 (api/security/ratelimit.py), for the search children."""
    return ApiError.of(err.refusal())


# -- reads ------------------------------------------------------------------------------


@router.get(
    "/file",
    response_model=FileRead,
    responses=errors(400, 403, 404, 413, 422),
    openapi_extra=_doc(
        PATH_PARAM,
        _param("maxBytes", {"type": "integer", "minimum": 1}, "At most this many bytes."),
        _param("line", {"type": "integer", "minimum": 1}, "First line (1-based)."),
        _param("limit", {"type": "integer", "minimum": 1}, "At most this many lines."),
    ),
)
async def read_file(request: Request, settings: SettingsDep) -> FileRead:
    """Read a text file (whole, or a slice by lines or bytes)."""
    raw = _path(request)
    if "cursor" in request.query_params:
        raise fs.parse_error(
            "`cursor` is not supported by this daemon", "page with line and limit instead"
        )
    max_bytes = _int(request, "maxBytes", minimum=1)
    line = _int(request, "line", minimum=1)
    limit = _int(request, "limit", minimum=1)

    def work() -> tuple[fs.TextRead, MatchedIgnore]:
        fence, path = _target(settings, raw)
        read = fs.read_text(fence, path, max_bytes=max_bytes, line=line, limit=limit)
        return _with_ignore(fence, read)

    read, ignored = await asyncio.to_thread(work)
    return FileRead(
        matched_ignore=ignored,
        path=read.path,
        content=read.content,
        encoding=read.profile.encoding,
        bom=read.profile.bom,
        line_ending=read.profile.line_ending,
        size_bytes=read.size_bytes,
        returned_bytes=read.returned_bytes,
        truncated=read.truncated,
        hash=read.hash,
        original_line_count=read.original_line_count,
        has_more=read.has_more,
    )


@router.get(
    "/file/bytes",
    response_model=FileBytes,
    response_model_exclude_none=True,
    responses=errors(400, 403, 404),
    openapi_extra=_doc(
        PATH_PARAM,
        _param("offset", {"type": "integer", "minimum": 0}, "First byte (default 0)."),
        _param(
            "maxBytes",
            {"type": "integer", "minimum": 1, "maximum": fs.MAX_BYTES_WINDOW},
            f"Window size (default {fs.DEFAULT_BYTES_WINDOW}, max {fs.MAX_BYTES_WINDOW}).",
        ),
    ),
)
async def read_file_bytes(request: Request, settings: SettingsDep) -> FileBytes:
    """Read a window of a file's raw bytes, base64-encoded."""
    raw = _path(request)
    offset = _int(request, "offset", minimum=0) or 0
    max_bytes = _int(request, "maxBytes", minimum=1, maximum=fs.MAX_BYTES_WINDOW)

    def work() -> fs.BytesRead:
        fence, path = _target(settings, raw)
        return fs.read_bytes(
            fence, path, offset=offset, max_bytes=max_bytes or fs.DEFAULT_BYTES_WINDOW
        )

    read = await asyncio.to_thread(work)
    return FileBytes(
        path=read.path,
        offset=read.offset,
        size_bytes=read.size_bytes,
        returned_bytes=len(read.data),
        truncated=read.truncated,
        content_base64=base64.b64encode(read.data).decode("ascii"),
        hash=read.hash,
    )


@router.get(
    "/stat",
    response_model=FileStat,
    responses=errors(400, 403, 404),
    openapi_extra=_doc(PATH_PARAM),
)
async def stat_path(request: Request, settings: SettingsDep) -> FileStat:
    """The type, size and modification time of a path."""
    raw = _path(request)

    def work() -> fs.StatResult:
        fence, path = _target(settings, raw)
        return fs.stat(fence, path)

    info = await asyncio.to_thread(work)
    return FileStat(
        path=info.path, type=info.type, size_bytes=info.size_bytes, modified_ms=info.modified_ms
    )


@router.get(
    "/list",
    response_model=DirectoryList,
    responses=errors(400, 403, 404),
    openapi_extra=_doc(
        _param(
            "path",
            {"type": "string", "maxLength": MAX_PATH_CHARS},
            "A directory (default: the workspace).",
        )
    ),
)
async def list_path(request: Request, settings: SettingsDep) -> DirectoryList:
    """The entries of a directory."""
    raw = request.query_params.get("path") or "."
    if len(raw) > MAX_PATH_CHARS:
        raise fs.parse_error(f"path is longer than {MAX_PATH_CHARS} characters")

    def listed() -> DirectoryList:
        fence, path = _target(settings, raw)
        shown, entries, truncated = fs.list_directory(fence, path)
        base = "" if shown in ("", ".") else shown + "/"
        ignore = Ignore.of(fence)  # one budget for the whole listing
        return DirectoryList(
            path=shown,
            entries=[
                ListEntryModel(
                    name=e.name,
                    kind=e.kind,
                    ignored=ignore.matched(base + e.name, is_dir=e.kind == "directory") is not None,
                )
                for e in entries
            ],
            truncated=truncated,
            matched_ignore=ignore.matched(shown, is_dir=True),
        )

    return await asyncio.to_thread(listed)


@router.get(
    "/glob",
    response_model=GlobResult,
    responses=errors(400, 403, 404, 429),
    openapi_extra=_doc(
        _param(
            "pattern",
            {"type": "string", "minLength": 1, "maxLength": MAX_PATTERN_CHARS},
            "A glob (`**` for any depth), relative to `cwd`.",
            required=True,
        ),
        _param(
            "cwd",
            {"type": "string", "maxLength": MAX_PATH_CHARS},
            "The directory to match from (default: the workspace).",
        ),
    ),
)
async def glob_paths(request: Request, settings: SettingsDep) -> GlobResult:
    """Files matching a glob, as workspace-relative paths (run in a child process, bounded
    in time like the agent's `glob` tool; a `..` segment is refused before any walk, and
    at most `search_children` globs run at once: 429 `rate_limit_exceeded` past it)."""
    pattern = request.query_params.get("pattern") or ""
    if not pattern or len(pattern) > MAX_PATTERN_CHARS or "\x00" in pattern:
        raise fs.parse_error("pattern query parameter is required", "pass ?pattern=**/*.py")
    Fence.pattern(pattern)
    cwd = request.query_params.get("cwd") or ""
    if len(cwd) > MAX_PATH_CHARS:
        raise fs.parse_error(f"cwd is longer than {MAX_PATH_CHARS} characters")

    def where() -> tuple[Fence, Path]:
        fence, base = _target(settings, cwd or ".")
        if not stat.S_ISDIR(fence.lstat(base).st_mode):
            raise fs.not_found(fence.relative(base))
        return fence, base

    fence, base = await asyncio.to_thread(where)
    started = time.monotonic()
    try:
        answer = await run_search(
            {
                "op": "glob",
                "root": str(fence.root),
                "base": str(base),
                "pattern": pattern,
                "data_dir": None if fence.data_dir is None else str(fence.data_dir),
            },
            SEARCH_TIMEOUT_SECONDS,
            limit=settings.search_children,
        )
    except SearchBusy as err:
        raise search_busy(err) from err
    except SearchFailed as err:
        raise fs.parse_error(str(err), "check the pattern") from err
    if answer is None:
        raise fs.parse_error(
            f"glob timed out after {SEARCH_TIMEOUT_SECONDS:g} s", "narrow the pattern"
        )
    if isinstance(answer.get("error"), str):
        raise fs.parse_error(answer["error"], "check the pattern")
    matches = [fence.relative(Path(p)) for p in answer["paths"]]
    return GlobResult(
        pattern=pattern,
        cwd=cwd,
        matches=matches,
        count=len(matches),
        truncated=bool(answer["more"]),
        duration_ms=round((time.monotonic() - started) * 1000),
    )


# -- writes -----------------------------------------------------------------------------


def _body_str(body: dict[str, Any], name: str, *, allow_empty: bool = True) -> str:
    value = body.get(name)
    if not isinstance(value, str) or (not allow_empty and not value):
        raise fs.parse_error(f"`{name}` must be a{'' if allow_empty else ' non-empty'} string")
    return value


def _body_path(body: dict[str, Any]) -> str:
    value = _body_str(body, "path", allow_empty=False)
    if len(value) > MAX_PATH_CHARS:
        raise fs.parse_error(f"`path` is longer than {MAX_PATH_CHARS} characters")
    return value


def _choice(body: dict[str, Any], name: str, allowed: tuple[str, ...]) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if value not in allowed:
        raise fs.parse_error(f"`{name}` must be one of: {', '.join(allowed)}")
    return cast(str, value)


@router.post(
    "/file/write",
    response_model=FileWritten,
    dependencies=[Depends(require_configured_token)],
    responses={
        201: {"model": FileWritten, "description": "The file was created."},
        **errors(400, 403, 404, 409, 413),
    },
    openapi_extra=json_body(WriteFileBody),
)
async def write_file(request: Request, response: Response, settings: SettingsDep) -> FileWritten:
    """Create (201, never overwriting) or replace (200, compare-and-swap) a text file."""
    body = await read_body(request)
    raw = _body_path(body)
    content = _body_str(body, "content")
    mode = body.get("mode")
    if mode not in ("create", "replace"):
        raise fs.parse_error('`mode` must be "create" or "replace"')
    expected = fs.check_hash(body.get("expectedHash")) if mode == "replace" else None
    encoding = cast(Encoding | None, _choice(body, "encoding", ENCODINGS))
    line_ending = cast(LineEnding | None, _choice(body, "lineEnding", LINE_ENDINGS))
    bom = body.get("bom")
    if bom is not None and not isinstance(bom, bool):
        raise fs.parse_error("`bom` must be a boolean")
    chosen = cast(Literal["create", "replace"], mode)

    def work() -> tuple[fs.WriteResult, MatchedIgnore]:
        fence, path = _target(settings, raw)
        written = fs.write_text(
            fence,
            path,
            content,
            mode=chosen,
            expected_hash=expected,
            encoding=encoding,
            bom=bom,
            line_ending=line_ending,
        )
        return _with_ignore(fence, written)

    result, ignored = await asyncio.to_thread(work)
    if result.created:
        response.status_code = 201
    return FileWritten(
        matched_ignore=ignored,
        path=result.path,
        mode=chosen,
        created=result.created,
        size_bytes=result.size_bytes,
        hash=result.hash,
        encoding=result.profile.encoding,
        bom=result.profile.bom,
        line_ending=result.profile.line_ending,
    )


@router.post(
    "/file/edit",
    response_model=FileEdited,
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 403, 404, 409, 413, 422),
    openapi_extra=json_body(EditFileBody),
)
async def edit_file(request: Request, settings: SettingsDep) -> FileEdited:
    """Replace the one occurrence of `oldText` with `newText`, keeping the file's encoding,
    BOM and line endings; `expectedHash` is checked again just before the rename."""
    body = await read_body(request)
    raw = _body_path(body)
    old_text = _body_str(body, "oldText")
    new_text = _body_str(body, "newText")
    expected = fs.check_hash(body.get("expectedHash"))

    def work() -> tuple[fs.WriteResult, MatchedIgnore]:
        fence, path = _target(settings, raw)
        edited = fs.edit_text(fence, path, old_text, new_text, expected_hash=expected)
        return _with_ignore(fence, edited)

    result, ignored = await asyncio.to_thread(work)
    return FileEdited(
        matched_ignore=ignored,
        path=result.path,
        replacements=result.replacements,
        size_bytes=result.size_bytes,
        hash=result.hash,
        encoding=result.profile.encoding,
        bom=result.profile.bom,
        line_ending=result.profile.line_ending,
    )
