"""Spec §3.2 MaxConcurrentInstancesPerTenant over HTTP, with a real worker and Temporal dev
server (issue 21, item 4): ten agents of one tenant, created and started through the API,
get an external event at once; at most the cap of them ever tick together, and every one
ticks in turn. The same burst, measured at scale, is `python -m bench standing-agents`'
cap phase (bench/standing_agents_cap.py), whose helpers this test drives."""

from __future__ import annotations

from bench.standing_agents_cap import cap_round, tenant_agents
from tests.agents_helpers import AgentsFactory

CAP = 3
AGENTS = 10


async def test_ten_agents_woken_at_once_tick_at_most_the_cap_at_a_time(
    agents: AgentsFactory,
) -> None:
    d = await agents(max_concurrent_instances_per_tenant=CAP)
    tenant = d.tenant()
    ids = await tenant_agents(d.client, d.store, tenant, AGENTS)
    # Returns once each agent's turn for its event is in the ledger (or fails on its bound),
    # having sampled the tenant's tick leases every 20 ms meanwhile.
    burst = await cap_round(d.client, d.store, tenant, ids, "cap")
    assert burst.agents == AGENTS
    assert 1 <= burst.max_ticking <= CAP
    assert all(not d.instance(i).tick_in_progress for i in ids)
