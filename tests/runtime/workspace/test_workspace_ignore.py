"""The `.gitignore` matcher (runtime/workspace/ignore.py): git's semantics, no backtracking.

- on thousands of generated patterns and paths, it says what `pathspec.GitIgnoreSpec`
  (git's semantics, the matcher agentrt used before) says;
- the issue's catastrophic line (`*a*a*a*a*a*a*a*a*a*a*a*a*b` against 40 `a`s, minutes
  in a backtracking regex) and its cousins across components are matched at once (run on
  a daemon thread joined with a bound: a regression fails, it never hangs the suite);
- the file is read through the fence: a symlink is not followed, a FIFO is not opened.
"""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path
from typing import Any

import pathspec
import pytest

from runtime.workspace.fence import Fence
from runtime.workspace.ignore import (
    MAX_PATH_CHARS,
    Ignore,
    compile_lines,
    matched_ignore,
    parse,
    workspace_rules,
)

CATASTROPHIC = "*a*a*a*a*a*a*a*a*a*a*a*a*b"
BOUND_SECONDS = 60.0


def bounded(call: Any) -> Any:
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.setdefault("value", call()), daemon=True)
    worker.start()
    worker.join(BOUND_SECONDS)
    assert not worker.is_alive(), f"matching took more than {BOUND_SECONDS} s"
    return box["value"]


def ignored(lines: list[str], path: str) -> bool:
    return Ignore(compile_lines(lines), budget=60).ignored(path)


ATOMS = ["a", "b", ".", "*", "?", "[ab]", "[a-b]", "\\*", "x"]
COMPONENTS = ["a", "b", "ab", "ba", "a.b", ".a", "aa", "bb", "*", "b.a", "x", "axb"]


def _pattern(rng: random.Random) -> str:
    segments = []
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.15:
            segments.append("**")
        elif roll < 0.25:
            segments.append("*")
        else:
            segments.append("".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 4))))
    pattern = "/".join(segments)
    if rng.random() < 0.2:
        pattern = "/" + pattern
    if rng.random() < 0.25:
        pattern += "/"
    if rng.random() < 0.25:
        pattern = "!" + pattern
    return pattern


def _path(rng: random.Random) -> str:
    path = "/".join(rng.choice(COMPONENTS) for _ in range(rng.randint(1, 5)))
    return path + ("/" if rng.random() < 0.3 else "")


@pytest.mark.parametrize("seed", range(4))
def test_it_agrees_with_pathspec_on_generated_patterns(seed: int) -> None:
    rng = random.Random(seed)
    compared = 0
    for _ in range(600):
        lines = [_pattern(rng) for _ in range(rng.randint(1, 4))]
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        mine = Ignore(compile_lines(lines), budget=60)
        for _ in range(12):
            path = _path(rng)
            assert mine.ignored(path) == spec.match_file(path), (lines, path)
            compared += 1
    assert compared == 600 * 12


REAL = """
# a real-world .gitignore
__pycache__/
*.py[cod]
/build/
dist/
*.egg-info/
.venv
node_modules/
!node_modules/keep.js
logs/**/*.log
docs/**/
/anchored.txt
**/deep/*.tmp
"""
# A space quoted with a backslash stays; trailing spaces do not.
QUOTED = ["foo\\ ", "trailing   "]


@pytest.mark.parametrize(
    "path",
    [
        "__pycache__/",
        "pkg/__pycache__/x.pyc",
        "a.pyc",
        "src/a.pyo",
        "a.py",
        "build/",
        "build/out.o",
        "src/build/x",
        "dist/x",
        "pkg.egg-info/",
        ".venv",
        ".venv/bin/python",
        "node_modules/x.js",
        "node_modules/keep.js",
        "logs/a.log",
        "logs/x/y/a.log",
        "logs/a.txt",
        "docs/x/",
        "docs/x/y.md",
        "foo ",
        "foo",
        "trailing",
        "anchored.txt",
        "sub/anchored.txt",
        "a/deep/b.tmp",
        "deep/b.tmp",
    ],
)
def test_a_real_gitignore_means_what_git_says(path: str) -> None:
    lines = REAL.splitlines() + QUOTED
    assert ignored(lines, path) == pathspec.GitIgnoreSpec.from_lines(lines).match_file(path)


def test_the_catastrophic_pattern_is_matched_at_once() -> None:
    rules = compile_lines(
        [CATASTROPHIC, "**/a/**/a/**/a/**/a/**/a/**/a/**/b", "*a*a*a*a*a*a*a*a*b/"]
    )
    ignore = Ignore(rules, budget=60)
    assert bounded(lambda: ignore.matched("a" * 40)) is None
    assert bounded(lambda: ignore.matched("a" * 255)) is None
    assert bounded(lambda: ignore.matched("/".join(["a"] * 200))) is None
    assert bounded(lambda: ignore.matched("a" * 40 + "b")) == "file"
    assert bounded(lambda: ignore.matched("/".join(["a"] * 20) + "/b")) == "file"


def test_lines_git_drops_are_dropped_alone() -> None:
    """pathspec raised on these and failed the whole file (a 500 on every /file)."""
    for line in ("foo\\", "[z-a]", "a[b", "!", "", "# comment", "/"):
        assert parse(line) is None, line
    rules = compile_lines(["foo\\", "*.log", "[z-a]"])
    assert Ignore(rules).ignored("x.log") and not Ignore(rules).ignored("foo")


def test_a_pattern_longer_than_any_path_is_dropped_soundly() -> None:
    assert parse("a" * (MAX_PATH_CHARS + 1)) is None
    assert parse("*a" * (MAX_PATH_CHARS + 1)) is None
    assert parse("*a" * 100) is not None


def test_a_bracket_never_matches_a_slash() -> None:
    """Git's rule (pathspec's `[!b]` matched `/`)."""
    assert not ignored(["a[!b]c"], "a/c")
    assert ignored(["a[!b]c"], "adc")


def test_the_budget_of_a_request_ends_the_matching() -> None:
    ignore = Ignore(compile_lines(["*.log"]), budget=0)
    assert ignore.matched("x.log") is None
    assert ignore.exhausted


def test_the_file_is_read_through_the_fence(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "outside").write_text("secret\n")
    fence = Fence.of(ws)
    (ws / ".gitignore").symlink_to(tmp_path / "outside")
    assert workspace_rules(fence) == ()
    (ws / ".gitignore").unlink()
    os.mkfifo(ws / ".gitignore")
    try:
        assert bounded(lambda: workspace_rules(fence)) == ()
    finally:
        (ws / ".gitignore").unlink()
    (ws / ".gitignore").write_text("*.log\nbuild/\n")
    assert matched_ignore(fence, "a.log") == "file"
    assert matched_ignore(fence, "build/x.txt") == "directory"
    assert matched_ignore(fence, "build", is_dir=True) == "file"
    assert matched_ignore(fence, "src/a.py") is None
    (ws / ".gitignore").write_text("x" * (1024 * 1024 + 1))
    assert workspace_rules(fence) == ()
