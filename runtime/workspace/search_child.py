"""The CPU-bound part of the search tools (`glob`, `grep_search`), run in a child process.

A regular expression can backtrack catastrophically (`(a+)+$` over a long line of `a`)
and CPython's `re` holds the GIL while it matches, so a search run on a thread of the
worker freezes every workflow and activity of the process; an `include` full of `{a,b}`
braces can burn the CPU for hours in pure Python. So `WorkspaceTools` and GET /glob run
them here, in a separate interpreter killed when the time bound of the call is over
(`run_search`), and the caller's event loop never waits on them.

This module imports only the standard library and the workspace fence
(`runtime.workspace.fence`, stdlib only too): the child starts as
`python -I search_child.py`, reads one JSON request on stdin and writes one JSON
answer on stdout, `{"error": message}` for a failure the model should read. The child
also bounds itself (address space, CPU seconds), so that it dies on its own if the
worker that started it dies first.

Requests (`root` and `base` are real paths the caller already checked with the fence,
`data_dir` the daemon's data dir, never searched):

- `{"op": "glob", "root", "base", "pattern", "data_dir"}` → `{"paths": [...], "more": bool}`
- `{"op": "grep", "root", "base", "pattern", "include", "data_dir"}` →
  `{"matches": {rel: ["L<n>: line", ...]}, "count": int}`

Both walk through the fence: no directory outside the workspace (a symlink out, a `..`
in a pattern) or in the data dir is ever listed, and grep reads only regular files,
opened without following a symlink swapped in (`Fence.read`), at most 1 MiB each.
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

if __name__ == "__main__":  # `python -I search_child.py`: the fence is in this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runtime.workspace.fence import Fence
from runtime.workspace.file_errors import FileError

MAX_GLOB_RESULTS: Final = 500
MAX_GREP_MATCHES: Final = 200
MAX_GREP_FILE_BYTES: Final = 1024 * 1024
MAX_GREP_FILES: Final = 20_000
MAX_GREP_LINE_CHARS: Final = 300
MAX_INCLUDE_PATTERNS: Final = 64  # `include` brace alternatives, once expanded
SKIPPED_DIRS: Final = frozenset({".git"})
CHILD_ADDRESS_SPACE_BYTES: Final = 2 * 1024 * 1024 * 1024


class SearchError(Exception):
    """A search that cannot proceed; its message is what the model reads."""


def search(request: dict[str, Any]) -> dict[str, Any]:
    """Run one search request (in the child); raises `SearchError`."""
    op = request.get("op")
    data_dir = request.get("data_dir")
    fence = Fence.trusted(
        Path(str(request["root"])), Path(data_dir) if isinstance(data_dir, str) else None
    )
    base = Path(str(request["base"]))
    if not fence.contains(base):
        raise SearchError("The search path is outside the workspace.")
    pattern = str(request["pattern"])
    if op == "glob":
        return glob_files(fence, base, pattern)
    if op == "grep":
        include = request.get("include")
        return grep(fence, base, pattern, include if isinstance(include, str) else None)
    raise SearchError(f"Unknown search: {op!r}")


# -- walking the workspace, through the fence ---------------------------------------------


@dataclass(frozen=True)
class _Found:
    """A directory entry as a search sees it: its real path and what it is there (a
    symlink is followed only when it resolves inside the fence; else it is skipped)."""

    name: str
    real: Path
    is_dir: bool
    is_file: bool
    is_link: bool


def _listing(fence: Fence, directory: Path) -> list[_Found]:
    try:
        entries = fence.entries(directory)
    except FileError:
        return []
    found: list[_Found] = []
    for entry in entries:
        path = directory / entry.name
        if entry.kind == "symlink":
            real = Path(os.path.realpath(path))
            if not fence.contains(real):
                continue  # never followed out (nor into the data dir)
            try:
                mode = os.stat(real).st_mode
            except OSError:
                continue
            found.append(_Found(entry.name, real, stat.S_ISDIR(mode), stat.S_ISREG(mode), True))
        elif fence.contains(path):
            found.append(
                _Found(entry.name, path, entry.kind == "directory", entry.kind == "file", False)
            )
    return found


def glob_files(fence: Fence, base: Path, pattern: str) -> dict[str, Any]:
    """`pathlib.Path.glob` semantics (`**` for any depth, not through symlinked
    directories; `*` matches dotfiles; case-sensitive), walked inside the fence only: a
    symlink out is never entered, and each (directory, pattern position) is visited once,
    so nested `**` cannot multiply the walk."""
    parts: list[str] = []
    for part in pattern.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            raise SearchError("Invalid glob pattern: `..` segments are not allowed")
        if "**" in part and part != "**":
            raise SearchError("Invalid glob pattern: '**' can only be an entire path component")
        if not (part == "**" and parts and parts[-1] == "**"):
            parts.append(part)
    if not parts:
        raise SearchError(f"Invalid glob pattern: unacceptable pattern {pattern!r}")
    matchers = [None if p == "**" else re.compile(fnmatch.translate(p)) for p in parts]
    found: set[Path] = set()
    more = False
    pending: list[tuple[Path, int]] = [(base, 0)]
    seen: set[tuple[Path, int]] = set(pending)

    def visit(directory: Path, index: int) -> None:
        if (directory, index) not in seen:
            seen.add((directory, index))
            pending.append((directory, index))

    while pending and not more:
        directory, index = pending.pop()
        if index == len(parts):
            continue  # the pattern ended on a directory (`**` last): files only
        matcher = matchers[index]
        last = index == len(parts) - 1
        if matcher is None:  # `**`: this directory, and every one below (not links)
            visit(directory, index + 1)
            for entry in _listing(fence, directory):
                if entry.is_dir and not entry.is_link and entry.name not in SKIPPED_DIRS:
                    visit(entry.real, index)
            continue
        for entry in _listing(fence, directory):
            if entry.name in SKIPPED_DIRS or not matcher.match(entry.name):
                continue
            if last:
                if entry.is_file and entry.real not in found:
                    if len(found) == MAX_GLOB_RESULTS:
                        more = True
                        break
                    found.add(entry.real)
            elif entry.is_dir:
                visit(entry.real, index + 1)
    return {"paths": [str(p) for p in sorted(found)], "more": more}


def grep(fence: Fence, base: Path, pattern: str, include: str | None) -> dict[str, Any]:
    try:
        regex = re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as err:
        raise SearchError(f"Invalid regular expression: {err}") from err
    filters = expand_braces(include) if include else []
    matches: dict[str, list[str]] = {}
    count = 0
    for shown, real in _grep_files(fence, base):
        rel = "." if shown == fence.root else shown.relative_to(fence.root).as_posix()
        if filters and not any(
            fnmatch.fnmatch(shown.name, f) or fnmatch.fnmatch(rel, f) for f in filters
        ):
            continue
        try:
            data = fence.read(real, limit=MAX_GREP_FILE_BYTES)
        except FileError:
            continue  # too large, not a regular file (a FIFO is never opened), gone
        if b"\x00" in data[:8192]:
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if regex.search(line):
                matches.setdefault(rel, []).append(f"L{number}: {line[:MAX_GREP_LINE_CHARS]}")
                count += 1
                if count >= MAX_GREP_MATCHES:
                    break
        if count >= MAX_GREP_MATCHES:
            break
    return {"matches": matches, "count": count}


def _grep_files(fence: Fence, base: Path) -> list[tuple[Path, Path]]:
    """(shown, real) of the files under `base` (or `base` itself), in `os.walk` order with
    sorted names, never through a symlinked directory."""
    try:
        if stat.S_ISREG(fence.lstat(base).st_mode):
            return [(base, base)]
    except FileError:
        return []
    files: list[tuple[Path, Path]] = []
    stack: list[tuple[Path, Path]] = [(base, base)]
    while stack:
        shown, real = stack.pop()
        entries = sorted(_listing(fence, real), key=lambda e: e.name)
        for entry in entries:
            if entry.is_file:
                files.append((shown / entry.name, entry.real))
                if len(files) >= MAX_GREP_FILES:
                    return files
        subdirs = [e for e in entries if e.is_dir and not e.is_link and e.name not in SKIPPED_DIRS]
        stack.extend((shown / e.name, e.real) for e in reversed(subdirs))
    return files


def expand_braces(pattern: str, limit: int = MAX_INCLUDE_PATTERNS) -> list[str]:
    """`*.{ts,tsx}` → `*.ts`, `*.tsx` (fnmatch has no braces), at most `limit` patterns."""
    done: list[str] = []
    pending = [pattern]
    while pending:
        current = pending.pop()
        match = re.search(r"\{([^{}]*)\}", current)
        if match is None:
            done.append(current)
        else:
            head, tail = current[: match.start()], current[match.end() :]
            pending.extend(head + alt + tail for alt in reversed(match.group(1).split(",")))
        if len(done) + len(pending) > limit:
            raise SearchError(f"include expands to more than {limit} patterns: {pattern}")
    return done


def _limit_self(cpu_seconds: float | None) -> None:
    """Bound this child on its own: memory, and CPU time when the caller gave a bound."""
    try:
        import resource
    except ImportError:  # not POSIX: the caller's kill is the only bound
        return
    limits = [(resource.RLIMIT_AS, CHILD_ADDRESS_SPACE_BYTES)]
    if cpu_seconds is not None:
        limits.append((resource.RLIMIT_CPU, math.ceil(cpu_seconds) + 1))
    for kind, value in limits:
        try:
            _soft, hard = resource.getrlimit(kind)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(kind, (value, hard))
        except (ValueError, OSError):
            pass


def main() -> int:
    request = json.loads(sys.stdin.buffer.read())
    timeout = request.get("timeout")
    _limit_self(float(timeout) if isinstance(timeout, int | float) else None)
    try:
        answer = search(request)
    except SearchError as err:
        answer = {"error": str(err)}
    except MemoryError:
        answer = {"error": "The search ran out of memory: narrow it with path or include."}
    except RecursionError as err:
        answer = {"error": f"The search failed: {err}"}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
