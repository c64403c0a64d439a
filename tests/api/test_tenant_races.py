"""Issue 18, item 12 over HTTP: concurrent PUTs of a tenant feature or a config key, and
concurrent mode changes, answer 200 each (never a 500 on the insert race) and every mode
change is audited once, in a chain (API in process with a real worker, SQLite and
PostgreSQL). The deterministic races, with a barrier, are tests/runtime/test_store_races.py.
"""

from __future__ import annotations

import asyncio

import pytest

from runtime.standing_agents.modes import mode_changes
from tests.agents_helpers import AgentsFactory

REQUESTS = 8


@pytest.mark.parametrize("feature", ["standing-agents", "windows-pool"])
async def test_concurrent_feature_puts_all_answer_200(agents: AgentsFactory, feature: str) -> None:
    d = await agents()
    for _ in range(3):
        tenant = d.tenant()
        url = f"{d.base(tenant)}/features/{feature}"
        # Off: the first write of the row is the race; enabling would also wake agents.
        answers = await asyncio.gather(
            *(d.client.put(url, json={"enabled": False}) for _ in range(REQUESTS))
        )
        assert [a.status_code for a in answers] == [200] * REQUESTS, [a.text for a in answers]
        assert (await d.client.get(url)).json()["enabled"] is False


async def test_concurrent_config_puts_all_answer_200(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    await d.enable(tenant)
    for key in ("AgentDispatcher:TickMaxTurns", "AgentDispatcher:TickMaxToolCalls"):
        url = f"{d.base(tenant)}/config/{key}"
        answers = await asyncio.gather(
            *(d.client.put(url, json={"value": n + 1}) for n in range(REQUESTS))
        )
        assert [a.status_code for a in answers] == [200] * REQUESTS, [a.text for a in answers]
        assert sorted(a.json()["value"] for a in answers) == list(range(1, REQUESTS + 1))
        assert (await d.client.get(url)).json()["value"] in range(1, REQUESTS + 1)


async def test_concurrent_mode_changes_are_each_audited_once(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    url = f"{d.base(tenant)}/agents/{soa}/mode"
    before = len(mode_changes(d.store, soa))
    targets = ["Incident", "Dialogue", "Housekeeping", "Strategic"] * (REQUESTS // 4)
    answers = await asyncio.gather(
        *(
            d.client.post(url, json={"mode": mode, "actor": f"op-{n}"})
            for n, mode in enumerate(targets)
        )
    )
    assert [a.status_code for a in answers] == [200] * REQUESTS, [a.text for a in answers]
    listed = (await d.client.get(f"{d.base(tenant)}/agents/{soa}/mode-changes")).json()["changes"]
    mine = listed[before:]
    assert sorted(c["actor"] for c in mine) == sorted(f"op-{n}" for n in range(REQUESTS))
    # No lost update: each change starts where the one before it ended.
    assert [c["from"] for c in mine[1:]] == [c["to"] for c in mine[:-1]]
    if before:
        assert mine[0]["from"] == listed[before - 1]["to"]
    agent = (await d.client.get(f"{d.base(tenant)}/agents/{soa}")).json()
    assert agent["activeMode"] == mine[-1]["to"]
