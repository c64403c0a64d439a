"""Tool calls with a side effect, run exactly once (files) or at most once (commands).

The workflow gives every such call an operation id (stable across activity
retries) and, for a file tool, the content hash of the target captured when the
call was proposed. Here:

- A file write is a compare-and-swap: it applies only to the content the call
  was decided on. The ledger records the intent (pre- and post-image hashes, the
  result) before the write and marks it done after. A retry that finds the op
  done returns the recorded result; one that finds it started and the file at
  its post-image completes it without writing again; one that finds the file at
  its pre-image writes it; anything else is a conflict, and nothing is written.
- A shell command cannot be made idempotent: it is recorded as started before
  it runs. A retry that finds it started but not done reports `outcome_unknown`
  and never runs it again.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from activities.workspace.paths import tool_error
from activities.workspace.tools import WorkspaceTools
from runtime.llm.contracts import ToolCall
from runtime.store.operations import Operation, OperationLedger
from runtime.tools.results import FILE_TOOLS, ToolError, ToolResult, failed_result
from runtime.workspace.fence import Fence
from runtime.workspace.file_errors import FileError
from runtime.workspace.files import HashMismatch, content_hash, path_lock

OUTCOME_UNKNOWN = "outcome_unknown"


async def run_once(
    tools: WorkspaceTools,
    ledger: OperationLedger,
    invocation: ToolCall,
    *,
    op_id: str,
    expected_hash: str | None,
) -> ToolResult:
    """Run a mutating tool call under `op_id`; a retry never repeats its effect."""
    record = await asyncio.to_thread(ledger.get, op_id)
    if record is not None and record.state == "done" and record.result is not None:
        return ToolResult.model_validate(record.result)
    if invocation.name in FILE_TOOLS:
        return await asyncio.to_thread(
            _file_once, tools, ledger, invocation, op_id, expected_hash, record
        )
    if record is not None:
        # Started by an attempt that never reported: it may or may not have run.
        unknown = _outcome_unknown(invocation)
        await asyncio.to_thread(ledger.finish, op_id, unknown.model_dump(mode="json"))
        return unknown
    await asyncio.to_thread(ledger.begin, op_id, invocation.name)
    result = await tools.run(invocation)
    await asyncio.to_thread(ledger.finish, op_id, result.model_dump(mode="json"))
    return result


def _file_once(
    tools: WorkspaceTools,
    ledger: OperationLedger,
    invocation: ToolCall,
    op_id: str,
    expected_hash: str | None,
    record: Operation | None,
) -> ToolResult:
    fence = tools.fence()
    if fence is None:
        return failed_result("The workspace does not exist.")
    try:
        path = tools.target(fence, invocation)
    except (ToolError, ValueError) as err:
        return failed_result(str(err))
    with path_lock(path):
        try:
            current = fence.file_hash(path)
        except FileError as err:
            return failed_result(str(tool_error(err, fence.relative(path))))
        if record is not None and record.result is not None:
            if current == record.post_hash:
                # The earlier attempt's write landed; it died before saying so.
                ledger.finish(op_id, record.result)
                return ToolResult.model_validate(record.result)
            expected_hash = record.pre_hash
        if expected_hash is not None and current != expected_hash:
            return _conflict(fence, path, expected_hash, current)
        try:
            change = tools.plan_change(fence, invocation.name, invocation.arguments)
        except ToolError as err:
            return failed_result(str(err))
        except ValueError as err:
            return failed_result(f"Invalid arguments: {err}")
        new = change.data
        result = change.result.model_dump(mode="json")
        if record is None:
            ledger.begin(
                op_id,
                invocation.name,
                pre_hash=change.pre_hash,
                post_hash=content_hash(new),
                result=result,
            )
        try:
            fence.write(path, new, expected=change.pre_hash, parents=True)
        except HashMismatch as err:
            conflict = _conflict(fence, path, err.expected, err.found)
            ledger.finish(op_id, conflict.model_dump(mode="json"))
            return conflict
        except FileError as err:
            failed = failed_result(str(tool_error(err, fence.relative(path))))
            ledger.finish(op_id, failed.model_dump(mode="json"))
            return failed
        except OSError as err:
            failed = failed_result(f"{type(err).__name__}: {err.strerror or err}")
            ledger.finish(op_id, failed.model_dump(mode="json"))
            return failed
        ledger.finish(op_id, result)
        return change.result


def _conflict(fence: Fence, path: Path, expected: str, found: str) -> ToolResult:
    shown = path.relative_to(fence.root) if path.is_relative_to(fence.root) else path
    return failed_result(
        f"{shown} changed since this call was proposed (expected {expected}, found {found}); "
        "nothing was written."
    )


def _outcome_unknown(invocation: ToolCall) -> ToolResult:
    command = invocation.arguments.get("command")
    message = (
        f"{OUTCOME_UNKNOWN}: the worker running this command stopped before it reported, "
        "so whether it ran is unknown; it was not run again."
    )
    text = f"Command: {command}\nError: {message}"
    return ToolResult(
        status="failed",
        output_text=text,
        content=[{"type": "content", "content": {"type": "text", "text": text}}],
        error=message,
    )
