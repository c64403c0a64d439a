"""The feature tags `/capabilities` advertises: only those whose behaviour exists here.

Each surface that lands adds its tags to FEATURES, with the deployment toggle
(if any) that turns the behaviour on. `tests/api/test_capabilities.py` fails when a
tag is advertised without a behaviour test.
"""

from __future__ import annotations

from collections.abc import Callable

from runtime.settings import Settings


def _always(_settings: Settings) -> bool:
    return True


FEATURES: list[tuple[str, Callable[[Settings], bool]]] = [
    ("health", _always),
    ("capabilities", _always),
    ("daemon_status", _always),
    # The session daemon (spec 002).
    ("session_create", _always),
    ("session_scope_override", _always),
    ("session_list", _always),
    ("session_prompt", _always),
    ("non_blocking_prompt", _always),
    ("prompt_absolute_deadline", _always),
    ("session_cancel", _always),
    ("session_events", _always),
    ("slow_client_warning", _always),
    ("session_close", _always),
    ("session_metadata", _always),
    ("client_identity", _always),
    ("client_heartbeat", _always),
    ("session_set_model", _always),
    ("session_approval_mode_control", _always),
    ("session_context", _always),
    ("session_load", _always),
    ("session_resume", _always),
    ("unstable_session_resume", _always),
    ("permission_vote", _always),
    ("session_permission_vote", _always),
    ("permission_mediation", _always),
    # Workspace files (GET /file, /list, /glob, /stat; /file/bytes; POST /file/write, /edit).
    ("workspace_file_read", _always),
    ("workspace_file_bytes", _always),
    ("workspace_file_write", _always),
    # Workspace status (read-only snapshots and the workspace mutations).
    ("workspace_env", _always),
    ("workspace_preflight", _always),
    ("workspace_providers", _always),
    ("workspace_skills", _always),
    # MCP servers of the workspace (mcpServers): discovery, tools in sessions, restart.
    ("workspace_mcp", _always),
    ("workspace_mcp_restart", _always),
    # The MCP client budget: the snapshot's fields and flags, and its SSE events.
    ("mcp_guardrails", _always),
    ("mcp_guardrail_events", _always),
    ("workspace_tool_toggle", _always),
    ("workspace_init", _always),
    ("session_supported_commands", _always),
    ("session_tasks", _always),
    ("session_recap", _always),
    # OAuth device flows (RFC 8628) as DeviceFlowWorkflow.
    ("auth_device_flow", _always),
    # Conditional tags: present only when the operator turned the behaviour on.
    ("require_auth", lambda s: s.require_auth),
    ("allow_origin", lambda s: bool(s.allow_origin)),
    ("rate_limit", lambda s: s.rate_limit),
]


def advertised_features(settings: Settings) -> list[str]:
    return [tag for tag, enabled in FEATURES if enabled(settings)]
