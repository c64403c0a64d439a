"""The store's part of MCP, on SQLite and PostgreSQL: the operator's servers, the
approvals of settings-file entries, what the worker records of each server and of the
client budget (runtime/mcp/config.py, runtime/mcp/status.py), a tenant's servers and
grants (runtime/mcp/grants.py), an approved call's outcome in its event
(runtime/standing_agents/mcp_calls.py)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from sqlmodel import col, select

from runtime.mcp.config import (
    approve_file_server,
    load_servers,
    put_operator_server,
    remove_operator_server,
)
from runtime.mcp.grants import granted, put_grant, tenant_scope
from runtime.mcp.grants import grants as all_grants
from runtime.mcp.status import (
    McpBudgetState,
    McpServerState,
    read_budget,
    read_state,
    write_budget,
    write_state,
)
from runtime.standing_agents.mcp_calls import record_outcome
from runtime.standing_agents.models import AgentEventRow
from runtime.store import Store


def test_operator_servers_are_added_concurrently_and_removed(store: Store, tmp_path: Path) -> None:
    workspace = str(tmp_path)
    names = [f"s{i}" for i in range(8)]
    with ThreadPoolExecutor(4) as pool:
        list(
            pool.map(lambda n: put_operator_server(store, workspace, n, {"command": "node"}), names)
        )
    servers = load_servers(store, workspace)
    assert sorted(servers.servers) == names  # no write lost to a concurrent one
    assert set(servers.sources.values()) == {"operator"} and servers.pending == []
    assert remove_operator_server(store, workspace, "s3") is True
    assert remove_operator_server(store, workspace, "s3") is False
    assert "s3" not in load_servers(store, workspace).servers


def test_a_file_entry_is_pending_until_its_exact_fingerprint_is_approved(
    store: Store, tmp_path: Path
) -> None:
    (tmp_path / ".qwen").mkdir()
    settings = tmp_path / ".qwen" / "settings.json"
    settings.write_text(json.dumps({"mcpServers": {"f": {"command": "node"}}}))
    workspace = str(tmp_path)
    servers = load_servers(store, workspace)
    assert servers.pending == ["f"] and servers.enabled() == {}
    approve_file_server(store, workspace, "f", servers.servers["f"].fingerprint())
    assert list(load_servers(store, workspace).enabled()) == ["f"]
    settings.write_text(json.dumps({"mcpServers": {"f": {"command": "node", "args": ["x"]}}}))
    assert load_servers(store, workspace).pending == ["f"]
    assert list(load_servers(store, workspace, mode="trusted").enabled()) == ["f"]
    assert load_servers(store, workspace, mode="off").servers == {}


def test_the_workers_records_round_trip(store: Store, tmp_path: Path) -> None:
    workspace = str(tmp_path)
    state = McpServerState(
        name="a", transport="http", fingerprint="f", mcpStatus="connected", updatedAtMs=1
    )
    write_state(store, workspace, state)
    assert read_state(store, workspace, "a") == state
    assert read_state(store, workspace, "b") is None
    budget = McpBudgetState(budget=2, mode="enforce", reserved=["a", "b"], refused=["c"])
    write_budget(store, workspace, budget)
    assert read_budget(store, workspace) == budget


def test_a_tenants_servers_and_grants_are_its_own(store: Store, tmp_path: Path) -> None:
    # A tenant's scope reads no settings file, even a workspace's that holds servers.
    (tmp_path / ".qwen").mkdir()
    (tmp_path / ".qwen" / "settings.json").write_text(
        json.dumps({"mcpServers": {"f": {"command": "node"}}})
    )
    scope = tenant_scope("acme")
    put_operator_server(store, scope, "tickets", {"httpUrl": "http://127.0.0.1:9/mcp"})
    servers = load_servers(store, scope, mode="trusted")
    assert list(servers.enabled()) == ["tickets"]
    assert load_servers(store, tenant_scope("other")).servers == {}
    assert put_grant(store, "acme", "Soa", ["mcp__tickets__*", "mcp__tickets__*"]) == [
        "mcp__tickets__*"
    ]
    put_grant(store, "acme", "Compliance", ["mcp__tickets__read"])
    assert granted(store, "acme", "Soa") == ["mcp__tickets__*"]
    assert granted(store, "other", "Soa") == []
    assert put_grant(store, "acme", "Soa", []) == []
    assert list(all_grants(store, "acme")) == ["Compliance"]


def test_an_approved_calls_outcome_is_written_into_its_event_once(store: Store) -> None:
    now = datetime.now(UTC)
    with store.session() as db:
        db.add(
            AgentEventRow(
                event_id="escalation/d1",
                instance_id="i1",
                tenant="acme",
                sequence_number=1,
                event_kind="OperatorAnsweredEscalation",
                payload={"decisionId": "d1", "resolution": "approve"},
                visible_at=now,
                generation=1,
                created_at=now,
            )
        )
        db.commit()
    outcome = {"decisionId": "d1", "tool": "mcp__t__x", "outcome": "ok", "output": "done"}
    record_outcome(store, "escalation/d1", outcome)
    record_outcome(store, "escalation/d1", outcome)
    with store.session() as db:
        row = db.exec(
            select(AgentEventRow).where(col(AgentEventRow.event_id) == "escalation/d1")
        ).one()
    assert row.payload == {"decisionId": "d1", "resolution": "approve", "mcpCall": outcome}
