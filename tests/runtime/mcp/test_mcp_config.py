"""mcpServers (runtime/mcp/config.py) and the names the model calls MCP tools by
(runtime/mcp/contracts.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runtime.mcp.config import (
    McpServerConfig,
    ReferenceRefused,
    egress_refusal,
    read_settings_file,
    reference_refusal,
    resolve_references,
)
from runtime.mcp.contracts import MAX_NAME, assign, qualified, server_prefix


def test_a_name_is_sanitized_and_cut_to_the_model_apis_rules() -> None:
    assert qualified("docs", "search") == "mcp__docs__search"
    assert qualified("my.server", "get file") == "mcp__my_server__get_file"
    long = qualified("s" * 40, "t" * 40)
    assert len(long) == MAX_NAME and long.startswith(server_prefix("s" * 40))
    assert long != qualified("s" * 40, "t" * 39 + "u")  # the digest tells them apart


def test_collisions_are_resolved_in_declaration_order() -> None:
    names = assign([("a", "x.y"), ("a", "x_y"), ("b", "t"), ("a", "x-y")])
    assert names[("a", "x.y")] == "mcp__a__x_y"
    assert names[("a", "x_y")] == "mcp__a__x_y_2"
    assert names[("a", "x-y")] == "mcp__a__x-y"
    assert len(set(names.values())) == 4


def test_exactly_one_transport() -> None:
    assert McpServerConfig(command="node").transport == "stdio"
    assert McpServerConfig(httpUrl="http://127.0.0.1:1/mcp").transport == "http"
    assert McpServerConfig(url="http://127.0.0.1:1/sse").transport == "sse"
    for bad in ({}, {"command": "a", "url": "http://h/"}):
        with pytest.raises(ValueError, match="exactly one of"):
            McpServerConfig.model_validate(bad)


def test_the_settings_file_is_read_as_qwen_code_writes_it(tmp_path: Path) -> None:
    (tmp_path / ".qwen").mkdir()
    (tmp_path / ".qwen" / "settings.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "a": {"command": "node", "args": ["s.js"], "trust": True, "oauth": {}},
                    "b": {"httpUrl": "http://127.0.0.1:9/mcp", "includeTools": ["x"]},
                    "bad name!": {"command": "x"},
                    "c": {"command": "x", "url": "http://h/"},
                },
                "disabledMcpServers": ["b"],
            }
        )
    )
    servers = read_settings_file(tmp_path)
    assert list(servers.servers) == ["a", "b"]
    assert servers.servers["a"].trust and servers.servers["b"].offers("x")
    assert not servers.servers["b"].offers("y")
    assert list(servers.enabled()) == ["a"]
    assert set(servers.problems) == {"bad name!", "c"}


def test_a_settings_file_that_is_a_symlink_out_of_the_workspace_is_not_read(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"mcpServers": {"a": {"command": "x"}}}))
    workspace = tmp_path / "ws"
    (workspace / ".qwen").mkdir(parents=True)
    os.symlink(outside, workspace / ".qwen" / "settings.json")
    servers = read_settings_file(workspace)
    assert servers.servers == {} and "*" in servers.problems


def test_references_follow_the_provider_key_rule() -> None:
    environ = {"DOCS_API_KEY": "k", "DATABASE_URL": "postgres://secret"}
    assert resolve_references({"A": "$DOCS_API_KEY", "B": "plain"}, environ) == {
        "A": "k",
        "B": "plain",
    }
    with pytest.raises(ReferenceRefused, match="not allowed"):
        resolve_references({"A": "${DATABASE_URL}"}, environ)
    with pytest.raises(ReferenceRefused, match="has no"):
        resolve_references({"A": "$MISSING_API_KEY"}, environ)
    config = McpServerConfig(command="x", env={"T": "$AGENTRT_TOKEN"})
    assert reference_refusal(config) is not None
    assert reference_refusal(config, ["AGENTRT_TOKEN"]) is not None  # never agentrt's own


def test_the_egress_rule_applies_to_server_urls() -> None:
    assert egress_refusal(McpServerConfig(httpUrl="http://127.0.0.1:8000/mcp")) is None
    for url in (
        "http://169.254.169.254/mcp",
        "http://user:pw@127.0.0.1/mcp",
        "file:///etc/passwd",
    ):
        assert egress_refusal(McpServerConfig(httpUrl=url)) is not None
    assert egress_refusal(McpServerConfig(command="x")) is None
