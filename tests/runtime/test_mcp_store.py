"""The store's part of MCP, on SQLite and PostgreSQL: the operator's servers, the
approvals of settings-file entries, what the worker records of each server and of the
client budget (runtime/mcp/config.py, runtime/mcp/status.py)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from runtime.mcp.config import (
    approve_file_server,
    load_servers,
    put_operator_server,
    remove_operator_server,
)
from runtime.mcp.status import (
    McpBudgetState,
    McpServerState,
    read_budget,
    read_state,
    write_budget,
    write_state,
)
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
