"""Refusals about a tenant's agents that no single policy module owns, and their wire bodies.

The control functions (runtime/standing_agents/control.py) and the mode writer
(runtime/standing_agents/modes.py) refuse an agent that does not exist, the tenant gate
refuses every agent route of a tenant whose feature is off, and the events route refuses
a kind it does not take. Each is raised as `WireError.application_error()` (or
`ApiError.of` in a route) and answered by api/errors.py with the model's own body.
"""

from __future__ import annotations

from typing import Any, Literal

from runtime.failures import WireError


class AgentNotFound(WireError):
    """No agent of this id in the tenant (absent, or another tenant's): 404."""

    kind: Literal["agent_not_found"] = "agent_not_found"
    instance_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'No agent with id "{self.instance_id}"',
            "code": "agent_not_found",
            "instanceId": self.instance_id,
        }


class StandingAgentsDisabled(WireError):
    """An agent route of a tenant whose standing-agents feature is off: 403."""

    kind: Literal["standing_agents_disabled"] = "standing_agents_disabled"
    tenant: str

    @property
    def http_status(self) -> int:
        return 403

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'Standing agents are not enabled for tenant "{self.tenant}"',
            "code": "feature_disabled",
            "tenant": self.tenant,
        }


class InvalidEventKind(WireError):
    """An event the events route does not take: a kind with a route of its own, or an
    ExternalSignalReceived for a SOA (`to_soa`, spec §3.1); `allowed` are the kinds it
    takes for this agent: 400."""

    kind: Literal["invalid_event_kind"] = "invalid_event_kind"
    event_kind: str
    allowed: list[str]
    to_soa: bool = False

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        if self.to_soa:
            error = f"A SOA does not receive {self.event_kind} (spec §3.1)"
        else:
            error = f'Event kind "{self.event_kind}" cannot be posted here'
        return {"error": error, "code": "invalid_event_kind", "allowed": self.allowed}
