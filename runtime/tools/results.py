"""What a tool call produces (`ToolResult`), whichever tool it is (the workspace's, a
Windows verb, an MCP server's), its failures, and the ACP content items."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, Field

ToolStatus = Literal["completed", "failed"]


# The tools whose effect is a file write (exactly once, compare-and-swap on the content).
FILE_TOOLS: Final = frozenset({"write_file", "edit"})


MAX_OUTPUT_BYTES: Final = 16 * 1024


MAX_DIFF_CHARS: Final = 32 * 1024


class ToolResult(BaseModel):
    """What a tool call produced: bounded text for the model, ACP content for clients."""

    status: ToolStatus
    output_text: str = ""
    content: list[dict[str, Any]] = Field(default_factory=list)
    locations: list[dict[str, Any]] = Field(default_factory=list)
    error: str | None = None
    # References of stored images the call produced (windows_screenshot), shown to the model.
    image_refs: list[str] = Field(default_factory=list)


class FileChange(BaseModel):
    """A planned `write_file` / `edit`: the target, its content hash now, the new text (as
    the model sees it: `\n` line endings) and the bytes to write (in the file's profile)."""

    path: Path
    pre_hash: str
    new: str
    data: bytes
    result: ToolResult


class ToolError(Exception):
    """A tool call that cannot proceed; its message is what the model and clients read."""


def failed_result(message: str) -> ToolResult:
    return ToolResult(
        status="failed",
        output_text=bound(f"Error: {message}"),
        content=[text_item(message)],
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


def text_item(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def diff_item(path: Path, old: str, new: str) -> dict[str, Any]:
    if len(old) > MAX_DIFF_CHARS or len(new) > MAX_DIFF_CHARS:
        return text_item(
            f"Diff of {path} omitted: {len(old)} → {len(new)} characters (over {MAX_DIFF_CHARS})."
        )
    return {"type": "diff", "path": str(path), "oldText": old, "newText": new}


def bound(text: str, limit: int = MAX_OUTPUT_BYTES) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, with a note of what was cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    note = f"\n[... output truncated: {len(data)} bytes, showing the first {{}}]"
    keep = max(0, limit - len(note.format(limit).encode()))
    head = data[:keep].decode("utf-8", errors="ignore")
    return head + note.format(len(head.encode()))
