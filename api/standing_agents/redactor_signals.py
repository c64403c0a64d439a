"""The Prompt Engineer's signals: POST /api/v1/tenants/{tenant}/redactor-signals (spec §3.9).

Ensure-creates the call site's PromptRedactor, Paused, and queues the signal as an
`ExternalSignalReceived` event, delivered off (queued, not ticked until an operator
starts the redactor); a `HumanRequest` also asks a human on the decision queue at once
(runtime/standing_agents/signals.py). Nothing is woken: a Paused agent does not tick.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends

from api.deps import StoreDep
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from api.standing_agents.deps import EnabledTenant
from api.standing_agents.models import SignalAccepted, SignalBody
from runtime.standing_agents import signals

router = APIRouter(prefix="/api/v1/tenants/{tenant}", route_class=StrictJsonRoute)


@router.post(
    "/redactor-signals",
    status_code=202,
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401, 403, 413),
)
async def raise_redactor_signal(
    body: SignalBody, tenant: EnabledTenant, store: StoreDep
) -> SignalAccepted:
    kind = signals.signal_kind({"signalKind": body.signal_kind})
    signals.check_payload_size(body.payload, "signal")
    raised = await asyncio.to_thread(
        signals.raise_redactor_signal,
        store,
        tenant,
        body.call_site,
        kind,
        body.payload,
        body.signal_id,
    )
    return SignalAccepted(
        instance_id=raised.instance.instance_id,
        call_site=body.call_site,
        event_id=raised.event.event_id,
        sequence_number=raised.event.sequence_number,
        instance_created=raised.instance_created,
        duplicate=raised.duplicate,
        decision_id=raised.decision_id,
    )
