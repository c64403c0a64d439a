"""Which workspace paths the workspace's `.gitignore` ignores (`matchedIgnore`, `ignored`).

Spec 002: an explicit read or write of an ignored path is allowed (the caller named it);
answers say so with `matchedIgnore: "file"` (the path itself matches) or `"directory"`
(a directory above it does), and `/list` flags ignored entries. The patterns are those
of the `.gitignore` at the workspace root, in git's syntax (`pathspec`), when it is a
regular file of at most 1 MiB (a symlink is not followed); nested `.gitignore` files
and git's global excludes are not read. It reads a file: call it off the event loop.
"""

from __future__ import annotations

import stat
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


MAX_GITIGNORE_BYTES = 1024 * 1024


def _workspace_spec(root: Path) -> pathspec.PathSpec[Any] | None:
    """The root `.gitignore`, only if it is a regular file of the workspace itself: never
    a symlink (it could name a file outside, a FIFO or /dev/zero) and never huge."""
    gitignore = root / ".gitignore"
    try:
        info = gitignore.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_GITIGNORE_BYTES:
        return None
    return _spec(gitignore, info.st_mtime_ns)


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
