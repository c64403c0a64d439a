"""The Windows lane as tools of agentrt's MCP server: the 14 `windows_*` verbs, for a
coder that holds a coding task of a tenant with the `windows-pool` feature.

Each verb takes its own arguments (the REST route's, validated and clamped the same way:
runtime/windows/contracts) plus the `taskId` of a task the caller holds. The lease
is the task's (holder `task-{taskId}`, through the existing `WindowsLeaseWorkflow`):
leased on the first verb, held until `windows_release`, the task's settlement or a lost
claim, or the lease's idle time. A verb runs once per call (a click is never repeated:
one update per call, as over REST); a screenshot comes back as MCP image content. A
refusal is `isError: true` with the lane's own body `{code, message, data}`.
"""

import asyncio
import base64
import contextlib
import inspect
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from api.mcp.server.common import Caller, Id, Refusal, answered, from_failure, refused
from api.windows.temporal_calls import run_verb
from runtime.coding_tasks import store as tasks
from runtime.coding_tasks.contracts import HELD, TaskState
from runtime.failures import decode_failure
from runtime.settings import Settings
from runtime.store.tenants import feature_enabled
from runtime.streams import coding_task_stream
from runtime.timestamps import iso_ms
from runtime.windows import lease_client
from runtime.windows.errors import WindowsError, WindowsErrorCode
from runtime.windows.lease_contracts import WINDOWS_POOL_FEATURE, task_holder
from runtime.windows.screenshots import read_screenshot
from runtime.windows.tools import WINDOWS_TOOLS
from runtime.windows.verbs import ARGS_MODELS, WindowsVerb, validate_and_clamp

log = logging.getLogger(__name__)

Caller_ = Callable[[Context], Awaitable[Caller]]
VERB_EVENT = "task.windows_verb"
AUDIT_RETENTION = 1000


def _lane(error: WindowsError) -> Refusal:
    return Refusal(error.body())


def _typed(err: ApplicationError) -> Refusal:
    failure = decode_failure(err)
    return _lane(failure) if isinstance(failure, WindowsError) else from_failure(err)


def _annotations(verb: WindowsVerb) -> ToolAnnotations:
    hints = WINDOWS_TOOLS[verb].annotations
    return ToolAnnotations(
        read_only_hint=hints.readOnlyHint,
        destructive_hint=hints.destructiveHint,
        idempotent_hint=hints.idempotentHint,
        open_world_hint=hints.openWorldHint,
    )


def _signature(verb: WindowsVerb) -> inspect.Signature:
    """`taskId`, then the verb's own arguments (as the REST route takes them), then ctx."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("taskId", keyword, annotation=Id),
        # The call's idempotency key: a retried call with it runs the verb once.
        inspect.Parameter("requestId", keyword, annotation=Id | None, default=None),
    ]
    for name, field in ARGS_MODELS[verb].model_fields.items():
        default = None if not field.is_required() else inspect.Parameter.empty
        annotation = Annotated[field.annotation, field]  # type: ignore[name-defined]
        params.append(inspect.Parameter(name, keyword, annotation=annotation, default=default))
    params.append(inspect.Parameter("ctx", keyword, annotation=Context))
    # Required arguments first: a keyword-only list takes any order, but keep it readable.
    params.sort(key=lambda p: (p.name == "ctx", p.default is not inspect.Parameter.empty))
    return inspect.Signature(params, return_annotation=CallToolResult)


@asynccontextmanager
async def _heartbeating(who: Caller, task_id: str, settings: Settings) -> AsyncIterator[None]:
    """The holder's heartbeat on the task now and every third of the claim timeout until
    the block ends (the task settled or taken meanwhile: the beats stop, the verb's
    caller learns it from the task)."""
    every = max(settings.coding_task_claim_timeout_ms / 3000, 0.5)

    async def beat() -> bool:
        try:
            await asyncio.to_thread(
                tasks.update_progress, who.store, who.tenant, task_id, who.who, datetime.now(UTC)
            )
        except ApplicationError:
            return False  # no longer held by this caller
        return True

    async def keep_beating() -> None:
        while True:
            if not await beat():
                return
            await asyncio.sleep(every)

    beating = asyncio.create_task(keep_beating())
    try:
        yield
    finally:
        beating.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beating


async def _release_if_settled(client: Client, who: Caller, task_id: str) -> None:
    """A task settled while its verb ran (its settlement released the lease before the
    verb leased one): release the lease that verb may have taken, now. Best effort: the
    lease's idle expiry is the backstop."""
    try:
        task = await asyncio.to_thread(tasks.get, who.store, who.tenant, task_id)
        if TaskState(task.state) not in HELD:
            await lease_client.settle(client, who.tenant, task_holder(task_id), "task_settled")
    except (ApplicationError, RPCError):
        log.info("could not release task %s's lease after its settlement", task_id)


def register_windows_tools(server: MCPServer, settings: Settings, caller: Caller_) -> None:
    for verb in WindowsVerb:
        server.add_tool(
            _verb_tool(verb, settings, caller),
            name=verb.value,
            description=WINDOWS_TOOLS[verb].description
            + " Takes the taskId of a coding task you hold (the machine is the task's), and "
            "a requestId of yours: a retried call with it runs the verb once.",
            annotations=_annotations(verb),
        )


def _verb_tool(verb: WindowsVerb, settings: Settings, caller: Caller_) -> Callable[..., Any]:
    async def tool(**kwargs: Any) -> Any:
        ctx: Context = kwargs.pop("ctx")
        task_id: str = kwargs.pop("taskId")
        request_id: str | None = kwargs.pop("requestId", None)
        who = await caller(ctx)
        enabled = await asyncio.to_thread(
            feature_enabled, who.store, who.tenant, WINDOWS_POOL_FEATURE
        )
        if not enabled:
            raise _lane(WindowsError.agentrt(WindowsErrorCode.FEATURE_DISABLED))
        try:
            task = await asyncio.to_thread(tasks.get, who.store, who.tenant, task_id)
        except ApplicationError as err:
            raise from_failure(err) from None
        held = TaskState(task.state) in HELD
        if not (held and task.holder == who.who):
            raise refused(
                "not_task_holder",
                "drive the Windows lane for a task you hold (claim it first)",
                taskId=task_id,
                state=task.state,
            )
        try:
            args = validate_and_clamp(verb, {k: v for k, v in kwargs.items() if v is not None})
        except ApplicationError as err:
            raise _typed(err) from None
        client = await who.request.app.state.temporal.get()
        try:
            # With a requestId, the lease's update id: Temporal applies it once, and a
            # retry gets the first call's answer (one attempt per call otherwise).
            update_id = f"mcp/{who.who}/{task_id}/{verb.value}/{request_id}" if request_id else None
            # A verb is the holder at work: it heartbeats the claim while it runs (a
            # `windows_wait_for` may outlast the claim timeout).
            async with _heartbeating(who, task_id, settings):
                result = await run_verb(
                    client, settings, who.tenant, task_holder(task_id), verb, args, update_id
                )
        except lease_client.LeaseCallFailed as err:
            raise _lane(err.error) from None
        except lease_client.LeaseUnavailable:
            raise refused("worker_unavailable", "no worker took the verb; call it again") from None
        finally:
            await _release_if_settled(client, who, task_id)
        # The audit of the lane: which verified identity ran which verb of the task's lease.
        await who.request.app.state.journal.aappend(
            coding_task_stream(who.tenant, task_id),
            VERB_EVENT,
            {"verb": verb.value, "by": who.who, "at": iso_ms(datetime.now(UTC))},
            retention=AUDIT_RETENTION,
        )
        if verb == WindowsVerb.SCREENSHOT and isinstance(result, dict):
            return await _image(who, result)
        return {"result": result}

    signature = _signature(verb)
    tool.__signature__ = signature  # type: ignore[attr-defined]
    # The SDK reads the type hints too (the Context parameter is found by its type).
    tool.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    tool.__name__ = verb.value
    tool.__doc__ = WINDOWS_TOOLS[verb].description
    return answered(tool)


async def _image(who: Caller, result: dict[str, Any]) -> CallToolResult:
    """The stored screenshot as MCP image content, with its reference as text."""
    stored = await read_screenshot(who.request.app.state.journal, str(result.get("screenshotRef")))
    content: list[TextContent | ImageContent] = [
        TextContent(type="text", text=json.dumps({"result": result}))
    ]
    if stored is not None:
        mime, data = stored
        content.append(
            ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=mime)
        )
    return CallToolResult(content=content, structured_content={"result": result})
