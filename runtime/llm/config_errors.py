"""Refusals of the model-routing configuration: one typed model per kind (runtime/failures.py),
raised as `model.application_error()` by the stores, answered by the API's one handler.

Every answer is `{"error": <message>, "code": <kind>, ...<the kind's own fields>}`.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import Field

from runtime.failures import WireError
from runtime.llm.contracts import SITE_PARENTS

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")


class LlmConfigRefusal(WireError):
    """The family: a configuration refused, or a name that does not exist. An activity
    that meets one retries it: a delete that raced a bind reads consistent on the next
    attempt (the chain's own resolution, `resolve_chain`, stops at once instead)."""

    retryable: ClassVar[bool] = True

    @property
    def message(self) -> str:
        raise NotImplementedError

    def fields(self) -> dict[str, Any]:
        """What the answer carries beyond `error` and `code`."""
        return {}

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.kind_name, **self.fields()}


class UnknownSite(LlmConfigRefusal):
    kind: Literal["unknown_site"] = "unknown_site"
    site_id: str

    @property
    def message(self) -> str:
        return f'Unknown call site "{self.site_id}"'

    @property
    def http_status(self) -> int:
        return 404

    def fields(self) -> dict[str, Any]:
        return {"siteId": self.site_id, "allowed": list(SITE_PARENTS)}


class UnknownPreset(LlmConfigRefusal):
    """404 for the preset a path names; 400 for one a body names."""

    kind: Literal["unknown_preset"] = "unknown_preset"
    preset_id: str
    status: Literal[400, 404] = 404

    @property
    def message(self) -> str:
        return f'No preset "{self.preset_id}"'

    @property
    def http_status(self) -> int:
        return self.status

    def fields(self) -> dict[str, Any]:
        return {"presetId": self.preset_id}


class UnknownProvider(LlmConfigRefusal):
    """404 for the provider a path names; 400 for one a body names."""

    kind: Literal["unknown_provider"] = "unknown_provider"
    provider_id: str
    status: Literal[400, 404] = 404

    @property
    def message(self) -> str:
        return f'No provider "{self.provider_id}"'

    @property
    def http_status(self) -> int:
        return self.status

    def fields(self) -> dict[str, Any]:
        return {"providerId": self.provider_id}


class ReservedId(LlmConfigRefusal):
    kind: Literal["reserved_id"] = "reserved_id"
    what: str
    name: str

    @property
    def message(self) -> str:
        return (
            f'"{self.name}" is the built-in {self.what} (the deployment\'s settings) and '
            "cannot be replaced"
        )


class InvalidId(LlmConfigRefusal):
    kind: Literal["invalid_id"] = "invalid_id"
    what: str

    @property
    def message(self) -> str:
        return f"{self.what} must match {ID_PATTERN.pattern}"


class InvalidPreset(LlmConfigRefusal):
    kind: Literal["invalid_preset"] = "invalid_preset"
    reason: str

    @property
    def message(self) -> str:
        return self.reason


class PresetInUse(LlmConfigRefusal):
    """Naming the sites bound to the preset and the modes (`<agentType>/<mode>`) using it."""

    kind: Literal["preset_in_use"] = "preset_in_use"
    preset_id: str
    sites: list[str]
    modes: list[str] = Field(default_factory=list)

    @property
    def message(self) -> str:
        users = ", ".join([*self.sites, *(f"mode {m}" for m in self.modes)])
        verb = "is used by" if self.modes else "is bound to"
        return f'Preset "{self.preset_id}" {verb} {users}: detach it first'

    @property
    def http_status(self) -> int:
        return 409

    def fields(self) -> dict[str, Any]:
        return {"sites": self.sites, **({"modes": self.modes} if self.modes else {})}


class ProviderInUse(LlmConfigRefusal):
    kind: Literal["provider_in_use"] = "provider_in_use"
    provider_id: str
    presets: list[str]

    @property
    def message(self) -> str:
        return f'Provider "{self.provider_id}" is used by presets {", ".join(self.presets)}'

    @property
    def http_status(self) -> int:
        return 409

    def fields(self) -> dict[str, Any]:
        return {"presets": self.presets}


class UnknownCredential(LlmConfigRefusal):
    kind: Literal["unknown_credential"] = "unknown_credential"
    provider_id: str
    alias: str

    @property
    def message(self) -> str:
        return f'Provider "{self.provider_id}" has no credential "{self.alias}"'

    @property
    def http_status(self) -> int:
        return 404

    def fields(self) -> dict[str, Any]:
        return {"providerId": self.provider_id, "alias": self.alias}


class InvalidCredentials(LlmConfigRefusal):
    """`rule`: the egress rule the credential breaks (runtime/egress.py), when it is one."""

    kind: Literal["invalid_credentials"] = "invalid_credentials"
    reason: str
    rule: str | None = None

    @property
    def message(self) -> str:
        return self.reason

    def fields(self) -> dict[str, Any]:
        return {} if self.rule is None else {"rule": self.rule}


class InvalidBaseUrl(LlmConfigRefusal):
    """`rule`: the egress rule the URL breaks (runtime/egress.py)."""

    kind: Literal["invalid_base_url"] = "invalid_base_url"
    reason: str
    rule: str

    @property
    def message(self) -> str:
        return self.reason

    def fields(self) -> dict[str, Any]:
        return {"rule": self.rule}


class UnknownDeviceFlowProvider(LlmConfigRefusal):
    kind: Literal["unknown_device_flow_provider"] = "unknown_device_flow_provider"
    alias: str
    device_flow: str
    allowed: list[str]

    @property
    def message(self) -> str:
        return f'credential "{self.alias}": no device-flow provider "{self.device_flow}"'

    def fields(self) -> dict[str, Any]:
        return {"allowed": self.allowed}


class UnknownPrice(LlmConfigRefusal):
    """No override and nothing in the bundled table: its attempts cost 0 (`version`)."""

    kind: Literal["unknown_price"] = "unknown_price"
    model: str
    version: str

    @property
    def message(self) -> str:
        return (
            f'No price known for model "{self.model}": its attempts cost 0 (version '
            '"unknown") until one is set with PUT /api/v1/llm/prices/{model}'
        )

    @property
    def http_status(self) -> int:
        return 404

    def fields(self) -> dict[str, Any]:
        return {"model": self.model, "version": self.version}


class UnknownPriceOverride(LlmConfigRefusal):
    kind: Literal["unknown_price_override"] = "unknown_price_override"
    model: str

    @property
    def message(self) -> str:
        return f'No price override for model "{self.model}"'

    @property
    def http_status(self) -> int:
        return 404


def check_id(what: str, value: str) -> None:
    """Raises: ApplicationError `invalid_id`."""
    if not ID_PATTERN.match(value):
        raise InvalidId(what=what).application_error()
