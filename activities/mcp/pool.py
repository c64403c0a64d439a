"""`McpPool`: the worker's connections to MCP servers, one per (workspace, server).

A connection is opened on first need (a model step listing tools, a call, a restart),
reused by every session of the workspace, and closed when idle (`idle_seconds`) or when
the server's configuration changed. A stdio server is a child process of the worker; a
worker restart brings it back on the next need. A connection that fails (the server
exited, would not start, or broke the protocol) is opened again on the next need, not
before a backoff pause that grows with consecutive failures (0.5 s doubling, 30 s at
most); inside the pause the need fails at once with the last error.

Each connection lives in a task of its own: the SDK's `Client` is entered and left in
the same task (its transports hold anyio task groups), while callers on the worker's
event loop use the entered client.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from activities.mcp.budget import ClientBudget
from activities.mcp.failures import McpUnavailable, classify, root_cause
from runtime import __version__
from runtime.mcp.config import (
    McpServerConfig,
    egress_refusal,
    resolve_references,
)
from runtime.mcp.contracts import assign
from runtime.mcp.status import (
    BudgetMode,
    McpServerState,
    McpStatus,
    McpToolInfo,
)
from runtime.tools import ToolAnnotations, ToolDescriptor

if TYPE_CHECKING:  # the SDK is imported when a server is first opened, not at start-up
    from mcp import Client
    from mcp_types import CallToolResult

log = logging.getLogger(__name__)

CLIENT_NAME: Final = "agentrt"
# How long offering a workspace's tools waits for a server still opening.
LIST_TIMEOUT_SECONDS: Final = 15.0
# What one server may put before the model: its first tools, each schema bounded.
MAX_TOOLS_PER_SERVER: Final = 128
MAX_SCHEMA_CHARS: Final = 32_000
MAX_BACKOFF_SECONDS: Final = 30.0


@dataclass(frozen=True)
class McpTool:
    """A tool of a server, as the model is offered it."""

    server: str
    tool: str
    descriptor: ToolDescriptor
    trusted: bool


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Mark a background opening's outcome retrieved (its failure is in the state)."""
    if not task.cancelled():
        task.exception()


def _input_schema(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """A server's inputSchema as a model API takes it: an object with properties."""
    schema = {k: v for k, v in dict(raw or {}).items() if k != "$schema"}
    schema["type"] = "object"
    if not isinstance(schema.get("properties"), dict):
        schema["properties"] = {}
    return schema


@dataclass
class _Connection:
    config: McpServerConfig
    client: Client | None = None
    task: asyncio.Task[None] | None = None
    ready: asyncio.Future[Client] | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    last_used: float = field(default_factory=time.monotonic)
    tools: list[Any] | None = None
    workspace: str = ""
    name: str = ""

    @property
    def alive(self) -> bool:
        return self.client is not None and self.task is not None and not self.task.done()


@dataclass
class _Backoff:
    failures: int = 0
    not_before: float = 0.0
    last: McpUnavailable | None = None


class McpPool:
    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        listed_envs: tuple[str, ...] = (),
        idle_seconds: float = 300.0,
        on_state: Any = None,
        budget: int | None = None,
        budget_mode: BudgetMode = "off",
        on_budget: Any = None,
    ) -> None:
        self._environ = os.environ if environ is None else environ
        self._listed = listed_envs
        self.idle_seconds = idle_seconds
        self._connections: dict[tuple[str, str], _Connection] = {}
        self._backoff: dict[tuple[str, str], _Backoff] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        # Called with (workspace, McpServerState) on every change of a server's state.
        self._on_state = on_state
        self._reaper: asyncio.Task[None] | None = None
        # The client budget (spec mcp_guardrails): activities/mcp/budget.py.
        self.budget = ClientBudget(budget, budget_mode, on_budget, self._live)

    def _live(self, workspace: str) -> list[str]:
        return [n for (ws, n), c in self._connections.items() if ws == workspace and c.alive]

    def _ensure_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.create_task(self._reap(), name="mcp idle reaper")

    async def _reap(self) -> None:
        while self._connections:
            await asyncio.sleep(max(1.0, self.idle_seconds / 4))
            await self.close_idle()

    # -- connections ----------------------------------------------------------------------

    async def connection(self, workspace: str, name: str, config: McpServerConfig) -> Client:
        """The open client of a server, opened (or reopened) if need be."""
        key = (workspace, name)
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._ensure_reaper()
        async with lock:
            current = self._connections.get(key)
            if current is not None and current.config.fingerprint() != config.fingerprint():
                await self._close(key)
                current = None
            if current is not None and current.alive:
                current.last_used = time.monotonic()
                assert current.client is not None
                return current.client
            if current is not None:
                self._connections.pop(key, None)
            backoff = self._backoff.setdefault(key, _Backoff())
            if backoff.last is not None and time.monotonic() < backoff.not_before:
                raise backoff.last
            # Before anything awaits: slots go in the order the servers asked for them
            # (declaration order, when `tools` opens them all).
            refusal = self.budget.reserve(workspace, name)
            if refusal is not None:
                await self._report(workspace, name, config, "disconnected", failure=refusal)
                await self.budget.changed(workspace)
                raise refusal
            await self.budget.changed(workspace)
            await self._report(workspace, name, config, "connecting")
            try:
                client = await self._open(key, config)
                tools = (await client.list_tools()).tools
            except BaseException as err:
                await self._close(key)
                failure = classify(err, config, self.secrets(config))
                backoff.failures += 1
                pause = min(MAX_BACKOFF_SECONDS, 0.5 * 2 ** (backoff.failures - 1))
                backoff.not_before = time.monotonic() + pause
                backoff.last = failure
                await self._report(workspace, name, config, "disconnected", failure=failure)
                if isinstance(err, asyncio.CancelledError):
                    raise
                raise failure from None
            self._backoff[key] = _Backoff()
            self._connections[key].tools = list(tools)
            await self._report(workspace, name, config, "connected")
            return client

    async def _open(self, key: tuple[str, str], config: McpServerConfig) -> Client:
        await self._check_egress(config)
        connection = _Connection(config=config)
        loop = asyncio.get_running_loop()
        connection.ready = loop.create_future()
        self._connections[key] = connection
        transport = self._transport(config)
        connection.workspace, connection.name = key
        connection.task = asyncio.create_task(
            self._serve(connection, transport), name=f"mcp {key[1]}"
        )
        try:
            client = await asyncio.wait_for(
                asyncio.shield(connection.ready), config.timeout_seconds
            )
        except TimeoutError:
            raise McpUnavailable(
                "init_timeout",
                f"the server did not complete the MCP handshake within "
                f"{config.timeout_seconds:g} s",
                "raise `timeout` (ms) of this server, or check that it starts",
            ) from None
        connection.client = client
        return client

    def secrets(self, config: McpServerConfig) -> list[str]:
        """The values `config`'s references resolve to here (what no failure may quote)."""
        values = []
        for raw in (config.env, config.headers):
            try:
                values += list(resolve_references(raw, self._environ, self._listed).values())
            except Exception:
                continue  # a refused reference resolves to nothing
        return values

    async def _check_egress(self, config: McpServerConfig) -> None:
        """The egress rule on the URL as written (the address each connection is opened
        to is checked by the transport's client: activities/mcp/egress.py)."""
        refusal = egress_refusal(config)
        if refusal is not None:
            raise McpUnavailable(
                "blocked_egress", refusal, "point the server at an address agentrt may reach"
            )

    def _transport(self, config: McpServerConfig) -> Any:
        # The SDK is imported here, on the first server opened: a worker of a deployment
        # without MCP servers never loads it (about 0.6 s of CPU at every start).
        from mcp import StdioServerParameters
        from mcp.client.sse import sse_client
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client

        from activities.mcp.egress import mcp_http_client

        if config.command:
            env = resolve_references(config.env, self._environ, self._listed)
            params = StdioServerParameters(
                command=config.command,
                args=config.args,
                env=env or None,
                cwd=config.cwd,
            )
            return stdio_client(params)
        headers = resolve_references(config.headers, self._environ, self._listed)
        if config.httpUrl:
            http = mcp_http_client(headers=headers or None)
            return streamable_http_client(config.httpUrl, http_client=http)
        assert config.url is not None
        return sse_client(config.url, headers=headers or None, httpx_client_factory=mcp_http_client)

    async def _serve(self, connection: _Connection, transport: Any) -> None:
        from mcp import Client
        from mcp_types import Implementation

        ready = connection.ready
        assert ready is not None
        try:
            async with Client(
                transport,
                client_info=Implementation(name=CLIENT_NAME, version=__version__),
                read_timeout_seconds=connection.config.timeout_seconds,
            ) as client:
                if not ready.done():
                    ready.set_result(client)
                await connection.stop.wait()
        except BaseException as err:  # the server died, or never started
            if not ready.done():
                ready.set_exception(root_cause(err))
            if not isinstance(root_cause(err), asyncio.CancelledError):
                shown = classify(err, connection.config, self.secrets(connection.config))
                log.info("MCP connection to %s ended: %s", connection.name, shown)
        finally:
            connection.client = None
        if not connection.stop.is_set() and connection.tools is not None:
            # It ended on its own (the server exited): say so; the next need reopens it.
            failure = McpUnavailable(
                "protocol_error",
                "the connection to the server ended",
                "the server exited or closed the connection; it is reopened on next use",
            )
            await self._report(
                connection.workspace,
                connection.name,
                connection.config,
                "disconnected",
                failure=failure,
            )

    async def _close(self, key: tuple[str, str]) -> None:
        released = self.budget.release(*key)
        connection = self._connections.pop(key, None)
        if released:
            await self.budget.changed(key[0])
        if connection is None or connection.task is None:
            return
        connection.stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(connection.task), 5)
        except (TimeoutError, Exception):
            connection.task.cancel()

    async def restart(self, workspace: str, name: str, config: McpServerConfig) -> None:
        """Close the server's connection and open it again (backoff forgotten)."""
        key = (workspace, name)
        async with self._locks.setdefault(key, asyncio.Lock()):
            await self._close(key)
            self._backoff.pop(key, None)
        await self.connection(workspace, name, config)

    async def close_idle(self) -> None:
        now = time.monotonic()
        for key, connection in list(self._connections.items()):
            if now - connection.last_used > self.idle_seconds:
                await self._close(key)

    async def close(self) -> None:
        for key in list(self._connections):
            await self._close(key)
        if self._reaper is not None:
            self._reaper.cancel()

    # -- tools and calls ------------------------------------------------------------------

    async def tools(
        self,
        workspace: str,
        servers: Mapping[str, McpServerConfig],
        *,
        only: Collection[str] | None = None,
    ) -> tuple[list[McpTool], dict[str, McpUnavailable]]:
        """Every tool the enabled servers offer, named for the model; and the servers that
        could not be reached this time (their tools are left out).

        `only`: open just these servers; the others count with the tools they listed when
        last connected (names stay as the model saw them), and are not waited on.
        """
        names = list(servers)

        async def opened(name: str) -> Client | None:
            if only is not None and name not in only:
                return None
            # A server slow to open does not hold the others up: past the bound it is
            # left out this time, and goes on opening for the next need.
            opening = asyncio.ensure_future(self.connection(workspace, name, servers[name]))
            bound = min(servers[name].timeout_seconds, LIST_TIMEOUT_SECONDS)
            try:
                return await asyncio.wait_for(asyncio.shield(opening), bound)
            except TimeoutError:
                opening.add_done_callback(_retrieved)
                raise McpUnavailable(
                    "init_timeout",
                    f"still opening after {bound:g} s; its tools are offered once it is",
                    "a server that starts slowly (npx, first run) is offered on a later step",
                ) from None

        results = await asyncio.gather(*(opened(n) for n in names), return_exceptions=True)
        refused = [
            n
            for n, r in zip(names, results, strict=True)
            if isinstance(r, McpUnavailable) and r.kind == "budget_exhausted"
        ]
        if refused and self.budget.budget is not None:
            # One batch per pass, in declaration order (the spec's mcp_child_refused_batch).
            state = self.budget.state(workspace)
            await self.budget.notify(
                workspace,
                "mcp_child_refused_batch",
                {
                    "refusedServers": [
                        {
                            "name": n,
                            "transport": servers[n].transport,
                            "reason": "budget_exhausted",
                        }
                        for n in refused
                    ],
                    "budget": self.budget.budget,
                    "liveCount": len(state.live),
                    "reservedCount": len(state.reserved),
                    "mode": "enforce",
                },
                state,
            )
        failures: dict[str, McpUnavailable] = {}
        listed: list[tuple[str, Any]] = []
        for name, result in zip(names, results, strict=True):
            if isinstance(result, BaseException):
                failures[name] = classify(result, servers[name], self.secrets(servers[name]))
                continue
            connection = self._connections.get((workspace, name))
            kept = 0
            for tool in connection.tools if connection and connection.tools else []:
                if not servers[name].offers(tool.name) or kept >= MAX_TOOLS_PER_SERVER:
                    continue
                if len(json.dumps(tool.input_schema or {})) > MAX_SCHEMA_CHARS:
                    log.warning("MCP tool %s of %s left out: schema too large", tool.name, name)
                    continue
                kept += 1
                listed.append((name, tool))
        qualified = assign((server, tool.name) for server, tool in listed)
        out = []
        for server, tool in listed:
            out.append(
                McpTool(
                    server=server,
                    tool=tool.name,
                    trusted=servers[server].trust,
                    descriptor=ToolDescriptor(
                        name=qualified[(server, tool.name)],
                        title=tool.title,
                        description=(tool.description or tool.title or tool.name)[:1024],
                        input_schema=_input_schema(tool.input_schema),
                        annotations=ToolAnnotations.of(tool.annotations),
                    ),
                )
            )
        return out, failures

    async def call(
        self,
        workspace: str,
        name: str,
        config: McpServerConfig,
        tool: str,
        arguments: dict[str, Any],
        meta: dict[str, Any],
    ) -> CallToolResult:
        """One `tools/call`, bounded by the server's timeout."""
        from mcp_types import RequestParamsMeta

        client = await self.connection(workspace, name, config)
        connection = self._connections.get((workspace, name))
        if connection is not None:
            connection.last_used = time.monotonic()
        return await client.call_tool(
            tool,
            arguments,
            read_timeout_seconds=config.timeout_seconds,
            meta=RequestParamsMeta(**meta),  # type: ignore[typeddict-item]
        )

    async def _report(
        self,
        workspace: str,
        name: str,
        config: McpServerConfig,
        status: McpStatus,
        *,
        failure: McpUnavailable | None = None,
    ) -> None:
        if self._on_state is None:
            return
        connection = self._connections.get((workspace, name))
        tools = connection.tools if connection is not None and connection.tools else []
        qualified = assign((name, t.name) for t in tools)
        state = McpServerState(
            name=name,
            transport=config.transport,
            fingerprint=config.fingerprint(),
            mcpStatus=status,
            tools=[
                McpToolInfo(
                    name=t.name,
                    qualified=qualified[(name, t.name)],
                    readOnlyHint=ToolAnnotations.of(t.annotations).readOnlyHint,
                    idempotentHint=ToolAnnotations.of(t.annotations).idempotentHint,
                )
                for t in tools
                if config.offers(t.name)
            ],
            errorKind=failure.kind if failure else None,
            error=str(failure)[:2000] if failure else None,
            hint=failure.hint if failure else None,
            updatedAtMs=int(time.time() * 1000),
        )
        try:
            await self._on_state(workspace, state)
        except Exception:
            log.exception("could not record the state of MCP server %s", name)
