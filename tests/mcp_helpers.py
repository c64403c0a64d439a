"""Real MCP servers for the suite: the Python SDK fault server (tests/fakes/mcp_fault_server)
over Streamable HTTP in a process of its own, and the npm servers of tests/mcp_servers
(`@modelcontextprotocol/server-everything`, `@modelcontextprotocol/server-filesystem`)
over stdio."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
NPM_SERVERS = Path(__file__).resolve().parent / "mcp_servers" / "node_modules"
EVERYTHING = NPM_SERVERS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
FILESYSTEM = NPM_SERVERS / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"


@dataclass
class FaultServer:
    url: str
    calls_file: Path
    process: subprocess.Popen[bytes]

    def calls(self) -> list[dict[str, Any]]:
        if not self.calls_file.exists():
            return []
        return [json.loads(line) for line in self.calls_file.read_text().splitlines()]


@contextmanager
def fault_server(directory: Path) -> Iterator[FaultServer]:
    port = free_port()
    calls = directory / "mcp-calls.jsonl"
    args = ["--port", str(port), "--calls", str(calls)]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.mcp_fault_server", *args], cwd=ROOT
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, "the MCP fault server exited"
            time.sleep(0.05)
        yield FaultServer(f"http://127.0.0.1:{port}/mcp", calls, process)
    finally:
        process.kill()
        process.wait()


def node_server(script: Path, *args: str) -> dict[str, Any]:
    """An `mcpServers` entry running one of the npm servers over stdio."""
    node = shutil.which("node")
    if node is None or not script.exists():
        pytest.skip("node and tests/mcp_servers (npm ci) are needed for the npm MCP servers")
    return {"command": node, "args": [str(script), *args]}


def write_settings(workspace: Path, servers: dict[str, Any], **extra: Any) -> None:
    """The workspace's `.qwen/settings.json`, as qwen-code reads it."""
    (workspace / ".qwen").mkdir(parents=True, exist_ok=True)
    body = {"mcpServers": servers, **extra}
    (workspace / ".qwen" / "settings.json").write_text(json.dumps(body))
