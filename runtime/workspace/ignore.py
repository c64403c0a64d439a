"""Which workspace paths the workspace's `.gitignore` ignores (`matchedIgnore`, `ignored`).

Spec 002: an explicit read or write of an ignored path is allowed (the caller named it);
answers say so with `matchedIgnore: "file"` (the path itself matches) or `"directory"`
(a directory above it does), and `/list` flags ignored entries. The patterns are those
of the `.gitignore` at the workspace root, in git's syntax, read through the workspace
fence when it is a regular file of at most 1 MiB (a symlink is not followed, a FIFO is
not opened); nested `.gitignore` files and git's global excludes are not read. It reads
a file: call it off the event loop.

**No pattern can stall the process.** The file is workspace content, and the API matches
it on every `/file`, `/list` and `/file/write`, so a pattern must never backtrack
catastrophically (`*a*a*a*a*a*a*a*a*a*a*a*a*b` against a long name of `a`s takes
minutes in a naive regex, holding the GIL). Each line is parsed as git (and `pathspec`,
whose `GitIgnoreSpec` semantics these follow, rule for rule) parses it, then compiled to
a regular expression in which no part can be retried once it has matched:

- inside a path component, `F0*F1*…*Fk` becomes `F0`, then each middle `Fi` at its
  *earliest* occurrence (`(?>[^/]*?Fi)`, an atomic group), then `[^/]*Fk` at the end of
  the component: the matching of a flat glob (fnmatch's own fix of this blow-up, bpo
  40480). Taking the earliest occurrence loses no match: a later one only leaves less
  room for what follows, and a `*` accepts anything in between;
- across components, `**` is the same star over whole components, so each block of
  components between two `**` is taken at its earliest occurrence too, and only the last
  block may be retried (one position per component) to end the path.

A match then costs at most (path length × pattern length) steps, every real `.gitignore`
means what git says it means, and a pattern that could only match a path longer than
`PATH_MAX` (it needs more characters than any path has) is dropped, soundly. On top, one
request spends at most `MATCH_BUDGET_SECONDS` matching: past it (a 1 MiB file of costly
patterns), the remaining paths are reported not ignored and a warning is logged.
Differences from `pathspec`, all towards git: a bracket expression never matches `/`, a
line ending in an unpaired `\\` matches nothing instead of failing the whole file, and an
invalid range (`[z-a]`) drops its line only.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from runtime.workspace.fence import Fence, read_fd
from runtime.workspace.file_errors import FileError

log = logging.getLogger(__name__)

MatchedIgnore = Literal["file", "directory"] | None

MAX_GITIGNORE_BYTES: Final = 1024 * 1024
MAX_PATH_CHARS: Final = 4096  # PATH_MAX: no path a pattern is matched against is longer
MATCH_BUDGET_SECONDS: Final = 2.0

# Whole components before a block, fewest first (atomic use) or most first (the last block).
_SKIP_FEWEST: Final = "(?:[^/]++/)*?"
_SKIP_MOST: Final = "(?:[^/]++/)*"
_END: Final = r"\Z"


class _Invalid(ValueError):
    """A line git would not match anything with (it is dropped)."""


@dataclass(frozen=True)
class Rule:
    """One pattern line. `include` is True for an ignore line, False for a `!` negation.

    `whole` matches when the pattern matches the path itself (git's file match, which wins
    over any directory match); `directory` when it matches a directory above the path
    only (pathspec's directory mark)."""

    line: str
    include: bool
    whole: re.Pattern[str] | None
    directory: re.Pattern[str] | None

    def priority(self, path: str) -> int:
        """2: the path itself matches; 1: a directory above it does; 0: no match."""
        if self.whole is not None and self.whole.match(path):
            return 2
        if self.directory is not None and self.directory.match(path):
            return 1
        return 0


def parse(line: str) -> Rule | None:
    """The rule of one `.gitignore` line, None for a blank, a comment or a line git drops."""
    pattern = _trim_trailing_spaces(line)
    if not pattern or pattern.startswith("#") or pattern == "/":
        return None
    include = not pattern.startswith("!")
    if not include:
        pattern = pattern[1:]
    segments = pattern.split("/")
    is_dir = not segments[-1]
    try:
        whole, directory = _translate(segments, is_dir)
        return Rule(
            line=line,
            include=include,
            whole=None if whole is None else re.compile(whole, re.DOTALL),
            directory=None if directory is None else re.compile(directory, re.DOTALL),
        )
    except (_Invalid, re.error, OverflowError, RecursionError):
        return None


def _trim_trailing_spaces(line: str) -> str:
    """Git's rule: trailing spaces go, unless quoted with a backslash (`foo\\ `)."""
    end = len(line)
    while end > 0 and line[end - 1] == " ":
        backslashes = 0
        i = end - 2
        while i >= 0 and line[i] == "\\":
            backslashes += 1
            i -= 1
        if backslashes % 2 == 1:
            break  # the last space is escaped: it stays, and so does all before it
        end -= 1
    return line[:end]


def _translate(segments: list[str], is_dir: bool) -> tuple[str | None, str | None]:
    """(whole, directory) regular expressions of a pattern's `/`-separated segments,
    normalized as `pathspec.patterns.gitignore.spec.GitIgnoreSpecPattern` does."""
    if not segments[0]:
        del segments[0]  # a leading `/` anchors the pattern at the root
    elif len(segments) == 1 or (len(segments) == 2 and not segments[1]):
        if segments[0] != "**":
            segments.insert(0, "**")  # one segment: at any depth
    if not segments:
        raise _Invalid("nothing left")
    if not segments[-1]:
        segments[-1] = "**"  # a trailing `/`: everything below
    collapsed: list[str] = []
    for segment in segments:
        if not (segment == "**" and collapsed and collapsed[-1] == "**"):
            collapsed.append(segment)
    segments = collapsed
    any_path, slash = r".", r"[^/]*+/"
    if segments == ["**"]:
        return (None, slash) if is_dir else (any_path, None)
    if segments == ["**", "*"]:
        return any_path, None
    if segments == ["**", "*", "**"]:
        return (None, slash) if is_dir else (slash, None)
    lead = segments[0] == "**"
    trail = segments[-1] == "**"
    body = segments[1 if lead else 0 : len(segments) - 1 if trail else len(segments)]
    blocks: list[list[str]] = [[]]
    needed = 0
    for segment in body:
        if segment == "**":
            blocks.append([])
            continue
        regex, length = _segment(segment)
        blocks[-1].append(regex)
        needed += length + 1
    if needed > MAX_PATH_CHARS + 1:
        raise _Invalid("it needs a longer path than any there is")
    joined = ["/".join(block) for block in blocks]
    earliest = f"(?>{_SKIP_FEWEST if lead else ''}{joined[0]})"
    earliest += "".join(f"(?>/{_SKIP_FEWEST}{block})" for block in joined[1:])
    if trail:
        return (None, earliest + "/") if is_dir else (earliest + "/", None)
    if len(joined) == 1:
        last = f"{_SKIP_MOST if lead else ''}{joined[0]}{_END}"
    else:
        before = f"(?>{_SKIP_FEWEST if lead else ''}{joined[0]})"
        before += "".join(f"(?>/{_SKIP_FEWEST}{block})" for block in joined[1:-1])
        last = f"{before}/{_SKIP_MOST}{joined[-1]}{_END}"
    return last, earliest + "/"


def _segment(glob: str) -> tuple[str, int]:
    """A regular expression matching exactly one whole path component, never retried
    once matched, and the fewest characters it needs."""
    if glob == "*":
        return "[^/]++", 1
    pieces: list[list[str]] = [[]]
    needed = 0
    i, end = 0, len(glob)
    while i < end:
        char = glob[i]
        i += 1
        if char == "\\":
            if i == end:
                raise _Invalid("a trailing backslash escapes nothing")
            pieces[-1].append(re.escape(glob[i]))
            i += 1
            needed += 1
        elif char == "*":
            if pieces[-1] or len(pieces) == 1:
                pieces.append([])
        elif char == "?":
            pieces[-1].append("[^/]")
            needed += 1
        elif char == "[":
            regex, i = _bracket(glob, i)
            pieces[-1].append(regex)
            needed += 1
        else:
            pieces[-1].append(re.escape(char))
            needed += 1
    texts = ["".join(piece) for piece in pieces]
    if len(texts) == 1:
        return texts[0] + "(?![^/])", needed
    middle = "".join(f"(?>[^/]*?{text})" for text in texts[1:-1])
    tail = f"[^/]*{texts[-1]}" if texts[-1] else "[^/]*+"
    return f"(?>{texts[0]}{middle}{tail}(?![^/]))", needed


def _bracket(glob: str, i: int) -> tuple[str, int]:
    """The class of a bracket expression opening before `glob[i]`, and the index past it.
    Found as `pathspec` finds it (`[]a]`, `[!]a]`); an unclosed one drops the line, as git
    does. It never matches `/`."""
    end = len(glob)
    j = i
    if j < end and glob[j] in "!^":
        j += 1
    if j < end and glob[j] == "]":
        j += 1
    while j < end and glob[j] != "]":
        j += 1
    if j >= end:
        raise _Invalid("unclosed bracket expression")
    negate = glob[i] in "!^"
    content = glob[i + 1 if negate else i : j]
    chars: list[str] = []
    for k, char in enumerate(content):
        if char == "-" and 0 < k < len(content) - 1:
            chars.append("-")  # a range
        else:
            chars.append(re.escape(char))
    body = "".join(chars)
    return (f"[^/{body}]" if negate else f"[{body}]"), j + 1


def compile_lines(lines: list[str]) -> tuple[Rule, ...]:
    return tuple(rule for rule in (parse(line) for line in lines) if rule is not None)


# Compiled files by (path, device, inode, mtime, size): an edited .gitignore is read again.
_COMPILED: OrderedDict[tuple[str, int, int, int, int], tuple[Rule, ...]] = OrderedDict()
_COMPILED_GUARD = threading.Lock()
_COMPILED_MAX = 32


def workspace_rules(fence: Fence) -> tuple[Rule, ...]:
    """The rules of the root `.gitignore`: none when it is absent, not a regular file of
    the workspace itself (a symlink is never followed), or larger than 1 MiB."""
    path = fence.root / ".gitignore"
    try:
        with fence.open(path) as fd:
            info = os.fstat(fd)
            if info.st_size > MAX_GITIGNORE_BYTES:
                return ()
            key = (str(path), info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)
            with _COMPILED_GUARD:
                if key in _COMPILED:
                    _COMPILED.move_to_end(key)
                    return _COMPILED[key]
            data = read_fd(fd, MAX_GITIGNORE_BYTES + 1)
    except (FileError, OSError):
        return ()
    if len(data) > MAX_GITIGNORE_BYTES:
        return ()
    rules = compile_lines(data.decode("utf-8", errors="replace").splitlines())
    with _COMPILED_GUARD:
        _COMPILED[key] = rules
        while len(_COMPILED) > _COMPILED_MAX:
            _COMPILED.popitem(last=False)
    return rules


class Ignore:
    """The workspace's `.gitignore` for one request (at most `budget` seconds of matching)."""

    def __init__(self, rules: tuple[Rule, ...], *, budget: float = MATCH_BUDGET_SECONDS) -> None:
        self.rules = rules
        self.deadline = time.monotonic() + budget
        self.exhausted = False

    @classmethod
    def of(cls, fence: Fence, *, budget: float = MATCH_BUDGET_SECONDS) -> Ignore:
        return cls(workspace_rules(fence), budget=budget)

    def ignored(self, path: str) -> bool:
        """Git's verdict on the normalized relative `path` (a trailing `/` for a
        directory): the last rule matching the path itself decides, else the last rule
        matching a directory above it (pathspec's `GitIgnoreSpec`)."""
        if self.exhausted:
            return False
        if time.monotonic() > self.deadline:
            self.exhausted = True
            log.warning(
                "the workspace .gitignore took more than %.1f s to match in one request: "
                "the remaining paths are reported not ignored",
                MATCH_BUDGET_SECONDS,
            )
            return False
        above: bool | None = None
        for rule in reversed(self.rules):
            priority = rule.priority(path)
            if priority == 2:
                return rule.include
            if priority == 1 and above is None:
                above = rule.include
        return bool(above)

    def matched(self, relative: str, *, is_dir: bool = False) -> MatchedIgnore:
        """How the `.gitignore` matches the workspace-relative `relative`."""
        if not self.rules or relative in ("", "."):
            return None
        parts = Path(relative).parts
        for depth in range(1, len(parts)):
            if self.ignored("/".join(parts[:depth]) + "/"):
                return "directory"
        return "file" if self.ignored(relative + ("/" if is_dir else "")) else None


def matched_ignore(fence: Fence, relative: str, *, is_dir: bool = False) -> MatchedIgnore:
    """How the workspace's `.gitignore` matches `relative` (one path: one budget)."""
    return Ignore.of(fence).matched(relative, is_dir=is_dir)
