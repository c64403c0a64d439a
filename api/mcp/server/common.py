"""What every tool of agentrt's MCP server shares: the caller, refusals, answers."""

import asyncio
import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from starlette.requests import Request
from temporalio.exceptions import ApplicationError

from api.security.roles import STATE_KEY
from runtime.failures import decode_failure
from runtime.standing_agents.control import standing_agents_enabled
from runtime.store import Store
from runtime.tenants.tokens import Identity

TENANT_HEADER = "x-agentrt-tenant"
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
REMOVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
Id = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$")]
Text = Annotated[str, Field(min_length=1, max_length=20_000)]


class Refusal(Exception):
    """A tool failure: answered `isError: true` with agentrt's error body."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body["message"])
        self.body = body


def refused(code: str, message: str, **data: Any) -> Refusal:
    return Refusal({"code": code, "message": message, "data": data})


def answered(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
    """A tool whose value is its JSON result (text and structured content), and whose
    Refusal is an `isError: true` result carrying agentrt's body as it is (the SDK's own
    tool errors would prefix it)."""

    @functools.wraps(fn)
    async def tool(*args: Any, **kwargs: Any) -> CallToolResult:
        try:
            value = await fn(*args, **kwargs)
            if isinstance(value, CallToolResult):
                return value  # already an answer (an image's, say)
        except Refusal as refusal:
            text = json.dumps(refusal.body)
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        text = json.dumps(value)
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=value
        )

    tool.__signature__ = inspect.signature(fn).replace(  # type: ignore[attr-defined]
        return_annotation=CallToolResult
    )
    return tool


def from_failure(err: ApplicationError) -> Refusal:
    failure = decode_failure(err)
    if failure is None:
        return refused("internal_error", "the tool failed")
    body = failure.response_body()
    message = str(body.pop("error", failure.kind_name))
    code = str(body.pop("code", failure.kind_name))
    return refused(code, message, **body)


class Caller:
    """The verified identity of a tool call and the tenant it acts in."""

    def __init__(self, ctx: Context) -> None:
        request = ctx.request_context.request
        if not isinstance(request, Request):
            raise refused("transport_unsupported", "agentrt's tools are served over HTTP")
        identity = request.scope.get("state", {}).get(STATE_KEY)
        if not isinstance(identity, Identity):
            raise refused("token_required", "a bearer token is required")
        tenant = identity.tenant if not identity.is_admin else request.headers.get(TENANT_HEADER)
        if not tenant:
            raise refused(
                "tenant_required",
                f"the deployment token names its tenant in the {TENANT_HEADER} header",
            )
        self.identity = identity
        self.tenant = tenant
        self.request = request
        self.store: Store = request.app.state.store

    @property
    def who(self) -> str:
        return self.identity.label

    async def enabled(self) -> None:
        if not await asyncio.to_thread(standing_agents_enabled, self.store, self.tenant):
            raise refused(
                "feature_disabled",
                f'Standing agents are not enabled for tenant "{self.tenant}"',
                tenant=self.tenant,
            )
