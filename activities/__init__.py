"""All I/O of agentrt runs here, as Temporal activities."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activities.agent_tools import AgentToolsActivities
from activities.approvals import ApprovalClockActivities
from activities.coding_tasks import CodingTaskActivities
from activities.device_flow_pause import DeviceFlowPauseActivities
from activities.identity import IdentityActivities
from activities.journal import JournalActivities
from activities.llm import ModelProvider
from activities.llm.routing_activities import LlmActivities
from activities.mcp.calls import McpCalls
from activities.mcp.discovery import McpDiscoveryActivities
from activities.mcp.pool import McpPool
from activities.mcp.worker_pool import mcp_pool
from activities.notifications import NotificationActivities
from activities.session import SessionActivities
from activities.standing_agent import StandingAgentActivities
from activities.standing_agent.schedules import AgentScheduleActivities
from activities.windows_pool import WindowsPoolActivities
from runtime.settings import Settings
from runtime.store import EventJournal, Store


def build_activities(
    store: Store,
    journal: EventJournal,
    provider: ModelProvider,
    settings: Settings,
    pool: McpPool | None = None,
) -> list[Callable[..., Any]]:
    """Every activity the worker registers, bound to this process's store, model and
    MCP connections (`pool`, the worker's: it closes them when it stops)."""
    agent_tools = AgentToolsActivities(
        store,
        journal,
        provider,
        settings=settings,
        max_results=settings.agent_tools_max_results,
    )
    mcp = McpCalls(pool or mcp_pool(store, settings), store, journal, settings)
    session = SessionActivities(store, journal, provider, settings, mcp=mcp)
    identity = IdentityActivities(store, journal, settings.resolved_data_dir)
    agents = StandingAgentActivities(store, journal, provider, settings, mcp=mcp)
    device_flow_pause = DeviceFlowPauseActivities(settings)
    llm = LlmActivities(store, settings)
    windows_pool = WindowsPoolActivities(settings, journal)
    coding_tasks = CodingTaskActivities(store, settings)
    agent_schedules = AgentScheduleActivities(store)
    notifications = NotificationActivities(store, settings)
    approval_clock = ApprovalClockActivities(store, journal, settings)
    return [
        JournalActivities(journal).append_events,
        notifications.deliver_due,
        approval_clock.keep_time,
        session.open_prompt,
        session.model_step,
        session.preview_tool,
        session.run_tool,
        session.run_effect,
        session.persist_approval_mode,
        session.recap,
        session.windows_tool,
        session.mcp_read,
        session.mcp_call,
        session.task_decision,
        McpDiscoveryActivities(mcp).discover,
        agent_tools.call_tool,
        agent_tools.model_step,
        agent_tools.read_research,
        identity.request_code,
        identity.poll_token,
        identity.emit,
        identity.forget,
        device_flow_pause.ensure_flow,
        device_flow_pause.read_flow,
        agents.load_instance,
        agents.next_event,
        agents.begin_tick,
        agents.model_step,
        agents.run_tool,
        agents.run_approved_mcp_call,
        agents.complete_tick,
        agents.resume_regenerated,
        agent_schedules.fire,
        agent_schedules.pending,
        llm.resolve_chain,
        coding_tasks.timers,
        coding_tasks.expire,
        coding_tasks.wake_agent,
        coding_tasks.spawn_coder,
        coding_tasks.complete_own,
        coding_tasks.coder_alive,
        windows_pool.open_session,
        windows_pool.renew,
        windows_pool.close_session,
        windows_pool.call_verb,
    ]


__all__ = [
    "AgentToolsActivities",
    "DeviceFlowPauseActivities",
    "IdentityActivities",
    "JournalActivities",
    "LlmActivities",
    "StandingAgentActivities",
    "WindowsPoolActivities",
    "build_activities",
]
