"""The session agent's tools, confined to the bound workspace (run by `activities.session`).

Tools (argument names follow the reference's `rawInput`):

| tool                | kind    | arguments                                               |
|---------------------|---------|---------------------------------------------------------|
| `read_file`         | read    | `absolute_path` or `file_path`, `offset?`, `limit?`     |
| `list_directory`    | read    | `path`                                                  |
| `glob`              | search  | `pattern`, `path?`                                      |
| `grep_search`       | search  | `pattern` (a Python regex), `path?`, `include?` (glob)  |
| `write_file`        | edit    | `file_path`, `content`                                  |
| `edit`              | edit    | `file_path`, `old_string`, `new_string`, `replace_all?` |
| `run_shell_command` | execute | `command`, `description?` (only when the shell is on)   |

Confinement: every path is resolved (`..`, symlinks, absolute paths) with
`os.path.realpath` before any access, and must land on the workspace or inside it;
otherwise the call fails without touching the path. Search tools drop matches whose
real path leaves the workspace. (A concurrent process swapping a checked path for a
symlink between the check and the access is outside this model: the shell tool, when
enabled, can do anything the worker's user can anyway.)

The shell runs `asyncio.create_subprocess_shell` in the workspace directory, in its
own process group (killed when the command ends, times out or is cancelled, so
nothing it started in the background outlives the call), with stdin closed and a
minimal environment (PATH, HOME, LANG, TERM, TMPDIR: no API key or token reaches it).
A command that exits with a non-zero code is still `completed` (its exit code is in
the output, as the reference reports it); a timeout or a failure to start is `failed`.

The search tools (`glob`, `grep_search`) run in a child interpreter
(`activities.workspace_search`, the same `re` and `pathlib` semantics), never on the
worker's own threads: a regex that backtracks catastrophically (`(a+)+$`) or a
glob of nested `**` would otherwise hold the GIL or the CPU and starve every other
workflow of the worker. The whole call (every file searched) is bounded by
`search_timeout` (`SEARCH_TIMEOUT_SECONDS`, or the worker's
`session_search_timeout_ms`); past it the child is killed and the call is `failed`
with a message naming the bound. An `include` may expand to at most
`MAX_INCLUDE_PATTERNS` brace alternatives.

Everything a result carries is bounded: `output_text` to `MAX_OUTPUT_BYTES` (UTF-8),
and a diff side to `MAX_DIFF_CHARS` (a larger diff becomes a one-line note), so a
result can travel through workflow history.

Results and previews use the ACP shapes the reference emits on the session's SSE
stream: `describe_call` gives the `tool_call` (also the `toolCall` of a
`permission_request`), `describe_result` the `tool_call_update`; the session update
adds `"sessionUpdate": "tool_call"` / `"tool_call_update"` around them.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, Field

from activities import workspace_search
from activities.llm import ToolSpec
from activities.workspace_search import MAX_GREP_MATCHES
from runtime.policy.approval import tool_kind
from runtime.workspace.files import ABSENT, atomic_write, content_hash, file_hash

MAX_OUTPUT_BYTES: Final = 16 * 1024
MAX_DIFF_CHARS: Final = 32 * 1024
MAX_FILE_BYTES: Final = 8 * 1024 * 1024  # read_file / edit refuse larger files
DEFAULT_READ_LINES: Final = 2000
MAX_LIST_ENTRIES: Final = 1000
SHELL_TIMEOUT_SECONDS: Final = 120.0
SEARCH_TIMEOUT_SECONDS: Final = 30.0  # one whole glob or grep_search call
SEARCH_SCRIPT: Final = Path(workspace_search.__file__)

ToolStatus = Literal["completed", "failed"]

# The tools whose effect is a file write (exactly once, compare-and-swap on the content).
FILE_TOOLS: Final = frozenset({"write_file", "edit"})


class ToolInvocation(BaseModel):
    """One tool call the model asked for (`arguments` is the ACP `rawInput`)."""

    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    tool_call_id: str


class ToolResult(BaseModel):
    """What a tool call produced: bounded text for the model, ACP content for clients."""

    status: ToolStatus
    output_text: str = ""
    content: list[dict[str, Any]] = Field(default_factory=list)
    locations: list[dict[str, Any]] = Field(default_factory=list)
    error: str | None = None


class FileChange(BaseModel):
    """A planned `write_file` / `edit`: the target, its content hash now, what to write."""

    path: Path
    pre_hash: str
    new: str
    result: ToolResult


class ToolError(Exception):
    """A tool call that cannot proceed; its message is what the model and clients read."""


# ---------------------------------------------------------------------------
# Model-facing tool specs


def tool_specs(shell_enabled: bool) -> list[ToolSpec]:
    """OpenAI-style specs of the session tools (the shell only when enabled)."""
    specs = [
        ToolSpec(
            name="read_file",
            description=(
                "Read a text file of the workspace. Returns its lines; use offset "
                "(0-based line) and limit (line count) to page through large files."
            ),
            parameters=_schema(
                {
                    "absolute_path": _string(
                        "Absolute path of the file (or relative to the workspace)."
                    ),
                    "offset": _integer("0-based line to start from.", minimum=0),
                    "limit": _integer("Maximum number of lines to return.", minimum=1),
                },
                ["absolute_path"],
            ),
        ),
        ToolSpec(
            name="list_directory",
            description="List the entries of a workspace directory (directories first).",
            parameters=_schema(
                {"path": _string("Absolute path of the directory (or relative to the workspace).")},
                ["path"],
            ),
        ),
        ToolSpec(
            name="glob",
            description=(
                "Find files whose path matches a glob pattern (e.g. '**/*.py'), "
                "relative to a directory of the workspace."
            ),
            parameters=_schema(
                {
                    "pattern": _string("Glob pattern, relative to path."),
                    "path": _string("Directory to search from (default: the workspace root)."),
                },
                ["pattern"],
            ),
        ),
        ToolSpec(
            name="grep_search",
            description=(
                "Search file contents with a regular expression; returns matching lines "
                "with their file and line number. Searches time out."
            ),
            parameters=_schema(
                {
                    "pattern": _string("Regular expression (Python syntax)."),
                    "path": _string("File or directory to search (default: the workspace root)."),
                    "include": _string(
                        "Only files matching this glob, e.g. '*.py' or '*.{ts,tsx}'."
                    ),
                },
                ["pattern"],
            ),
        ),
        ToolSpec(
            name="write_file",
            description=(
                "Write a file of the workspace, creating it (and its directories) or replacing it."
            ),
            parameters=_schema(
                {
                    "file_path": _string(
                        "Absolute path of the file (or relative to the workspace)."
                    ),
                    "content": _string("The full content to write."),
                },
                ["file_path", "content"],
            ),
        ),
        ToolSpec(
            name="edit",
            description=(
                "Replace old_string by new_string in a file. old_string must match exactly "
                "once unless replace_all is true; an empty old_string creates a new file."
            ),
            parameters=_schema(
                {
                    "file_path": _string(
                        "Absolute path of the file (or relative to the workspace)."
                    ),
                    "old_string": _string(
                        "Exact text to replace, with enough context to be unique."
                    ),
                    "new_string": _string("Replacement text."),
                    "replace_all": {
                        "type": "boolean",
                        "description": "Replace every occurrence (default false).",
                    },
                },
                ["file_path", "old_string", "new_string"],
            ),
        ),
    ]
    if shell_enabled:
        specs.append(
            ToolSpec(
                name="run_shell_command",
                description=(
                    "Run a shell command in the workspace directory; returns its combined "
                    "output and exit code. Commands time out."
                ),
                parameters=_schema(
                    {
                        "command": _string("The command line, run with /bin/sh -c."),
                        "description": _string("A short description of what it does."),
                    },
                    ["command"],
                ),
            )
        )
    return specs


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _integer(description: str, *, minimum: int) -> dict[str, Any]:
    return {"type": "integer", "description": description, "minimum": minimum}


# ---------------------------------------------------------------------------
# ACP shapes


def describe_call(workspace: Path, invocation: ToolInvocation) -> dict[str, Any]:
    """The ACP `tool_call` of an invocation, status `pending` (reads the file for a diff).

    Never touches a path outside the workspace: such a call gets no locations and no
    diff preview (running it fails).
    """
    root = _real_root(workspace)
    name = invocation.tool_name
    args = invocation.arguments
    locations: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    raw_path = _path_argument(name, args)
    target: Path | None = None
    if raw_path is not None and root is not None:
        try:
            target = _resolve(root, raw_path)
        except (ToolError, ValueError, OSError):
            target = None
    if target is not None and root is not None:
        locations = [{"path": str(target)}]
        if name in ("write_file", "edit"):
            content = _preview_diff(root, target, name, args)
    return {
        "toolCallId": invocation.tool_call_id,
        "title": _title(root, name, args),
        "kind": tool_kind(name),
        "status": "pending",
        "locations": locations,
        "content": content,
        "rawInput": args,
        "_meta": {"toolName": name},
    }


def target_hash(workspace: Path, invocation: ToolInvocation) -> str | None:
    """The content hash of the file a `write_file` / `edit` targets, as it is now.

    Captured when the call is proposed, so that the write applies to exactly the
    content the user saw in the preview (compare-and-swap); None for other tools
    and for paths that cannot be resolved inside the workspace (running them fails).
    """
    if invocation.tool_name not in FILE_TOOLS:
        return None
    root = _real_root(workspace)
    raw = _path_argument(invocation.tool_name, invocation.arguments)
    if root is None or raw is None:
        return None
    try:
        return file_hash(_resolve(root, raw))
    except (ToolError, ValueError, OSError):
        return None


def describe_result(invocation: ToolInvocation, result: ToolResult) -> dict[str, Any]:
    """The ACP `tool_call_update` that closes a call (status completed or failed)."""
    update: dict[str, Any] = {
        "toolCallId": invocation.tool_call_id,
        "status": result.status,
        "content": result.content,
        "_meta": {"toolName": invocation.tool_name},
    }
    if result.locations:
        update["locations"] = result.locations
    return update


def failed_result(message: str) -> ToolResult:
    return ToolResult(
        status="failed",
        output_text=_bound(f"Error: {message}"),
        content=[_text_item(message)],
        error=message,
    )


def rejected_result(tool_name: str) -> ToolResult:
    """A call a human refused (the reference's wording)."""
    return failed_result(f'Tool "{tool_name}" was canceled by the user.')


def denied_result(tool_name: str, mode: str) -> ToolResult:
    """A call the approval mode refuses without asking (plan mode)."""
    return failed_result(
        f'Tool "{tool_name}" is not allowed in {mode} mode: analyze only, '
        "do not modify files or execute commands."
    )


def _title(root: Path | None, name: str, args: dict[str, Any]) -> str:
    def shown(key: str, *more: str) -> str:
        for k in (key, *more):
            value = args.get(k)
            if isinstance(value, str) and value:
                return _display(root, value)
        return ""

    if name == "read_file":
        return shown("absolute_path", "file_path", "path") or "ReadFile"
    if name == "list_directory":
        return shown("path") or "."
    if name == "glob":
        where = shown("path")
        return f"'{_str(args, 'pattern')}'" + (f" within {where}" if where else "")
    if name == "grep_search":
        where = shown("path")
        include = _str(args, "include")
        return (
            f"'{_str(args, 'pattern')}'"
            + (f" in {where}" if where else "")
            + (f' (filter: "{include}")' if include else "")
        )
    if name == "write_file":
        return f"Writing to {shown('file_path')}"
    if name == "edit":
        return (
            f"{shown('file_path')}: {_snippet(_str(args, 'old_string'))} => "
            f"{_snippet(_str(args, 'new_string'))}"
        )
    if name == "run_shell_command":
        command = _str(args, "command")
        description = _str(args, "description")
        return f"{command} ({description})" if description else command or "Shell"
    return name


def _str(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""


def _snippet(text: str, width: int = 30) -> str:
    line = text.split("\n", 1)[0]
    return line if len(line) <= width and "\n" not in text else line[:width] + "..."


def _display(root: Path | None, raw: str) -> str:
    """A path as titles show it: relative to the workspace when inside, else as given."""
    if root is None:
        return raw
    try:
        resolved = _resolve(root, raw)
    except (ToolError, ValueError, OSError):
        return raw
    return _relative(root, resolved)


def _relative(root: Path, path: Path) -> str:
    return "." if path == root else path.relative_to(root).as_posix()


def _path_argument(name: str, args: dict[str, Any]) -> str | None:
    keys: tuple[str, ...] = {
        "read_file": ("absolute_path", "file_path", "path"),
        "list_directory": ("path",),
        "glob": ("path",),
        "grep_search": ("path",),
        "write_file": ("file_path",),
        "edit": ("file_path",),
    }.get(name, ())
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    if name in ("list_directory", "glob", "grep_search"):
        return "."
    return None


def _preview_diff(
    root: Path, target: Path, name: str, args: dict[str, Any]
) -> list[dict[str, Any]]:
    try:
        old = _read_existing(root, target)
        if name == "write_file":
            new = args.get("content")
            if not isinstance(new, str):
                return []
        else:
            new = _edited(root, target, old, args)[0]
    except (ToolError, ValueError, OSError):
        return []
    return [_diff_item(target, old or "", new)]


def _diff_item(path: Path, old: str, new: str) -> dict[str, Any]:
    if len(old) > MAX_DIFF_CHARS or len(new) > MAX_DIFF_CHARS:
        return _text_item(
            f"Diff of {path} omitted: {len(old)} → {len(new)} characters (over {MAX_DIFF_CHARS})."
        )
    return {"type": "diff", "path": str(path), "oldText": old, "newText": new}


def _text_item(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def _bound(text: str, limit: int = MAX_OUTPUT_BYTES) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, with a note of what was cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    note = f"\n[... output truncated: {len(data)} bytes, showing the first {{}}]"
    keep = max(0, limit - len(note.format(limit).encode()))
    head = data[:keep].decode("utf-8", errors="ignore")
    return head + note.format(len(head.encode()))


# ---------------------------------------------------------------------------
# Confinement


def _real_root(workspace: Path) -> Path | None:
    real = Path(os.path.realpath(workspace))
    return real if real.is_dir() else None


def _resolve(root: Path, raw: str) -> Path:
    """The real path `raw` names, which must be `root` or inside it (`root` is real)."""
    if not raw or "\x00" in raw:
        raise ToolError("Invalid path.")
    candidate = Path(raw)
    if not candidate.is_absolute():
        candidate = root / candidate
    real = Path(os.path.realpath(candidate))
    if real != root and root not in real.parents:
        raise ToolError(f"Path is outside the workspace: {raw}")
    return real


# ---------------------------------------------------------------------------
# Argument helpers


def _required_str(args: dict[str, Any], *keys: str, allow_empty: bool = False) -> str:
    for key in keys:
        value = args.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ToolError(f"Invalid arguments: {key} must be a string.")
        if value or allow_empty:
            return value
    raise ToolError(f"Invalid arguments: {' or '.join(keys)} is required.")


def _optional_str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolError(f"Invalid arguments: {key} must be a string.")
    return value


def _optional_int(args: dict[str, Any], key: str, *, minimum: int) -> int | None:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ToolError(f"Invalid arguments: {key} must be an integer >= {minimum}.")
    return value


def _optional_bool(args: dict[str, Any], key: str) -> bool:
    value = args.get(key, False)
    if not isinstance(value, bool):
        raise ToolError(f"Invalid arguments: {key} must be a boolean.")
    return value


# ---------------------------------------------------------------------------
# File helpers


def _read_existing(root: Path, path: Path) -> str | None:
    """The text of an existing file (None when absent); refuses directories and huge files."""
    data = _read_existing_bytes(root, path)
    return None if data is None else data.decode("utf-8", errors="replace")


def _read_existing_bytes(root: Path, path: Path) -> bytes | None:
    if not path.exists():
        return None
    if path.is_dir():
        raise ToolError(f"Path is a directory: {_relative(root, path)}")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ToolError(f"File is too large ({size} bytes): {_relative(root, path)}")
    return path.read_bytes()


def _edited(root: Path, path: Path, old_text: str | None, args: dict[str, Any]) -> tuple[str, int]:
    """The file's content after an `edit`, and the number of replacements."""
    old_string = _required_str(args, "old_string", allow_empty=True)
    new_string = _required_str(args, "new_string", allow_empty=True)
    replace_all = _optional_bool(args, "replace_all")
    shown = _relative(root, path)
    if old_text is None:
        if old_string == "":
            return new_string, 1
        raise ToolError(f"File not found: {shown}")
    if old_string == "":
        raise ToolError(f"old_string is empty but {shown} already exists.")
    if old_string == new_string:
        raise ToolError("old_string and new_string are identical: no change to apply.")
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


# ---------------------------------------------------------------------------
# The tools


class WorkspaceTools:
    def __init__(
        self,
        workspace: Path,
        shell_enabled: bool = False,
        *,
        shell_timeout: float = SHELL_TIMEOUT_SECONDS,
        search_timeout: float = SEARCH_TIMEOUT_SECONDS,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
    ) -> None:
        self.workspace = Path(workspace)
        self.shell_enabled = shell_enabled
        self.shell_timeout = shell_timeout
        self.search_timeout = search_timeout
        self.max_output_bytes = max_output_bytes

    async def run(self, invocation: ToolInvocation) -> ToolResult:
        """Run a tool call; every failure is a `failed` result, never an exception."""
        root = _real_root(self.workspace)
        if root is None:
            return failed_result("The workspace does not exist.")
        # File tools do bounded, linear I/O on a thread; the search tools and the shell run
        # in child processes killed at their time bound (CPU-bound work holds the GIL).
        handlers: dict[str, Callable[[Path, dict[str, Any]], ToolResult]] = {
            "read_file": self._read_file,
            "list_directory": self._list_directory,
            "write_file": self._write_file,
            "edit": self._edit,
        }
        children: dict[str, Callable[[Path, dict[str, Any]], Awaitable[ToolResult]]] = {
            "glob": self._glob,
            "grep_search": self._grep_search,
            "run_shell_command": self._shell,
        }
        args = invocation.arguments
        try:
            child = children.get(invocation.tool_name)
            if child is not None:
                return await child(root, args)
            handler = handlers.get(invocation.tool_name)
            if handler is None:
                return failed_result(f'Tool "{invocation.tool_name}" not found.')
            return await asyncio.to_thread(handler, root, args)
        except ToolError as err:
            return failed_result(str(err))
        except ValueError as err:
            return failed_result(f"Invalid arguments: {err}")
        except OSError as err:
            return failed_result(f"{type(err).__name__}: {err.strerror or err}")

    # -- read ---------------------------------------------------------------

    def _read_file(self, root: Path, args: dict[str, Any]) -> ToolResult:
        raw = _required_str(args, "absolute_path", "file_path", "path")
        offset = _optional_int(args, "offset", minimum=0) or 0
        limit = _optional_int(args, "limit", minimum=1)
        path = _resolve(root, raw)
        shown = _relative(root, path)
        if not path.exists():
            raise ToolError(f"File not found: {shown}")
        if path.is_dir():
            raise ToolError(f"Path is a directory: {shown}")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ToolError(f"File is too large ({size} bytes): {shown}")
        data = path.read_bytes()
        if b"\x00" in data[:8192]:
            raise ToolError(f"Cannot read binary file: {shown}")
        lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
        end = min(len(lines), offset + (limit or DEFAULT_READ_LINES))
        body = "".join(lines[offset:end])
        if offset > 0 or end < len(lines):
            first = offset + 1 if end > offset else offset
            body = f"Showing lines {first}-{end} of {len(lines)} total lines.\n---\n" + body
        text = self._bound(body)
        return ToolResult(
            status="completed",
            output_text=text,
            content=[_text_item(text)],
            locations=[{"path": str(path)}],
        )

    def _list_directory(self, root: Path, args: dict[str, Any]) -> ToolResult:
        raw = _optional_str(args, "path") or "."
        path = _resolve(root, raw)
        shown = _relative(root, path)
        if not path.exists():
            raise ToolError(f"Directory not found: {shown}")
        if not path.is_dir():
            raise ToolError(f"Path is not a directory: {shown}")
        entries = sorted(path.iterdir(), key=lambda p: (not p.is_dir(), p.name))
        lines = [f"[DIR] {p.name}" if p.is_dir() else p.name for p in entries[:MAX_LIST_ENTRIES]]
        if len(entries) > MAX_LIST_ENTRIES:
            lines.append(f"... ({len(entries) - MAX_LIST_ENTRIES} more entries)")
        text = (
            f"Directory listing for {path}:\n" + "\n".join(lines)
            if lines
            else f"Directory {path} is empty."
        )
        text = self._bound(text)
        return ToolResult(
            status="completed",
            output_text=text,
            content=[_text_item(text)],
            locations=[{"path": str(path)}],
        )

    async def _glob(self, root: Path, args: dict[str, Any]) -> ToolResult:
        pattern = _required_str(args, "pattern")
        if Path(pattern).is_absolute():
            raise ToolError("pattern must be relative to path.")
        base = _resolve(root, _optional_str(args, "path") or ".")
        if not base.is_dir():
            raise ToolError(f"Directory not found: {_relative(root, base)}")
        answer = await self._search(
            "glob",
            {"op": "glob", "root": str(root), "base": str(base), "pattern": pattern},
            hint="the pattern may match too many paths (nested **)",
        )
        found = [str(p) for p in answer["paths"]]
        if not found:
            text = f'No files found matching pattern "{pattern}" within {base}.'
        else:
            text = (
                f'Found {len(found)} file(s) matching "{pattern}" within {base}'
                + (" (first results only)" if answer["more"] else "")
                + ":\n"
                + "\n".join(found)
            )
        text = self._bound(text)
        return ToolResult(status="completed", output_text=text, content=[_text_item(text)])

    async def _grep_search(self, root: Path, args: dict[str, Any]) -> ToolResult:
        pattern = _required_str(args, "pattern")
        include = _optional_str(args, "include")
        base = _resolve(root, _optional_str(args, "path") or ".")
        shown = _relative(root, base)
        if not base.exists():
            raise ToolError(f"Path not found: {shown}")
        answer = await self._search(
            "grep_search",
            {
                "op": "grep",
                "root": str(root),
                "base": str(base),
                "pattern": pattern,
                "include": include,
            },
            hint="the pattern may backtrack catastrophically",
        )
        matches: dict[str, list[str]] = answer["matches"]
        count: int = answer["count"]
        where = f'in path "{shown}"' + (f' (filter: "{include}")' if include else "")
        if not matches:
            text = f'No matches found for pattern "{pattern}" {where}.'
        else:
            blocks = [f"File: {rel}\n" + "\n".join(lines) for rel, lines in matches.items()]
            text = (
                f'Found {count} match(es) for pattern "{pattern}" {where}'
                + (" (first matches only)" if count >= MAX_GREP_MATCHES else "")
                + ":\n---\n"
                + "\n---\n".join(blocks)
                + "\n---"
            )
        text = self._bound(text)
        return ToolResult(status="completed", output_text=text, content=[_text_item(text)])

    async def _search(self, tool: str, request: dict[str, Any], *, hint: str) -> dict[str, Any]:
        """Run a search in a child process (`activities.workspace_search`), killed at the
        call's time bound, so no pattern can hold the worker's interpreter or outlive it."""
        answer = await run_search(request, self.search_timeout)
        if answer is None:
            raise ToolError(
                f"{tool} timed out after {self.search_timeout:g} s and was stopped: {hint}; "
                "narrow the search with path or include, or simplify the pattern."
            )
        error = answer.get("error")
        if isinstance(error, str):
            raise ToolError(error)
        return answer

    # -- edit ---------------------------------------------------------------

    def _write_file(self, root: Path, args: dict[str, Any]) -> ToolResult:
        return self._apply(self.plan_change(root, "write_file", args))

    def _edit(self, root: Path, args: dict[str, Any]) -> ToolResult:
        return self._apply(self.plan_change(root, "edit", args))

    def _apply(self, change: FileChange) -> ToolResult:
        atomic_write(change.path, change.new.encode("utf-8"), expected=change.pre_hash)
        return change.result

    def root(self) -> Path | None:
        """The workspace's real path (None when it does not exist)."""
        return _real_root(self.workspace)

    def target(self, root: Path, invocation: ToolInvocation) -> Path:
        """The file a `write_file` / `edit` call writes, resolved inside the workspace."""
        return _resolve(root, _required_str(invocation.arguments, "file_path"))

    def plan_change(self, root: Path, tool_name: str, args: dict[str, Any]) -> FileChange:
        """What `write_file` or `edit` would write, from the file as it is now (no write)."""
        path = _resolve(root, _required_str(args, "file_path"))
        raw = _read_existing_bytes(root, path)
        old = None if raw is None else raw.decode("utf-8", errors="replace")
        if tool_name == "write_file":
            new = _required_str(args, "content", allow_empty=True)
            text = (
                f"Successfully created and wrote to new file: {path}."
                if old is None
                else f"Successfully overwrote file: {path}."
            )
        else:
            new, replaced = _edited(root, path, old, args)
            text = (
                f"Created new file: {path}."
                if old is None
                else f"Successfully modified file: {path} ({replaced} replacement(s))."
            )
        result = ToolResult(
            status="completed",
            output_text=self._bound(text),
            content=[_diff_item(path, old or "", new)],
            locations=[{"path": str(path)}],
        )
        pre_hash = ABSENT if raw is None else content_hash(raw)
        return FileChange(path=path, pre_hash=pre_hash, new=new, result=result)

    # -- execute ------------------------------------------------------------

    async def _shell(self, root: Path, args: dict[str, Any]) -> ToolResult:
        if not self.shell_enabled:
            raise ToolError("run_shell_command is disabled on this daemon.")
        command = _required_str(args, "command")
        if not command.strip():
            raise ToolError("Invalid arguments: command is required.")
        process = await asyncio.create_subprocess_shell(
            command,
            cwd=root,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=_shell_env(root),
            start_new_session=True,
        )
        kept = bytearray()
        total = 0

        async def drain() -> None:
            nonlocal total
            assert process.stdout is not None
            while chunk := await process.stdout.read(65536):
                total += len(chunk)
                room = self.max_output_bytes - len(kept)
                if room > 0:
                    kept.extend(chunk[:room])

        timed_out = False
        try:
            await asyncio.wait_for(asyncio.gather(drain(), process.wait()), self.shell_timeout)
        except TimeoutError:
            timed_out = True
        finally:
            # The whole group: a timed-out command, a cancelled activity, and whatever
            # the command left running in the background.
            _kill_group(process.pid)
            if process.returncode is None:
                await process.wait()
        output = kept.decode("utf-8", errors="replace")
        if total > len(kept):
            output += f"\n[... output truncated: {total} bytes]"
        code = process.returncode
        lines = [
            f"Command: {command}",
            "Directory: (root)",
            f"Output: {output.rstrip() or '(empty)'}",
        ]
        if timed_out:
            message = f"Command timed out after {self.shell_timeout:g}s and was killed."
            text = self._bound("\n".join([*lines, f"Error: {message}"]))
            return ToolResult(
                status="failed", output_text=text, content=[_text_item(text)], error=message
            )
        if code is not None and code < 0:
            lines.append(f"Signal: {-code}")
        lines.append(f"Exit Code: {code}")
        text = self._bound("\n".join(lines))
        return ToolResult(status="completed", output_text=text, content=[_text_item(text)])

    def _bound(self, text: str) -> str:
        return _bound(text, self.max_output_bytes)


def _shell_env(cwd: Path) -> dict[str, str]:
    """A minimal environment: the worker's secrets (API keys, tokens) stay out."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", str(cwd)),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PWD": str(cwd),
    }
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


async def run_search(request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """The answer of `activities.workspace_search` to `request`, or None when it ran past
    `timeout` seconds (it is killed then, and when the caller is cancelled)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",  # no PYTHON* variables, user site or script directory: the stdlib only
        str(SEARCH_SCRIPT),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
        start_new_session=True,
    )
    payload = json.dumps({**request, "timeout": timeout}).encode()
    try:
        out, err = await asyncio.wait_for(process.communicate(payload), timeout)
    except TimeoutError:
        return None
    finally:
        _kill_group(process.pid)
        if process.returncode is None:
            await process.wait()
    if process.returncode != 0:
        if process.returncode == -signal.SIGXCPU:
            return None  # its own CPU bound stopped it
        lines = err.decode("utf-8", errors="replace").strip().splitlines()
        raise ToolError(
            f"The search failed (exit code {process.returncode})"
            + (f": {lines[-1]}" if lines else ".")
        )
    try:
        answer = json.loads(out)
    except ValueError as error:
        raise ToolError(f"The search failed: unreadable answer ({error}).") from error
    if not isinstance(answer, dict):
        raise ToolError("The search failed: unreadable answer.")
    return answer


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
