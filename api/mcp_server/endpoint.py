"""`/mcp`: the SDK's Streamable HTTP transport, mounted in the API."""

import asyncio

from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from api.mcp_server.common import MCP_PATH
from api.security.asgi import send_json
from api.security.guards import TOKEN_REQUIRED
from runtime.settings import Settings


class McpEndpoint:
    """`/mcp`: the SDK's Streamable HTTP transport, refused without a configured token."""

    def __init__(self, server: MCPServer, settings: Settings) -> None:
        server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            # The API's own chain guards hosts and origins (api/security).
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.server = server
        self.settings = settings
        self._transport = StreamableHTTPASGIApp(server.session_manager)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Run the SDK's session manager in a task of its own (its task group must be
        entered and left by one task; the app's lifespan may span two)."""
        ready = asyncio.Event()

        async def serve() -> None:
            async with self.server.session_manager.run():
                ready.set()
                await self._stop.wait()

        self._task = asyncio.create_task(serve(), name="mcp session manager")
        waiting = asyncio.create_task(ready.wait())
        await asyncio.wait({self._task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if self._task.done():
            self._task.result()  # it failed to start: say why

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.settings.token_configured:
            await send_json(send, 401, TOKEN_REQUIRED)
            return
        await self._transport(scope, receive, send)
