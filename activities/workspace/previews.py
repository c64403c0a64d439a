"""What clients see of a call: the ACP `tool_call` (with a diff preview for edits), the
`tool_call_update`, and the target's content hash captured when the call is proposed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from activities.workspace.arguments import path_argument, str_argument
from activities.workspace.edits import edited, read_existing
from activities.workspace.paths import display, fence_of, resolve
from activities.workspace.tools import shell_search_path
from runtime.llm.contracts import ToolCall
from runtime.sessions.approval_modes import tool_kind
from runtime.sessions.shell_allowlist import check_shell_command
from runtime.tools.results import FILE_TOOLS, ToolError, ToolResult, diff_item
from runtime.workspace.fence import Fence
from runtime.workspace.file_errors import FileError


def describe_call(
    workspace: Path, invocation: ToolCall, data_dir: Path | None = None
) -> dict[str, Any]:
    """The ACP `tool_call` of an invocation, status `pending` (reads the file for a diff).

    Never touches a path outside the workspace fence (outside the workspace, or in the
    daemon's `data_dir`): such a call gets no locations and no diff preview (running it
    fails).
    """
    root = fence_of(workspace, data_dir)
    name = invocation.name
    args = invocation.arguments
    locations: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    raw_path = path_argument(name, args)
    target: Path | None = None
    if raw_path is not None and root is not None:
        try:
            target = resolve(root, raw_path)
        except (ToolError, FileError, ValueError, OSError):
            target = None
    if target is not None and root is not None:
        locations = [{"path": str(target)}]
        if name in ("write_file", "edit"):
            content = preview_diff(root, target, name, args)
    return {
        "toolCallId": invocation.id,
        "title": title(root, name, args),
        "kind": tool_kind(name),
        "status": "pending",
        "locations": locations,
        "content": content,
        "rawInput": args,
        "_meta": {"toolName": name},
    }


def target_hash(workspace: Path, invocation: ToolCall, data_dir: Path | None = None) -> str | None:
    """The content hash of the file a `write_file` / `edit` targets, as it is now.

    Captured when the call is proposed, so that the write applies to exactly the
    content the user saw in the preview (compare-and-swap); None for other tools
    and for paths that cannot be resolved inside the workspace (running them fails).
    """
    if invocation.name not in FILE_TOOLS:
        return None
    fence = fence_of(workspace, data_dir)
    raw = path_argument(invocation.name, invocation.arguments)
    if fence is None or raw is None:
        return None
    try:
        return fence.file_hash(resolve(fence, raw))
    except (ToolError, FileError, ValueError, OSError):
        return None


def shell_fenced(workspace: Path, data_dir: Path, invocation: ToolCall) -> bool | None:
    """For a shell call, whether what the `auto` allow-list read of the command names
    resolves where the list assumed (None for other tools):

    - every path it opens passes the workspace fence (`runtime.workspace.fence`: symlinks
      resolved, nothing outside the workspace or in the daemon's data dir), and a
      recursive program is not given a directory that holds the data dir (`grep -r key .`
      with `--workspace .`);
    - its program is a shell builtin, or found on the shell's `PATH` outside the
      workspace, and no entry of that `PATH` is relative or reaches into the workspace
      (where an `auto`-approved edit could plant a `cat`).

    Captured when the call is proposed, like `target_hash`: nothing an `auto` session
    runs unasked can make a symlink or an executable in between. False for a command the
    allow-list refuses (the workflow asks anyway).
    """
    if tool_kind(invocation.name) != "execute":
        return None
    command = invocation.arguments.get("command")
    if not isinstance(command, str):
        return False
    check = check_shell_command(command, str(workspace))
    if not check.allowed:
        return False
    fence = fence_of(workspace, data_dir)
    if fence is None:
        return False
    if not check.builtin and not _program_outside(fence.root, check.argv[0]):
        return False
    for raw in check.paths:
        try:
            real = fence.resolve(raw)
        except (FileError, ValueError, OSError):
            return False
        hidden = fence.data_dir
        if check.recursive and hidden is not None and hidden.is_relative_to(real):
            return False
    return True


def _program_outside(root: Path, name: str) -> bool:
    """Whether the shell finds `name` outside the workspace, on a `PATH` that never
    reaches into it."""
    found: Path | None = None
    for entry in shell_search_path().split(os.pathsep):
        if not os.path.isabs(entry):
            return False  # "" and relative entries are looked up from the workspace
        real = Path(os.path.realpath(entry))
        if real.is_relative_to(root):
            return False
        candidate = real / name
        if found is None and candidate.is_file() and os.access(candidate, os.X_OK):
            found = Path(os.path.realpath(candidate))
    return found is not None and not found.is_relative_to(root)


def describe_result(invocation: ToolCall, result: ToolResult) -> dict[str, Any]:
    """The ACP `tool_call_update` that closes a call (status completed or failed)."""
    update: dict[str, Any] = {
        "toolCallId": invocation.id,
        "status": result.status,
        "content": result.content,
        "_meta": {"toolName": invocation.name},
    }
    if result.locations:
        update["locations"] = result.locations
    return update


def title(root: Fence | Path | None, name: str, args: dict[str, Any]) -> str:
    def shown(key: str, *more: str) -> str:
        for k in (key, *more):
            value = args.get(k)
            if isinstance(value, str) and value:
                return display(root, value)
        return ""

    if name == "read_file":
        return shown("absolute_path", "file_path", "path") or "ReadFile"
    if name == "list_directory":
        return shown("path") or "."
    if name == "glob":
        where = shown("path")
        return f"'{str_argument(args, 'pattern')}'" + (f" within {where}" if where else "")
    if name == "grep_search":
        where = shown("path")
        include = str_argument(args, "include")
        return (
            f"'{str_argument(args, 'pattern')}'"
            + (f" in {where}" if where else "")
            + (f' (filter: "{include}")' if include else "")
        )
    if name == "write_file":
        return f"Writing to {shown('file_path')}"
    if name == "edit":
        return (
            f"{shown('file_path')}: {_snippet(str_argument(args, 'old_string'))} => "
            f"{_snippet(str_argument(args, 'new_string'))}"
        )
    if name == "run_shell_command":
        command = str_argument(args, "command")
        description = str_argument(args, "description")
        return f"{command} ({description})" if description else command or "Shell"
    return name


def _snippet(text: str, width: int = 30) -> str:
    line = text.split("\n", 1)[0]
    return line if len(line) <= width and "\n" not in text else line[:width] + "..."


def preview_diff(
    fence: Fence, target: Path, name: str, args: dict[str, Any]
) -> list[dict[str, Any]]:
    try:
        old = read_existing(fence, target)
        if name == "write_file":
            new = args.get("content")
            if not isinstance(new, str):
                return []
        else:
            new = edited(fence, target, old, args)[0]
    except (ToolError, FileError, ValueError, OSError):
        return []
    return [diff_item(target, old or "", new)]
