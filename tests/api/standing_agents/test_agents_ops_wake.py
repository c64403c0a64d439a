"""An ops incident wakes the SOA within seconds (issue 21, item 3), with the API's sweeper,
a real worker and the Temporal dev server: the sweeper's ops watch reads Temporal's
visibility, sees the tenant's bucket turn degraded, queues one tick for the SOA and wakes
it, and the SOA plans on the incident instead of waiting for its daily heartbeat."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from api.standing_agents.temporal_calls import Sweeper
from runtime.llm.models import LlmCallAttempt
from runtime.standing_agents.models import OpsBucketState
from tests.agents_helpers import AgentsFactory


async def test_a_bucket_turning_degraded_wakes_the_soa_which_plans_on_it(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    await d.wait_until(lambda: d.turns(soa), "the greeting turn")
    client = await d.client.app.state.temporal.get()  # type: ignore[attr-defined]
    sweeper = Sweeper(d.settings, d.store)
    assert await sweeper.watch_ops(client, datetime.now(UTC)) == 0  # healthy, recorded
    with d.store.session() as db:
        state = db.get(OpsBucketState, tenant)
        assert state is not None and state.bucket == "healthy"
        assert state.failed_workflows == 0 and state.visibility_checked_at is not None
        state.changed_at = datetime.now(UTC) - timedelta(minutes=2)  # past the dwell
        db.add(state)
        db.add(  # a model call of the tenant failed: degraded
            LlmCallAttempt(
                attempt_id="incident-1",
                call_id="incident",
                tenant=tenant,
                owner_kind="agent",
                owner_id=soa,
                site="Agent:Planning",
                provider="p",
                requested_model="m",
                outcome="server_error",
                created_at=datetime.now(UTC),
            )
        )
        db.commit()
    now = datetime.now(UTC) + timedelta(seconds=1)
    assert await sweeper.watch_ops(client, now) == 1
    assert await sweeper.watch_ops(client, now) == 0  # the same transition: once
    turns = await d.wait_until(
        lambda: [t for t in d.turns(soa) if t.event_id.startswith(f"ops/{soa}/")],
        "the SOA's turn on the incident",
        timeout=30,
    )
    (incident,) = turns
    assert incident.event_payload["opsBucket"] == {
        "from": "healthy",
        "to": "degraded",
        "transition": 1,
    }
    assert incident.llm_call_id is not None  # a new plan hash: it planned
