"""GET /health, /capabilities and /daemon/status."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from runtime.settings import Settings
from runtime.store import Store
from tests.conftest import ApiFactory
from worker import build_worker


async def test_health_ok(api: ApiFactory) -> None:
    client = await api()
    response = await client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.parametrize("query", ["?deep=1", "?deep=true", "?deep"])
async def test_health_deep_counters(api: ApiFactory, query: str) -> None:
    client = await api()
    body = (await client.get(f"/health{query}")).json()
    assert body == {"status": "ok", "sessions": 0, "pendingPermissions": 0}


async def test_health_deep_false_is_the_plain_probe(api: ApiFactory) -> None:
    client = await api()
    assert (await client.get("/health?deep=0")).json() == {"status": "ok"}


async def test_capabilities_shape(api: ApiFactory, tmp_path: Path) -> None:
    client = await api()
    body = (await client.get("/capabilities")).json()
    assert body["v"] == 1
    assert body["protocolVersions"] == {"current": "v1", "supported": ["v1"]}
    assert body["mode"] == "http-bridge"
    assert body["modelServices"] == []
    assert body["workspaceCwd"] == str(tmp_path.resolve())
    assert {"health", "capabilities", "daemon_status"} <= set(body["features"])
    for conditional in ("require_auth", "allow_origin", "rate_limit"):
        assert conditional not in body["features"]


async def test_daemon_status_rejects_unknown_detail(api: ApiFactory) -> None:
    client = await api()
    response = await client.get("/daemon/status?detail=bogus")
    assert response.status_code == 400
    assert response.json() == {
        "error": "detail must be one of: summary, full",
        "code": "invalid_detail",
    }


async def test_daemon_status_summary_without_a_worker(api: ApiFactory, task_queue: str) -> None:
    client = await api(task_queue=task_queue)
    body = (await client.get("/daemon/status")).json()
    assert body["v"] == 1
    assert body["detail"] == "summary"
    assert body["temporal"]["reachable"] is True
    assert body["temporal"]["workerPolling"] is False
    assert "pollers" not in body["temporal"]
    assert body["status"] == "error"
    assert [i["code"] for i in body["issues"]] == ["worker_not_polling"]
    assert body["security"] == {
        "tokenConfigured": False,
        "requireAuth": False,
        "loopbackBind": True,
        "allowOriginConfigured": False,
        "allowOriginMode": "none",
        "sessionShellCommandEnabled": False,
    }
    assert body["limits"]["eventRingSize"] == 8000
    assert body["store"]["revision"] == body["store"]["headRevision"]
    assert body["runtime"]["process"]["rss"] > 0


async def test_daemon_status_full_sees_the_worker(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    client = await api(
        task_queue=task_queue, token="zq-secret-913", allow_origin=["https://a.example"]
    )
    store = Store(f"sqlite:///{tmp_path / 'worker.db'}")
    settings = Settings(task_queue=task_queue)
    async with build_worker(dev_env.client, settings, store):
        # The worker's first poll reaches the server shortly after it starts.
        for _ in range(100):
            body = (
                await client.get(
                    "/daemon/status?detail=full",
                    headers={"Authorization": "Bearer zq-secret-913"},
                )
            ).json()
            if body["temporal"]["workerPolling"]:
                break
            await asyncio.sleep(0.1)
    store.dispose()
    assert body["detail"] == "full"
    assert body["status"] == "ok", body["issues"]
    assert body["temporal"]["workerPolling"] is True
    assert any(p["live"] for p in body["temporal"]["pollers"])
    assert body["security"]["tokenConfigured"] is True
    assert body["security"]["allowOriginMode"] == "list"
    assert "allow_origin" in body["capabilities"]["features"]
    # Secrets never appear in status payloads.
    assert "zq-secret-913" not in str(body) and "a.example" not in str(body)


async def test_daemon_status_reports_temporal_down(api: ApiFactory) -> None:
    from api.temporal import TemporalConnector

    client = await api()
    client.app.state.temporal = TemporalConnector("127.0.0.1:1", "default")  # type: ignore[attr-defined]
    body = (await client.get("/daemon/status")).json()
    assert body["status"] == "error"
    assert body["temporal"]["reachable"] is False
    assert [i["code"] for i in body["issues"]] == ["temporal_unreachable"]
    # The plain probe still answers: it touches nothing.
    assert (await client.get("/health")).json() == {"status": "ok"}
    deep = await client.get("/health?deep=1")
    assert deep.status_code == 503
    assert deep.json()["code"] == "temporal_unavailable"
