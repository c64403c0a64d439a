"""A standing agent's tick whose planning provider's credential arrives by device flow
(issue 11): the tick pauses on the flow (the worker's workspace: an agent has no
session) and plans with the new token once the user approves at the IdP.

Real HTTP on loopback for the IdP and the model (which accepts only the tokens the IdP
issued), a real Temporal dev server, in-process workers.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from runtime.llm import config_store
from runtime.llm.routing import CredentialConfig
from runtime.settings import Settings
from runtime.store import Store
from tests.e2e.test_llm_device_flow import TokenGatedOpenAI
from tests.fakes.device_idp import FakeIdP
from tests.fakes.openai_server import FakeReply
from tests.workflows import standing_agent_support as sa

IDP = "test-idp"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PLAN = FakeReply(
    tool_calls=[{"name": "phase_complete", "arguments": {"summary": "done"}}],
    finish_reason="tool_calls",
    model="served-device",
    usage=(100, 10),
)


async def _until(predicate: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_an_agent_tick_pauses_on_the_device_flow_and_resumes(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path, store: Store
) -> None:
    with FakeIdP(interval=1) as idp, TokenGatedOpenAI(idp) as model:
        providers = json.dumps({IDP: idp.provider_config()})
        settings = Settings(data_dir=tmp_path, workspace=tmp_path, device_flow_providers=providers)
        credential = CredentialConfig(alias="device", deviceFlow=IDP)
        config_store.put_provider(store, settings, "oauth", model.base_url, [credential], NOW)
        config_store.put_preset(store, settings, "plan", "m-device", "oauth", None, [], NOW)
        config_store.bind_site(store, settings, "Agent:Planning", "plan", NOW)
        model.queue(PLAN)
        now = await dev_env.get_current_time()
        agent = sa.create_instance(store, now)
        async with sa.running(
            dev_env, store, tmp_path, task_queue, device_flow_providers=providers
        ):
            handle = await sa.start(dev_env.client, agent, task_queue)
            await _until(lambda: idp.devices, "the tick to start the device flow")
            # Paused: nothing sent without a token, no turn yet; the attempt stands as
            # an auth_error until it is made again with the token.
            assert model.requests == [] and sa.turns(store, agent) == []
            assert [a.outcome for a in sa.llm_attempts(store, agent)] == ["auth_error"]
            idp.approve(idp.latest().user_code)
            await sa.wait_turns(store, agent, 1, timeout=120)
            await handle.terminate("test over")
    assert len(idp.devices) == 1
    (request,) = model.requests
    assert request.authorization == f"Bearer {idp.issued[-1]}"
    (turn,) = sa.turns(store, agent)
    assert turn.served_model == "served-device" and turn.reasoning_summary == "done"
    attempts = sa.llm_attempts(store, agent)
    assert [(a.ordinal, a.outcome, a.credential_alias) for a in attempts] == [(0, "ok", "device")]
