"""MCP calls under an operation id (activities/mcp/calls.py) against a real server (the
SDK-built fault server): the server sees each call once, or never; what a retry finds in
the ledger decides, never timing."""

from __future__ import annotations

import base64
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from activities.mcp.calls import OPERATION_ID_KEY, McpCalls
from activities.mcp.pool import McpPool
from runtime.llm.contracts import ToolCall
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.store.operations import OperationLedger
from tests.mcp_helpers import FaultServer, fault_server, write_settings

WORKSPACE_SCOPE = "test"


@pytest.fixture
def faults(tmp_path: Path) -> Iterator[FaultServer]:
    with fault_server(tmp_path) as server:
        yield server


@pytest.fixture
async def calls(tmp_path: Path, faults: FaultServer) -> AsyncIterator[McpCalls]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write_settings(workspace, {"faults": {"httpUrl": faults.url, "timeout": 10_000}})
    settings = Settings(
        data_dir=tmp_path / ".data", workspace=workspace, mcp_workspace_servers="trusted"
    )
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    upgrade_to_head(store.engine)
    pool = McpPool()
    yield McpCalls(pool, store, EventJournal(store), settings)
    await pool.close()
    store.dispose()


def _call(tool: str, **args: object) -> ToolCall:
    return ToolCall(id="c1", name=f"mcp__faults__{tool}", arguments=args)


def _workspace(calls: McpCalls) -> str:
    return calls.settings.workspace_cwd


async def test_a_retry_returns_the_first_result_and_the_server_saw_one_call(
    calls: McpCalls, faults: FaultServer
) -> None:
    first = await calls.run_once(_workspace(calls), _call("record", value="a"), "op-1", "t")
    again = await calls.run_once(_workspace(calls), _call("record", value="a"), "op-1", "t")
    assert first.status == "completed" and "recorded a" in first.output_text
    assert again == first
    assert [c["operationId"] for c in faults.calls()] == ["op-1"]


async def test_an_attempt_lost_mid_call_is_outcome_unknown_and_not_called_again(
    calls: McpCalls, faults: FaultServer
) -> None:
    # What a worker killed after sending the request leaves: `started`, never finished.
    OperationLedger(calls.store).begin("op-2", "mcp__faults__record", result={"attempt": "lost"})
    result = await calls.run_once(_workspace(calls), _call("record", value="b"), "op-2", "t")
    assert result.status == "failed" and result.error is not None
    assert result.error.startswith("outcome_unknown")
    assert faults.calls() == []
    # And it stays so: the next attempt returns the same answer.
    again = await calls.run_once(_workspace(calls), _call("record", value="b"), "op-2", "t")
    assert again == result and faults.calls() == []


async def test_an_idempotent_tool_lost_mid_call_is_called_again(
    calls: McpCalls, faults: FaultServer
) -> None:
    OperationLedger(calls.store).begin("op-3", "mcp__faults__put", result={"attempt": "lost"})
    result = await calls.run_once(_workspace(calls), _call("put", key="k", value="v"), "op-3", "t")
    assert result.status == "completed" and "k is v" in result.output_text
    assert [(c["tool"], c["operationId"]) for c in faults.calls()] == [("put", "op-3")]


async def test_a_read_carries_no_operation_id_and_may_repeat(
    calls: McpCalls, faults: FaultServer
) -> None:
    for _ in range(2):
        result = await calls.read(_workspace(calls), _call("count"), "t")
        assert result.status == "completed" and result.output_text == "0"
    assert OPERATION_ID_KEY == "io.agentrt/operationId"


async def test_an_unknown_tool_or_server_is_a_failed_call(calls: McpCalls) -> None:
    missing = ToolCall(id="c", name="mcp__nowhere__x", arguments={})
    result = await calls.run_once(_workspace(calls), missing, "op-4", "t")
    assert result.status == "failed" and "not found" in (result.error or "")


async def test_an_approved_idempotent_call_lost_mid_call_is_not_called_again(
    calls: McpCalls, faults: FaultServer
) -> None:
    """A human approved this call: the server's idempotentHint is only its word."""
    OperationLedger(calls.store).begin("op-5", "mcp__faults__put", result={"attempt": "lost"})
    call = _call("put", key="k", value="v")
    result = await calls.run_once(_workspace(calls), call, "op-5", "t", retry_idempotent=False)
    assert (result.error or "").startswith("outcome_unknown")
    assert faults.calls() == []


async def test_a_started_call_whose_server_is_gone_is_outcome_unknown_not_never_called(
    calls: McpCalls, faults: FaultServer
) -> None:
    """The record decides before the checks of now: a call the server may have applied is
    never reported as not called because the server's entry changed meanwhile."""
    OperationLedger(calls.store).begin("op-6", "mcp__faults__record", result={"attempt": "lost"})
    gone = ToolCall(id="c", name="mcp__nowhere__record", arguments={"value": "x"})
    result = await calls.run_once(_workspace(calls), gone, "op-6", "t")
    assert (result.error or "").startswith("outcome_unknown")


async def test_large_and_binary_content_is_kept_by_reference(calls: McpCalls) -> None:
    """Past 64 KB the model reads the start; the whole text and a binary resource are
    kept in the journal, their references in the result (never in history)."""
    result = await calls.read(_workspace(calls), _call("bulk", kilobytes=100), "scope-1")
    assert result.status == "completed"
    assert len(result.output_text.encode()) <= 64_000
    refs = re.findall(r"mcp-images/scope-1#\d+", result.output_text)
    assert len(refs) == 2, result.output_text[-400:]
    entries = (await calls.journal.aread("mcp-images/scope-1", 0, 10)).entries
    kinds = {e.data["mimeType"]: e.data for e in entries}
    assert kinds["text/plain"]["text"].startswith("0123456789abcdef" * 6400)
    assert "[resource file:///blob.bin: 1024 bytes" in result.output_text
    assert base64.b64decode(kinds["application/octet-stream"]["data"]) == bytes(range(256)) * 4
