"""The session agent's workspace tools: happy paths, confinement, shell, ACP shapes."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from activities.workspace import (
    MAX_FILE_BYTES,
    MAX_OUTPUT_BYTES,
    SEARCH_SCRIPT,
    ToolResult,
    WorkspaceTools,
    describe_call,
    describe_result,
    rejected_result,
    tool_specs,
)
from runtime.llm.contracts import ToolCall
from runtime.workspace.search_child import MAX_INCLUDE_PATTERNS, expand_braces

Args = dict[str, Any]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / ".git").mkdir()
    (root / ".git" / "config.py").write_text("secret_in_git = 1\n")
    (root / "README.md").write_text("# Title\nhello world\n")
    (root / "src" / "main.py").write_text("def main():\n    return 'hello'\n")
    (root / "src" / "pkg" / "util.py").write_text("HELLO = 1\nvalue = HELLO\n")
    (root / "src" / "app.ts").write_text("const hello = 1;\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret hello\n")
    (outside / "leak.py").write_text("hello = 'leak'\n")
    return root


def outside(ws: Path) -> Path:
    return ws.parent / "outside"


def call(tool: str, args: Args, call_id: str = "call_1") -> ToolCall:
    return ToolCall(name=tool, arguments=args, id=call_id)


async def run(ws: Path, tool: str, args: Args, *, shell: bool = False, **kw: Any) -> ToolResult:
    return await WorkspaceTools(ws, shell, **kw).run(call(tool, args))


def text_of(result: ToolResult) -> str:
    assert result.content and result.content[0]["type"] == "content"
    text = result.content[0]["content"]["text"]
    assert isinstance(text, str)
    return text


# -- read --------------------------------------------------------------------


async def test_read_file(ws: Path) -> None:
    for key, value in [
        ("absolute_path", str(ws / "README.md")),
        ("file_path", str(ws / "README.md")),
        ("absolute_path", "README.md"),
    ]:
        result = await run(ws, "read_file", {key: value})
        assert result.status == "completed", result.error
        assert result.output_text == "# Title\nhello world\n"
        assert text_of(result) == result.output_text
        assert result.locations == [{"path": str(ws.resolve() / "README.md")}]
        assert result.error is None


async def test_read_file_slice(ws: Path) -> None:
    (ws / "lines.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await run(ws, "read_file", {"absolute_path": "lines.txt", "offset": 2, "limit": 3})
    assert result.status == "completed"
    assert result.output_text == (
        "Showing lines 3-5 of 10 total lines.\n---\nline 3\nline 4\nline 5\n"
    )


async def test_read_file_errors(ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"\x00\x01\x02")
    cases = {
        "missing.txt": "File not found: missing.txt",
        "src": "Path is a directory: src",
        "blob.bin": "Cannot read binary file: blob.bin",
    }
    for path, error in cases.items():
        result = await run(ws, "read_file", {"absolute_path": path})
        assert result.status == "failed"
        assert result.error == error
        assert result.output_text == f"Error: {error}"
        assert result.content == [{"type": "content", "content": {"type": "text", "text": error}}]
    result = await run(ws, "read_file", {})
    assert result.status == "failed" and "is required" in (result.error or "")
    result = await run(ws, "read_file", {"absolute_path": "README.md", "offset": -1})
    assert result.status == "failed" and "offset" in (result.error or "")
    result = await run(ws, "read_file", {"absolute_path": 42})
    assert result.status == "failed" and "must be a string" in (result.error or "")


async def test_read_file_output_is_bounded(ws: Path) -> None:
    (ws / "big.txt").write_text("é" * 40_000 + "\n")
    result = await run(ws, "read_file", {"absolute_path": "big.txt"})
    assert result.status == "completed"
    assert len(result.output_text.encode()) <= MAX_OUTPUT_BYTES
    assert "output truncated" in result.output_text
    small = await run(ws, "read_file", {"absolute_path": "big.txt"}, max_output_bytes=1000)
    assert len(small.output_text.encode()) <= 1000


async def test_list_directory(ws: Path) -> None:
    result = await run(ws, "list_directory", {"path": str(ws)})
    assert result.status == "completed"
    assert result.output_text == (
        f"Directory listing for {ws.resolve()}:\n[DIR] .git\n[DIR] docs\n[DIR] src\nREADME.md"
    )
    empty = await run(ws, "list_directory", {"path": "docs"})
    assert empty.output_text == f"Directory {ws.resolve() / 'docs'} is empty."
    root = await run(ws, "list_directory", {})
    assert root.status == "completed"
    not_dir = await run(ws, "list_directory", {"path": "README.md"})
    assert not_dir.status == "failed" and not_dir.error == "Path is not a directory: README.md"
    missing = await run(ws, "list_directory", {"path": "nope"})
    assert missing.status == "failed" and missing.error == "Directory not found: nope"


# -- search ------------------------------------------------------------------


async def test_glob(ws: Path) -> None:
    real = ws.resolve()
    result = await run(ws, "glob", {"pattern": "**/*.py"})
    assert result.status == "completed"
    assert result.output_text == (
        f'Found 2 file(s) matching "**/*.py" within {real}:\n'
        f"{real / 'src' / 'main.py'}\n{real / 'src' / 'pkg' / 'util.py'}"
    )
    scoped = await run(ws, "glob", {"pattern": "*.py", "path": "src/pkg"})
    assert scoped.output_text.endswith(str(real / "src" / "pkg" / "util.py"))
    none = await run(ws, "glob", {"pattern": "*.rs"})
    assert none.status == "completed" and none.output_text.startswith("No files found")
    bad = await run(ws, "glob", {"pattern": "/etc/*"})
    assert bad.status == "failed"


async def test_glob_never_reports_outside_paths(ws: Path) -> None:
    (ws / "escape").symlink_to(outside(ws), target_is_directory=True)
    for pattern in ("escape/*", "*/*.txt", "*/*.py", "escape/**/*"):
        result = await run(ws, "glob", {"pattern": pattern})
        assert result.status == "completed", pattern
        assert "secret" not in result.output_text and "leak" not in result.output_text, pattern
    # A `..` segment is refused before any walk (the fence's rule for patterns).
    for pattern in ("../outside/*", "src/../../*", ".."):
        refused = await run(ws, "glob", {"pattern": pattern})
        assert refused.status == "failed", pattern
        assert "`..` segment" in (refused.error or ""), refused.error
    result = await run(ws, "glob", {"pattern": "*", "path": "escape"})
    assert result.status == "failed" and "outside the workspace" in (result.error or "")


async def test_grep_search(ws: Path) -> None:
    result = await run(ws, "grep_search", {"pattern": "hello|HELLO"})
    assert result.status == "completed"
    assert result.output_text == (
        'Found 5 match(es) for pattern "hello|HELLO" in path ".":\n---\n'
        "File: README.md\nL2: hello world\n---\n"
        "File: src/app.ts\nL1: const hello = 1;\n---\n"
        "File: src/main.py\nL2:     return 'hello'\n---\n"
        "File: src/pkg/util.py\nL1: HELLO = 1\nL2: value = HELLO\n---"
    )
    assert ".git" not in result.output_text
    filtered = await run(ws, "grep_search", {"pattern": "hello", "include": "*.{ts,md}"})
    assert "File: src/app.ts" in filtered.output_text
    assert "File: README.md" in filtered.output_text
    assert "main.py" not in filtered.output_text
    assert '(filter: "*.{ts,md}")' in filtered.output_text
    scoped = await run(ws, "grep_search", {"pattern": "HELLO", "path": "src/pkg/util.py"})
    assert "File: src/pkg/util.py" in scoped.output_text
    none = await run(ws, "grep_search", {"pattern": "zzz"})
    assert none.output_text == 'No matches found for pattern "zzz" in path ".".'
    bad = await run(ws, "grep_search", {"pattern": "("})
    assert bad.status == "failed" and "Invalid regular expression" in (bad.error or "")


async def test_grep_skips_symlinks_out(ws: Path) -> None:
    (ws / "leak.py").symlink_to(outside(ws) / "leak.py")
    (ws / "escape").symlink_to(outside(ws), target_is_directory=True)
    result = await run(ws, "grep_search", {"pattern": "hello|leak|secret"})
    assert result.status == "completed"
    assert "File: README.md" in result.output_text
    assert "leak.py" not in result.output_text and "escape" not in result.output_text
    assert "top secret" not in result.output_text and "'leak'" not in result.output_text
    direct = await run(ws, "grep_search", {"pattern": "secret", "path": "../outside"})
    assert direct.status == "failed" and "outside the workspace" in (direct.error or "")


# -- search bounds: nothing a pattern does can hold the worker ------------------

EVIL_REGEX = "(a+)+$"  # backtracks 2^n times over n "a" and a "!"


def search_children() -> list[int]:
    """Live search processes this test process started (Linux /proc)."""
    pids = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue  # the thread ended since the listing: it has no children now
        for pid in children:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if str(SEARCH_SCRIPT).encode() in cmdline:
                pids.append(int(pid))
    return pids


async def test_grep_catastrophic_regex_is_a_tool_error(ws: Path) -> None:
    (ws / "evil.txt").write_text("a" * 64 + "!\n")
    result = await run(ws, "grep_search", {"pattern": EVIL_REGEX}, search_timeout=1.0)
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.startswith("grep_search timed out after 1 s and was stopped")
    assert "backtrack catastrophically" in result.error
    assert result.output_text == f"Error: {result.error}"
    assert search_children() == []
    # The bound covers the whole call: a slow match per file adds up across files.
    (ws / "evil.txt").unlink()
    for i in range(40):
        (ws / f"slow{i:02}.txt").write_text("a" * 23 + "!\n")
    many = await run(ws, "grep_search", {"pattern": EVIL_REGEX}, search_timeout=1.0)
    assert many.status == "failed" and "timed out after 1 s" in (many.error or "")
    # Other searches are unchanged (at the default bound: finishing within 1 s is a timing
    # claim, and a loaded 2-core machine took longer to start the search's child).
    ok = await run(ws, "grep_search", {"pattern": "hello"})
    assert ok.status == "completed" and "File: README.md" in ok.output_text


async def test_glob_nested_globstars_do_not_multiply_the_walk(ws: Path) -> None:
    """`**/**/…/x` is `**/x`: each (directory, pattern position) is visited once, so the
    walk stays linear in the tree (pathlib's own glob took hours on this)."""
    deep = ws / "deep"
    deep.joinpath(*["d"] * 24).mkdir(parents=True)
    deep.joinpath(*["d"] * 24, "x").write_text("found\n")
    result = await run(ws, "glob", {"pattern": "**/" * 12 + "x"}, search_timeout=20.0)
    assert result.status == "completed", result.error
    assert result.output_text.endswith("/".join(["d"] * 24) + "/x")
    assert search_children() == []


async def test_grep_include_brace_bomb_is_refused(ws: Path) -> None:
    include = "{a,b}" * 40
    result = await run(ws, "grep_search", {"pattern": "x", "include": include})
    assert result.status == "failed"
    assert result.error == (
        f"include expands to more than {MAX_INCLUDE_PATTERNS} patterns: {include}"
    )
    assert expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert expand_braces("{a,b}/*.{c,d}") == ["a/*.c", "a/*.d", "b/*.c", "b/*.d"]
    assert expand_braces("*.py") == ["*.py"]


async def test_edit_refuses_a_result_over_the_file_bound(ws: Path) -> None:
    (ws / "many.txt").write_text("a" * 100_000)
    args = {
        "file_path": "many.txt",
        "old_string": "a",
        "new_string": "b" * 100,  # 10^7 characters once replaced everywhere
        "replace_all": True,
    }
    result = await run(ws, "edit", args)
    assert result.status == "failed"
    assert result.error == (
        f"The edit would make many.txt too large (10000000 characters, over {MAX_FILE_BYTES})."
    )
    assert (ws / "many.txt").read_text() == "a" * 100_000
    assert describe_call(ws, call("edit", args))["content"] == []
    ok = await run(ws, "edit", {**args, "new_string": "bb"})
    assert ok.status == "completed" and (ws / "many.txt").read_text() == "bb" * 100_000


async def test_cancelled_search_kills_its_process(ws: Path) -> None:
    (ws / "evil.txt").write_text("a" * 64 + "!\n")
    task = asyncio.create_task(
        run(ws, "grep_search", {"pattern": EVIL_REGEX}, search_timeout=600.0)
    )
    for _ in range(1000):
        if search_children():
            break
        await asyncio.sleep(0.02)
    assert search_children(), "the search process never started"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert search_children() == []


# -- edit --------------------------------------------------------------------


async def test_write_file_new_and_overwrite(ws: Path) -> None:
    target = ws.resolve() / "notes" / "new.txt"
    result = await run(ws, "write_file", {"file_path": str(target), "content": "one\n"})
    assert result.status == "completed"
    assert target.read_text() == "one\n"
    assert result.output_text == f"Successfully created and wrote to new file: {target}."
    assert result.content == [
        {"type": "diff", "path": str(target), "oldText": "", "newText": "one\n"}
    ]
    assert result.locations == [{"path": str(target)}]
    again = await run(ws, "write_file", {"file_path": "notes/new.txt", "content": "two\r\n"})
    assert again.status == "completed"
    assert target.read_bytes() == b"two\r\n"
    assert again.output_text == f"Successfully overwrote file: {target}."
    assert again.content[0]["oldText"] == "one\n" and again.content[0]["newText"] == "two\r\n"
    empty = await run(ws, "write_file", {"file_path": "empty.txt", "content": ""})
    assert empty.status == "completed" and (ws / "empty.txt").read_text() == ""
    onto_dir = await run(ws, "write_file", {"file_path": "src", "content": "x"})
    assert onto_dir.status == "failed" and onto_dir.error == "Path is a directory: src"
    missing = await run(ws, "write_file", {"file_path": "x.txt"})
    assert missing.status == "failed" and "content is required" in (missing.error or "")


async def test_edit(ws: Path) -> None:
    path = ws.resolve() / "src" / "main.py"
    result = await run(
        ws,
        "edit",
        {"file_path": str(path), "old_string": "'hello'", "new_string": "'bye'"},
    )
    assert result.status == "completed", result.error
    assert path.read_text() == "def main():\n    return 'bye'\n"
    assert result.content == [
        {
            "type": "diff",
            "path": str(path),
            "oldText": "def main():\n    return 'hello'\n",
            "newText": "def main():\n    return 'bye'\n",
        }
    ]
    assert result.locations == [{"path": str(path)}]


async def test_edit_not_found_and_ambiguous(ws: Path) -> None:
    util = ws / "src" / "pkg" / "util.py"
    before = util.read_text()
    missing = await run(
        ws, "edit", {"file_path": str(util), "old_string": "nope", "new_string": "x"}
    )
    assert missing.status == "failed"
    assert missing.error == "old_string was not found in src/pkg/util.py."
    ambiguous = await run(
        ws, "edit", {"file_path": str(util), "old_string": "HELLO", "new_string": "BYE"}
    )
    assert ambiguous.status == "failed"
    assert "matches 2 times in src/pkg/util.py" in (ambiguous.error or "")
    assert util.read_text() == before
    same = await run(ws, "edit", {"file_path": str(util), "old_string": "x", "new_string": "x"})
    assert same.status == "failed"
    absent = await run(ws, "edit", {"file_path": "gone.py", "old_string": "a", "new_string": "b"})
    assert absent.status == "failed" and absent.error == "File not found: gone.py"
    exists = await run(ws, "edit", {"file_path": str(util), "old_string": "", "new_string": "b"})
    assert exists.status == "failed" and "already exists" in (exists.error or "")


async def test_edit_replace_all_and_create(ws: Path) -> None:
    util = ws / "src" / "pkg" / "util.py"
    args = {"file_path": str(util), "old_string": "HELLO", "new_string": "BYE", "replace_all": True}
    result = await run(ws, "edit", args)
    assert result.status == "completed"
    assert "(2 replacement(s))" in result.output_text
    assert util.read_text() == "BYE = 1\nvalue = BYE\n"
    created = await run(
        ws, "edit", {"file_path": "fresh/new.py", "old_string": "", "new_string": "x = 1\n"}
    )
    assert created.status == "completed"
    assert (ws / "fresh" / "new.py").read_text() == "x = 1\n"
    assert created.content[0]["oldText"] == "" and created.content[0]["newText"] == "x = 1\n"


# -- confinement -------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"absolute_path": "../outside/secret.txt"}),
        ("read_file", {"absolute_path": "src/../../outside/secret.txt"}),
        ("read_file", {"absolute_path": "{outside}/secret.txt"}),
        ("read_file", {"absolute_path": "/etc/passwd"}),
        ("read_file", {"file_path": "link_file"}),
        ("read_file", {"absolute_path": "link_dir/secret.txt"}),
        ("list_directory", {"path": ".."}),
        ("list_directory", {"path": "link_dir"}),
        ("glob", {"pattern": "*", "path": "{outside}"}),
        ("grep_search", {"pattern": "secret", "path": "link_file"}),
        ("write_file", {"file_path": "../outside/secret.txt", "content": "pwned"}),
        ("write_file", {"file_path": "{outside}/new.txt", "content": "pwned"}),
        ("write_file", {"file_path": "link_file", "content": "pwned"}),
        ("write_file", {"file_path": "link_dir/new.txt", "content": "pwned"}),
        ("edit", {"file_path": "link_file", "old_string": "top", "new_string": "pwned"}),
        ("edit", {"file_path": "../outside/secret.txt", "old_string": "top", "new_string": "x"}),
    ],
)
async def test_paths_outside_the_workspace_fail_untouched(ws: Path, tool: str, args: Args) -> None:
    out = outside(ws)
    (ws / "link_file").symlink_to(out / "secret.txt")
    (ws / "link_dir").symlink_to(out, target_is_directory=True)
    args = {
        k: v.replace("{outside}", str(out)) if isinstance(v, str) else v for k, v in args.items()
    }
    result = await run(ws, tool, args)
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith("Path is outside the workspace")
    assert "top secret" not in result.output_text
    assert (out / "secret.txt").read_text() == "top secret hello\n"
    assert sorted(p.name for p in out.iterdir()) == ["leak.py", "secret.txt"]


async def test_symlinks_inside_the_workspace_are_fine(ws: Path) -> None:
    (ws / "alias.md").symlink_to(ws / "README.md")
    result = await run(ws, "read_file", {"absolute_path": "alias.md"})
    assert result.status == "completed" and "hello world" in result.output_text
    assert result.locations == [{"path": str(ws.resolve() / "README.md")}]
    dotted = await run(ws, "read_file", {"absolute_path": "src/../README.md"})
    assert dotted.status == "completed"


async def test_missing_workspace_and_unknown_tool(ws: Path, tmp_path: Path) -> None:
    gone = await WorkspaceTools(tmp_path / "nope").run(call("read_file", {"absolute_path": "a"}))
    assert gone.status == "failed" and gone.error == "The workspace does not exist."
    unknown = await run(ws, "web_fetch", {"url": "http://x"})
    assert unknown.status == "failed" and unknown.error == 'Tool "web_fetch" not found.'
    nul = await run(ws, "read_file", {"absolute_path": "a\x00b"})
    assert nul.status == "failed"


# -- shell -------------------------------------------------------------------


async def test_shell_disabled(ws: Path) -> None:
    result = await run(ws, "run_shell_command", {"command": "touch made.txt"})
    assert result.status == "failed"
    assert result.error == "run_shell_command is disabled on this daemon."
    assert not (ws / "made.txt").exists()


async def test_shell_output_and_exit_status(ws: Path) -> None:
    result = await run(
        ws,
        "run_shell_command",
        {"command": "touch shell_made.txt && pwd && echo oops >&2", "description": "marker"},
        shell=True,
    )
    assert result.status == "completed", result.error
    assert (ws / "shell_made.txt").exists()
    assert result.output_text == (
        "Command: touch shell_made.txt && pwd && echo oops >&2\n"
        "Directory: (root)\n"
        f"Output: {ws.resolve()}\noops\n"
        "Exit Code: 0"
    )
    assert text_of(result) == result.output_text
    failing = await run(ws, "run_shell_command", {"command": "exit 3"}, shell=True)
    assert failing.status == "completed"
    assert failing.output_text.endswith("Output: (empty)\nExit Code: 3")


async def test_shell_environment_has_no_secrets(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-leak")
    result = await run(
        ws, "run_shell_command", {"command": "echo key=$OPENAI_API_KEY; env"}, shell=True
    )
    assert result.status == "completed"
    assert "sk-do-not-leak" not in result.output_text
    assert "key=\n" in result.output_text


async def test_shell_timeout_kills_the_command(ws: Path) -> None:
    result = await run(
        ws,
        "run_shell_command",
        {"command": "echo started; sleep 30; touch late.txt"},
        shell=True,
        shell_timeout=0.5,
    )
    assert result.status == "failed"
    assert result.error == "Command timed out after 0.5s and was killed."
    assert "started" in result.output_text
    assert not (ws / "late.txt").exists()


async def test_shell_output_is_bounded(ws: Path) -> None:
    result = await run(
        ws,
        "run_shell_command",
        {"command": "head -c 200000 /dev/zero | tr '\\0' 'a'"},
        shell=True,
    )
    assert result.status == "completed"
    assert len(result.output_text.encode()) <= MAX_OUTPUT_BYTES
    assert "output truncated" in result.output_text
    assert "Exit Code: 0" in result.output_text or "truncated" in result.output_text


async def test_shell_background_children_do_not_outlive_the_call(ws: Path) -> None:
    result = await run(
        ws,
        "run_shell_command",
        {"command": "(sleep 1; touch late.txt) > /dev/null 2>&1 & echo $!"},
        shell=True,
    )
    assert result.status == "completed"
    pid = int(result.output_text.split("Output: ")[1].split("\n")[0])
    await asyncio.sleep(1.5)
    assert not (ws / "late.txt").exists()
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():  # killed, maybe not yet reaped by its new parent
        assert stat.read_text().split(")")[-1].split()[0] == "Z"


# -- ACP shapes (reference findings_A.json perm1 / perm2) --------------------


def test_describe_call_write_new_file(ws: Path) -> None:
    path = str(ws.resolve() / "from_model_43c4ed9d.txt")
    raw = {"file_path": path, "content": "written by the fake model\n"}
    shape = describe_call(ws, call("write_file", raw, "call_1db28ab2"))
    assert shape == {
        "_meta": {"toolName": "write_file"},
        "content": [
            {
                "newText": "written by the fake model\n",
                "oldText": "",
                "path": path,
                "type": "diff",
            }
        ],
        "kind": "edit",
        "locations": [{"path": path}],
        "rawInput": {"file_path": path, "content": "written by the fake model\n"},
        "status": "pending",
        "title": "Writing to from_model_43c4ed9d.txt",
        "toolCallId": "call_1db28ab2",
    }
    assert not Path(path).exists()


def test_describe_call_shell(ws: Path) -> None:
    raw = {"command": "touch shell_made.txt", "description": "create a marker file"}
    assert describe_call(ws, call("run_shell_command", raw, "call_b8d9ccd2")) == {
        "_meta": {"toolName": "run_shell_command"},
        "content": [],
        "kind": "execute",
        "locations": [],
        "rawInput": raw,
        "status": "pending",
        "title": "touch shell_made.txt (create a marker file)",
        "toolCallId": "call_b8d9ccd2",
    }
    bare = describe_call(ws, call("run_shell_command", {"command": "ls"}))
    assert bare["title"] == "ls"


def test_describe_call_edit_and_overwrite_previews(ws: Path) -> None:
    main = ws.resolve() / "src" / "main.py"
    shape = describe_call(
        ws, call("edit", {"file_path": str(main), "old_string": "'hello'", "new_string": "'bye'"})
    )
    assert shape["kind"] == "edit" and shape["status"] == "pending"
    assert shape["title"] == "src/main.py: 'hello' => 'bye'"
    assert shape["content"] == [
        {
            "type": "diff",
            "path": str(main),
            "oldText": "def main():\n    return 'hello'\n",
            "newText": "def main():\n    return 'bye'\n",
        }
    ]
    assert main.read_text() == "def main():\n    return 'hello'\n"  # a preview only
    overwrite = describe_call(ws, call("write_file", {"file_path": "README.md", "content": "x"}))
    assert overwrite["content"][0]["oldText"] == "# Title\nhello world\n"
    assert overwrite["title"] == "Writing to README.md"
    failing = describe_call(
        ws, call("edit", {"file_path": str(main), "old_string": "zzz", "new_string": "y"})
    )
    assert failing["content"] == [] and failing["locations"] == [{"path": str(main)}]


def test_describe_call_reads_and_searches(ws: Path) -> None:
    read = describe_call(ws, call("read_file", {"absolute_path": str(ws / "README.md")}))
    assert (read["kind"], read["title"]) == ("read", "README.md")
    assert read["locations"] == [{"path": str(ws.resolve() / "README.md")}]
    assert read["content"] == []
    listing = describe_call(ws, call("list_directory", {"path": str(ws)}))
    assert (listing["kind"], listing["title"]) == ("read", ".")
    glob = describe_call(ws, call("glob", {"pattern": "**/*.py", "path": "src"}))
    assert (glob["kind"], glob["title"]) == ("search", "'**/*.py' within src")
    grep = describe_call(ws, call("grep_search", {"pattern": "x", "include": "*.py"}))
    assert (grep["kind"], grep["title"]) == ("search", "'x' (filter: \"*.py\")")


def test_describe_call_outside_never_reads(ws: Path) -> None:
    (ws / "link_file").symlink_to(outside(ws) / "secret.txt")
    for target in ("../outside/secret.txt", "link_file", str(outside(ws) / "secret.txt")):
        shape = describe_call(ws, call("write_file", {"file_path": target, "content": "x"}))
        assert shape["locations"] == [] and shape["content"] == []
        assert shape["title"] == f"Writing to {target}"
        assert "top secret" not in str(shape)


def test_describe_result_shapes() -> None:
    inv = call("run_shell_command", {"command": "touch x"}, "call_b8d9ccd2")
    # findings_A.json event 28: the update after a rejection.
    assert describe_result(inv, rejected_result("run_shell_command")) == {
        "_meta": {"toolName": "run_shell_command"},
        "content": [
            {
                "content": {
                    "text": 'Tool "run_shell_command" was canceled by the user.',
                    "type": "text",
                },
                "type": "content",
            }
        ],
        "status": "failed",
        "toolCallId": "call_b8d9ccd2",
    }
    done = ToolResult(status="completed", output_text="ok", locations=[{"path": "/w/a"}])
    update = describe_result(call("write_file", {}, "c2"), done)
    assert update["status"] == "completed" and update["locations"] == [{"path": "/w/a"}]


# -- specs and the activity --------------------------------------------------


def test_tool_specs() -> None:
    names = [s.name for s in tool_specs(False)]
    assert names == ["read_file", "list_directory", "glob", "grep_search", "write_file", "edit"]
    specs = {s.name: s for s in tool_specs(True)}
    assert list(specs)[-1] == "run_shell_command"
    for spec in specs.values():
        jsonschema.Draft202012Validator.check_schema(spec.parameters)
        assert spec.description
    samples: dict[str, Args] = {
        "read_file": {"absolute_path": "/w/a.txt", "offset": 0, "limit": 10},
        "list_directory": {"path": "/w"},
        "glob": {"pattern": "**/*.py", "path": "/w"},
        "grep_search": {"pattern": "x", "path": "/w", "include": "*.py"},
        "write_file": {"file_path": "/w/a.txt", "content": "written by the fake model\n"},
        "edit": {"file_path": "/w/a.txt", "old_string": "a", "new_string": "b"},
        "run_shell_command": {
            "command": "touch shell_made.txt",
            "description": "create a marker file",
        },
    }
    for name, sample in samples.items():
        jsonschema.validate(sample, specs[name].parameters)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"file_path": "/w/a"}, specs["write_file"].parameters)


# -- the file routes' code path (runtime.workspace.fs / text) -----------------------------


async def test_tools_keep_crlf_and_bom_like_the_file_routes(ws: Path) -> None:
    target = ws / "win.txt"
    target.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    read = await run(ws, "read_file", {"absolute_path": str(target)})
    assert text_of(read) == "one\ntwo\n"  # no BOM, `\n` lines: what GET /file shows
    edit = await run(
        ws, "edit", {"file_path": str(target), "old_string": "one\ntwo", "new_string": "1\n2"}
    )
    assert edit.status == "completed", edit.error
    assert target.read_bytes() == b"\xef\xbb\xbf1\r\n2\r\n"
    write = await run(ws, "write_file", {"file_path": str(target), "content": "a\nb\n"})
    assert write.status == "completed", write.error
    assert target.read_bytes() == b"\xef\xbb\xbfa\r\nb\r\n"
    assert [p.name for p in ws.iterdir() if p.name.endswith(".tmp")] == []


async def test_tools_refuse_an_intermediate_directory_symlink_out(ws: Path) -> None:
    os.symlink(outside(ws), ws / "out_dir")
    for tool, args in [
        ("read_file", {"absolute_path": "out_dir/secret.txt"}),
        ("write_file", {"file_path": "out_dir/new.txt", "content": "x"}),
        ("edit", {"file_path": "out_dir/secret.txt", "old_string": "top", "new_string": "x"}),
    ]:
        result = await run(ws, tool, args)
        assert result.status == "failed" and "outside the workspace" in (result.error or "")
    assert (outside(ws) / "secret.txt").read_text() == "top secret hello\n"
    assert not (outside(ws) / "new.txt").exists()


async def test_tools_refuse_to_edit_a_binary_file(ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"ab\x00cd")
    result = await run(ws, "edit", {"file_path": "blob.bin", "old_string": "ab", "new_string": "x"})
    assert result.status == "failed" and "binary" in (result.error or "")
    assert (ws / "blob.bin").read_bytes() == b"ab\x00cd"
