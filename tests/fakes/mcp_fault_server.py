"""An MCP server built on the official Python SDK (`mcp.server.mcpserver.MCPServer`),
served over Streamable HTTP, for the faults a real server can show agentrt: a call that
hangs, a crash mid-call, `isError: true`, a request for the user (elicitation, which
agentrt does not declare), and a ledger of the calls it received.

Run as its own process so a test can kill it:
    python -m tests.fakes.mcp_fault_server --port P --calls FILE
Every call of `record` appends one JSON line `{"value": ..., "operationId": ...}` to FILE
(the operation id agentrt sends in `_meta`, key `io.agentrt/operationId`) before it
answers, so the file is what the server saw, whatever the client saw.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    BlobResourceContents,
    EmbeddedResource,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel

OPERATION_ID_KEY = "io.agentrt/operationId"


def build(calls: Path) -> MCPServer:
    server = MCPServer("agentrt-fault-server", instructions="Faults for agentrt's suite.")

    def log(entry: dict[str, Any]) -> None:
        with calls.open("a") as out:
            out.write(json.dumps(entry) + "\n")
            out.flush()
            os.fsync(out.fileno())

    def operation_id(ctx: Context) -> str | None:
        meta: dict[str, Any] = dict(ctx.request_context.meta or {})
        value = meta.get(OPERATION_ID_KEY)
        return value if isinstance(value, str) else None

    @server.tool(
        description="Record a value (a side effect: one line in the server's ledger).",
        annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False),
    )
    async def record(value: str, ctx: Context) -> str:
        log({"tool": "record", "value": value, "operationId": operation_id(ctx)})
        return f"recorded {value}"

    @server.tool(
        description="Record a value, slowly (the side effect happens first).",
        annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False),
    )
    async def record_slowly(value: str, seconds: float, ctx: Context) -> str:
        log({"tool": "record_slowly", "value": value, "operationId": operation_id(ctx)})
        await asyncio.sleep(seconds)
        return f"recorded {value}"

    @server.tool(
        description="Set a key to a value (idempotent: the same call twice leaves one state).",
        annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True),
    )
    async def put(key: str, value: str, ctx: Context) -> str:
        log({"tool": "put", "value": f"{key}={value}", "operationId": operation_id(ctx)})
        return f"{key} is {value}"

    @server.tool(
        description="How many calls the ledger holds.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    async def count() -> int:
        return len(calls.read_text().splitlines()) if calls.exists() else 0

    @server.tool(description="Never answers.", annotations=ToolAnnotations(read_only_hint=True))
    async def hang() -> str:
        await asyncio.Event().wait()
        return "never"

    @server.tool(description="The server process dies mid-call.")
    async def crash() -> str:
        os._exit(3)

    class Login(BaseModel):
        user: str

    @server.tool(description="Asks the client's user for a login (elicitation).")
    async def ask_login(ctx: Context) -> str:
        answer = await ctx.elicit("Who are you?", Login)
        return f"elicited: {answer}"

    @server.tool(
        description="A large text and a binary resource (what a client keeps by reference).",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    async def bulk(kilobytes: int) -> list[TextContent | EmbeddedResource]:
        text = ("0123456789abcdef" * 64) * kilobytes
        blob = base64.b64encode(bytes(range(256)) * 4).decode()
        resource = BlobResourceContents(
            uri="file:///blob.bin", mime_type="application/octet-stream", blob=blob
        )
        return [
            TextContent(type="text", text=text),
            EmbeddedResource(type="resource", resource=resource),
        ]

    @server.tool(description="Always fails (isError: true).")
    async def fail(reason: str) -> str:
        raise ToolError(f"it failed: {reason}")

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--calls", type=Path, required=True)
    args = parser.parse_args()
    app = build(args.calls).streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
