"""Path fencing: every path is resolved (`..`, symlinks) and must stay in the workspace."""

from __future__ import annotations

import os
from pathlib import Path

from activities.workspace.results import ToolError
from runtime.workspace.fs import FileError, confine


def real_root(workspace: Path) -> Path | None:
    real = Path(os.path.realpath(workspace))
    return real if real.is_dir() else None


def resolve(root: Path, raw: str) -> Path:
    """The real path `raw` names, which must be `root` or inside it (`root` is real): the
    confinement of the daemon's file routes (runtime.workspace.fs.confine)."""
    try:
        return confine(root, raw)
    except FileError as err:
        if err.kind == "symlink_escape":
            raise ToolError(
                f"Path is outside the workspace: {raw} (a symlink resolves outside it)"
            ) from err
        if err.kind == "path_outside_workspace":
            raise ToolError(f"Path is outside the workspace: {raw}") from err
        raise ToolError("Invalid path.") from err


def relative(root: Path, path: Path) -> str:
    return "." if path == root else path.relative_to(root).as_posix()


def display(root: Path | None, raw: str) -> str:
    """A path as titles show it: relative to the workspace when inside, else as given."""
    if root is None:
        return raw
    try:
        resolved = resolve(root, raw)
    except (ToolError, ValueError, OSError):
        return raw
    return relative(root, resolved)
