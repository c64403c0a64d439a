"""A read-only tool of agentrt's own MCP server (`/mcp`, api/mcp/server), against the same
read over REST, from one client on warm connections.

The API runs under uvicorn on a free loopback port in this process (real HTTP) with a
temporary SQLite store; a tenant with standing agents on and an `operator` token (it
reaches both). Temporal is not needed for a registry read (the API connects to it in the
background and never blocks on it), so none runs. The two reads alternate, run by run, so
neither gets the warmer process:

(a) `GET /api/v1/tenants/{t}/registry` over httpx (the REST read, the baseline);
(b) `tools/call agent_list` through the official SDK's client over Streamable HTTP on
    one warm session — quoted against (a); (b) − (a) is what MCP adds per read;
(c) (b)'s samples less (a)'s median, with the target.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Final

import httpx
import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from api.app import create_app
from bench.daemon import _Server, free_port
from bench.report import BenchOptions, Figure, Report, Target, elapsed_ms
from bench.stats import ratio
from runtime.settings import Settings
from runtime.standing_agents.control import set_standing_agents
from runtime.store import Store, upgrade_to_head
from runtime.tenants.tokens import create as create_token

DEFAULT_RUNS: Final = 50
TENANT: Final = "bench-mcp"
ADMIN_TOKEN: Final = "bench-admin-token"
OVERHEAD_TARGET_MS: Final = 10.0


async def benchmark(options: BenchOptions) -> Report:
    runs, warmup = options.runs, options.warmup
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        settings = Settings(
            data_dir=Path(tmp) / "data",
            workspace=Path(tmp),
            port=port,
            token=ADMIN_TOKEN,
            temporal_address="127.0.0.1:1",  # nothing listens: the read needs no Temporal
        )
        settings.resolved_data_dir.mkdir()
        store = Store(settings.resolved_database_url)
        upgrade_to_head(store.engine)
        await asyncio.to_thread(set_standing_agents, store, settings, TENANT, True)
        token = (await asyncio.to_thread(create_token, store, TENANT, "bench", "operator")).token
        app = create_app(settings, store=store)
        server = _Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
        )
        serving = asyncio.create_task(server.serve())
        try:
            async with asyncio.timeout(60):
                while not server.started:
                    if serving.done():
                        serving.result()
                        raise RuntimeError("uvicorn stopped before starting")
                    await asyncio.sleep(0.01)
            base = f"http://127.0.0.1:{port}"
            bearer = {"Authorization": f"Bearer {token}"}
            http = httpx2.AsyncClient(headers=bearer, timeout=httpx2.Timeout(30.0))
            transport = streamable_http_client(f"{base}/mcp", http_client=http)
            async with (
                httpx.AsyncClient(base_url=base, headers=bearer, timeout=30) as rest,
                http,
                Client(transport) as mcp,
            ):

                async def over_rest() -> float:
                    started = time.perf_counter()
                    response = await rest.get(f"/api/v1/tenants/{TENANT}/registry")
                    elapsed = elapsed_ms(started)
                    if response.status_code != 200:
                        raise RuntimeError(f"REST read failed: {response.text}")
                    return elapsed

                async def over_mcp() -> float:
                    started = time.perf_counter()
                    result = await mcp.call_tool("agent_list", {})
                    elapsed = elapsed_ms(started)
                    if result.is_error:
                        raise RuntimeError(f"agent_list failed: {result.content}")
                    return elapsed

                rest_ms: list[float] = []
                mcp_ms: list[float] = []
                for run in range(warmup + runs):
                    pair = (await over_rest(), await over_mcp())
                    if run >= warmup:
                        rest_ms.append(pair[0])
                        mcp_ms.append(pair[1])
        finally:
            server.should_exit = True
            await serving
            store.dispose()
    a = Figure("(a) GET .../registry over REST", tuple(rest_ms))
    b = Figure("(b) tools/call agent_list over /mcp", tuple(mcp_ms)).against(a)
    floor = a.summary.median
    c = Figure("(c) MCP's extra per read, (b) − median (a)", tuple(s - floor for s in mcp_ms))
    c = c.with_target(Target(OVERHEAD_TARGET_MS, reference="issue 20: at most 10 ms more"))
    extra = b.summary.median - floor
    verdict = "met" if extra <= OVERHEAD_TARGET_MS else "MISSED"
    return Report(
        title=f"agentrt's MCP server: a read-only tool vs REST ({runs} runs, {warmup} warm-up)",
        figures=(a, b, c),
        notes=(
            f"Target: at most {OVERHEAD_TARGET_MS:g} ms more than REST (medians): "
            f"{extra:.2f} ms, {verdict}; {ratio(b.summary.median, floor):.2f}× the REST read.",
            "One client each, warm: httpx keep-alive for REST; one SDK session (stateless "
            "server, JSON responses) for MCP. The API in this process under uvicorn, "
            "temporary SQLite, an operator token (its lookup in both), no Temporal.",
        ),
    )
