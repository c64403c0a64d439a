"""The search attributes a workflow starts with, and the filters on them: one module builds
both (runtime/search_attributes.py), so every start and every query agree."""

from __future__ import annotations

from temporalio.common import SearchAttributePair

from runtime.coding_tasks.contracts import TASK_KIND, task_search_attributes
from runtime.search_attributes import KIND, MODE, STATUS, TENANT, running, starting


def test_a_start_carries_its_kind_and_tenant_then_what_it_has() -> None:
    assert starting("schedule", "acme") == [
        SearchAttributePair(KIND, "schedule"),
        SearchAttributePair(TENANT, "acme"),
    ]
    assert starting("turn", "/ws", status="running", mode="explorer") == [
        SearchAttributePair(KIND, "turn"),
        SearchAttributePair(TENANT, "/ws"),
        SearchAttributePair(STATUS, "running"),
        SearchAttributePair(MODE, "explorer"),
    ]


def test_a_coding_task_starts_in_its_own_state_whoever_starts_it() -> None:
    assert task_search_attributes("acme", "open") == [
        SearchAttributePair(KIND, TASK_KIND),
        SearchAttributePair(TENANT, "acme"),
        SearchAttributePair(STATUS, "open"),
    ]


def test_a_filter_quotes_every_value_one_way() -> None:
    assert running("session", tenant="/w's", status="idle") == (
        "AgentrtKind = 'session' AND AgentrtTenant = '/w\\'s' AND AgentrtStatus = 'idle'"
        " AND ExecutionStatus = 'Running'"
    )
