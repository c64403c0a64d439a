"""The registry, coding-task and decision tools of agentrt's MCP server."""

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field
from temporalio.exceptions import ApplicationError

from api.coding_tasks.temporal_calls import after_write
from api.mcp.server.common import (
    READ,
    WRITE,
    Caller,
    Id,
    Text,
    answered,
    from_failure,
    refused,
)
from api.mcp.server.windows import register_windows_tools
from api.standing_agents.temporal_calls import Waker
from runtime.coding_tasks import store as tasks
from runtime.coding_tasks.contracts import TaskState
from runtime.failures import refusal_of
from runtime.settings import Settings
from runtime.standing_agents import coder_decisions, decision_queue, registry_store
from runtime.store import Store
from runtime.timestamps import iso_ms


def _entry(entry: registry_store.Registered) -> dict[str, Any]:
    return {
        "agentId": entry.agent_id,
        "role": entry.role,
        "capabilities": entry.capabilities,
        "endpoint": entry.endpoint,
        "lastHeartbeatAt": iso_ms(entry.last_heartbeat_at),
    }


def build_mcp_server(settings: Settings) -> MCPServer:
    """The server and its tools (the app mounts its transport at `/mcp`)."""
    server = MCPServer(
        name="agentrt",
        instructions=(
            "agentrt's coordination tools: register as a coder, list and claim coding "
            "tasks that match your capabilities, report progress (which also keeps your "
            "claim), complete them, and ask a human with decision_request."
        ),
    )
    ttl = timedelta(milliseconds=settings.registry_ttl_ms)

    async def caller(ctx: Context) -> Caller:
        who = Caller(ctx)
        await who.enabled()
        # Any call of a registered coder is its heartbeat: its live entries stay listed.
        await asyncio.to_thread(registry_store.refresh_by, who.store, who.tenant, who.who, ttl)
        return who

    async def settled(who: Caller, row: Any) -> None:
        state = who.request.app.state
        waker = Waker(state.temporal, settings, state.agent_sweeper.retries)
        await after_write(state.temporal, settings, who.store, row, waker)

    async def run(fn: Any, *args: Any) -> Any:
        try:
            return await asyncio.to_thread(fn, *args)
        except ApplicationError as err:
            raise from_failure(err) from None

    # -- the registry ------------------------------------------------------------------------

    @server.tool(
        description="Register (or re-register) as an agent of the tenant with a role and "
        "capabilities; registering again refreshes the entry. Entries expire after 5 "
        "minutes without a heartbeat (any call of yours refreshes it).",
        annotations=WRITE,
    )
    @answered
    async def agent_register(
        agentId: Id,
        role: Annotated[str, Field(min_length=1, max_length=40)],
        capabilities: list[Annotated[str, Field(min_length=1, max_length=100)]],
        ctx: Context,
        endpoint: Annotated[str, Field(max_length=2000)] | None = None,
    ) -> dict[str, Any]:
        who = await caller(ctx)
        try:
            entry = await asyncio.to_thread(
                registry_store.register,
                who.store,
                who.tenant,
                agentId,
                role,
                capabilities,
                endpoint,
                who.who,
            )
        except registry_store.ReservedAgentId:
            raise refused(
                "agent_id_reserved", "ids starting with soa- are the SOA's", agentId=agentId
            ) from None
        except registry_store.NotOwner:
            raise _not_yours(agentId) from None
        return _entry(entry)

    @server.tool(description="Refresh your registry entry.", annotations=WRITE)
    @answered
    async def agent_heartbeat(agentId: Id, ctx: Context) -> dict[str, Any]:
        who = await caller(ctx)
        try:
            entry = await asyncio.to_thread(
                registry_store.heartbeat, who.store, who.tenant, agentId, ttl, who.who
            )
        except registry_store.NotRegistered:
            raise refused(
                "agent_not_registered", "no live entry: register again", agentId=agentId
            ) from None
        except registry_store.NotOwner:
            raise _not_yours(agentId) from None
        return _entry(entry)

    @server.tool(description="The tenant's live agents (the SOA first).", annotations=READ)
    @answered
    async def agent_list(
        ctx: Context, capability: Annotated[str, Field(max_length=100)] | None = None
    ) -> dict[str, Any]:
        who = await caller(ctx)
        entries = await asyncio.to_thread(
            registry_store.live_entries, who.store, who.tenant, ttl, capability
        )
        return {"agents": [_entry(e) for e in entries]}

    @server.tool(
        description="The live agents that have a capability (whom to route work to).",
        annotations=READ,
    )
    @answered
    async def agent_route(
        capability: Annotated[str, Field(min_length=1, max_length=100)], ctx: Context
    ) -> dict[str, Any]:
        who = await caller(ctx)
        entries = await asyncio.to_thread(
            registry_store.live_entries, who.store, who.tenant, ttl, capability
        )
        return {"capability": capability, "agents": [_entry(e) for e in entries]}

    @server.tool(
        description="Remove your registry entry.",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True
        ),
    )
    @answered
    async def agent_unregister(agentId: Id, ctx: Context) -> dict[str, Any]:
        who = await caller(ctx)
        try:
            removed = await asyncio.to_thread(
                registry_store.unregister, who.store, who.tenant, agentId, who.who
            )
        except registry_store.NotOwner:
            raise _not_yours(agentId) from None
        return {"agentId": agentId, "removed": removed}

    # -- coding tasks ------------------------------------------------------------------------

    @server.tool(
        description="The tenant's coding tasks, optionally in some states (open ones are "
        "free to claim); with capabilities, only the tasks those capabilities cover (the "
        "ones you may claim).",
        annotations=READ,
    )
    @answered
    async def coding_task_list(
        ctx: Context,
        state: list[TaskState] | None = None,
        capabilities: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = None,
    ) -> dict[str, Any]:
        who = await caller(ctx)
        rows = await asyncio.to_thread(tasks.list_tasks, who.store, who.tenant, state or [])
        if capabilities is not None:
            mine = set(capabilities)
            rows = [r for r in rows if set(r.capabilities or []) <= mine]
        return {"tasks": [tasks.view(r).model_dump(mode="json") for r in rows]}

    @server.tool(description="One coding task: instructions, state, notes.", annotations=READ)
    @answered
    async def coding_task_get(taskId: Id, ctx: Context) -> dict[str, Any]:
        who = await caller(ctx)
        row = await run(tasks.get, who.store, who.tenant, taskId)
        return dict(tasks.view(row).model_dump(mode="json"))

    @server.tool(
        description="Claim an open task: you hold it until you complete it, or until you "
        "stop calling coding_task_update (the claim runs out and the task is open again). "
        "With agentId, your registry entry's capabilities must cover the task's. A retry "
        "of your own claim answers the same.",
        annotations=WRITE,
    )
    @answered
    async def coding_task_claim(
        taskId: Id, ctx: Context, agentId: Id | None = None
    ) -> dict[str, Any]:
        who = await caller(ctx)
        task = await run(tasks.get, who.store, who.tenant, taskId)
        capabilities: list[str] | None = None
        if task.capabilities:
            entry = None
            if agentId is not None:
                entry = await asyncio.to_thread(
                    registry_store.live_entry, who.store, who.tenant, agentId, ttl, who.who
                )
            if entry is None:
                raise refused(
                    "agent_not_registered",
                    "this task needs capabilities: register, then claim with your agentId",
                    capabilities=task.capabilities,
                )
            capabilities = entry.capabilities
        if agentId is not None:
            await asyncio.to_thread(_refresh, who.store, who.tenant, agentId, ttl, who.who)
        row = await run(tasks.claim, who.store, who.tenant, taskId, who.who, _now(), capabilities)
        await settled(who, row)
        return dict(tasks.view(row).model_dump(mode="json"))

    @server.tool(
        description="Report progress on a task you hold (also your heartbeat: it keeps "
        "the claim). A note with the same noteId is added once.",
        annotations=WRITE,
    )
    @answered
    async def coding_task_update(
        taskId: Id,
        ctx: Context,
        note: Text | None = None,
        noteId: Id | None = None,
    ) -> dict[str, Any]:
        who = await caller(ctx)
        row = await run(
            tasks.update_progress, who.store, who.tenant, taskId, who.who, _now(), note, noteId
        )
        return dict(tasks.view(row).model_dump(mode="json"))

    @server.tool(
        description="Complete a task you hold: succeeded or failed, with a summary and "
        "artifacts ({kind, ref, description}); the agent that proposed it reads the outcome "
        "on its next turn. A retry of the same completion answers the same.",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    )
    @answered
    async def coding_task_complete(
        taskId: Id,
        outcome: Literal["succeeded", "failed"],
        ctx: Context,
        summary: Annotated[str, Field(max_length=20_000)] | None = None,
        artifacts: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        who = await caller(ctx)
        row = await run(
            tasks.complete,
            who.store,
            who.tenant,
            taskId,
            who.who,
            TaskState(outcome),
            _now(),
            summary,
            artifacts,
        )
        await settled(who, row)
        return dict(tasks.view(row).model_dump(mode="json"))

    # -- humans ------------------------------------------------------------------------------

    @server.tool(
        description="Ask a human: the question lands in the tenant's decision queue. Give "
        "a requestId (yours, unique per question): asking again with it adds nothing. "
        "Read the answer with decision_get.",
        annotations=WRITE,
    )
    @answered
    async def decision_request(
        title: Annotated[str, Field(min_length=1, max_length=500)],
        body: Text,
        requestId: Id,
        ctx: Context,
        options: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = None,
        taskId: Id | None = None,
    ) -> dict[str, Any]:
        who = await caller(ctx)
        if taskId is not None:
            await run(tasks.get, who.store, who.tenant, taskId)
        row = await asyncio.to_thread(
            lambda: coder_decisions.coder_decision(
                who.store,
                tenant=who.tenant,
                title=title,
                body=body,
                options=options,
                asked_by=who.who,
                task_id=taskId,
                op_id=f"coder/{who.tenant}/{who.who}/{requestId}",
            )
        )
        return decision_queue.decision_view(row).model_dump(mode="json")

    @server.tool(description="A decision's state and, once answered, the answer.", annotations=READ)
    @answered
    async def decision_get(decisionId: Id, ctx: Context) -> dict[str, Any]:
        who = await caller(ctx)
        try:
            row = await asyncio.to_thread(
                decision_queue.get_decision, who.store, who.tenant, decisionId
            )
        except ApplicationError as err:
            if refusal_of(err, decision_queue.DecisionNotFound) is None:
                raise
            raise refused("decision_not_found", "no such decision", decisionId=decisionId) from None
        return decision_queue.decision_view(row).model_dump(mode="json")

    register_windows_tools(server, settings, caller)
    return server


def _now() -> datetime:
    return datetime.now(UTC)


def _refresh(store: Store, tenant: str, agent_id: str, ttl: timedelta, by: str) -> None:
    """Any call of a registered coder with its agentId refreshes its entry."""
    try:
        registry_store.heartbeat(store, tenant, agent_id, ttl, by)
    except (registry_store.NotRegistered, registry_store.NotOwner):
        pass


def _not_yours(agent_id: str) -> Exception:
    return refused(
        "agent_not_yours",
        "another coder registered this agentId: register your own",
        agentId=agent_id,
    )
