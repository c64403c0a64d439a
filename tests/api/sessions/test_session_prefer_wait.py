"""`Prefer: wait` over real HTTP: a blocking caller that hangs up cancels its prompt."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import uvicorn
from temporalio.testing import WorkflowEnvironment

from api.app import create_app
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from tests.api.sessions.test_session_events import _Server
from tests.conftest import free_port
from tests.session_helpers import Daemon, write_prompt
from worker import build_worker


async def test_a_blocking_caller_that_hangs_up_cancels_its_prompt(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    port = free_port()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = Settings(
        workspace=workspace,
        data_dir=tmp_path / ".data",
        port=port,
        task_queue=task_queue,
        temporal_address=dev_env.client.service_client.config.target_host,
    )
    store = Store(settings.resolved_database_url)
    upgrade_to_head(store.engine)
    app = create_app(settings, temporal_client=dev_env.client)
    server = _Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            lifespan="on",
            log_level="warning",
            timeout_graceful_shutdown=2,
        )
    )
    serving = asyncio.create_task(server.serve())
    try:
        async with build_worker(dev_env.client, settings, store):
            while not server.started:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
            base = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                d = Daemon(
                    client=client, workspace=workspace.resolve(), journal=EventJournal(store)
                )
                sid = (await d.create())["sessionId"]
                # The prompt waits on a permission nobody answers; the caller gives up.
                blocking = asyncio.create_task(
                    client.post(
                        f"/session/{sid}/prompt",
                        headers={"Prefer": "wait"},
                        json={
                            "prompt": [
                                {"type": "text", "text": write_prompt(d.workspace, "never.txt")}
                            ]
                        },
                    )
                )
                await d.wait_for(sid, "permission_request")
                blocking.cancel()
                events = await d.wait_for(sid, "turn_complete")
        completed = [e for e in events if e["type"] == "turn_complete"][-1]
        assert completed["data"]["stopReason"] == "cancelled"
        assert "prompt_cancelled" in [e["type"] for e in events]
        assert not (workspace / "never.txt").exists()
    finally:
        server.should_exit = True
        await serving
        store.dispose()
