"""A tenant's feature flags on the wire (`/api/v1/tenants/{tenant}/features/<feature>`):
the body that sets one and the state a route answers. Standing agents and the Windows
pool each have a flag (runtime/store/tenants.py keeps them); both routes answer with
these models.
"""

from __future__ import annotations

from pydantic import Field, StrictBool

from runtime.wire import WireBody, WireModel


class FeatureBody(WireBody):
    # Strict: "no", 1 or "off" are refused, not read as booleans.
    enabled: StrictBool


class FeatureState(WireModel):
    tenant: str
    feature: str
    enabled: bool
    soa_instance_id: str | None = Field(
        default=None, description="The tenant's SOA when it exists (auto-bootstrap)."
    )
    deployment_enabled: bool | None = Field(
        default=None,
        description="The deployment's switch (AGENTRT_STANDING_AGENTS_ENABLED): when false,"
        " no agent ticks whatever the tenant's flag (spec §3.2). Standing agents only.",
    )
