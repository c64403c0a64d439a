"""The CPU-bound part of the search tools (`glob`, `grep_search`), run in a child process.

A regular expression can backtrack catastrophically (`(a+)+$` over a long line of `a`)
and CPython's `re` holds the GIL while it matches, so a search run on a thread of the
worker freezes every workflow and activity of the process; nested `**` in a glob, or an
`include` full of `{a,b}` braces, can burn the CPU for hours in pure Python. So
`WorkspaceTools` runs them here, in a separate interpreter it kills when the time bound
of the call is over (`run_search`), and the worker's event loop never waits on them.

This module imports only the standard library: the child starts as
`python -I workspace_search.py`, reads one JSON request on stdin and writes one JSON
answer on stdout, `{"error": message}` for a failure the model should read. The child
also bounds itself (address space, CPU seconds), so that it dies on its own if the
worker that started it dies first.

Requests (`root` and `base` are real paths the caller already confined to the
workspace; results never leave `root`):

- `{"op": "glob", "root", "base", "pattern"}` → `{"paths": [...], "more": bool}`
- `{"op": "grep", "root", "base", "pattern", "include"}` →
  `{"matches": {rel: ["L<n>: line", ...]}, "count": int}`
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any, Final

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
    root = Path(str(request["root"]))
    base = Path(str(request["base"]))
    pattern = str(request["pattern"])
    if op == "glob":
        return glob_files(root, base, pattern)
    if op == "grep":
        include = request.get("include")
        return grep(root, base, pattern, include if isinstance(include, str) else None)
    raise SearchError(f"Unknown search: {op!r}")


def glob_files(root: Path, base: Path, pattern: str) -> dict[str, Any]:
    found: list[Path] = []
    more = False
    try:
        for match in base.glob(pattern):
            if SKIPPED_DIRS.intersection(match.relative_to(base).parts):
                continue
            if not match.is_file() or not _inside(root, match):
                continue
            if len(found) == MAX_GLOB_RESULTS:
                more = True
                break
            found.append(Path(os.path.realpath(match)))
    except (NotImplementedError, ValueError) as err:
        raise SearchError(f"Invalid glob pattern: {err}") from err
    return {"paths": [str(p) for p in sorted(set(found))], "more": more}


def grep(root: Path, base: Path, pattern: str, include: str | None) -> dict[str, Any]:
    try:
        regex = re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as err:
        raise SearchError(f"Invalid regular expression: {err}") from err
    filters = expand_braces(include) if include else []
    matches: dict[str, list[str]] = {}
    count = 0
    for path in _grep_files(root, base):
        rel = "." if path == root else path.relative_to(root).as_posix()
        if filters and not any(
            fnmatch.fnmatch(path.name, f) or fnmatch.fnmatch(rel, f) for f in filters
        ):
            continue
        try:
            if path.stat().st_size > MAX_GREP_FILE_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
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


def _grep_files(root: Path, base: Path) -> list[Path]:
    if base.is_file():
        return [base]
    files: list[Path] = []
    for current, dirs, names in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(names):
            path = Path(current) / name
            if path.is_symlink() and not _inside(root, path):
                continue
            files.append(path)
            if len(files) >= MAX_GREP_FILES:
                return files
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


def _inside(root: Path, path: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == root or root in real.parents


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
