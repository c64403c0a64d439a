"""Model routing over HTTP (issue 11): providers, presets, site bindings, prices and the
attempt records, live (no restart), behind the strict mutation gate, never showing a key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from genai_prices import __version__ as PRICES_VERSION

from runtime.llm.contracts import ATTEMPT_START_TO_CLOSE, SITE_PARENTS, AttemptOutcome
from runtime.llm.models import LlmCallAttempt
from runtime.store import Store
from tests.conftest import ApiFactory

TOKEN = "llm-config-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SECRET = "sk-never-shown-0123456789"


async def _daemon(api: ApiFactory, database_url: str, **overrides: Any) -> httpx.AsyncClient:
    client = await api(token=TOKEN, database_url=database_url, **overrides)
    client.headers.update(AUTH)
    return client


def _store(client: httpx.AsyncClient) -> Store:
    store: Store = client.app.state.store  # type: ignore[attr-defined]
    return store


async def _put(client: httpx.AsyncClient, path: str, body: Any) -> httpx.Response:
    return await client.put(f"/api/v1/llm{path}", json=body)


async def _two_providers(client: httpx.AsyncClient) -> None:
    alpha = await _put(
        client,
        "/providers/alpha",
        {
            "baseUrl": "http://127.0.0.1:9001/v1",
            "credentials": [
                {"alias": "primary", "apiKey": SECRET},
                {"alias": "backup", "apiKeyEnv": "ALPHA_BACKUP_API_KEY"},
            ],
        },
    )
    assert alpha.status_code == 200, alpha.text
    beta = await _put(
        client,
        "/providers/beta",
        {
            "baseUrl": "https://beta.example/v1",
            "credentials": [{"alias": "oauth", "deviceFlow": "qwen-oauth"}],
        },
    )
    assert beta.status_code == 200, beta.text


async def test_providers_show_aliases_and_kinds_never_a_key(
    api: ApiFactory, database_url: str
) -> None:
    client = await _daemon(
        api,
        database_url,
        model_provider="openai",
        openai_api_key="sk-settings-secret",
        openai_model="gpt-4o-mini",
    )
    await _two_providers(client)
    listed = await client.get("/api/v1/llm/providers")
    assert listed.status_code == 200
    providers = {p["providerId"]: p for p in listed.json()["providers"]}
    assert list(providers) == ["settings", "alpha", "beta"]
    assert providers["settings"]["builtIn"] is True
    assert providers["settings"]["kind"] == "openai"
    assert providers["settings"]["credentials"] == [
        {"alias": "env", "kind": "apiKey", "apiKeyEnv": None, "deviceFlow": None}
    ]
    assert providers["alpha"]["baseUrl"] == "http://127.0.0.1:9001/v1"
    assert providers["alpha"]["credentials"] == [
        {"alias": "primary", "kind": "apiKey", "apiKeyEnv": None, "deviceFlow": None},
        {
            "alias": "backup",
            "kind": "apiKeyEnv",
            "apiKeyEnv": "ALPHA_BACKUP_API_KEY",
            "deviceFlow": None,
        },
    ]
    assert providers["beta"]["credentials"][0]["deviceFlow"] == "qwen-oauth"
    # No GET of any route shows a key.
    for path in ("/providers", "/presets", "/sites", "/attempts", "/prices/gpt-4o-mini"):
        body = (await client.get(f"/api/v1/llm{path}")).text
        assert SECRET not in body and "sk-settings-secret" not in body, path
    assert SECRET not in (await client.get("/capabilities")).text
    # Replacing a provider replaces its credentials.
    again = await _put(
        client, "/providers/alpha", {"baseUrl": "https://a.example", "credentials": []}
    )
    assert again.json()["credentials"] == [] and again.json()["baseUrl"] == "https://a.example"


async def test_the_scripted_settings_provider_has_no_url_and_no_credential(
    api: ApiFactory, database_url: str
) -> None:
    client = await _daemon(api, database_url)
    providers = (await client.get("/api/v1/llm/providers")).json()["providers"]
    assert providers == [
        {
            "providerId": "settings",
            "kind": "scripted",
            "baseUrl": None,
            "credentials": [],
            "builtIn": True,
            "updatedAt": None,
        }
    ]
    presets = (await client.get("/api/v1/llm/presets")).json()["presets"]
    assert presets == [
        {
            "presetId": "settings",
            "model": "scripted",
            "provider": "settings",
            "overlay": None,
            "fallback": [],
            "builtIn": True,
            "updatedAt": None,
        }
    ]


BAD_PROVIDERS: list[tuple[str, Any, str]] = [
    ("/providers/settings", {"baseUrl": "http://x/v1"}, "reserved_id"),
    ("/providers/p", {"baseUrl": "file:///etc/passwd"}, "invalid_base_url"),
    ("/providers/p", {"baseUrl": "not a url"}, "invalid_base_url"),
    ("/providers/p", {"credentials": []}, "invalid_request"),
    ("/providers/p", {"baseUrl": "http://x", "extra": 1}, "invalid_request"),
    ("/providers/p", {"baseUrl": "http://x", "credentials": [{"alias": "a"}]}, "invalid_request"),
    (
        "/providers/p",
        {"baseUrl": "http://x", "credentials": [{"alias": "a", "apiKey": "k", "apiKeyEnv": "K"}]},
        "invalid_request",
    ),
    (
        "/providers/p",
        {"baseUrl": "http://x", "credentials": [{"alias": "a", "deviceFlow": "nope"}]},
        "unknown_device_flow_provider",
    ),
    (
        "/providers/p",
        {"baseUrl": "http://x", "credentials": [{"alias": "a", "apiKeyEnv": "A B"}]},
        "invalid_credentials",
    ),
    (
        "/providers/p",
        {
            "baseUrl": "http://x",
            "credentials": [{"alias": "a", "apiKey": "k"}, {"alias": "a", "apiKey": "j"}],
        },
        "invalid_credentials",
    ),
    ("/providers/bad%20id", {"baseUrl": "http://x"}, "invalid_request"),
    ("/presets/settings", {"model": "m", "provider": "settings"}, "reserved_id"),
    ("/presets/p", {"model": "m", "provider": "nope"}, "unknown_provider"),
    (
        "/presets/p",
        {"model": "m", "provider": "settings", "fallback": [{"model": "m", "provider": "nope"}]},
        "unknown_provider",
    ),
    ("/presets/p", {"model": "", "provider": "settings"}, "invalid_request"),
    (
        "/presets/p",
        {"model": "m", "provider": "settings", "overlay": {"temperature": 9}},
        "invalid_request",
    ),
    ("/sites/Default/preset", {"presetId": "nope"}, "unknown_preset"),
    ("/sites/Default/preset", {}, "invalid_request"),
    ("/prices/gpt-4o", {"inputPerMTokUsd": -1, "outputPerMTokUsd": 1}, "invalid_request"),
    ("/prices/gpt-4o", {"inputPerMTokUsd": "1", "outputPerMTokUsd": 1}, "invalid_request"),
    ("/prices/gpt-4o", {"inputPerMTokUsd": 1}, "invalid_request"),
]


async def test_bad_input_is_a_clear_400(api: ApiFactory, database_url: str) -> None:
    client = await _daemon(api, database_url)
    for path, body, code in BAD_PROVIDERS:
        response = await _put(client, path, body)
        assert response.status_code == 400, (path, body, response.text)
        assert response.json()["code"] == code, (path, body, response.text)
        assert response.json()["error"]
    # Not JSON, and non-standard JSON, are the house's invalid-JSON answer.
    raw = await client.put(
        "/api/v1/llm/prices/m",
        content=b'{"inputPerMTokUsd": NaN, "outputPerMTokUsd": 1}',
        headers={"Content-Type": "application/json"},
    )
    assert raw.status_code == 400 and raw.json() == {"error": "Invalid JSON in request body"}
    # Nothing was stored by the refusals.
    assert [
        p["providerId"] for p in (await client.get("/api/v1/llm/providers")).json()["providers"]
    ] == ["settings"]
    assert len((await client.get("/api/v1/llm/presets")).json()["presets"]) == 1


async def test_unknown_sites_are_404(api: ApiFactory, database_url: str) -> None:
    client = await _daemon(api, database_url)
    for method in ("PUT", "DELETE"):
        response = await client.request(
            method,
            "/api/v1/llm/sites/Agent:Nope/preset",
            json={"presetId": "settings"} if method == "PUT" else None,
        )
        assert response.status_code == 404, response.text
        body = response.json()
        assert body["code"] == "unknown_site"
        assert body["siteId"] == "Agent:Nope"
        assert "Session:Default" in body["allowed"]


async def test_live_rebinding_is_visible_at_get_sites(api: ApiFactory, database_url: str) -> None:
    client = await _daemon(api, database_url)
    await _two_providers(client)
    sites = (await client.get("/api/v1/llm/sites")).json()["sites"]
    assert [s["siteId"] for s in sites] == list(SITE_PARENTS)
    assert all(
        s["resolvedPresetId"] == "settings" and s["resolvedFrom"] == "Default" for s in sites
    )
    assert all(s["presetId"] is None for s in sites)
    preset = await _put(
        client,
        "/presets/fast",
        {
            "model": "openai/gpt-4o",
            "provider": "alpha",
            "overlay": {
                "systemPromptSuffix": "Be brief.",
                "temperature": 0.2,
                "maxOutputTokens": 256,
            },
            "fallback": [{"model": "qwen3-coder", "provider": "beta"}],
        },
    )
    assert preset.status_code == 200, preset.text
    assert preset.json()["overlay"] == {
        "systemPromptSuffix": "Be brief.",
        "temperature": 0.2,
        "maxOutputTokens": 256,
    }
    bound = await _put(client, "/sites/Agent:Default/preset", {"presetId": "fast"})
    assert bound.status_code == 200, bound.text
    assert bound.json() == {
        "siteId": "Agent:Default",
        "parent": "Default",
        "presetId": "fast",
        "resolvedPresetId": "fast",
        "resolvedFrom": "Agent:Default",
    }
    by_id = {s["siteId"]: s for s in (await client.get("/api/v1/llm/sites")).json()["sites"]}
    assert by_id["Agent:Planning"] == {
        "siteId": "Agent:Planning",
        "parent": "Agent:Default",
        "presetId": None,
        "resolvedPresetId": "fast",
        "resolvedFrom": "Agent:Default",
    }
    assert by_id["Session:Default"]["resolvedPresetId"] == "settings"
    # /capabilities names the Session:Default resolution: settings until it is bound.
    caps = (await client.get("/capabilities")).json()["modelServices"]
    assert caps == [
        {"id": "scripted", "provider": "scripted", "current": True, "modelId": "scripted"}
    ]
    assert (await _put(client, "/sites/Default/preset", {"presetId": "fast"})).status_code == 200
    caps = (await client.get("/capabilities")).json()["modelServices"]
    assert caps == [
        {
            "id": "fast",
            "provider": "alpha",
            "current": True,
            "modelId": "openai/gpt-4o",
            "site": "Session:Default",
            "presetId": "fast",
            "fallback": [{"provider": "beta", "modelId": "qwen3-coder"}],
        }
    ]
    # Detach: the site inherits again; detaching twice is fine.
    for _ in range(2):
        detached = await client.delete("/api/v1/llm/sites/Agent:Default/preset")
        assert detached.status_code == 200
        assert detached.json()["presetId"] is None
        assert detached.json()["resolvedFrom"] == "Default"
        assert detached.json()["resolvedPresetId"] == "fast"
    assert (await client.delete("/api/v1/llm/sites/Default/preset")).json()["resolvedPresetId"] == (
        "settings"
    )


async def test_prices_override_the_bundled_table(api: ApiFactory, database_url: str) -> None:
    client = await _daemon(api, database_url)
    bundled = await client.get("/api/v1/llm/prices/gpt-4o-mini")
    assert bundled.status_code == 200
    assert bundled.json()["source"] == "genai-prices"
    assert bundled.json()["version"] == f"genai-prices {PRICES_VERSION}"
    assert bundled.json()["inputPerMTokUsd"] > 0
    unknown = await client.get("/api/v1/llm/prices/qwen/qwen3:beta")
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "unknown_price"
    assert unknown.json()["version"] == "unknown"
    # Model names hold '/' and ':'.
    put = await _put(
        client,
        "/prices/qwen/qwen3:beta",
        {"inputPerMTokUsd": 0.5, "outputPerMTokUsd": 1.5, "cachedInputPerMTokUsd": 0.1},
    )
    assert put.status_code == 200, put.text
    body = put.json()
    assert body["model"] == "qwen/qwen3:beta"
    assert body["source"] == "override"
    assert body["version"].startswith("override:")
    shown = (await client.get("/api/v1/llm/prices/qwen/qwen3:beta")).json()
    assert shown == body
    # An override of a bundled model wins, and dropping it brings the bundle back.
    await _put(client, "/prices/gpt-4o-mini", {"inputPerMTokUsd": 1, "outputPerMTokUsd": 2})
    assert (await client.get("/api/v1/llm/prices/gpt-4o-mini")).json()["inputPerMTokUsd"] == 1.0
    assert (await client.delete("/api/v1/llm/prices/gpt-4o-mini")).status_code == 204
    assert (await client.get("/api/v1/llm/prices/gpt-4o-mini")).json() == bundled.json()
    gone = await client.delete("/api/v1/llm/prices/gpt-4o-mini")
    assert gone.status_code == 404 and gone.json()["code"] == "unknown_price_override"


def _attempt(
    ordinal: int, call: str, kind: str, owner: str, at: datetime, **values: Any
) -> LlmCallAttempt:
    row = LlmCallAttempt(
        attempt_id=f"{call}/a{ordinal}",
        call_id=call,
        ordinal=ordinal,
        tenant="t",
        owner_kind=kind,
        owner_id=owner,
        site="Session:Default",
        preset_id="fast",
        fallback_step=0,
        provider="alpha",
        credential_alias="primary",
        requested_model="gpt-4o",
        outcome="ok",
        created_at=at,
    )
    for key, value in values.items():
        setattr(row, key, value)
    return row


async def test_attempts_in_order_with_their_owner(api: ApiFactory, database_url: str) -> None:
    client = await _daemon(api, database_url)
    t0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    rows = [
        _attempt(0, "c1", "session", "s1", t0, outcome="rate_limited", http_status=429),
        _attempt(
            1,
            "c1",
            "session",
            "s1",
            t0 + timedelta(seconds=1),
            fallback_step=1,
            provider="beta",
            credential_alias=None,
            served_model="gpt-4o-2024-08-06",
            tokens_in=100,
            tokens_out=20,
            cost_usd=0.00045,
            price_version="genai-prices 0.2.3",
            price_source="requested",
            usage_source="estimated",
            duration_ms=830,
            http_status=200,
        ),
        _attempt(0, "c2", "turn", "turn-1", t0 + timedelta(seconds=2), site="Turn:Model"),
        _attempt(0, "c3", "agent", "agent-1", t0 + timedelta(seconds=3), site="Agent:Planning"),
    ]
    store = _store(client)
    with store.session() as db:
        db.add_all(rows)
        db.commit()
    session = (await client.get("/api/v1/llm/attempts?sessionId=s1")).json()["attempts"]
    assert [a["attemptId"] for a in session] == ["c1/a0", "c1/a1"]
    assert session[1] == {
        "attemptId": "c1/a1",
        "site": "Session:Default",
        "presetId": "fast",
        "fallbackStep": 1,
        "provider": "beta",
        "credentialAlias": None,
        "requestedModel": "gpt-4o",
        "servedModel": "gpt-4o-2024-08-06",
        "outcome": "ok",
        "httpStatus": 200,
        "tokensIn": 100,
        "tokensOut": 20,
        "costUsd": 0.00045,
        "reservedUsd": 0.0,
        "priceVersion": "genai-prices 0.2.3",
        "priceSource": "requested",
        "usageSource": "estimated",
        "durationMs": 830,
        "createdAt": "2026-11-30T12:00:01.000Z",
        "owner": {"kind": "session", "id": "s1"},
    }
    assert session[0]["outcome"] == "rate_limited" and session[0]["httpStatus"] == 429
    # A failed attempt (or one recorded before they were kept) has neither source.
    assert (session[0]["priceSource"], session[0]["usageSource"]) == (None, None)
    turn = (await client.get("/api/v1/llm/attempts?turnId=turn-1")).json()["attempts"]
    assert [(a["attemptId"], a["owner"]) for a in turn] == [
        ("c2/a0", {"kind": "turn", "id": "turn-1"})
    ]
    agent = (await client.get("/api/v1/llm/attempts?agentId=agent-1")).json()["attempts"]
    assert [a["site"] for a in agent] == ["Agent:Planning"]
    every = (await client.get("/api/v1/llm/attempts")).json()["attempts"]
    assert [a["attemptId"] for a in every] == ["c1/a0", "c1/a1", "c2/a0", "c3/a0"]
    # The latest `limit`, still oldest first.
    latest = (await client.get("/api/v1/llm/attempts?limit=2")).json()["attempts"]
    assert [a["attemptId"] for a in latest] == ["c2/a0", "c3/a0"]
    by_site = (await client.get("/api/v1/llm/attempts?site=Turn:Model")).json()["attempts"]
    assert [a["attemptId"] for a in by_site] == ["c2/a0"]
    assert (await client.get("/api/v1/llm/attempts?sessionId=nobody")).json() == {"attempts": []}
    for bad in ("limit=0", "limit=100000", "limit=x", "sessionId="):
        response = await client.get(f"/api/v1/llm/attempts?{bad}")
        assert response.status_code == 400, (bad, response.text)
        assert response.json()["code"] == "invalid_request"


async def test_attempt_filters_combine_with_and(api: ApiFactory, database_url: str) -> None:
    client = await _daemon(api, database_url)
    t0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    rows = [
        _attempt(0, "c1", "session", "s1", t0),
        _attempt(1, "c1", "session", "s1", t0 + timedelta(seconds=1)),
        _attempt(0, "c2", "session", "s1", t0 + timedelta(seconds=2), site="Turn:Model"),
        _attempt(0, "c3", "session", "s2", t0 + timedelta(seconds=3)),
        _attempt(0, "c4", "turn", "turn-1", t0 + timedelta(seconds=4), site="Turn:Model"),
    ]
    store = _store(client)
    with store.session() as db:
        db.add_all(rows)
        db.commit()

    async def ids(query: str) -> list[str]:
        response = await client.get(f"/api/v1/llm/attempts?{query}")
        assert response.status_code == 200, response.text
        return [a["attemptId"] for a in response.json()["attempts"]]

    assert await ids("sessionId=s1&site=Session:Default") == ["c1/a0", "c1/a1"]
    assert await ids("sessionId=s1&site=Turn:Model") == ["c2/a0"]
    assert await ids("sessionId=s1&site=Session:Default&limit=1") == ["c1/a1"]
    assert await ids("turnId=turn-1&site=Turn:Model") == ["c4/a0"]
    assert await ids("site=Turn:Model") == ["c2/a0", "c4/a0"]
    # Each attempt has one owner: two owners together match only what both own.
    assert await ids("sessionId=s1&turnId=turn-1") == []


async def test_attempts_on_the_wire_have_one_of_six_outcomes(
    api: ApiFactory, database_url: str
) -> None:
    """A running attempt is not listed yet; one whose worker died is a timeout."""
    client = await _daemon(api, database_url)
    now = datetime.now(UTC)
    long_ago = now - ATTEMPT_START_TO_CLOSE - timedelta(minutes=1)
    rows = [
        _attempt(0, "c1", "session", "s1", long_ago, outcome="in_flight"),
        _attempt(1, "c1", "session", "s1", long_ago, outcome="ok"),
        _attempt(0, "c2", "session", "s1", now, outcome="in_flight"),
    ]
    store = _store(client)
    with store.session() as db:
        db.add_all(rows)
        db.commit()
    listed = (await client.get("/api/v1/llm/attempts?sessionId=s1")).json()["attempts"]
    assert [(a["attemptId"], a["outcome"]) for a in listed] == [
        ("c1/a0", "timeout"),
        ("c1/a1", "ok"),
    ]
    schema = client.app.openapi()  # type: ignore[attr-defined]
    schemas = schema["components"]["schemas"]
    outcome = schemas["AttemptOut"]["properties"]["outcome"]
    if "$ref" in outcome:
        outcome = schemas[outcome["$ref"].rsplit("/", 1)[-1]]
    assert sorted(outcome["enum"]) == sorted(o.value for o in AttemptOutcome)


async def test_mutations_need_a_configured_token(api: ApiFactory, database_url: str) -> None:
    client = await api(database_url=database_url)
    for method, path, body in [
        ("PUT", "/providers/p", {"baseUrl": "http://x"}),
        ("PUT", "/presets/p", {"model": "m", "provider": "settings"}),
        ("PUT", "/sites/Default/preset", {"presetId": "settings"}),
        ("DELETE", "/sites/Default/preset", None),
        ("PUT", "/prices/m", {"inputPerMTokUsd": 1, "outputPerMTokUsd": 1}),
        ("DELETE", "/prices/m", None),
    ]:
        response = await client.request(method, f"/api/v1/llm{path}", json=body)
        assert response.status_code == 401, (method, path, response.text)
        assert response.json()["code"] == "token_required"
    # Reads stay open on a loopback daemon without a token.
    assert (await client.get("/api/v1/llm/sites")).status_code == 200
    assert len((await client.get("/api/v1/llm/providers")).json()["providers"]) == 1
    # A configured token gates with the bearer: a wrong one is 401.
    gated = await api(token=TOKEN, database_url=database_url)
    wrong = await gated.put(
        "/api/v1/llm/sites/Default/preset",
        json={"presetId": "settings"},
        headers={"Authorization": "Bearer nope"},
    )
    assert wrong.status_code == 401


async def test_one_provider_or_preset_and_deleting_what_is_unused(
    api: ApiFactory, database_url: str
) -> None:
    client = await _daemon(api, database_url)
    await _two_providers(client)
    one = await client.get("/api/v1/llm/providers/alpha")
    assert one.status_code == 200 and one.json()["providerId"] == "alpha"
    assert SECRET not in one.text
    assert (await client.get("/api/v1/llm/providers/settings")).json()["builtIn"] is True
    missing = await client.get("/api/v1/llm/providers/nope")
    assert missing.status_code == 404 and missing.json()["code"] == "unknown_provider"
    preset = {
        "model": "m",
        "provider": "settings",
        "fallback": [{"model": "m2", "provider": "beta"}],
    }
    assert (await _put(client, "/presets/p", preset)).status_code == 200
    assert (await client.get("/api/v1/llm/presets/p")).json()["fallback"] == [
        {"model": "m2", "provider": "beta"}
    ]
    assert (await client.get("/api/v1/llm/presets/settings")).json()["builtIn"] is True
    assert (await client.get("/api/v1/llm/presets/nope")).json()["code"] == "unknown_preset"
    # In use: a preset names beta (in its fallback); a site is bound to p.
    in_use = await client.delete("/api/v1/llm/providers/beta")
    assert in_use.status_code == 409
    assert in_use.json()["code"] == "provider_in_use" and in_use.json()["presets"] == ["p"]
    await _put(client, "/sites/Turn:Model/preset", {"presetId": "p"})
    bound = await client.delete("/api/v1/llm/presets/p")
    assert bound.status_code == 409
    assert bound.json()["code"] == "preset_in_use" and bound.json()["sites"] == ["Turn:Model"]
    await client.delete("/api/v1/llm/sites/Turn:Model/preset")
    assert (await client.delete("/api/v1/llm/presets/p")).status_code == 204
    assert (await client.delete("/api/v1/llm/presets/p")).status_code == 404
    assert (await client.delete("/api/v1/llm/providers/beta")).status_code == 204
    assert (await client.delete("/api/v1/llm/providers/beta")).status_code == 404
    for path in ("/providers/settings", "/presets/settings"):
        reserved = await client.delete(f"/api/v1/llm{path}")
        assert reserved.status_code == 400 and reserved.json()["code"] == "reserved_id"
    gate = await api(database_url=database_url)
    for path in ("/providers/alpha", "/presets/p"):
        assert (await gate.delete(f"/api/v1/llm{path}")).json()["code"] == "token_required"
