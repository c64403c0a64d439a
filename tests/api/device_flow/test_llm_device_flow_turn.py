"""An agent-tools model turn whose provider's credential arrives by device flow pauses on
the flow (the worker's workspace: a turn has no session) and completes with the new
token once the user approves at the IdP; real HTTP on loopback for the IdP and the
model."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from runtime.llm import config_store
from runtime.llm.contracts import TURN_SITE, CredentialConfig
from runtime.settings import Settings
from runtime.store import Store
from tests.api.agent_tools.test_agent_tools_api import GatewayFactory, gateway  # noqa: F401
from tests.e2e.device_flow.test_llm_device_flow import TokenGatedOpenAI
from tests.fakes.device_idp import FakeIdP

IDP = "test-idp"


def _bind(database_url: str, settings: Settings, model: TokenGatedOpenAI) -> None:
    store = Store(database_url)
    now = datetime.now(UTC)
    try:
        credential = CredentialConfig(alias="device", deviceFlow=IDP)
        config_store.put_provider(store, settings, "oauth", model.base_url, [credential], now)
        config_store.put_preset(store, settings, "turns", "m-device", "oauth", None, [], now)
        config_store.bind_site(store, settings, TURN_SITE, "turns", now)
    finally:
        store.dispose()


async def test_a_model_turn_pauses_on_the_device_flow_then_completes(
    gateway: GatewayFactory,  # noqa: F811
    database_url: str,
) -> None:
    with FakeIdP(interval=1) as idp:
        model = TokenGatedOpenAI(idp)
        with model:
            providers = json.dumps({IDP: idp.provider_config()})
            browser = await gateway(device_flow_providers=providers)
            _bind(database_url, Settings(device_flow_providers=providers), model)
            model.queue_text("Approved, answered.")
            turn = await browser.start_turn("hello", agent="model")
            for _ in range(300):
                if idp.devices:
                    break
                await asyncio.sleep(0.1)
            assert idp.devices, "the turn never started the device flow"
            assert model.requests == []  # paused, nothing sent without a token
            idp.approve(idp.latest().user_code)
            events = await browser.wait_for_event(turn["turn_id"], "agent.turn.completed")
    assert events[-1]["payload"]["summary"] == "Approved, answered."
    (request,) = model.requests
    assert request.authorization == f"Bearer {idp.issued[-1]}"
