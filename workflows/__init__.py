"""Deterministic workflow code only: no I/O, no clock, no randomness but Temporal's."""

from __future__ import annotations

from workflows.agent_schedule import AgentScheduleWorkflow
from workflows.approvals import ApprovalClockWorkflow
from workflows.coding_task import CodingTaskWorkflow
from workflows.device_flow import DeviceFlowWorkflow
from workflows.mcp_discovery import McpDiscoveryWorkflow
from workflows.notifications import NotificationEndpointWorkflow
from workflows.session import SessionWorkflow
from workflows.standing_agent import StandingAgentWorkflow
from workflows.turn import TurnWorkflow
from workflows.windows_lease import WindowsLeaseWorkflow

# Every workflow class the worker registers; each surface adds its own.
WORKFLOWS: list[type] = [
    TurnWorkflow,
    SessionWorkflow,
    DeviceFlowWorkflow,
    StandingAgentWorkflow,
    WindowsLeaseWorkflow,
    McpDiscoveryWorkflow,
    CodingTaskWorkflow,
    AgentScheduleWorkflow,
    NotificationEndpointWorkflow,
    ApprovalClockWorkflow,
]
