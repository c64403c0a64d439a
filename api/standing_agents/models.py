"""Wire bodies of the standing-agent routes (issue 10's field names, camelCase)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from api.workspace.status_models import McpServer
from runtime.approvals.binding import DIGEST_PATTERN
from runtime.standing_agents.contracts import AgentType
from runtime.standing_agents.views import DecisionView, LedgerTurn, LlmAttempt, MessageView

Capability = Annotated[str, Field(min_length=1, max_length=100)]

# -- requests --------------------------------------------------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FeatureBody(_Body):
    # Strict: "no", 1 or "off" are refused, not read as booleans.
    enabled: StrictBool


class AgentCreate(_Body):
    agentType: AgentType


class MessageBody(_Body):
    text: str = Field(min_length=1, max_length=20_000)
    # The client's retry key: the same messageId again adds no second message.
    messageId: str | None = Field(
        default=None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._:-]+$"
    )


class EventBody(_Body):
    # A string, checked by the route against the postable kinds (EXTERNAL_EVENT_KINDS):
    # an enum here would answer with every kind, those the route refuses included.
    kind: str = Field(max_length=100)
    payload: dict[str, Any] = Field(default_factory=dict)
    # The client's dedupe id: the same eventId again enqueues nothing.
    eventId: str | None = Field(
        default=None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._:-]+$"
    )


class WebhookBody(_Body):
    # Checked by the route against the kinds the agent's webhooks may enqueue.
    kind: str = Field(min_length=1, max_length=100)


class ScheduleBody(_Body):
    cron: str = Field(
        min_length=1,
        max_length=200,
        pattern=r"^[^\x00]*$",
        description="A cron expression as Temporal reads it: 5 fields (minute hour "
        "day-of-month month day-of-week), or 6-7, or `@daily`, `@every 90m`.",
    )
    timeZone: str = Field(
        default="UTC",
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_+/-]+$",
        description="An IANA time zone.",
    )
    overlap: Literal["skip", "bufferOne"] = Field(
        default="skip",
        description="A firing while the previous one's tick is queued or running: "
        "skipped, or (bufferOne) run after it, one at most.",
    )
    catchupWindowSeconds: StrictInt = Field(
        default=3600,
        ge=10,
        le=604_800,
        description="A firing missed while Temporal was down still runs if Temporal is "
        "back within this window.",
    )
    note: str | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        pattern=r"^[^\x00]*$",
        description="Told to the agent.",
    )


class SignalBody(_Body):
    """POST /api/v1/tenants/{tenant}/redactor-signals (spec §3.9 RaiseRedactorSignalAsync)."""

    callSite: str = Field(min_length=1, max_length=120)
    # Checked by the route against AgentSignalKind (400 `invalid_signal_kind`).
    signalKind: str = Field(min_length=1, max_length=40)
    payload: dict[str, Any] = Field(default_factory=dict)
    # The client's dedupe id: the same signalId again queues nothing.
    signalId: str | None = Field(
        default=None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._:-]+$"
    )


class ModeBody(_Body):
    mode: str = Field(min_length=1, max_length=80)
    actor: str | None = Field(default=None, max_length=200)


class RespondBody(_Body):
    resolution: str = Field(min_length=1, max_length=4000)
    resolutionNotes: str | None = Field(default=None, max_length=20_000)
    respondedBy: str | None = Field(default=None, max_length=200)
    # The digest of the call its human was shown (an MCP call's `payload.digest`): the
    # answer is refused (409 approval_digest_mismatch) when the decision does not carry it.
    digest: str | None = Field(default=None, pattern=DIGEST_PATTERN)


class ConfigBody(_Body):
    value: Any


class RegisterBody(_Body):
    agentId: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$")
    role: str = Field(min_length=1, max_length=40)
    capabilities: list[Capability] = Field(default_factory=list, max_length=64)
    endpoint: str | None = Field(default=None, max_length=2000)


# -- responses -------------------------------------------------------------------------------


class FeatureState(BaseModel):
    tenant: str
    feature: str
    enabled: bool
    soaInstanceId: str | None = Field(
        default=None, description="The tenant's SOA when it exists (auto-bootstrap)."
    )
    deploymentEnabled: bool | None = Field(
        default=None,
        description="The deployment's switch (AGENTRT_STANDING_AGENTS_ENABLED): when false,"
        " no agent ticks whatever the tenant's flag (spec §3.2). Standing agents only.",
    )


class BudgetPauseView(BaseModel):
    axis: str = Field(
        description='"tokens", "tool_calls", "seconds", "cost_usd", "turns" (the tick\'s'
        ' budget) or "weekly_credit".'
    )
    cap: float | None
    spent: float | None
    resumeAt: str | None = Field(
        default=None, description="When the weekly credit regenerates (that axis only)."
    )
    decisionId: str = Field(description="Its `budget_reached` attention request.")
    eventId: str
    since: str


class AgentView(BaseModel):
    instanceId: str
    tenant: str
    agentType: str
    status: str
    activeMode: str | None
    foundational: bool
    worksetDeadline: str | None
    consecutiveIdleTicks: int
    consecutiveBlockedTurns: int
    nextTickAt: str | None
    lastTickAt: str | None
    tickInProgress: bool
    generation: int
    workflowId: str
    createdAt: str
    callSite: str | None = Field(
        default=None, description="A PromptRedactor's call site (spec §3.9)."
    )
    budgetPause: BudgetPauseView | None = Field(
        default=None,
        description="Set while the agent is Paused on a budget it reached (issue 21): it "
        "resumes by itself when the cap is raised or the credit's window regenerates.",
    )


class AgentList(BaseModel):
    agents: list[AgentView]


class MessageAccepted(BaseModel):
    messageId: str
    duplicate: bool = Field(description="True when this messageId was posted before.")


class MessageList(BaseModel):
    messages: list[MessageView]


class ScheduleView(BaseModel):
    scheduleId: str
    instanceId: str
    cron: str
    timeZone: str
    overlap: str
    catchupWindowSeconds: int
    note: str | None
    createdAt: str
    firings: int = Field(description="Ticks enqueued by this schedule.")
    lastFiredAt: str | None
    nextFireTimes: list[str] | None = Field(
        description="Temporal's next firing times; null when Temporal did not answer."
    )


class ScheduleList(BaseModel):
    schedules: list[ScheduleView]


class WebhookView(BaseModel):
    webhookId: str
    instanceId: str
    kind: str
    url: str = Field(description="Where a sender POSTs, signed (Standard Webhooks).")
    createdAt: str
    lastDeliveryAt: str | None


class WebhookCreated(WebhookView):
    secret: str = Field(description="The signing secret (`whsec_...`): shown here only.")


class WebhookList(BaseModel):
    webhooks: list[WebhookView]


class SignalAccepted(BaseModel):
    instanceId: str = Field(description="The call site's PromptRedactor (created Paused).")
    callSite: str
    eventId: str
    sequenceNumber: int
    instanceCreated: bool
    duplicate: bool = Field(description="True when this signalId was raised before.")
    decisionId: str | None = Field(
        default=None, description="A HumanRequest's decision on the tenant's queue."
    )


class EventAccepted(BaseModel):
    eventId: str
    kind: str
    sequenceNumber: int
    duplicate: bool


class ModeChangeView(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: str | None = Field(alias="from")
    to: str
    source: Literal["ui", "approval"]
    actor: str | None
    decisionId: str | None
    createdAt: str


class ModeChanges(BaseModel):
    changes: list[ModeChangeView]


class ModeSet(BaseModel):
    instanceId: str
    activeMode: str
    change: ModeChangeView


class Ledger(BaseModel):
    turns: list[LedgerTurn]


class LlmCalls(BaseModel):
    calls: list[LlmAttempt]


class DecisionList(BaseModel):
    decisions: list[DecisionView]


class ConfigValue(BaseModel):
    tenant: str
    key: str
    # The stored value; null when unset.
    value: Any
    # What a tick uses: the stored value, else the settings layer, else the code default.
    effective: Any
    updatedAt: str | None


class ConfigList(BaseModel):
    tenant: str
    configs: list[ConfigValue]


class RegistryAgent(BaseModel):
    agentId: str
    role: str
    capabilities: list[str]
    endpoint: str | None
    lastHeartbeatAt: str


class RegistryList(BaseModel):
    agents: list[RegistryAgent]


# -- a tenant's MCP servers, grants and the mode catalogue ---------------------------------------


class McpGrantBody(_Body):
    # `mcp__<server>__<tool>` or `mcp__<server>__*` (runtime/mcp/grants); [] revokes.
    tools: list[Annotated[str, Field(max_length=64)]] = Field(max_length=200)


class McpGrant(BaseModel):
    tenant: str
    agentType: AgentType
    tools: list[str]


class ModeToolsBody(_Body):
    # The agent type's own tools (its superset) and MCP entries; the terminators are added.
    tools: list[Annotated[str, Field(min_length=1, max_length=120)]] = Field(max_length=200)


class ModePresetBody(_Body):
    # The preset the mode's planning calls use (null: the type's site binding).
    presetId: Annotated[str, Field(min_length=1, max_length=200)] | None


class ModeView(BaseModel):
    agentType: AgentType
    name: str
    description: str
    tools: list[str]
    isDefault: bool
    # Wins over the type's site binding for this mode's planning calls (null: none).
    presetId: str | None = None


class ModeList(BaseModel):
    agentType: AgentType
    modes: list[ModeView]
    superset: list[str]


class TenantMcp(BaseModel):
    """A tenant's MCP servers for its standing agents, their state, and the grants."""

    tenant: str
    discoveryState: Literal["not_started", "in_progress", "completed"]
    servers: list[McpServer]
    grants: dict[str, list[str]]
