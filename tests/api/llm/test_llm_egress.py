"""PUT /api/v1/llm/providers/{id} refuses what would make the worker leak (issue 18): an
`apiKeyEnv` the provider-key rule refuses and a `baseUrl` the egress rule refuses, each a
400 in the route's shape that names the rule; URLs are listed without their user-info."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from runtime.llm.models import LlmProvider
from runtime.store import Store
from tests.conftest import ApiFactory

TOKEN = "llm-egress-token"


async def _daemon(api: ApiFactory, database_url: str, **overrides: Any) -> httpx.AsyncClient:
    client = await api(token=TOKEN, database_url=database_url, **overrides)
    client.headers.update({"Authorization": f"Bearer {TOKEN}"})
    return client


def _env(name: str) -> dict[str, Any]:
    return {"baseUrl": "https://api.example/v1", "credentials": [{"alias": "a", "apiKeyEnv": name}]}


@pytest.mark.parametrize(
    "name",
    [
        "AGENTRT_TOKEN",
        "AGENTRT_WINDOWS_POOL_TOKEN",
        "QWEN_SERVER_TOKEN",
        "DATABASE_URL",
        "TEMPORAL_TLS_KEY",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "PGPASSWORD",
        "AWS_SECRET_ACCESS_KEY",
        "HOME",
    ],
)
async def test_an_api_key_env_outside_the_rule_is_a_400_naming_it(
    api: ApiFactory, database_url: str, name: str
) -> None:
    client = await _daemon(api, database_url)
    response = await client.put("/api/v1/llm/providers/evil", json=_env(name))
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "invalid_credentials" and body["rule"] == "provider_key_env"
    assert name in body["error"] and "_API_KEY" in body["error"]
    assert "AGENTRT_PROVIDER_KEY_ENVS" in body["error"]
    assert (await client.get("/api/v1/llm/providers/evil")).status_code == 404


async def test_the_operator_lists_more_names_but_never_agentrts_own(
    api: ApiFactory, database_url: str
) -> None:
    client = await _daemon(
        api, database_url, provider_key_envs=["HF_TOKEN", "AGENTRT_WINDOWS_POOL_TOKEN"]
    )
    allowed = await client.put("/api/v1/llm/providers/hf", json=_env("HF_TOKEN"))
    assert allowed.status_code == 200, allowed.text
    assert allowed.json()["credentials"][0]["apiKeyEnv"] == "HF_TOKEN"
    suffixed = await client.put("/api/v1/llm/providers/o", json=_env("OPENAI_API_KEY_2"))
    assert suffixed.status_code == 200, suffixed.text
    listed_yet_own = await client.put(
        "/api/v1/llm/providers/evil", json=_env("AGENTRT_WINDOWS_POOL_TOKEN")
    )
    assert listed_yet_own.status_code == 400
    assert listed_yet_own.json()["rule"] == "provider_key_env"


@pytest.mark.parametrize(
    ("base_url", "rule"),
    [
        ("http://169.254.169.254/latest/meta-data/iam/", "link_local_or_metadata"),
        ("http://[fd00:ec2::254]/latest", "link_local_or_metadata"),
        ("http://[fe80::1]:8080/v1", "link_local_or_metadata"),
        ("http://[::ffff:169.254.169.254]/", "link_local_or_metadata"),
        ("http://2852039166/", "link_local_or_metadata"),
        ("http://attacker:s3cr3t@api.example/v1", "url_userinfo"),
        ("gopher://api.example/v1", "url_scheme"),
        ("http://169\u3002254\u3002169\u3002254/", "link_local_or_metadata"),  # full-width dots
        ("http://169.254.169.254./latest", "link_local_or_metadata"),
        ("http://[2001:0:4136:e378:8000:63bf:5601:5601]/", "link_local_or_metadata"),  # Teredo
        ("http://[64:ff9b:1::a9fe:a9fe]/", "link_local_or_metadata"),
        ("http://127.0.0.1:7243/api/v1/sessions/s1/terminate#", "url_query_or_fragment"),
        ("http://127.0.0.1:7243/api/v1/x?", "url_query_or_fragment"),
    ],
)
async def test_a_base_url_outside_the_egress_rule_is_a_400_naming_it(
    api: ApiFactory, database_url: str, base_url: str, rule: str
) -> None:
    client = await _daemon(api, database_url)
    response = await client.put(
        "/api/v1/llm/providers/evil",
        json={"baseUrl": base_url, "credentials": [{"alias": "a", "apiKey": "k"}]},
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "invalid_base_url" and body["rule"] == rule
    assert "is refused" in body["error"] and "s3cr3t" not in body["error"]


async def test_loopback_and_private_base_urls_stay_allowed(
    api: ApiFactory, database_url: str
) -> None:
    client = await _daemon(api, database_url)
    for base_url in ("http://127.0.0.1:8080/v1", "http://[::1]:11434/v1", "http://10.0.0.7/v1"):
        response = await client.put("/api/v1/llm/providers/local", json={"baseUrl": base_url})
        assert response.status_code == 200, (base_url, response.text)


async def test_urls_are_listed_without_user_info(api: ApiFactory, database_url: str) -> None:
    """A row stored before the rule (or the deployment's OPENAI_BASE_URL) may carry
    user-info: it is never shown."""
    client = await _daemon(
        api,
        database_url,
        model_provider="openai",
        openai_base_url="https://ops:hunter2@gateway.example/v1",
    )
    store: Store = client.app.state.store  # type: ignore[attr-defined]
    with store.session() as db:
        db.merge(
            LlmProvider(
                provider_id="legacy",
                base_url="https://user:s3cr3t@old.example/v1",
                credentials=[],
                updated_at=datetime(2026, 1, 1, tzinfo=UTC),
            )
        )
        db.commit()
    listed = await client.get("/api/v1/llm/providers")
    assert listed.status_code == 200
    urls = {p["providerId"]: p["baseUrl"] for p in listed.json()["providers"]}
    assert urls == {"settings": "https://gateway.example/v1", "legacy": "https://old.example/v1"}
    one = await client.get("/api/v1/llm/providers/legacy")
    assert one.json()["baseUrl"] == "https://old.example/v1"
    assert "s3cr3t" not in listed.text and "hunter2" not in listed.text
