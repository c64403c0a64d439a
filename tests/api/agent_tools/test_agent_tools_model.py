"""The model-driven agent on the same gateway: scripted model, and an OpenAI-compatible server."""

from __future__ import annotations

import json

from activities.llm import ScriptedModel, provider_from_settings
from runtime.settings import Settings
from tests.agent_tools_helpers import Browser
from tests.api.agent_tools.test_agent_tools_api import GatewayFactory, gateway  # noqa: F401
from tests.fakes.openai_server import FakeOpenAI

SCRIPTED_PROMPT = "\n".join(
    [
        "Look into Kestrel.",
        '/call investigation.search {"query": "Kestrel Holdings", "limit": 3}',
        '/call graph.get_node {"node_id": "o-kestrel"}',
        '/call research.prepare {"question": "Trace Kestrel funds", '
        '"scope": {"node_ids": ["o-kestrel"]}}',
        "/say Proposed a research on Kestrel.",
    ]
)


async def _tools_called(browser: Browser, turn_id: str) -> list[str]:
    return [
        e["payload"]["tool_id"]
        for e in await browser.events()
        if e["turn_id"] == turn_id and e["type"] == "agent.tool.requested"
    ]


async def test_scripted_model_calls_the_tools_the_prompt_names_and_stops_for_authorization(
    gateway: GatewayFactory,  # noqa: F811
) -> None:
    browser = await gateway(ScriptedModel())
    turn = await browser.start_turn(SCRIPTED_PROMPT, agent="model")
    events = await browser.wait_for_event(turn["turn_id"], "agent.authorization.required")
    assert await _tools_called(browser, turn["turn_id"]) == [
        "investigation.search",
        "graph.get_node",
        "research.prepare",
    ]
    research_id = events[-1]["payload"]["research_id"]
    assert (await browser.resume(turn["turn_id"])).json()["code"] == "authorization_pending"
    assert (await browser.decide(research_id, "approve")).status_code == 200
    done = await browser.resume(turn["turn_id"])
    assert done.status_code == 200, done.text
    assert done.json()["result"] == "COMPLETED"


async def test_scripted_model_without_tools_just_answers(gateway: GatewayFactory) -> None:  # noqa: F811
    browser = await gateway(ScriptedModel())
    turn = await browser.start_turn("hello there", agent="model")
    events = await browser.wait_for_event(turn["turn_id"], "agent.turn.completed")
    assert events[-1]["payload"]["summary"] == "You said: hello there"
    assert await _tools_called(browser, turn["turn_id"]) == []


async def test_scripted_model_cannot_call_a_decision_tool(gateway: GatewayFactory) -> None:  # noqa: F811
    browser = await gateway(ScriptedModel())
    prompt = '/call research.decide {"research_id": "x", "decision": "approve"}'
    turn = await browser.start_turn(prompt, agent="model")
    events = await browser.wait_for_event(turn["turn_id"], "agent.turn.completed")
    assert "not available" in events[-1]["payload"]["summary"]


async def test_openai_compatible_endpoint_drives_the_turn(gateway: GatewayFactory) -> None:  # noqa: F811
    with FakeOpenAI() as fake:
        fake.queue_tool_calls(
            [{"id": "c1", "name": "investigation__search", "arguments": {"query": "Bluewater"}}]
        )
        fake.queue_tool_calls(
            [
                {
                    "id": "c2",
                    "name": "research__prepare",
                    "arguments": {
                        "question": "Where did Bluewater's money go?",
                        "scope": {"node_ids": ["o-bluewater"]},
                    },
                }
            ]
        )
        settings = Settings(
            model_provider="openai",
            openai_base_url=fake.base_url,
            openai_api_key="sk-test",
            openai_model="qwen-test",
        )
        browser = await gateway(provider_from_settings(settings))
        turn = await browser.start_turn("Follow the Bluewater money", agent="model")
        events = await browser.wait_for_event(turn["turn_id"], "agent.authorization.required")
        assert await _tools_called(browser, turn["turn_id"]) == [
            "investigation.search",
            "research.prepare",
        ]
        plan = [e for e in events if e["type"] == "agent.plan.updated"]
        assert plan[0]["payload"]["model"] == "qwen-test"
        # The model saw the tools under wire-safe names and got the first result back.
        first, second = fake.requests[0].body, fake.requests[1].body
        names = {t["function"]["name"] for t in first["tools"]}
        assert {"investigation__search", "research__prepare"} <= names
        assert first["messages"][1] == {"role": "user", "content": "Follow the Bluewater money"}
        tool_message = second["messages"][-1]
        assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "c1"
        assert json.loads(tool_message["content"])["status"] == "COMPLETED"
        assert fake.requests[0].authorization == "Bearer sk-test"


async def test_a_failing_model_ends_the_turn_with_agent_error(
    gateway: GatewayFactory,  # noqa: F811
) -> None:
    with FakeOpenAI() as fake:
        fake.queue_error(401, "invalid api key sk-test")
        settings = Settings(
            model_provider="openai", openai_base_url=fake.base_url, openai_api_key="sk-test"
        )
        browser = await gateway(provider_from_settings(settings))
        turn = await browser.start_turn("anything", agent="model")
        events = await browser.wait_for_event(turn["turn_id"], "agent.error")
        assert len(fake.requests) == 1  # a 401 is not retried
    error = events[-1]
    assert "401" in error["payload"]["message"]
    assert "sk-test" not in error["payload"]["message"]
    state = (await browser.get(f"/api/v1/agent-tools/turns/{turn['turn_id']}")).json()
    assert state["status"] == "failed"


async def test_a_model_turn_whose_tool_failed_does_not_claim_success(
    gateway: GatewayFactory,  # noqa: F811
) -> None:
    """The README's old example: `graph.get_node {"id": "n1"}` fails (the argument is
    `node_id`), and the scripted model still says "Found it."."""
    browser = await gateway(ScriptedModel())
    prompt = "\n".join(
        [
            "Find the disk node.",
            '/call investigation.search {"query": "disk full"}',
            '/call graph.get_node {"id": "n1"}',
            "/say Found it.",
        ]
    )
    turn = await browser.start_turn(prompt, agent="model")
    events = await browser.wait_for_event(turn["turn_id"], "agent.turn.completed")
    done = events[-1]["payload"]
    assert done["status"] == "failed" and done["result"] == "FAILED"
    assert "graph.get_node FAILED" in done["summary"]
    assert done["summary"].endswith("The model's answer: Found it.")
    state = (await browser.get(f"/api/v1/agent-tools/turns/{turn['turn_id']}")).json()
    assert state["status"] == "failed"


async def test_a_model_turn_that_recovers_from_a_failed_tool_completes(
    gateway: GatewayFactory,  # noqa: F811
) -> None:
    browser = await gateway(ScriptedModel())
    prompt = "\n".join(
        [
            '/call graph.get_node {"id": "o-kestrel"}',
            '/call graph.get_node {"node_id": "o-kestrel"}',
            "/say Kestrel Holdings Ltd, Cyprus.",
        ]
    )
    turn = await browser.start_turn(prompt, agent="model")
    events = await browser.wait_for_event(turn["turn_id"], "agent.turn.completed")
    done = events[-1]["payload"]
    assert (done["status"], done["result"]) == ("completed", "COMPLETED")
    assert done["summary"] == "Kestrel Holdings Ltd, Cyprus."
