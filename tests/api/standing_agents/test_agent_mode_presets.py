"""A mode's preset (spec standing-agents §2.5, §3.7): set through the mode catalogue's
route, it wins over the type's site binding for that mode's planning calls; a preset a
mode names cannot be deleted."""

from __future__ import annotations

from sqlmodel import col, select

from runtime.llm.models import LlmCallAttempt
from runtime.standing_agents.models import AgentLedgerTurn
from tests.agents_helpers import AgentsFactory

ROUTE = "/api/v1/agent-modes/Soa/Strategic/preset"


async def test_a_modes_preset_chooses_its_planning_calls_model(agents: AgentsFactory) -> None:
    d = await agents()
    made = await d.client.put(
        "/api/v1/llm/presets/planner", json={"model": "planner-model", "provider": "settings"}
    )
    assert made.status_code in (200, 201), made.text
    unknown = await d.client.put(ROUTE, json={"presetId": "nowhere"})
    assert (unknown.status_code, unknown.json()["code"]) == (400, "unknown_preset")
    assert unknown.json()["presetId"] == "nowhere"
    nomode = await d.client.put("/api/v1/agent-modes/Soa/Nowhere/preset", json={"presetId": None})
    assert (nomode.status_code, nomode.json()["code"]) == (404, "unknown_mode")
    loose = await d.client.put(ROUTE, json={})
    assert (loose.status_code, loose.json()["code"]) == (400, "invalid_request")
    set_ = await d.client.put(ROUTE, json={"presetId": "planner"})
    assert set_.status_code == 200 and set_.json()["presetId"] == "planner"
    listed = (await d.client.get("/api/v1/agent-modes/Soa")).json()["modes"]
    assert {m["name"]: m["presetId"] for m in listed}["Strategic"] == "planner"
    held = await d.client.delete("/api/v1/llm/presets/planner")
    assert (held.status_code, held.json()["code"]) == (409, "preset_in_use")
    assert held.json()["modes"] == ["Soa/Strategic"]

    tenant = d.tenant()
    soa = await d.soa(tenant)  # its first tick (AgentInitialized) plans in Strategic

    def planned() -> list[LlmCallAttempt]:
        with d.store.session() as db:
            turns = db.exec(
                select(AgentLedgerTurn).where(col(AgentLedgerTurn.instance_id) == soa)
            ).all()
            if not turns:
                return []
            return list(
                db.exec(select(LlmCallAttempt).where(col(LlmCallAttempt.owner_id) == soa)).all()
            )

    attempts = await d.wait_until(planned, "the SOA's first planning call")
    assert {a.preset_id for a in attempts} == {"planner"}  # not the site binding's

    cleared = await d.client.put(ROUTE, json={"presetId": None})
    assert cleared.status_code == 200 and cleared.json()["presetId"] is None
    gone = await d.client.delete("/api/v1/llm/presets/planner")
    assert gone.status_code == 204
