"""A read-only MCP tool call through agentrt's MCP layer, against the same call made
directly with the official SDK client.

The server is real: the SDK's `MCPServer` of tests/fakes/mcp_fault_server.py over
Streamable HTTP on loopback, in a process of its own started here; the tool is its
read-only `count` (a file's line count), so the figures are the client side, not a tool:

(a) `Client.call_tool("count")` on one warm SDK client (the floor);
(b) `McpCalls.read` of `mcp__<server>__count` on a warm pool: what a session's
    `session.mcp_read` local activity does (the workspace's servers loaded, the tool
    resolved by its qualified name, the call through `McpPool`, the result shaped)
    — quoted against (a); (b) − (a) is agentrt's overhead per call;
(c) `McpPool.call` alone on the same warm connection (no resolve, no shaping) —
    quoted against (a), to tell the pool's share of (b) − (a) from the resolve's;
(d) (b)'s samples less (a)'s median: the overhead per call, with its target;
(e) a first call on a new SDK client: connect (handshake) + the call;
(f) a first call through a new pool: `McpCalls.read` opening the connection (handshake,
    `tools/list`, the server's state recorded) + the call — quoted against (e).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from mcp import Client
from mcp_types import CallToolResult

from activities.mcp.calls import McpCalls
from activities.mcp.pool import McpPool
from activities.mcp.worker_pool import mcp_pool
from bench.report import BenchOptions, Figure, Report, Target, elapsed_ms, sample
from bench.stats import ratio
from runtime.llm.contracts import ToolCall
from runtime.mcp.config import SETTINGS_FILE, McpServerConfig, load_servers
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.tools.results import ToolResult

DEFAULT_RUNS: Final = 50
SERVER: Final = "bench"
TOOL: Final = "count"
QUALIFIED: Final = f"mcp__{SERVER}__{TOOL}"
SCOPE: Final = "bench-mcp"
OVERHEAD_TARGET_MS: Final = 15.0
ROOT: Final = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def fault_server(directory: Path) -> Iterator[str]:
    """The SDK fault server in a process of its own; yields its Streamable HTTP URL."""
    port = _free_port()
    args = ["--port", str(port), "--calls", str(directory / "mcp-calls.jsonl")]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.mcp_fault_server", *args], cwd=ROOT
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None:
                raise RuntimeError(f"the MCP server exited with {process.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError("the MCP server did not start within 60 s")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait()


def _checked(result: CallToolResult) -> None:
    if result.is_error:
        raise RuntimeError(f"{TOOL} failed: {result.content}")


def _checked_read(result: ToolResult) -> None:
    if result.status != "completed":
        raise RuntimeError(f"{QUALIFIED} failed: {result.output_text}")


async def benchmark(options: BenchOptions) -> Report:
    runs, warmup = options.runs, options.warmup
    call = ToolCall(id="bench-call", name=QUALIFIED, arguments={})
    with tempfile.TemporaryDirectory() as tmp, fault_server(Path(tmp)) as url:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        settings_file = workspace / SETTINGS_FILE
        settings_file.parent.mkdir()
        settings_file.write_text(json.dumps({"mcpServers": {SERVER: {"httpUrl": url}}}))
        # The bench wrote the workspace file itself: trusted, no approval to wait for.
        settings = Settings(
            data_dir=Path(tmp) / "data", workspace=workspace, mcp_workspace_servers="trusted"
        )
        settings.resolved_data_dir.mkdir()
        ws = str(settings.resolved_workspace)
        store = Store(settings.resolved_database_url)
        upgrade_to_head(store.engine)
        journal = EventJournal(store)
        config: McpServerConfig = load_servers(
            store, ws, settings.resolved_data_dir, "trusted"
        ).servers[SERVER]
        try:
            async with Client(url) as client:

                async def direct() -> float:
                    started = time.perf_counter()
                    result = await client.call_tool(TOOL, {})
                    elapsed = elapsed_ms(started)
                    _checked(result)
                    return elapsed

                direct_ms = await sample(direct, runs=runs, warmup=warmup)

            pool = mcp_pool(store, settings)
            calls = McpCalls(pool, store, journal, settings)
            try:
                _checked_read(await calls.read(ws, call, SCOPE))  # the connection opened

                async def through_agentrt() -> float:
                    started = time.perf_counter()
                    result = await calls.read(ws, call, SCOPE)
                    elapsed = elapsed_ms(started)
                    _checked_read(result)
                    return elapsed

                async def through_pool() -> float:
                    started = time.perf_counter()
                    result = await pool.call(ws, SERVER, config, TOOL, {}, {})
                    elapsed = elapsed_ms(started)
                    _checked(result)
                    return elapsed

                agentrt_ms = await sample(through_agentrt, runs=runs, warmup=warmup)
                pool_ms = await sample(through_pool, runs=runs, warmup=warmup)
            finally:
                await pool.close()

            async def first_direct() -> float:
                started = time.perf_counter()
                async with Client(url) as fresh:
                    result = await fresh.call_tool(TOOL, {})
                    elapsed = elapsed_ms(started)
                _checked(result)
                return elapsed

            async def first_agentrt() -> float:
                fresh: McpPool = mcp_pool(store, settings)
                try:
                    started = time.perf_counter()
                    result = await McpCalls(fresh, store, journal, settings).read(ws, call, SCOPE)
                    elapsed = elapsed_ms(started)
                finally:
                    await fresh.close()
                _checked_read(result)
                return elapsed

            first_direct_ms = await sample(first_direct, runs=runs, warmup=warmup)
            first_agentrt_ms = await sample(first_agentrt, runs=runs, warmup=warmup)
        finally:
            store.dispose()
    a = Figure("(a) warm call, SDK Client direct", direct_ms)
    b = Figure("(b) warm call, McpCalls.read", agentrt_ms).against(a)
    c = Figure("(c) warm call, McpPool.call only", pool_ms).against(a)
    floor = a.summary.median
    target = Target(OVERHEAD_TARGET_MS, reference="agentrt's overhead per call")
    d = Figure("(d) overhead per call, (b) − median (a)", tuple(s - floor for s in agentrt_ms))
    d = d.with_target(target)
    e = Figure("(e) first call, new SDK Client (connect + call)", first_direct_ms)
    f = Figure("(f) first call, new McpPool (connect + list + call)", first_agentrt_ms)
    f = f.against(e)
    overhead = b.summary.median - floor
    factor = ratio(b.summary.median, floor)
    verdict = "met" if overhead <= OVERHEAD_TARGET_MS else "MISSED"
    return Report(
        title=f"MCP read-only tool call ({runs} runs, {warmup} warm-up)",
        figures=(a, b, c, d, e, f),
        notes=(
            f"Target: at most {OVERHEAD_TARGET_MS:g} ms of overhead per call (b − a, "
            f"medians): {overhead:.2f} ms, {verdict}; {factor:.2f}× the direct call.",
            f"Of it, the pool (c − a): {c.summary.median - floor:.2f} ms; resolving and "
            f"shaping (b − c): {b.summary.median - c.summary.median:.2f} ms.",
            f"Connection cost apart: first call − warm call is "
            f"{e.summary.median - floor:.2f} ms direct, "
            f"{f.summary.median - b.summary.median:.2f} ms through agentrt.",
            "Server: tests/fakes/mcp_fault_server.py (SDK MCPServer, Streamable HTTP on "
            "loopback, own process); its read-only `count` tool; temp SQLite store; the "
            "worker's pool (mcp_pool: server state recorded in the store).",
        ),
    )
