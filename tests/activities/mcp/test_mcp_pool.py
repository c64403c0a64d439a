"""The worker's MCP connections (activities/mcp/pool.py): the egress rule on the address
each connection is opened to, errors without credentials, and bounds on what a server
puts before the model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from activities.mcp.failures import classify, redact
from activities.mcp.pool import McpPool
from runtime import egress_client
from runtime.mcp.config import McpServerConfig
from tests.mcp_helpers import FaultServer, fault_server


@pytest.fixture
def faults(tmp_path: Path) -> Iterator[FaultServer]:
    with fault_server(tmp_path) as server:
        yield server


async def test_a_name_that_resolves_to_the_metadata_service_is_never_connected(
    faults: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = faults.url.rsplit(":", 1)[1].split("/")[0]
    seen: list[str] = []

    async def rebinding(host: str, _port: int) -> list[str]:
        seen.append(host)
        return ["169.254.169.254"] if host == "mcp.example.test" else ["127.0.0.1"]

    monkeypatch.setattr(egress_client, "resolve", rebinding)
    pool = McpPool()
    servers = {
        "rebound": McpServerConfig(httpUrl=f"http://mcp.example.test:{port}/mcp", timeout=5000),
        "local": McpServerConfig(httpUrl=f"http://localhost:{port}/mcp", timeout=5000),
    }
    try:
        tools, failures = await pool.tools("/ws", servers)
    finally:
        await pool.close()
    assert failures["rebound"].kind == "blocked_egress"
    assert "169.254.169.254" in str(failures["rebound"])
    assert {t.server for t in tools} == {"local"}  # the same server, by an allowed name
    assert "mcp.example.test" in seen and faults.calls() == []


async def test_a_literal_metadata_url_is_refused_before_anything_is_sent() -> None:
    pool = McpPool()
    config = McpServerConfig(url="http://169.254.169.254/computeMetadata/v1/")
    try:
        _, failures = await pool.tools("/ws", {"meta": config})
    finally:
        await pool.close()
    assert failures["meta"].kind == "blocked_egress"


def test_errors_never_carry_credentials_or_queries() -> None:
    text = "Client error '401' for url 'https://user:pw@h.example/mcp?api_key=SECRET#f'"
    assert redact(text) == "Client error '401' for url 'https://h.example/mcp'"
    failure = classify(RuntimeError(text), McpServerConfig(httpUrl="https://h.example/mcp"))
    assert "SECRET" not in str(failure) and "pw" not in str(failure)


def test_a_failure_never_quotes_a_header_or_env_value() -> None:
    """The HTTP client's refusals quote the header they refuse; a stdio server's may
    quote its environment: neither reaches /workspace/mcp, the log or an event."""
    from activities.mcp.failures import classify
    from runtime.mcp.config import McpServerConfig

    config = McpServerConfig.model_validate(
        {"httpUrl": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer lit3ral"}}
    )
    err = ValueError("Illegal header value b'Bearer lit3ral' and b'sk-resolved-777'")
    shown = str(classify(err, config, ["sk-resolved-777"]))
    assert "lit3ral" not in shown and "sk-resolved-777" not in shown
    assert "[redacted]" in shown
