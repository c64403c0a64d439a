"""Wire bodies of the standing-agent routes (issue 10's field names, camelCase on the wire:
runtime/wire.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt

from runtime.approvals.binding import DIGEST_PATTERN
from runtime.standing_agents.contracts import AgentType
from runtime.standing_agents.views import (
    DecisionView,
    LedgerTurn,
    LlmAttempt,
    MessageView,
    ModeChangeView,
)
from runtime.wire import WireBody, WireModel

Capability = Annotated[str, Field(min_length=1, max_length=100)]

# -- requests --------------------------------------------------------------------------------


class AgentCreate(WireBody):
    agent_type: AgentType


class MessageBody(WireBody):
    text: str = Field(min_length=1, max_length=20_000)
    # The client's retry key: the same messageId again adds no second message.
    message_id: str | None = Field(
        default=None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._:-]+$"
    )


class EventBody(WireBody):
    # A string, checked by the route against the postable kinds (EXTERNAL_EVENT_KINDS):
    # an enum here would answer with every kind, those the route refuses included.
    kind: str = Field(max_length=100)
    payload: dict[str, Any] = Field(default_factory=dict)
    # The client's dedupe id: the same eventId again enqueues nothing.
    event_id: str | None = Field(
        default=None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._:-]+$"
    )


class WebhookBody(WireBody):
    # Checked by the route against the kinds the agent's webhooks may enqueue.
    kind: str = Field(min_length=1, max_length=100)


class ScheduleBody(WireBody):
    cron: str = Field(
        min_length=1,
        max_length=200,
        pattern=r"^[^\x00]*$",
        description="A cron expression as Temporal reads it: 5 fields (minute hour "
        "day-of-month month day-of-week), or 6-7, or `@daily`, `@every 90m`.",
    )
    time_zone: str = Field(
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
    catchup_window_seconds: StrictInt = Field(
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


class SignalBody(WireBody):
    """POST /api/v1/tenants/{tenant}/redactor-signals (spec §3.9 RaiseRedactorSignalAsync)."""

    call_site: str = Field(min_length=1, max_length=120)
    # Checked by the route against AgentSignalKind (400 `invalid_signal_kind`).
    signal_kind: str = Field(min_length=1, max_length=40)
    payload: dict[str, Any] = Field(default_factory=dict)
    # The client's dedupe id: the same signalId again queues nothing.
    signal_id: str | None = Field(
        default=None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._:-]+$"
    )


class ModeBody(WireBody):
    mode: str = Field(min_length=1, max_length=80)
    actor: str | None = Field(default=None, max_length=200)


class RespondBody(WireBody):
    resolution: str = Field(min_length=1, max_length=4000)
    resolution_notes: str | None = Field(default=None, max_length=20_000)
    responded_by: str | None = Field(default=None, max_length=200)
    # The digest of the call its human was shown (an MCP call's `payload.digest`): the
    # answer is refused (409 approval_digest_mismatch) when the decision does not carry it.
    digest: str | None = Field(default=None, pattern=DIGEST_PATTERN)


class ConfigBody(WireBody):
    value: Any


class RegisterBody(WireBody):
    agent_id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$")
    role: str = Field(min_length=1, max_length=40)
    capabilities: list[Capability] = Field(default_factory=list, max_length=64)
    endpoint: str | None = Field(default=None, max_length=2000)


# -- responses -------------------------------------------------------------------------------


class BudgetPauseView(WireModel):
    axis: str = Field(
        description='"tokens", "tool_calls", "seconds", "cost_usd", "turns" (the tick\'s'
        ' budget) or "weekly_credit".'
    )
    cap: float | None
    spent: float | None
    resume_at: str | None = Field(
        default=None, description="When the weekly credit regenerates (that axis only)."
    )
    decision_id: str = Field(description="Its `budget_reached` attention request.")
    event_id: str
    since: str


class AgentView(WireModel):
    instance_id: str
    tenant: str
    agent_type: str
    status: str
    active_mode: str | None
    foundational: bool
    workset_deadline: str | None
    consecutive_idle_ticks: int
    consecutive_blocked_turns: int
    next_tick_at: str | None
    last_tick_at: str | None
    tick_in_progress: bool
    generation: int
    workflow_id: str
    created_at: str
    call_site: str | None = Field(
        default=None, description="A PromptRedactor's call site (spec §3.9)."
    )
    budget_pause: BudgetPauseView | None = Field(
        default=None,
        description="Set while the agent is Paused on a budget it reached (issue 21): it "
        "resumes by itself when the cap is raised or the credit's window regenerates.",
    )


class AgentList(WireModel):
    agents: list[AgentView]


class MessageAccepted(WireModel):
    message_id: str
    duplicate: bool = Field(description="True when this messageId was posted before.")


class MessageList(WireModel):
    messages: list[MessageView]


class ScheduleView(WireModel):
    schedule_id: str
    instance_id: str
    cron: str
    time_zone: str
    overlap: str
    catchup_window_seconds: int
    note: str | None
    created_at: str
    firings: int = Field(description="Ticks enqueued by this schedule.")
    last_fired_at: str | None
    next_fire_times: list[str] | None = Field(
        description="Temporal's next firing times; null when Temporal did not answer."
    )


class ScheduleList(WireModel):
    schedules: list[ScheduleView]


class WebhookView(WireModel):
    webhook_id: str
    instance_id: str
    kind: str
    url: str = Field(description="Where a sender POSTs, signed (Standard Webhooks).")
    created_at: str
    last_delivery_at: str | None


class WebhookCreated(WebhookView):
    secret: str = Field(description="The signing secret (`whsec_...`): shown here only.")


class WebhookList(WireModel):
    webhooks: list[WebhookView]


class SignalAccepted(WireModel):
    instance_id: str = Field(description="The call site's PromptRedactor (created Paused).")
    call_site: str
    event_id: str
    sequence_number: int
    instance_created: bool
    duplicate: bool = Field(description="True when this signalId was raised before.")
    decision_id: str | None = Field(
        default=None, description="A HumanRequest's decision on the tenant's queue."
    )


class EventAccepted(WireModel):
    event_id: str
    kind: str
    sequence_number: int
    duplicate: bool


class ModeChanges(WireModel):
    changes: list[ModeChangeView]


class ModeSet(WireModel):
    instance_id: str
    active_mode: str
    change: ModeChangeView


class Ledger(WireModel):
    turns: list[LedgerTurn]


class LlmCalls(WireModel):
    calls: list[LlmAttempt]


class DecisionList(WireModel):
    decisions: list[DecisionView]


class ConfigValue(WireModel):
    tenant: str
    key: str
    # The stored value; null when unset.
    value: Any
    # What a tick uses: the stored value, else the settings layer, else the code default.
    effective: Any
    updated_at: str | None


class ConfigList(WireModel):
    tenant: str
    configs: list[ConfigValue]


class RegistryAgent(WireModel):
    agent_id: str
    role: str
    capabilities: list[str]
    endpoint: str | None
    last_heartbeat_at: str


class RegistryList(WireModel):
    agents: list[RegistryAgent]


# -- a tenant's MCP servers, grants and the mode catalogue ---------------------------------------


class ModeToolsBody(WireBody):
    # The agent type's own tools (its superset) and MCP entries; the terminators are added.
    tools: list[Annotated[str, Field(min_length=1, max_length=120)]] = Field(max_length=200)


class ModePresetBody(WireBody):
    # The preset the mode's planning calls use (null: the type's site binding).
    preset_id: Annotated[str, Field(min_length=1, max_length=200)] | None


class ModeView(WireModel):
    agent_type: AgentType
    name: str
    description: str
    tools: list[str]
    is_default: bool
    # Wins over the type's site binding for this mode's planning calls (null: none).
    preset_id: str | None = None


class ModeList(WireModel):
    agent_type: AgentType
    modes: list[ModeView]
    superset: list[str]
