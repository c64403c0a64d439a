"""The register of patches (workflows/patches.py) is whole and true.

Every `workflow.patched` call names a registered id, every registered id is asked by
the workflows the register says, and each history the register says replays a patch's
old branch does: replayed here, `patched` answers false there.
"""

from __future__ import annotations

import ast
import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import temporalio.workflow
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

from workflows import all_workflows, patches
from workflows.patches import PATCHES, Patch

ROOT = Path(__file__).resolve().parents[2]
HISTORIES = Path(__file__).parent / "histories"


def _patched_calls() -> dict[str, set[str]]:
    """Each `workflow.patched(patches.NAME)` of workflows/, by id: the modules asking."""
    asked: dict[str, set[str]] = {}
    for path in sorted((ROOT / "workflows").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("patched", "deprecate_patch")
            ):
                continue
            (argument,) = node.args
            assert (
                isinstance(argument, ast.Attribute)
                and isinstance(argument.value, ast.Name)
                and argument.value.id == "patches"
            ), f"{path}:{node.lineno}: a patch id not named from workflows.patches"
            asked.setdefault(getattr(patches, argument.attr), set()).add(path.stem)
    return asked


def test_every_patched_call_names_a_registered_id_and_every_id_is_asked() -> None:
    registered = [patch.id for patch in PATCHES]
    assert len(registered) == len(set(registered))
    assert set(_patched_calls()) == set(registered)


def test_each_patch_names_workflow_types_that_exist() -> None:
    names = {temporalio.workflow._Definition.must_from_class(cls).name for cls in all_workflows()}
    for patch in PATCHES:
        assert patch.workflows and set(patch.workflows) <= names, patch


def test_the_retirement_query_counts_the_runs_started_up_to_the_deployment_day() -> None:
    patch = next(p for p in PATCHES if p.id == patches.MODEL_STEPS_WALK_THE_FALLBACK_CHAIN)
    assert patch.retirement_query(date(2026, 12, 31)) == (
        "ExecutionStatus = 'Running' AND StartTime < '2027-01-01' AND "
        "(WorkflowType = 'SessionWorkflow' OR WorkflowType = 'TurnWorkflow')"
    )


def _record_answers_of_patched(monkeypatch: pytest.MonkeyPatch) -> set[tuple[str, bool]]:
    """What `workflow.patched` answers, by id, from now on in this test (replayed
    unsandboxed, the workflows call this module's function)."""
    answers: set[tuple[str, bool]] = set()
    original = temporalio.workflow.patched

    def recording(patch_id: str, **options: Any) -> bool:
        answer = original(patch_id, **options)
        answers.add((patch_id, answer))
        return answer

    monkeypatch.setattr(temporalio.workflow, "patched", recording)
    return answers


COVERED = [(patch, name) for patch in PATCHES for name in patch.old_branch_replayed_by]


@pytest.mark.parametrize(("patch", "history"), COVERED, ids=[f"{p.id}:{h}" for p, h in COVERED])
async def test_the_named_history_replays_the_old_branch(
    patch: Patch, history: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = json.loads((HISTORIES / f"{history}.json").read_text())
    recorded = WorkflowHistory.from_json(document.pop("workflowId"), document)
    started = recorded.events[0].workflow_execution_started_event_attributes
    assert started.workflow_type.name in patch.workflows
    replayer = Replayer(
        workflows=all_workflows(),
        data_converter=pydantic_data_converter,
        workflow_runner=UnsandboxedWorkflowRunner(),
    )
    answers = _record_answers_of_patched(monkeypatch)
    await replayer.replay_workflow(recorded)
    assert (patch.id, False) in answers
