"""Which workspace paths the workspace's `.gitignore` ignores (`matchedIgnore`, `ignored`).

Spec 002: an explicit read or write of an ignored path is allowed (the caller named it);
answers say so with `matchedIgnore: "file"` (the path itself matches) or `"directory"`
(a directory above it does), and `/list` flags ignored entries. The patterns are those
of the `.gitignore` at the workspace root, in git's syntax (`pathspec`); nested
`.gitignore` files and git's global excludes are not read.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import pathspec

MatchedIgnore = Literal["file", "directory"] | None


@lru_cache(maxsize=32)
def _spec(gitignore: Path, mtime_ns: int) -> pathspec.PathSpec[Any]:
    del mtime_ns  # part of the cache key: an edited .gitignore is read again
    lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _workspace_spec(root: Path) -> pathspec.PathSpec[Any] | None:
    gitignore = root / ".gitignore"
    try:
        mtime = gitignore.stat().st_mtime_ns
    except OSError:
        return None
    return _spec(gitignore, mtime)


def matched_ignore(root: Path, relative: str, *, is_dir: bool = False) -> MatchedIgnore:
    """How the workspace's `.gitignore` matches the workspace-relative `relative`."""
    spec = _workspace_spec(root)
    if spec is None or relative in ("", "."):
        return None
    parts = Path(relative).parts
    for depth in range(1, len(parts)):
        if spec.match_file("/".join(parts[:depth]) + "/"):
            return "directory"
    return "file" if spec.match_file(relative + ("/" if is_dir else "")) else None
