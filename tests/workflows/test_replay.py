"""Replay recorded histories with today's workflow code (Temporal's `Replayer`).

A change that breaks the determinism of workflows already running in production fails
here, before it reaches users: a running session or turn would otherwise be stuck on a
non-determinism error after the upgrade. The histories are recorded by
`python -m tests.workflows.histories.record`; see its docstring for when to re-record.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from worker import workflow_runner
from workflows import all_workflows

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_recorded_history_replays(path: Path) -> None:
    document = json.loads(path.read_text())
    history = WorkflowHistory.from_json(document.pop("workflowId"), document)
    replayer = Replayer(
        workflows=all_workflows(),
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(),
    )
    await replayer.replay_workflow(history)


def test_there_are_histories_to_replay() -> None:
    assert {p.stem for p in HISTORIES} >= {
        "session",
        "session-before-model-chain",
        "session-device-flow-pause",
        "session-device-flow-pause-before-read-activity",
        # Not re-recordable: a prompt's cancel swallowed by its device-flow pause (the
        # cancel landed in the activation where a read completed) before the
        # `device-flow-pause-cancel` patch; the pause waited on for the flow's end.
        "session-device-flow-cancel-swallowed",
        # `auto` shell decisions by the deny-list of before (replayed by approval_modes_v0: its
        # previews have no `shell_fenced`), and by the allow-list.
        "session-auto-shell-before-allow-list",
        "session-auto-shell",
        # MCP tools: a trusted read (local activity), an approved effect (regular one).
        "session-mcp",
        "turn",
        "turn-before-durable-authorization-event",
        "turn-model",
        "turn-model-before-model-chain",
        "turn-before-decision-signal",
        "device-flow",
        "standing-agent",
        "standing-agent-before-bounded-history",
        "standing-agent-before-llm-chain",
        # Not re-recordable: a tick paused on a device flow whose local-activity read
        # timed out (hung through a graceful worker shutdown) before the
        # `device-flow-read-activity` patch; replayed, that read is a TimeoutError.
        "standing-agent-device-flow-read-timed-out",
        "windows-lease",
    }
