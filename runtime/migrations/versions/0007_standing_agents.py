"""Standing agents (spec standing-agents), tenant features and model-call provenance.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

TABLES = (
    "agent_artifacts",
    "agent_event_queue",
    "agent_instances",
    "agent_messages",
    "agent_mode_change_events",
    "agent_modes",
    "agent_registry",
    "agent_state_ledger",
    "agent_state_ledger_actions",
    "agent_tasks",
    "attention_requests",
    "llm_call",
    "llm_call_attempt",
    "system_configs",
    "tenant_feature",
)


def upgrade() -> None:
    op.create_table(
        "agent_artifacts",
        sa.Column("artifact_id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=60), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("op_id", sa.String(length=400), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("artifact_id"),
        sa.UniqueConstraint("op_id"),
    )
    op.create_index(
        "ix_agent_artifacts_tenant_kind", "agent_artifacts", ["tenant", "kind"], unique=False
    )
    op.create_table(
        "agent_event_queue",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.String(length=200), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("sequence_number", sa.BigInteger(), nullable=False),
        sa.Column("event_kind", sa.String(length=60), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("visible_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("consumed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("event_id", name="uq_agent_event_id"),
        sa.UniqueConstraint("instance_id", "sequence_number", name="uq_agent_event_seq"),
    )
    op.create_index(
        "ix_agent_event_due",
        "agent_event_queue",
        ["instance_id", "consumed_at", "visible_at"],
        unique=False,
    )
    op.create_table(
        "agent_instances",
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("agent_type", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("active_mode", sa.String(length=80), nullable=True),
        sa.Column("is_building_starting_workset", sa.Boolean(), nullable=False),
        sa.Column("workset_deadline_utc", sa.DateTime(timezone=True), nullable=True),
        sa.Column("consecutive_idle_ticks", sa.Integer(), nullable=False),
        sa.Column("consecutive_blocked_turns", sa.Integer(), nullable=False),
        sa.Column("last_plan_input_hash", sa.String(length=80), nullable=True),
        sa.Column("next_tick_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_tick_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("tick_in_progress", sa.Boolean(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("instance_id"),
    )
    op.create_index(
        "ix_agent_instances_tenant", "agent_instances", ["tenant", "agent_type"], unique=False
    )
    op.create_table(
        "agent_messages",
        sa.Column("message_id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("direction", sa.String(length=20), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("op_id", sa.String(length=400), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("message_id"),
        sa.UniqueConstraint("op_id"),
    )
    op.create_index(
        "ix_agent_messages_instance", "agent_messages", ["instance_id", "created_at"], unique=False
    )
    op.create_table(
        "agent_mode_change_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("from_mode", sa.String(length=80), nullable=True),
        sa.Column("to_mode", sa.String(length=80), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=True),
        sa.Column("decision_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("decision_id"),
    )
    op.create_index(
        "ix_agent_mode_change_instance",
        "agent_mode_change_events",
        ["instance_id", "id"],
        unique=False,
    )
    op.create_table(
        "agent_modes",
        sa.Column("agent_type", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("prompt_fragment", sa.Text(), nullable=False),
        sa.Column("tools", sa.JSON(), nullable=False),
        sa.Column("preset_id", sa.String(length=200), nullable=True),
        sa.Column("budget_override", sa.JSON(), nullable=True),
        sa.Column("is_default", sa.Boolean(), nullable=False),
        sa.Column("system_seed", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("agent_type", "name"),
    )
    op.create_table(
        "agent_registry",
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("agent_id", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=40), nullable=False),
        sa.Column("capabilities", sa.JSON(), nullable=False),
        sa.Column("endpoint", sa.String(length=2000), nullable=True),
        sa.Column("last_heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "agent_id"),
    )
    op.create_table(
        "agent_state_ledger",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("event_id", sa.String(length=200), nullable=False),
        sa.Column("event_kind", sa.String(length=60), nullable=False),
        sa.Column("event_payload", sa.JSON(), nullable=False),
        sa.Column("decision_kind", sa.String(length=40), nullable=False),
        sa.Column("decision", sa.JSON(), nullable=False),
        sa.Column("wait_condition", sa.String(length=200), nullable=True),
        sa.Column("reasoning_summary", sa.Text(), nullable=True),
        sa.Column("plan_input_hash", sa.String(length=80), nullable=False),
        sa.Column("llm_call_id", sa.String(length=200), nullable=True),
        sa.Column("served_model", sa.String(length=200), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("active_mode", sa.String(length=80), nullable=True),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("prev_hash", sa.String(length=80), nullable=True),
        sa.Column("hash", sa.String(length=80), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("instance_id", "event_id", name="uq_agent_ledger_event"),
        sa.UniqueConstraint("instance_id", "seq", name="uq_agent_ledger_seq"),
    )
    op.create_table(
        "agent_state_ledger_actions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("ledger_seq", sa.BigInteger(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("tool", sa.String(length=120), nullable=False),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("outcome", sa.String(length=20), nullable=False),
        sa.Column("blocked_reason", sa.String(length=400), nullable=True),
        sa.Column("violations", sa.JSON(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("instance_id", "ledger_seq", "ordinal", name="uq_agent_ledger_action"),
    )
    op.create_table(
        "agent_tasks",
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("instance_id", sa.String(length=64), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=40), nullable=False),
        sa.Column("op_id", sa.String(length=400), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("task_id"),
        sa.UniqueConstraint("op_id"),
    )
    op.create_index("ix_agent_tasks_instance", "agent_tasks", ["instance_id"], unique=False)
    op.create_table(
        "attention_requests",
        sa.Column("decision_id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("source", sa.String(length=40), nullable=False),
        sa.Column("soa_instance_id", sa.String(length=64), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("options", sa.JSON(), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("resolution", sa.Text(), nullable=True),
        sa.Column("resolution_notes", sa.Text(), nullable=True),
        sa.Column("responded_by", sa.String(length=200), nullable=True),
        sa.Column("op_id", sa.String(length=400), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("decision_id"),
        sa.UniqueConstraint("op_id"),
    )
    op.create_index(
        "ix_attention_tenant_status", "attention_requests", ["tenant", "status"], unique=False
    )
    op.create_table(
        "llm_call",
        sa.Column("call_id", sa.String(length=400), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=True),
        sa.Column("owner_kind", sa.String(length=40), nullable=False),
        sa.Column("owner_id", sa.String(length=400), nullable=False),
        sa.Column("site", sa.String(length=120), nullable=False),
        sa.Column("purpose", sa.String(length=60), nullable=False),
        sa.Column("requested_model", sa.String(length=200), nullable=True),
        sa.Column("served_model", sa.String(length=200), nullable=True),
        sa.Column("outcome", sa.String(length=40), nullable=False),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("reply", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("call_id"),
    )
    op.create_index("ix_llm_call_owner", "llm_call", ["owner_kind", "owner_id"], unique=False)
    op.create_table(
        "llm_call_attempt",
        sa.Column("attempt_id", sa.String(length=400), nullable=False),
        sa.Column("call_id", sa.String(length=400), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=True),
        sa.Column("owner_kind", sa.String(length=40), nullable=False),
        sa.Column("owner_id", sa.String(length=400), nullable=False),
        sa.Column("site", sa.String(length=120), nullable=False),
        sa.Column("preset_id", sa.String(length=200), nullable=True),
        sa.Column("fallback_step", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=200), nullable=False),
        sa.Column("credential_alias", sa.String(length=200), nullable=True),
        sa.Column("requested_model", sa.String(length=200), nullable=False),
        sa.Column("served_model", sa.String(length=200), nullable=True),
        sa.Column("outcome", sa.String(length=40), nullable=False),
        sa.Column("http_status", sa.Integer(), nullable=True),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("price_version", sa.String(length=80), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.String(length=2000), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("attempt_id"),
    )
    op.create_index("ix_llm_attempt_call", "llm_call_attempt", ["call_id", "ordinal"], unique=False)
    op.create_index(
        "ix_llm_attempt_owner",
        "llm_call_attempt",
        ["owner_kind", "owner_id", "created_at"],
        unique=False,
    )
    op.create_index(
        "ix_llm_attempt_tenant", "llm_call_attempt", ["tenant", "created_at"], unique=False
    )
    op.create_table(
        "system_configs",
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("value", sa.JSON(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "key"),
    )
    op.create_table(
        "tenant_feature",
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("feature", sa.String(length=80), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "feature"),
    )


def downgrade() -> None:
    for table in TABLES:
        op.drop_table(table)
