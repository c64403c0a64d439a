"""What clients see of a call: the ACP `tool_call` (with a diff preview for edits), the
`tool_call_update`, and the target's content hash captured when the call is proposed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from activities.workspace.arguments import path_argument, str_argument
from activities.workspace.edits import edited, read_existing
from activities.workspace.paths import display, real_root, resolve
from activities.workspace.results import FILE_TOOLS, ToolError, ToolResult, diff_item
from runtime.llm.contracts import ToolCall
from runtime.policy.approval import tool_kind
from runtime.workspace.files import file_hash


def describe_call(workspace: Path, invocation: ToolCall) -> dict[str, Any]:
    """The ACP `tool_call` of an invocation, status `pending` (reads the file for a diff).

    Never touches a path outside the workspace: such a call gets no locations and no
    diff preview (running it fails).
    """
    root = real_root(workspace)
    name = invocation.name
    args = invocation.arguments
    locations: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    raw_path = path_argument(name, args)
    target: Path | None = None
    if raw_path is not None and root is not None:
        try:
            target = resolve(root, raw_path)
        except (ToolError, ValueError, OSError):
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


def target_hash(workspace: Path, invocation: ToolCall) -> str | None:
    """The content hash of the file a `write_file` / `edit` targets, as it is now.

    Captured when the call is proposed, so that the write applies to exactly the
    content the user saw in the preview (compare-and-swap); None for other tools
    and for paths that cannot be resolved inside the workspace (running them fails).
    """
    if invocation.name not in FILE_TOOLS:
        return None
    root = real_root(workspace)
    raw = path_argument(invocation.name, invocation.arguments)
    if root is None or raw is None:
        return None
    try:
        return file_hash(resolve(root, raw))
    except (ToolError, ValueError, OSError):
        return None


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


def title(root: Path | None, name: str, args: dict[str, Any]) -> str:
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


def preview_diff(root: Path, target: Path, name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        old = read_existing(root, target)
        if name == "write_file":
            new = args.get("content")
            if not isinstance(new, str):
                return []
        else:
            new = edited(root, target, old, args)[0]
    except (ToolError, ValueError, OSError):
        return []
    return [diff_item(target, old or "", new)]
