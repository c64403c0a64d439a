"""Every advertised feature tag must have a behaviour test: no tag without a behaviour."""

from __future__ import annotations

import importlib

from api.service.feature_tags import FEATURES, advertised_features
from runtime.settings import Settings

W = "tests.api.workspace.test_workspace_status::"
S = "tests.api.sessions.test_session_status::"
M = "tests.api.mcp.test_session_mcp_tools::"

# tag -> the tests that show its behaviour ("module::function").
BEHAVIOUR_TESTS: dict[str, list[str]] = {
    "health": [
        "tests.api.test_routes::test_health_ok",
        "tests.api.test_routes::test_health_deep_counters",
    ],
    "capabilities": ["tests.api.test_routes::test_capabilities_shape"],
    "daemon_status": [
        "tests.api.test_routes::test_daemon_status_full_sees_the_worker",
        "tests.api.test_routes::test_daemon_status_rejects_unknown_detail",
    ],
    "require_auth": ["tests.api.test_security::test_require_auth_removes_the_health_exemption"],
    "allow_origin": [
        "tests.api.test_security::test_allowlisted_origin_gets_cors_headers",
        "tests.api.test_security::test_preflight_of_an_allowlisted_origin_is_204",
    ],
    "rate_limit": ["tests.api.test_security::test_read_tier_429_with_retry_after"],
    "session_create": [
        "tests.api.sessions.test_sessions::test_create_attach_and_thread",
        "tests.api.sessions.test_sessions::test_concurrent_creates_coalesce",
    ],
    "session_scope_override": ["tests.api.sessions.test_sessions::test_create_attach_and_thread"],
    "session_list": ["tests.api.sessions.test_sessions::test_list_sessions"],
    "session_prompt": [
        "tests.api.sessions.test_sessions::test_prompt_streams_and_completes",
        "tests.api.sessions.test_sessions::test_prefer_wait_blocks_until_the_end",
    ],
    "non_blocking_prompt": ["tests.api.sessions.test_sessions::test_prompt_streams_and_completes"],
    "prompt_absolute_deadline": [
        "tests.api.sessions.test_sessions::test_prompt_deadline_cancels_a_prompt_that_runs_too_long"
    ],
    "session_cancel": [
        "tests.api.sessions.test_sessions::test_sixth_prompt_is_refused_and_cancel_only_hits_the_active_one"
    ],
    "session_events": [
        "tests.api.sessions.test_session_events::test_live_frames_layout_and_envelope",
        "tests.api.sessions.test_session_events::test_last_event_id_replays_then_replay_complete_then_live",
    ],
    "slow_client_warning": [
        "tests.api.sessions.test_session_events::test_slow_client_is_warned_once_then_evicted"
    ],
    "session_close": ["tests.api.sessions.test_sessions::test_delete_closes_the_session"],
    "session_metadata": ["tests.api.sessions.test_sessions::test_metadata"],
    "client_identity": [
        "tests.api.sessions.test_sessions::test_permission_request_shape_and_approval"
    ],
    "client_heartbeat": ["tests.api.sessions.test_sessions::test_heartbeat"],
    "session_set_model": ["tests.api.sessions.test_sessions::test_model_switch"],
    "session_approval_mode_control": [
        "tests.api.sessions.test_sessions::test_approval_mode_and_context",
        W + "test_approval_mode_persist",
    ],
    "session_context": ["tests.api.sessions.test_sessions::test_approval_mode_and_context"],
    "session_load": [
        "tests.api.sessions.test_sessions::test_load_and_resume_bring_a_closed_session_back"
    ],
    "session_resume": [
        "tests.api.sessions.test_sessions::test_load_and_resume_bring_a_closed_session_back",
        "tests.api.sessions.test_sessions::test_load_and_resume_race",
    ],
    "unstable_session_resume": [
        "tests.api.sessions.test_sessions::test_load_and_resume_bring_a_closed_session_back"
    ],
    "permission_vote": [
        "tests.api.sessions.test_sessions::test_permission_request_shape_and_approval"
    ],
    "session_permission_vote": [
        "tests.api.sessions.test_sessions::test_session_scoped_vote_and_rejection"
    ],
    "permission_mediation": [
        "tests.api.sessions.test_sessions::test_policy_designated",
        "tests.api.sessions.test_sessions::test_policy_consensus",
        "tests.api.sessions.test_sessions::test_policy_local_only",
        "tests.workflows.sessions.test_session_permission_timeout::test_five_minute_timeout_on_the_time_skipping_server",
    ],
    "workspace_file_read": [
        "tests.api.workspace.test_workspace_files::test_read_file_whole",
        "tests.api.workspace.test_workspace_files::test_read_file_errors",
        "tests.api.workspace.test_workspace_files::test_stat_list_glob",
    ],
    "workspace_file_bytes": ["tests.api.workspace.test_workspace_files::test_read_bytes_windows"],
    "workspace_file_write": [
        "tests.api.workspace.test_workspace_files::test_write_create_then_replace",
        "tests.api.workspace.test_workspace_files::test_eight_concurrent_replaces_one_wins",
        "tests.api.workspace.test_workspace_files::test_edit_preserves_crlf_and_bom",
        "tests.api.workspace.test_workspace_files::test_mutations_need_a_configured_token_on_loopback",
    ],
    "workspace_env": [W + "test_workspace_env_reports_presence_never_values"],
    "workspace_preflight": [
        W + "test_workspace_preflight_cells",
        W + "test_workspace_preflight_reports_an_unreachable_model",
    ],
    "workspace_providers": [
        W + "test_workspace_providers",
        W + "test_workspace_providers_never_show_the_url_or_key",
    ],
    "workspace_skills": [W + "test_workspace_skills_and_mcp"],
    "workspace_mcp": [
        W + "test_workspace_skills_and_mcp",
        M + "test_the_snapshot_shows_each_server_and_never_a_secret",
        M + "test_a_call_asks_a_vote_and_reaches_the_server_once_with_its_operation_id",
    ],
    "workspace_mcp_restart": [M + "test_a_restart_reconnects_and_says_so_to_every_session"],
    "mcp_guardrails": [
        M + "test_enforce_refuses_past_the_budget_in_declaration_order",
        M + "test_warn_connects_everything_and_warns_once",
        W + "test_workspace_skills_and_mcp",
    ],
    "mcp_guardrail_events": [
        M + "test_enforce_refuses_past_the_budget_in_declaration_order",
        M + "test_warn_connects_everything_and_warns_once",
    ],
    "workspace_tool_toggle": [
        W + "test_tool_toggle_needs_a_token",
        W + "test_tool_toggle_refusals",
        W + "test_disabled_tool_leaves_the_agent_at_its_next_prompt",
        W + "test_a_prompt_already_running_keeps_its_tools",
        W + "test_a_disabled_tool_the_model_calls_anyway_is_refused",
    ],
    "workspace_init": [
        W + "test_workspace_init",
        W + "test_workspace_init_needs_a_token",
        W + "test_workspace_init_never_writes_through_a_symlink",
        W + "test_workspace_init_memory_file_name",
    ],
    "session_supported_commands": [S + "test_supported_commands_and_tasks"],
    "session_tasks": [S + "test_supported_commands_and_tasks"],
    "session_recap": [
        S + "test_recap_is_null_without_dialogue",
        S + "test_recap_through_the_model",
    ],
    "auth_device_flow": [
        "tests.api.device_flow.test_device_flow::test_approval_stores_credentials_and_tells_every_session",
        "tests.api.device_flow.test_device_flow::test_access_denied_fails_the_flow",
        "tests.api.device_flow.test_device_flow::test_delete_cancels_a_pending_flow",
        "tests.api.device_flow.test_device_flow::test_a_pending_flow_survives_a_worker_restart",
        "tests.workflows.device_flow.test_device_flow::test_slow_down_adds_five_seconds_each_time",
        "tests.workflows.device_flow.test_device_flow::test_expiry_is_a_durable_timer",
        "tests.e2e.device_flow.test_device_flow_durability::test_a_pending_flow_spans_kill_9_of_the_worker",
    ],
}


def _everything_on() -> Settings:
    return Settings(
        token="t", require_auth=True, allow_origin=["https://a.example"], rate_limit=True
    )


def test_every_advertised_tag_has_a_behaviour_test() -> None:
    advertised = advertised_features(_everything_on())
    assert advertised == [tag for tag, _ in FEATURES]
    missing = [tag for tag in advertised if not BEHAVIOUR_TESTS.get(tag)]
    assert missing == [], f"tags advertised without a behaviour test: {missing}"
    for tag in advertised:
        for ref in BEHAVIOUR_TESTS[tag]:
            module_name, function = ref.split("::")
            module = importlib.import_module(module_name)
            assert callable(getattr(module, function, None)), f"{tag}: {ref} does not exist"


def test_conditional_tags_follow_their_toggles() -> None:
    plain = advertised_features(Settings())
    for conditional in ("require_auth", "allow_origin", "rate_limit"):
        assert conditional not in plain
