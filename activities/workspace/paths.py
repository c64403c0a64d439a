"""Path fencing for the session tools: every path goes through the workspace fence
(`runtime.workspace.fence`): resolved (`..`, symlinks), inside the workspace, never in the
daemon's data dir; its refusals become tool errors naming the rule."""

from __future__ import annotations

import os
from pathlib import Path

from runtime.tools.results import ToolError
from runtime.workspace.fence import Fence
from runtime.workspace.file_errors import FileError


def real_root(workspace: Path) -> Path | None:
    real = Path(os.path.realpath(workspace))
    return real if real.is_dir() else None


def fence_of(workspace: Path, data_dir: Path | None = None) -> Fence | None:
    """The fence of `workspace` without `data_dir` (None when the workspace is missing)."""
    try:
        return Fence.of(workspace, data_dir)
    except FileError:
        return None


def resolve(root: Path | Fence, raw: str) -> Path:
    """The real path `raw` names inside the fence (or the real `root`): the confinement of
    the daemon's file routes, as a tool error."""
    fence = root if isinstance(root, Fence) else Fence.trusted(root)
    try:
        return fence.resolve(raw)
    except FileError as err:
        if err.rule is None:
            raise ToolError("Invalid path.") from err  # empty, or a NUL byte
        raise tool_error(err, raw) from err


def tool_error(err: FileError, raw: str) -> ToolError:
    """The tool error of a fence refusal: the rule it broke, in the model's words."""
    if err.rule == "outside_workspace":
        return ToolError(f"Path is outside the workspace: {raw}")
    if err.rule == "symlink_escape":
        return ToolError(f"Path is outside the workspace: {raw} (a symlink resolves outside it)")
    if err.rule == "symlink_swapped":
        return ToolError(
            f"Path changed while it was opened: {raw} (a component became a symlink; "
            "symlinks swapped in after the check are never followed)"
        )
    if err.rule == "data_dir":
        return ToolError(
            f"Path is in the daemon's data directory: {raw} "
            "(its store, logs and credentials are not workspace files)"
        )
    if err.rule == "not_regular":
        return ToolError(f"{err.message[0].upper()}{err.message[1:]}: only regular files are read")
    if err.kind == "path_not_found":
        return ToolError(f"Path not found: {raw}")
    return ToolError(f"{err.message[0].upper()}{err.message[1:]}.")


def relative(root: Path | Fence, path: Path) -> str:
    base = root.root if isinstance(root, Fence) else root
    return "." if path == base else path.relative_to(base).as_posix()


def display(root: Path | Fence | None, raw: str) -> str:
    """A path as titles show it: relative to the workspace when inside, else as given."""
    if root is None:
        return raw
    try:
        resolved = resolve(root, raw)
    except (ToolError, ValueError, OSError):
        return raw
    return relative(root, resolved)
