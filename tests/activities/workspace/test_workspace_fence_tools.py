"""The session agent's tools behind the workspace fence (issue 18, items 2, 3 and 5):

- with the data dir inside the workspace (`--workspace .`, the default `.data`),
  `read_file`, `grep_search`, `glob` and `list_directory` never show its files, and
  `write_file` / `edit` never touch them;
- a FIFO is a tool error at once for `read_file`, the planning of `write_file` / `edit`
  (the preview, the target hash, the exactly-once run) and is skipped by `grep_search`:
  six of them at once no longer lose six threads;
- `glob` refuses `..` segments;
- over the process's search-children cap a tool call waits for a slot within its time
  bound (and says so when none came).

Nothing waits without a bound: a FIFO left blocking is released by opening its other end.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from activities.workspace import (
    ToolResult,
    WorkspaceTools,
    describe_call,
    run_once,
    target_hash,
)
from runtime.llm.contracts import ToolCall
from runtime.store import Store
from runtime.store.operations import OperationLedger
from runtime.workspace import search

BOUND = 30.0
SECRET = "gho_secret_token"
T = TypeVar("T")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hello')\n")
    credentials = root / ".data" / "credentials"
    credentials.mkdir(parents=True)
    (credentials / "github.json").write_text(f'{{"access_token": "{SECRET}"}}\n')
    (root / ".data" / "agentrt.db").write_text(f"store {SECRET}\n")
    return root


def tools(ws: Path, **kw: Any) -> WorkspaceTools:
    return WorkspaceTools(ws, data_dir=ws / ".data", **kw)


def call(tool: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name=tool, arguments=args, id="call_1")


async def bounded(work: Awaitable[T], *fifos: Path) -> T:
    try:
        return await asyncio.wait_for(work, BOUND)
    finally:
        for fifo in fifos:
            for _ in range(8):
                try:
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    break


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"absolute_path": ".data/credentials/github.json"}),
        ("read_file", {"absolute_path": "{ws}/.data/agentrt.db"}),
        ("list_directory", {"path": ".data/credentials"}),
        ("grep_search", {"pattern": "token", "path": ".data"}),
        ("glob", {"pattern": "*", "path": ".data/credentials"}),
        ("write_file", {"file_path": ".data/credentials/evil.json", "content": "x"}),
        ("edit", {"file_path": ".data/agentrt.db", "old_string": "store", "new_string": "x"}),
    ],
)
async def test_the_data_dir_is_refused_by_every_tool(
    ws: Path, tool: str, args: dict[str, Any]
) -> None:
    args = {k: v.replace("{ws}", str(ws)) if isinstance(v, str) else v for k, v in args.items()}
    result = await bounded(tools(ws).run(call(tool, args)))
    assert result.status == "failed"
    assert "data directory" in (result.error or ""), result.error
    assert SECRET not in result.output_text
    assert not (ws / ".data" / "credentials" / "evil.json").exists()
    assert (ws / ".data" / "agentrt.db").read_text() == f"store {SECRET}\n"


async def test_searches_from_the_root_skip_the_data_dir(ws: Path) -> None:
    grep = await bounded(tools(ws).run(call("grep_search", {"pattern": "token|hello"})))
    assert grep.status == "completed", grep.error
    assert SECRET not in grep.output_text and "src/main.py" in grep.output_text
    found = await bounded(tools(ws).run(call("glob", {"pattern": "**/*"})))
    assert found.status == "completed", found.error
    assert ".data" not in found.output_text and "main.py" in found.output_text
    # Without the data dir (a workspace inside it, the default), nothing is hidden.
    plain = await bounded(WorkspaceTools(ws).run(call("grep_search", {"pattern": "token"})))
    assert SECRET in plain.output_text


async def test_the_previews_never_read_the_data_dir(ws: Path) -> None:
    edit = call("edit", {"file_path": ".data/agentrt.db", "old_string": "store", "new_string": "x"})
    described = describe_call(ws, edit, ws / ".data")
    assert described["content"] == [] and described["locations"] == []
    assert target_hash(ws, edit, ws / ".data") is None


async def test_glob_refuses_dotdot_segments(ws: Path) -> None:
    result = await bounded(tools(ws).run(call("glob", {"pattern": "../*"})))
    assert result.status == "failed" and "`..` segment" in (result.error or "")


async def test_a_fifo_is_a_tool_error_at_once(ws: Path, store: Store) -> None:
    fifo = ws / "pipe"
    os.mkfifo(fifo)
    read = await bounded(tools(ws).run(call("read_file", {"absolute_path": "pipe"})), fifo)
    assert read.status == "failed"
    assert read.error == "Path is not a regular file (a FIFO): pipe: only regular files are read"
    for tool, args in (
        ("write_file", {"file_path": "pipe", "content": "x"}),
        ("edit", {"file_path": "pipe", "old_string": "a", "new_string": "b"}),
    ):
        planned = await bounded(tools(ws).run(call(tool, args)), fifo)
        assert planned.status == "failed" and "a FIFO" in (planned.error or ""), planned.error
        described = await bounded(asyncio.to_thread(describe_call, ws, call(tool, args)), fifo)
        assert described["content"] == []
        digest = await bounded(asyncio.to_thread(target_hash, ws, call(tool, args)), fifo)
        assert digest is None
        once = await bounded(
            run_once(
                tools(ws),
                OperationLedger(store),
                call(tool, args),
                op_id=f"op-{tool}",
                expected_hash=None,
            ),
            fifo,
        )
        assert once.status == "failed" and "FIFO" in (once.error or ""), once.error
    assert fifo.exists() and not fifo.is_file()


async def test_six_fifos_at_once_no_longer_exhaust_the_thread_pool(ws: Path) -> None:
    fifos = [ws / f"pipe{i}" for i in range(6)]
    for fifo in fifos:
        os.mkfifo(fifo)
    results: list[ToolResult] = await bounded(
        asyncio.gather(
            *(tools(ws).run(call("read_file", {"absolute_path": f.name})) for f in fifos)
        ),
        *fifos,
    )
    assert [r.status for r in results] == ["failed"] * 6
    after = await bounded(tools(ws).run(call("read_file", {"absolute_path": "src/main.py"})))
    assert after.status == "completed"


async def test_grep_search_skips_a_fifo(ws: Path) -> None:
    fifo = ws / "src" / "pipe"
    os.mkfifo(fifo)
    result = await bounded(tools(ws).run(call("grep_search", {"pattern": "hello"})), fifo)
    assert result.status == "completed", result.error
    assert "src/main.py" in result.output_text and "pipe" not in result.output_text


async def test_a_search_over_the_cap_waits_for_a_slot(ws: Path) -> None:
    assert search.SLOTS.take(1)  # another search of this process holds the one slot
    try:
        waiting = asyncio.create_task(
            tools(ws, search_children=1).run(call("glob", {"pattern": "**/*.py"}))
        )
        await asyncio.sleep(0.3)
        assert not waiting.done()
    finally:
        search.SLOTS.give()
    result = await bounded(waiting)
    assert result.status == "completed" and "main.py" in result.output_text


async def test_a_search_that_never_gets_a_slot_says_so(ws: Path) -> None:
    assert search.SLOTS.take(1)
    try:
        result = await bounded(
            tools(ws, search_children=1, search_timeout=0.3).run(
                call("grep_search", {"pattern": "x"})
            )
        )
    finally:
        search.SLOTS.give()
    assert result.status == "failed"
    assert (result.error or "").startswith("grep_search could not start within 0.3 s")
