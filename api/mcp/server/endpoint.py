"""`/mcp`: the SDK's Streamable HTTP transport, mounted in the API.

The SDK is imported, and agentrt's server built, on the first request to `/mcp` rather
than at start-up: importing it is about a fifth of the API's start (its protocol types
alone are two versions of the whole MCP schema as pydantic models), and an API that no
MCP client calls never needs it. That first request waits for it (a few hundred ms);
the event loop goes on answering others meanwhile (the import runs in a thread).
"""

from __future__ import annotations

import asyncio
import importlib

from starlette.types import ASGIApp, Receive, Scope, Send

from api.security.asgi import send_json
from api.security.roles import MCP_PATH
from runtime.failures import TokenRequired
from runtime.settings import Settings


class McpEndpoint:
    """`/mcp`: the SDK's Streamable HTTP transport, refused without a configured token."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._transport: ASGIApp | None = None
        self._starting = asyncio.Lock()
        self._stop = asyncio.Event()
        self._serving: asyncio.Task[None] | None = None

    async def _started(self) -> ASGIApp:
        if self._transport is None:
            async with self._starting:
                if self._transport is None:
                    self._transport = await self._start()
        return self._transport

    async def _start(self) -> ASGIApp:
        tools = await asyncio.to_thread(importlib.import_module, "api.mcp.server.tools")
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
        from mcp.server.transport_security import TransportSecuritySettings

        server = tools.build_mcp_server(self.settings)
        server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            # The API's own chain guards hosts and origins (api/security).
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        # The SDK's session manager runs in a task of its own: its task group must be
        # entered and left by one task, and a request's task ends with the request.
        ready = asyncio.Event()

        async def serve() -> None:
            async with server.session_manager.run():
                ready.set()
                await self._stop.wait()

        self._serving = asyncio.create_task(serve(), name="mcp session manager")
        waiting = asyncio.create_task(ready.wait())
        await asyncio.wait({self._serving, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if self._serving.done():
            self._serving.result()  # it failed to start: say why
        return StreamableHTTPASGIApp(server.session_manager)

    async def stop(self) -> None:
        """At the app's shutdown: end the session manager, if a request started it."""
        self._stop.set()
        if self._serving is not None:
            await self._serving

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.settings.token_configured:
            refused = TokenRequired()  # the strict gate's own refusal, outside FastAPI
            await send_json(send, refused.http_status, refused.response_body())
            return
        transport = await self._started()
        await transport(scope, receive, send)
