"""GET /health, /capabilities and /daemon/status."""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from pathlib import Path

import pytest
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.testing import WorkflowEnvironment

from runtime.search_attributes import KIND, STATUS, TENANT
from runtime.settings import Settings
from runtime.store import Store
from tests.conftest import ApiFactory, migrated_sqlite
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


async def test_both_counts_of_pending_permissions_are_this_daemons_sessions_only(
    api: ApiFactory, dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """`/health?deep` and `/daemon/status` count the sessions of this daemon's workspace
    waiting on a permission, not those of another daemon sharing the namespace; a
    workspace with a quote in its path is quoted, not left unfiltered."""
    workspace = tmp_path / "it's here"
    workspace.mkdir()
    client = await api(workspace=workspace)
    waiting = [
        SearchAttributePair(KIND, "session"),
        SearchAttributePair(STATUS, "awaiting_permission"),
    ]
    handles = []
    # Workflows no worker runs: they stay Running with the attributes they started with.
    for tenant in (str(workspace.resolve()), "/another/daemons/workspace"):
        handles.append(
            await dev_env.client.start_workflow(
                "ProbeWorkflow",
                id=f"probe-{uuid.uuid4()}",
                task_queue=f"nobody-{uuid.uuid4()}",
                search_attributes=TypedSearchAttributes(
                    [*waiting, SearchAttributePair(TENANT, tenant)]
                ),
            )
        )
    try:
        # Visibility follows a start shortly after; wait for this daemon's to be listed.
        for _ in range(100):
            deep = (await client.get("/health?deep=1")).json()
            if deep["pendingPermissions"] >= 1:
                break
            await asyncio.sleep(0.1)
        status = (await client.get("/daemon/status")).json()
        assert deep["pendingPermissions"] == 1
        assert status["runtime"]["permissions"]["pending"] == 1
    finally:
        for handle in handles:
            await handle.terminate()


async def test_health_deep_false_is_the_plain_probe(api: ApiFactory) -> None:
    client = await api()
    assert (await client.get("/health?deep=0")).json() == {"status": "ok"}


async def test_capabilities_shape(api: ApiFactory, tmp_path: Path) -> None:
    client = await api()
    body = (await client.get("/capabilities")).json()
    assert body["v"] == 1
    assert body["protocolVersions"] == {"current": "v1", "supported": ["v1"]}
    assert body["mode"] == "http-bridge"
    # Spec 002 leaves it empty at its stage 1; agentrt names its one active service.
    assert body["modelServices"] == [
        {"id": "scripted", "provider": "scripted", "current": True, "modelId": "scripted"}
    ]
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
    api: ApiFactory,
    dev_env: WorkflowEnvironment,
    task_queue: str,
    tmp_path: Path,
    sqlite_template: Path,
) -> None:
    client = await api(
        task_queue=task_queue, token="zq-secret-913", allow_origin=["https://a.example"]
    )
    store = Store(migrated_sqlite(sqlite_template, tmp_path / "worker.db"))
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


async def test_index_links_the_pages_docs_and_temporal_ui(api: ApiFactory) -> None:
    client = await api(temporal_ui_port=8999)
    client.app.state.temporal_embedded = True  # type: ignore[attr-defined]
    response = await client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page = response.text
    for link in ('href="/ui/agent-tools"', 'href="/docs"', 'href="http://127.0.0.1:8999"'):
        assert link in page
    assert "<script" not in page
    assert (await client.get("/docs")).status_code == 200


async def test_index_without_an_embedded_temporal(api: ApiFactory) -> None:
    client = await api()
    page = (await client.get("/")).text
    assert "Temporal Web UI" in page and "127.0.0.1:8233" not in page


async def test_index_is_behind_the_security_chain(api: ApiFactory) -> None:
    client = await api(require_auth=True, token="t0k")
    assert (await client.get("/")).status_code == 401
    assert (await client.get("/", headers={"Host": "evil.example"})).status_code in (400, 403)


async def test_one_access_line_per_request_without_query_values(
    api: ApiFactory, caplog: pytest.LogCaptureFixture
) -> None:
    client = await api(token="s3cret-token")
    caplog.set_level(logging.INFO, logger="agentrt.access")
    await client.get("/health")
    await client.get("/capabilities?token=leaked-value&x=1")
    await client.get("/capabilities", headers={"Authorization": "Bearer s3cret-token"})
    lines = [r.getMessage() for r in caplog.records if r.name == "agentrt.access"]
    assert len(lines) == 3, lines
    assert re.fullmatch(r"GET /health 200 \d+\.\d ms", lines[0]), lines[0]
    assert re.fullmatch(r"GET /capabilities\?token&x 401 \d+\.\d ms", lines[1]), lines[1]
    assert lines[2].startswith("GET /capabilities 200 ")
    assert not any("leaked-value" in line or "s3cret" in line for line in lines)


async def test_docs_load_nothing_from_elsewhere(api: ApiFactory) -> None:
    """Swagger UI comes from this server: /docs works on a machine without the internet."""
    client = await api()
    page = await client.get("/docs")
    assert page.status_code == 200
    assert "/docs/assets/swagger-ui-bundle.js" in page.text
    assert "cdn." not in page.text and "https://" not in page.text
    script = await client.get("/docs/assets/swagger-ui-bundle.js")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.text
    assert (await client.get("/docs/assets/swagger-ui.css")).status_code == 200
    assert (await client.get("/docs/assets/../../settings.py")).status_code == 404
