"""Tables of the standing agents (spec standing-agents §3.1). What clients read back.

The workflow `agent/{tenant}/{instanceId}` owns the state machine; these rows are
what it (through activities) and the control side (the API) write for clients to
read, and the durable queue of events the workflow consumes. Every change here gets
an Alembic revision in runtime/migrations.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, DateTime, Float, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


def _ts(nullable: bool = False) -> Any:
    return Field(
        default=None if nullable else ...,
        sa_column=Column(DateTime(timezone=True), nullable=nullable),
    )


class AgentInstance(SQLModel, table=True):
    """One standing agent. Written by the control side (create, status) and by the
    workflow's single passivation write per tick (counters, hash, next tick)."""

    __tablename__ = "agent_instances"
    __table_args__ = (Index("ix_agent_instances_tenant", "tenant", "agent_type"),)

    instance_id: str = Field(primary_key=True, max_length=64)
    tenant: str = Field(max_length=200)
    agent_type: str = Field(max_length=40)
    status: str = Field(max_length=20)
    active_mode: str | None = Field(default=None, max_length=80)
    # The foundational phase (§3.6): is_building_starting_workset within workset_deadline.
    is_building_starting_workset: bool = False
    workset_deadline_utc: datetime | None = _ts(nullable=True)
    consecutive_idle_ticks: int = 0
    consecutive_blocked_turns: int = 0
    last_plan_input_hash: str | None = Field(default=None, max_length=80)
    next_tick_at: datetime | None = _ts(nullable=True)
    last_tick_at: datetime | None = _ts(nullable=True)
    tick_in_progress: bool = False
    # When the tick that holds the lease began (the tenant's concurrency cap counts the
    # leases younger than AGENTRT_AGENT_TICK_LEASE_STALE_MS; migration 0014).
    tick_started_at: datetime | None = _ts(nullable=True)
    # A PromptRedactor's call site (spec §3.9: ensure-created by a redactor signal, one
    # per tenant and site; migration 0018). None for the other types.
    call_site: str | None = Field(default=None, max_length=120)
    # Bumped by reset: events and ledger turns of an older generation are ignored.
    generation: int = 0
    # The loop guards (runtime/standing_agents/loop_guard.py; migration 0017): the last planned
    # turn's decision hash and how many planned turns in a row ended with it.
    last_decision_hash: str | None = Field(default=None, max_length=80)
    repeated_decision_turns: int = 0
    # Paused on a budget (runtime/standing_agents/budget_pause.py; migration 0016):
    # {"axis", "cap", "spent", "resumeAt", "decisionId", "eventId", "since"}; None otherwise.
    # SQL NULL when not paused (none_as_null: never the JSON `null`).
    budget_pause: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON(none_as_null=True), nullable=True)
    )
    # The pause's attention request: what a resume compares and swaps (migration 0017).
    budget_pause_id: str | None = Field(default=None, max_length=64)
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class AgentEventRow(SQLModel, table=True):
    """`agent_event_queue`: every event, consumed not deleted; `visible_at` is the due gate.

    `event_id` is the dedupe id: a retried enqueue (HTTP retry, a decision answered
    twice, a crash between the insert and the wake-up) finds its row and adds none.
    """

    __tablename__ = "agent_event_queue"
    __table_args__ = (
        UniqueConstraint("instance_id", "sequence_number", name="uq_agent_event_seq"),
        UniqueConstraint("event_id", name="uq_agent_event_id"),
        Index("ix_agent_event_due", "instance_id", "consumed_at", "visible_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    event_id: str = Field(max_length=200)
    instance_id: str = Field(max_length=64)
    tenant: str = Field(max_length=200)
    sequence_number: int = Field(sa_column=Column(BigInteger, nullable=False))
    event_kind: str = Field(max_length=60)
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    visible_at: datetime = _ts()
    consumed_at: datetime | None = _ts(nullable=True)
    generation: int = 0
    created_at: datetime = _ts()


class AgentLedgerTurn(SQLModel, table=True):
    """`agent_state_ledger`: the append-only record of turns, hash-chained per instance.

    One turn per consumed event (`event_id` unique): a replayed tick cannot add a second.
    """

    __tablename__ = "agent_state_ledger"
    __table_args__ = (
        UniqueConstraint("instance_id", "seq", name="uq_agent_ledger_seq"),
        # The ops digest counts a tenant's turns of the last day on every watch pass.
        Index("ix_agent_ledger_tenant_created", "tenant", "created_at"),
        UniqueConstraint("instance_id", "event_id", name="uq_agent_ledger_event"),
    )

    id: int | None = Field(default=None, primary_key=True)
    instance_id: str = Field(max_length=64)
    tenant: str = Field(max_length=200)
    seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    event_id: str = Field(max_length=200)
    event_kind: str = Field(max_length=60)
    event_payload: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    decision_kind: str = Field(max_length=40)
    # {actions, waitCondition, reasoningSummary, activeMode}
    decision: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    wait_condition: str | None = Field(default=None, max_length=200)
    reasoning_summary: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    plan_input_hash: str = Field(max_length=80)
    llm_call_id: str | None = Field(default=None, max_length=200)
    served_model: str | None = Field(default=None, max_length=200)
    cost_usd: float = Field(default=0.0, sa_column=Column(Float, nullable=False, default=0.0))
    active_mode: str | None = Field(default=None, max_length=80)
    generation: int = 0
    created_at: datetime = _ts()
    prev_hash: str | None = Field(default=None, max_length=80)
    hash: str = Field(max_length=80)


class AgentLedgerAction(SQLModel, table=True):
    """`agent_state_ledger_actions`: every tool call a turn attempted, with its outcome."""

    __tablename__ = "agent_state_ledger_actions"
    __table_args__ = (
        UniqueConstraint("instance_id", "ledger_seq", "ordinal", name="uq_agent_ledger_action"),
    )

    id: int | None = Field(default=None, primary_key=True)
    instance_id: str = Field(max_length=64)
    ledger_seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    ordinal: int
    tool: str = Field(max_length=120)
    arguments: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    outcome: str = Field(max_length=20)  # ActionOutcome
    blocked_reason: str | None = Field(default=None, max_length=400)
    violations: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))


class AgentModeRow(SQLModel, table=True):
    """`agent_modes`: the per-type mode catalogue, seeded from runtime.standing_agents.catalog."""

    __tablename__ = "agent_modes"

    agent_type: str = Field(primary_key=True, max_length=40)
    name: str = Field(primary_key=True, max_length=80)
    description: str = Field(sa_column=Column(Text, nullable=False))
    prompt_fragment: str = Field(sa_column=Column(Text, nullable=False))
    tools: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    preset_id: str | None = Field(default=None, max_length=200)
    budget_override: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON, nullable=True)
    )
    is_default: bool = False
    system_seed: bool = True


class AgentModeChange(SQLModel, table=True):
    """`agent_mode_change_events`: the audit trail of mode changes (source ui | approval)."""

    __tablename__ = "agent_mode_change_events"
    __table_args__ = (Index("ix_agent_mode_change_instance", "instance_id", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    instance_id: str = Field(max_length=64)
    tenant: str = Field(max_length=200)
    from_mode: str | None = Field(default=None, max_length=80)
    to_mode: str = Field(max_length=80)
    source: str = Field(max_length=20)
    actor: str | None = Field(default=None, max_length=200)
    # The attention request an approval came from (one mode change per approval).
    decision_id: str | None = Field(default=None, max_length=64, unique=True)
    created_at: datetime = _ts()


class AgentMessage(SQLModel, table=True):
    """`agent_messages`: the operator↔agent transcript, with direction.

    `op_id` is the dedupe key of the write: the operator's message id, or the agent's
    tool-call operation id, so a retry never posts a message twice.
    """

    __tablename__ = "agent_messages"
    __table_args__ = (Index("ix_agent_messages_instance", "instance_id", "created_at"),)

    message_id: str = Field(primary_key=True, max_length=64)
    instance_id: str = Field(max_length=64)
    tenant: str = Field(max_length=200)
    direction: str = Field(max_length=20)
    text: str = Field(sa_column=Column(Text, nullable=False))
    op_id: str | None = Field(default=None, max_length=400, unique=True)
    created_at: datetime = _ts()


class AttentionRequest(SQLModel, table=True):
    """The decision queue (§2.4): `soa_propose_decision`, `soa_propose_mode_change`, STUCK.

    `op_id` dedupes the agent's write (its tool-call operation id). Resolution is a
    compare-and-swap on `status`, and the resume event's id is derived from
    `decision_id`, so concurrent answers enqueue exactly one resume.
    """

    __tablename__ = "attention_requests"
    __table_args__ = (Index("ix_attention_tenant_status", "tenant", "status"),)

    decision_id: str = Field(primary_key=True, max_length=64)
    tenant: str = Field(max_length=200)
    kind: str = Field(max_length=20)
    source: str = Field(max_length=40)
    soa_instance_id: str = Field(max_length=64)
    title: str = Field(max_length=500)
    body: str = Field(sa_column=Column(Text, nullable=False))
    options: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # mode_change: {"mode", "reason"}
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    status: str = Field(max_length=20)
    resolution: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    resolution_notes: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    # Self-declared by the answer's body (`respondedBy`); free text, not verified.
    responded_by: str | None = Field(default=None, max_length=200)
    # The identity the bearer check verified (`admin`, `operator:alice`; migration 0010).
    answered_by: str | None = Field(default=None, max_length=200)
    op_id: str | None = Field(default=None, max_length=400, unique=True)
    created_at: datetime = _ts()
    resolved_at: datetime | None = _ts(nullable=True)
    # What an approval of a tool call approved: the call's digest (payload.digest) recorded
    # by the answer that approved it; the call runs only if it still hashes to it
    # (runtime/approvals/binding.py; migration 0023).
    approved_digest: str | None = Field(default=None, max_length=80)


class SystemConfig(SQLModel, table=True):
    """`system_configs`: live per-tenant configuration (budgets, constitution rules, ...)."""

    __tablename__ = "system_configs"

    tenant: str = Field(primary_key=True, max_length=200)
    key: str = Field(primary_key=True, max_length=200)
    value: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    updated_at: datetime = _ts()


class AgentArtifact(SQLModel, table=True):
    """What the artifact tools record (dossiers, knowledge, research), by operation id."""

    __tablename__ = "agent_artifacts"
    __table_args__ = (Index("ix_agent_artifacts_tenant_kind", "tenant", "kind"),)

    artifact_id: str = Field(primary_key=True, max_length=64)
    tenant: str = Field(max_length=200)
    instance_id: str = Field(max_length=64)
    kind: str = Field(max_length=60)
    title: str = Field(max_length=500)
    body: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    op_id: str | None = Field(default=None, max_length=400, unique=True)
    created_at: datetime = _ts()


class RegistryEntry(SQLModel, table=True):
    """The coordination registry (§2.1b, §3.9), per tenant; expires after its TTL.

    Durable in agentrt (the spec's is in memory): an API restart keeps the entries,
    and the TTL still retires the ones that stop heart-beating.
    """

    __tablename__ = "agent_registry"

    tenant: str = Field(primary_key=True, max_length=200)
    agent_id: str = Field(primary_key=True, max_length=200)
    role: str = Field(max_length=40)
    capabilities: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    endpoint: str | None = Field(default=None, max_length=2000)
    last_heartbeat_at: datetime = _ts()
    # The verified identity of the MCP coder that registered it (None: an operator's).
    registered_by: str | None = Field(default=None, max_length=200)


class OpsBucketState(SQLModel, table=True):
    """The last ops-digest bucket the API saw per tenant (runtime/standing_agents/ops_watch.py):
    a change is a transition, numbered, each waking the tenant's Active SOAs once. Also what
    the API last read from Temporal's visibility (failed and timed-out workflows)."""

    __tablename__ = "ops_bucket_state"

    tenant: str = Field(primary_key=True, max_length=200)
    bucket: str = Field(max_length=20)
    transition: int = 0
    changed_at: datetime = _ts()
    failed_workflows: int | None = None
    timed_out_workflows: int | None = None
    visibility_checked_at: datetime | None = _ts(nullable=True)


class AgentWebhook(SQLModel, table=True):
    """`agent_webhooks`: a trigger URL of one agent (runtime/standing_agents/webhooks.py;
    migration 0020)."""

    __tablename__ = "agent_webhooks"

    webhook_id: str = Field(primary_key=True, max_length=40)
    tenant: str = Field(max_length=200, index=True)
    instance_id: str = Field(max_length=64, index=True)
    event_kind: str = Field(max_length=40)
    # The HMAC key (`whsec_` + base64): shown once at creation, never in a listing.
    secret: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    last_delivery_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


class AgentSchedule(SQLModel, table=True):
    """`agent_schedules`: a cron schedule of one agent, backed by a Temporal Schedule
    (runtime/standing_agents/schedules.py; migration 0022). `deleted_at` marks one being
    deleted: its Temporal Schedule goes first, the row after."""

    __tablename__ = "agent_schedules"

    schedule_id: str = Field(primary_key=True, max_length=40)
    tenant: str = Field(max_length=200, index=True)
    instance_id: str = Field(max_length=64, index=True)
    cron: str = Field(max_length=200)
    time_zone: str = Field(max_length=64)
    overlap: str = Field(max_length=20)
    catchup_window_s: int
    note: str | None = Field(default=None, max_length=500)
    created_at: datetime = _ts()
    deleted_at: datetime | None = _ts(nullable=True)
    firings: int = 0
    last_fired_at: datetime | None = _ts(nullable=True)
    last_event_id: str | None = Field(default=None, max_length=200)
