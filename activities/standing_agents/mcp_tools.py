"""A standing agent's MCP tools in the worker: what a tick offers, and the calls.

The tenant's servers are connected by the worker's pool under the tenant's scope
(runtime/mcp/grants.tenant_scope). A tick offers the tools its mode names and a grant of
its agent type names (fail-closed: no grant, no tool). A call goes through the same rail
as the agent's own tools (budget, mode, arguments, constitution: the caller's checks),
then:

- a tool annotated `readOnlyHint: true` of a server marked `trust: true` runs at once (a
  read may repeat on a retry);
- any other is not run: it becomes a decision on the tenant's queue
  (runtime/standing_agents/mcp_calls), and runs once after a human approves it, in the
  tick of the answer, under the operation id `agent-mcp/{tenant}/{decisionId}` with the
  guarantees of every MCP call (activities/mcp/calls.McpCalls.run_once: recorded
  `started` before the request, `outcome_unknown` rather than twice).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from activities.mcp.calls import McpCalls, ResolvedTool
from activities.mcp.pool import McpTool
from runtime.approvals.binding import DIGEST_MISMATCH, still_approved
from runtime.llm.contracts import ToolCall, ToolSpec
from runtime.mcp import grants
from runtime.mcp.contracts import McpBinding
from runtime.standing_agents import mcp_calls
from runtime.standing_agents.contracts import APPROVE, ActionOutcome, AgentType
from runtime.standing_agents.models import AttentionRequest
from runtime.standing_agents.tool_context import ToolContext
from runtime.standing_agents.workflow_contracts import ActionRecord, ApprovedMcpCallInput
from runtime.store import Store
from runtime.tools.results import ToolResult

# The rail's constitution check: (reason, the rules broken), or None when allowed.
Constitution = Callable[[str, str, dict[str, Any]], Awaitable[tuple[str, list[str]] | None]]
# Why a call to an MCP tool was not run (what the model and the ledger read).
BLOCK_NOT_GRANTED = "mcp_tool_not_granted"
BLOCK_NOT_OFFERED = "mcp_tool_unavailable"


def image_scope(instance_id: str) -> str:
    return f"agent-{instance_id}"


def result_of(result: ToolResult) -> tuple[ActionOutcome, dict[str, Any]]:
    """An MCP tool's result as an agent's tool result (failures are errors, not raises)."""
    if result.status != "completed":
        return ActionOutcome.ERROR, {"error": result.error or result.output_text}
    body: dict[str, Any] = {"output": result.output_text}
    if result.image_refs:
        body["imageRefs"] = list(result.image_refs)
    return ActionOutcome.OK, body


class AgentMcpTools:
    def __init__(self, mcp: McpCalls | None, store: Store) -> None:
        self.mcp = mcp
        self.store = store

    async def _granted(self, tenant: str, agent_type: AgentType) -> list[str]:
        return await asyncio.to_thread(grants.granted, self.store, tenant, agent_type.value)

    async def offered(
        self, tenant: str, agent_type: AgentType, mode_tools: list[str]
    ) -> list[McpTool]:
        """The tenant's MCP tools a tick in this mode offers (unreachable servers left out)."""
        if self.mcp is None or not grants.mcp_patterns(mode_tools):
            return []  # no MCP entry in the mode: no store read, no connection
        granted = await self._granted(tenant, agent_type)
        if not granted:
            return []
        tools = await self.mcp.offered(grants.tenant_scope(tenant))
        return [
            t for t in tools if grants.offered(mode_tools, granted, t.descriptor.name, t.server)
        ]

    async def specs(
        self, tenant: str, agent_type: AgentType, mode_tools: list[str]
    ) -> list[ToolSpec]:
        return [t.descriptor.spec() for t in await self.offered(tenant, agent_type, mode_tools)]

    async def admit(
        self, tenant: str, agent_type: AgentType, mode_tools: list[str], name: str
    ) -> ResolvedTool | str:
        """The tool a call names, or why it is blocked (mode, grant, server)."""
        if not grants.mcp_patterns(mode_tools):
            return "tool_not_in_mode"  # no MCP entry in the mode: nothing is opened
        resolved = None
        if self.mcp is not None:
            resolved = await self.mcp.resolve(grants.tenant_scope(tenant), name)
        server = resolved.tool.server if resolved is not None else None
        if not grants.named(mode_tools, name, server):
            return "tool_not_in_mode"
        if not grants.named(await self._granted(tenant, agent_type), name, server):
            return BLOCK_NOT_GRANTED
        if resolved is None:
            return BLOCK_NOT_OFFERED
        return resolved

    async def run(
        self, ctx: ToolContext, call: ToolCall, resolved: ResolvedTool
    ) -> tuple[ActionOutcome, dict[str, Any], str | None]:
        """A governed call that passed the rail: (outcome, result, decision id if raised)."""
        assert self.mcp is not None
        tool = resolved.tool
        if tool.descriptor.read_only and tool.trusted:
            # A read-only tool of a server the operator marked `trust: true`; any other
            # server's readOnlyHint is only its word: a human decides.
            result = await self.mcp.read(
                grants.tenant_scope(ctx.tenant), call, image_scope(ctx.instance_id)
            )
            outcome, body = result_of(result)
            return outcome, body, None
        binding = McpBinding(
            server=tool.server, tool=tool.tool, fingerprint=resolved.config.fingerprint()
        )
        row = await asyncio.to_thread(
            mcp_calls.propose,
            ctx,
            tool=call.name,
            binding=binding,
            arguments=dict(call.arguments),
            description=tool.descriptor.description,
            annotations=tool.descriptor.annotations.model_dump(),
        )
        body = {
            "decisionId": row.decision_id,
            "status": "awaiting_approval",
            "message": (
                f"{call.name} is not read-only: a human must approve it. It runs once "
                "approved, and its result reaches you as your next event."
            ),
        }
        return ActionOutcome.OK, body, row.decision_id

    async def approved_call(
        self, request: ApprovedMcpCallInput, constitution: Constitution
    ) -> tuple[ActionRecord, dict[str, Any]]:
        """The call a human approved, once, on exactly the server, tool, configuration and
        arguments approved. An earlier attempt's record decides first (a refusal now
        would say "not called" of a call the server may have applied); else the checks
        of now: the decision is this agent's, of its generation, and approved; the mode
        and a grant still name the tool; the constitution allows it."""
        row = await asyncio.to_thread(
            mcp_calls.decision_of, self.store, request.tenant, request.decision_id
        )
        payload = row.payload if row is not None else {}
        raw = payload.get("arguments")
        call = ToolCall(
            id=request.decision_id,
            name=str(payload.get("tool") or "mcp"),
            arguments=raw if isinstance(raw, dict) else {},
        )

        def action(
            outcome: ActionOutcome, reason: str | None = None, broken: list[str] | None = None
        ) -> ActionRecord:
            return ActionRecord(
                tool=call.name,
                arguments=call.arguments,
                outcome=outcome,
                blocked_reason=reason,
                violations=broken or [],
                op_id=request.op_id,
            )

        started = None
        if self.mcp is not None:
            started = await asyncio.to_thread(self.mcp.ledger.get, request.op_id)
        refusal: tuple[str, list[str]] | None = None
        if started is None:
            refusal = await self._refusal(request, row, call, constitution)
        if refusal is not None:
            reason, broken = refusal
            return action(ActionOutcome.BLOCKED, reason, broken), {"error": reason}
        assert self.mcp is not None and row is not None
        result = await self.mcp.run_once(
            grants.tenant_scope(request.tenant),
            call,
            request.op_id,
            image_scope(request.instance_id),
            mcp_calls.binding_of(row),
            retry_idempotent=False,
        )
        outcome, body = result_of(result)
        return action(outcome), body

    async def _refusal(
        self,
        request: ApprovedMcpCallInput,
        row: AttentionRequest | None,
        call: ToolCall,
        constitution: Constitution,
    ) -> tuple[str, list[str]] | None:
        if self.mcp is None:
            return "this worker has no MCP pool", []
        if row is None or row.resolution != APPROVE:
            return "the decision is not an approved MCP call", []
        target = mcp_calls.call_target(mcp_calls.binding_of(row))
        if not still_approved(row.approved_digest, call.name, call.arguments, **target):
            return (
                f"{DIGEST_MISMATCH}: its arguments changed after they were approved "
                f"({row.approved_digest}); it was not called",
                [],
            )
        stale = await asyncio.to_thread(
            mcp_calls.stale_refusal, self.store, row, request.instance_id, request.generation
        )
        if stale is not None:
            return stale, []
        server = mcp_calls.binding_of(row).server
        if not grants.named(request.mode_tools, call.name, server):
            return f"tool_not_in_mode: the agent's mode no longer offers {call.name}", []
        if not grants.named(
            await self._granted(request.tenant, request.agent_type), call.name, server
        ):
            return f"{BLOCK_NOT_GRANTED}: the grant of {call.name} was revoked", []
        return await constitution(request.tenant, call.name, call.arguments)
