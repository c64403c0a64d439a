"""Refusals of the device-flow routes and their wire bodies (spec, "Routes de flux
d'authentification par appareil"): one place for each body."""

from __future__ import annotations

from typing import Any, Literal

from runtime.device_flow.contracts import MAX_ACTIVE_FLOWS
from runtime.failures import WireError


class DeviceFlowNotFound(WireError):
    """Unknown id, or a terminal entry past its 5-minute grace: 404."""

    kind: Literal["device_flow_not_found"] = "device_flow_not_found"
    device_flow_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"Device-flow {self.device_flow_id} not found",
            "code": "device_flow_not_found",
        }


class UnsupportedProvider(WireError):
    kind: Literal["unsupported_provider"] = "unsupported_provider"
    provider_id: str
    supported: list[str]

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"Unsupported device-flow provider: {self.provider_id}",
            "code": "unsupported_provider",
            "supportedProviders": self.supported,
        }


class TooManyActiveFlows(WireError):
    kind: Literal["too_many_active_flows"] = "too_many_active_flows"

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"Too many active device flows in this workspace (limit "
            f"{MAX_ACTIVE_FLOWS}); cancel one with DELETE",
            "code": "too_many_active_flows",
            "limit": MAX_ACTIVE_FLOWS,
        }


class DeviceFlowUpstreamError(WireError):
    """The IdP answered the device authorization request with an unexpected error: 502."""

    kind: Literal["upstream_error"] = "upstream_error"
    hint: str | None = None

    @property
    def http_status(self) -> int:
        return 502

    def response_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "error": "The identity provider returned an unexpected error",
            "code": "upstream_error",
        }
        if self.hint:
            body["hint"] = self.hint
        return body
