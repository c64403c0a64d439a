"""Tool calls with side effects: exactly once for files, at most once for commands.

Each test puts the ledger and the disk in the state a crashed or stalled attempt
leaves behind at its worst moment, then runs the retry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from activities.workspace import OUTCOME_UNKNOWN, WorkspaceTools, run_once, target_hash
from runtime.llm.contracts import ToolCall
from runtime.store import Store
from runtime.store.operations import OperationLedger
from runtime.workspace.files import ABSENT, HashMismatch, atomic_write, content_hash


def _call(tool: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name=tool, arguments=args, id="call_1")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "f").write_text("MARK\n")
    return root


def _edit(ws: Path) -> ToolCall:
    return _call("edit", {"file_path": str(ws / "f"), "old_string": "MARK", "new_string": "MARK+"})


async def test_an_edit_retried_after_it_completed_is_not_applied_again(
    ws: Path, store: Store
) -> None:
    ledger = OperationLedger(store)
    tools = WorkspaceTools(ws)
    call = _edit(ws)
    expected = target_hash(ws, call)
    first = await run_once(tools, ledger, call, op_id="op-1", expected_hash=expected)
    second = await run_once(tools, ledger, call, op_id="op-1", expected_hash=expected)
    assert first.status == "completed"
    assert second == first
    assert (ws / "f").read_text() == "MARK+\n"


async def test_an_attempt_that_died_after_its_write_is_completed_not_repeated(
    ws: Path, store: Store
) -> None:
    """The worst moment: the file holds the post-image, the ledger says `started`."""
    ledger = OperationLedger(store)
    tools = WorkspaceTools(ws)
    call = _edit(ws)
    expected = target_hash(ws, call)
    fence = tools.fence()
    assert fence is not None
    change = tools.plan_change(fence, "edit", call.arguments)
    new = change.data
    ledger.begin(
        "op-2",
        "edit",
        pre_hash=change.pre_hash,
        post_hash=content_hash(new),
        result=change.result.model_dump(mode="json"),
    )
    atomic_write(ws / "f", new)  # ...and the worker died here
    retried = await run_once(tools, ledger, call, op_id="op-2", expected_hash=expected)
    assert retried.status == "completed"
    assert (ws / "f").read_text() == "MARK+\n"
    record = ledger.get("op-2")
    assert record is not None and record.state == "done"


async def test_an_attempt_that_died_before_its_write_writes_once(ws: Path, store: Store) -> None:
    ledger = OperationLedger(store)
    tools = WorkspaceTools(ws)
    call = _edit(ws)
    expected = target_hash(ws, call)
    ledger.begin("op-3", "edit", pre_hash=expected, post_hash="sha256:" + "0" * 64, result={})
    retried = await run_once(tools, ledger, call, op_id="op-3", expected_hash=expected)
    assert retried.status == "completed"
    assert (ws / "f").read_text() == "MARK+\n"


async def test_a_file_changed_since_the_call_was_proposed_is_not_written(
    ws: Path, store: Store
) -> None:
    ledger = OperationLedger(store)
    tools = WorkspaceTools(ws)
    call = _edit(ws)
    expected = target_hash(ws, call)
    (ws / "f").write_text("MARK and more\n")  # changed while the permission was pending
    result = await run_once(tools, ledger, call, op_id="op-4", expected_hash=expected)
    assert result.status == "failed"
    assert "changed since this call was proposed" in (result.error or "")
    assert (ws / "f").read_text() == "MARK and more\n"


async def test_write_file_creating_a_file_expects_it_absent(ws: Path, store: Store) -> None:
    ledger = OperationLedger(store)
    tools = WorkspaceTools(ws)
    call = _call("write_file", {"file_path": str(ws / "new" / "g"), "content": "x"})
    expected = target_hash(ws, call)
    assert expected == ABSENT
    first = await run_once(tools, ledger, call, op_id="op-5", expected_hash=expected)
    assert first.status == "completed"
    (ws / "new" / "g").write_text("someone else")
    again = await run_once(tools, ledger, call, op_id="op-5", expected_hash=expected)
    assert again == first  # done: the recorded result, no second write
    assert (ws / "new" / "g").read_text() == "someone else"


async def test_a_command_is_never_run_twice(ws: Path, store: Store) -> None:
    ledger = OperationLedger(store)
    tools = WorkspaceTools(ws, shell_enabled=True)
    call = _call("run_shell_command", {"command": "echo ran >> log"})
    first = await run_once(tools, ledger, call, op_id="op-6", expected_hash=None)
    again = await run_once(tools, ledger, call, op_id="op-6", expected_hash=None)
    assert first.status == "completed" and again == first
    assert (ws / "log").read_text() == "ran\n"


async def test_a_command_whose_attempt_died_reports_outcome_unknown(ws: Path, store: Store) -> None:
    ledger = OperationLedger(store)
    tools = WorkspaceTools(ws, shell_enabled=True)
    call = _call("run_shell_command", {"command": "echo ran >> log"})
    ledger.begin("op-7", "run_shell_command")  # started; the worker died before reporting
    result = await run_once(tools, ledger, call, op_id="op-7", expected_hash=None)
    assert result.status == "failed"
    assert (result.error or "").startswith(OUTCOME_UNKNOWN)
    assert not (ws / "log").exists()
    again = await run_once(tools, ledger, call, op_id="op-7", expected_hash=None)
    assert again == result


def test_atomic_write_compare_and_swap_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"one")
    atomic_write(target, b"two", expected=content_hash(b"one"))
    with pytest.raises(HashMismatch):
        atomic_write(target, b"three", expected=content_hash(b"one"))
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


async def test_an_edit_through_the_ledger_keeps_crlf_and_bom(ws: Path, store: Store) -> None:
    """The exactly-once path writes the bytes of the file routes' text profile."""
    original = b"\xef\xbb\xbfMARK\r\nrest\r\n"
    (ws / "f").write_bytes(original)
    ledger = OperationLedger(store)
    tools = WorkspaceTools(ws)
    call = _edit(ws)
    expected = target_hash(ws, call)
    assert expected == content_hash(original)
    result = await run_once(tools, ledger, call, op_id="op-crlf", expected_hash=expected)
    assert result.status == "completed", result.error
    written = b"\xef\xbb\xbfMARK+\r\nrest\r\n"
    assert (ws / "f").read_bytes() == written
    record = ledger.get("op-crlf")
    assert record is not None and record.post_hash == content_hash(written)


def test_compare_and_swap_holds_across_processes(tmp_path: Path) -> None:
    """The API's file routes and the worker's tools are separate processes: eight
    processes replacing the same pre-image, exactly one wins. (A guard more than a
    reproduction: the check-to-rename window is a few syscalls, so without the
    directory lock this rarely loses a write.)"""
    import subprocess
    import sys

    target = tmp_path / "f"
    target.write_bytes(b"start")
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from runtime.workspace.files import HashMismatch, atomic_write, content_hash\n"
        "time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\n"
        "try:\n"
        "    atomic_write(Path(sys.argv[1]), sys.argv[3].encode(),"
        " expected=content_hash(b'start'))\n"
        "except HashMismatch:\n"
        "    sys.exit(3)\n"
    )
    import time

    start = time.time() + 1.5
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(target), str(start), f"w{i}"])
        for i in range(8)
    ]
    codes = [w.wait(60) for w in writers]
    assert sorted(codes) == [0] + [3] * 7, codes
    assert target.read_bytes().decode() in {f"w{i}" for i in range(8)}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]
