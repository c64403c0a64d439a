"""A budget reached is a pause (issue 21, item 9), over HTTP with a real worker and
Temporal dev server: a tick that stops at its tool-call budget pauses the agent with one
`budget_reached` request; a config write that does not raise the cap leaves it paused;
raising the cap resumes it at once, and what waited is answered."""

from __future__ import annotations

import json
from typing import Any

from tests.agents_helpers import AgentsDaemon, AgentsFactory


def _send_twice(text: str) -> str:
    call = json.dumps({"text": text})
    return f"/call soa_send_message {call}\n/call soa_send_message {call}"


async def test_a_tick_at_its_budget_pauses_the_agent_until_the_cap_is_raised(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = d.base(tenant)
    await d.wait_until(lambda: d.turns(soa), "the greeting turn")
    d.set_instance(soa, is_building_starting_workset=False)  # past its foundational phase
    cap = await d.client.put(f"{base}/config/AgentDispatcher:TickMaxToolCalls", json={"value": 1})
    assert cap.status_code == 200, cap.text
    posted = await d.client.post(f"{base}/agents/{soa}/messages", json={"text": _send_twice("one")})
    assert posted.status_code == 202, posted.text

    async def view() -> dict[str, Any]:
        body: dict[str, Any] = (await d.client.get(f"{base}/agents/{soa}")).json()
        return body

    paused = await _poll(d, view, lambda v: v["status"] == "Paused")
    pause = paused["budgetPause"]
    assert (pause["axis"], pause["cap"], pause["spent"]) == ("tool_calls", 1.0, 1.0)
    stopped = d.turns(soa)[-1]
    assert stopped.wait_condition == "budget_exhausted:tool_calls"
    decisions = (await d.client.get(f"{base}/decisions?status=open")).json()["decisions"]
    [reached] = [x for x in decisions if x["kind"] == "budget_reached"]
    assert reached["decisionId"] == pause["decisionId"]
    assert reached["payload"] == {"axis": "tool_calls", "cap": 1.0, "spent": 1.0}
    # What arrives meanwhile waits.
    waiting = await d.client.post(
        f"{base}/agents/{soa}/messages", json={"text": _send_twice("two")}
    )
    assert waiting.status_code == 202
    # A config write that does not raise the paused axis leaves the agent paused.
    same = await d.client.put(f"{base}/config/AgentDispatcher:TickMaxToolCalls", json={"value": 1})
    other = await d.client.put(f"{base}/config/AgentDispatcher:TickMaxTurns", json={"value": 9})
    assert same.status_code == other.status_code == 200
    still = await view()
    assert still["status"] == "Paused" and still["budgetPause"] == pause
    # Raised: the agent resumes at once and answers what waited, within the new cap.
    raised = await d.client.put(
        f"{base}/config/AgentDispatcher:TickMaxToolCalls", json={"value": 5}
    )
    assert raised.status_code == 200
    resumed = await view()
    assert resumed["status"] == "Active" and resumed["budgetPause"] is None
    answered = await d.wait_until(
        lambda: [t for t in d.turns(soa) if "two" in json.dumps(t.event_payload)],
        "the waiting message's turn",
    )
    assert answered[0].wait_condition != "budget_exhausted:tool_calls"
    resolved = (await d.client.get(f"{base}/decisions?status=resolved")).json()["decisions"]
    [done] = [x for x in resolved if x["decisionId"] == pause["decisionId"]]
    assert done["resolution"] == "resumed"
    assert "raised to 5" in done["resolutionNotes"]


async def test_an_operators_stop_makes_the_budget_pause_theirs(agents: AgentsFactory) -> None:
    """Stopped while paused on a budget, the agent no longer resumes by itself."""
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = d.base(tenant)
    await d.wait_until(lambda: d.turns(soa), "the greeting turn")
    d.set_instance(soa, is_building_starting_workset=False)  # past its foundational phase
    await d.client.put(f"{base}/config/AgentDispatcher:TickMaxToolCalls", json={"value": 1})
    await d.client.post(f"{base}/agents/{soa}/messages", json={"text": _send_twice("one")})
    await d.wait_until(lambda: d.instance(soa).budget_pause is not None, "the budget pause")
    stopped = await d.client.post(f"{base}/agents/{soa}/stop")
    assert stopped.status_code == 200, stopped.text
    assert d.instance(soa).budget_pause is None
    await d.client.put(f"{base}/config/AgentDispatcher:TickMaxToolCalls", json={"value": 5})
    assert d.instance(soa).status == "Paused"
    resolved = (await d.client.get(f"{base}/decisions?status=resolved")).json()["decisions"]
    [cleared] = [x for x in resolved if x["kind"] == "budget_reached"]
    assert cleared["resolution"] == "cleared"


async def _poll(d: AgentsDaemon, read: Any, ready: Any) -> dict[str, Any]:
    latest: dict[str, Any] = {}

    async def check() -> bool:
        nonlocal latest
        latest = await read()
        return bool(ready(latest))

    for _ in range(600):
        if await check():
            return latest
        await _sleep()
    raise AssertionError(f"never reached: {latest}")


async def _sleep() -> None:
    import asyncio

    await asyncio.sleep(0.1)
