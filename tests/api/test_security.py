"""The security chain, case by case (spec 002: Authentification, --allow-origin, errors)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI
from pydantic import BaseModel

from api.security import require_configured_token
from api.security.ratelimit import RateLimiter, TokenBucket, classify
from tests.conftest import ApiFactory

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
UNAUTHORIZED = {"error": "Unauthorized"}
CORS_DENIED = {"error": "Request denied by CORS policy"}
CORS_HEADERS = {
    "access-control-allow-origin",
    "access-control-allow-methods",
    "access-control-allow-headers",
    "access-control-max-age",
    "access-control-expose-headers",
}


class Echo(BaseModel):
    value: int


def _test_routes(app: FastAPI) -> None:
    router = APIRouter()

    @router.post("/_test/echo")
    async def echo(body: Echo) -> dict[str, Any]:
        return {"value": body.value}

    @router.post("/_test/strict", dependencies=[Depends(require_configured_token)])
    async def strict() -> dict[str, Any]:
        return {"ok": True}

    app.include_router(router)


def _access_control(response: httpx.Response) -> set[str]:
    return {k for k in response.headers if k.lower().startswith("access-control-")}


# -- bearer ------------------------------------------------------------------------------


async def test_no_token_configured_needs_no_header(api: ApiFactory) -> None:
    client = await api()
    assert (await client.get("/capabilities")).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer "},
        {"Authorization": "Bearer"},
        {"Authorization": TOKEN},
        {"Authorization": f"Bearer {TOKEN}x"},
    ],
    ids=["missing", "wrong", "basic", "empty", "bare-scheme", "no-scheme", "longer"],
)
async def test_bearer_failures_are_one_uniform_401(
    api: ApiFactory, headers: dict[str, str]
) -> None:
    client = await api(token=TOKEN)
    response = await client.get("/capabilities", headers=headers)
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED


async def test_bearer_scheme_is_case_blind(api: ApiFactory) -> None:
    client = await api(token=TOKEN)
    for scheme in ("Bearer", "bearer", "BEARER"):
        response = await client.get("/capabilities", headers={"Authorization": f"{scheme} {TOKEN}"})
        assert response.status_code == 200


async def test_bearer_guards_unknown_routes_and_is_checked_before_the_body(
    api: ApiFactory,
) -> None:
    client = await api(token=TOKEN, routes=_test_routes)
    assert (await client.get("/nope")).json() == UNAUTHORIZED
    response = await client.post(
        "/_test/echo", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED
    response = await client.post(
        "/_test/echo",
        content=b"{not json",
        headers={"Content-Type": "application/json", **AUTH},
    )
    assert response.status_code == 400


async def test_health_is_exempt_on_loopback(api: ApiFactory) -> None:
    client = await api(token=TOKEN)
    assert (await client.get("/health")).json() == {"status": "ok"}
    assert (await client.get("/health?deep=1")).status_code == 200
    assert (await client.get("/daemon/status")).status_code == 401


async def test_static_page_assets_load_without_the_bearer_on_loopback(api: ApiFactory) -> None:
    client = await api(token=TOKEN)
    assert (await client.get("/ui/agent-tools")).status_code == 200
    assert (await client.get("/ui/agent-tools.js")).status_code == 200
    assert (await client.post("/ui/agent-tools")).json() == UNAUTHORIZED
    assert (await client.get("/api/v1/agent-tools/session")).json() == UNAUTHORIZED
    strict = await api(token=TOKEN, require_auth=True)
    assert (await strict.get("/ui/agent-tools")).json() == UNAUTHORIZED


async def test_require_auth_removes_the_health_exemption(api: ApiFactory) -> None:
    client = await api(token=TOKEN, require_auth=True)
    response = await client.get("/health")
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED
    assert (await client.get("/health", headers=AUTH)).json() == {"status": "ok"}
    caps = (await client.get("/capabilities", headers=AUTH)).json()
    assert "require_auth" in caps["features"]


async def test_health_needs_the_bearer_on_non_loopback_binds(api: ApiFactory) -> None:
    client = await api(token=TOKEN, hostname="0.0.0.0")
    assert (await client.get("/health")).status_code == 401
    assert (await client.get("/health", headers=AUTH)).status_code == 200


# -- strict mutation guard -----------------------------------------------------------------


async def test_strict_mutation_guard_without_token(api: ApiFactory) -> None:
    client = await api(routes=_test_routes)
    response = await client.post("/_test/strict")
    assert response.status_code == 401
    body = response.json()
    assert body["code"] == "token_required"
    assert isinstance(body["error"], str) and body["error"]


async def test_strict_mutation_guard_with_token(api: ApiFactory) -> None:
    client = await api(token=TOKEN, routes=_test_routes)
    assert (await client.post("/_test/strict", headers=AUTH)).json() == {"ok": True}
    assert (await client.post("/_test/strict")).json() == UNAUTHORIZED


async def test_require_auth_short_circuits_before_the_strict_guard(api: ApiFactory) -> None:
    client = await api(token=TOKEN, require_auth=True, routes=_test_routes)
    assert (await client.post("/_test/strict")).json() == UNAUTHORIZED


# -- CORS ----------------------------------------------------------------------------------


async def test_cors_wall_by_default(api: ApiFactory) -> None:
    client = await api()
    response = await client.get("/capabilities", headers={"Origin": "http://evil.example"})
    assert response.status_code == 403
    assert response.json() == CORS_DENIED
    assert response.headers["vary"] == "Origin"
    assert _access_control(response) == set()


async def test_cors_wall_comes_before_the_bearer(api: ApiFactory) -> None:
    client = await api(token=TOKEN)
    response = await client.get("/capabilities", headers={"Origin": "http://evil.example"})
    assert response.status_code == 403
    assert response.json() == CORS_DENIED


async def test_allowlisted_origin_gets_cors_headers(api: ApiFactory) -> None:
    client = await api(token=TOKEN, allow_origin=["http://allowed.example"])
    response = await client.get(
        "/capabilities", headers={"Origin": "http://allowed.example", **AUTH}
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "http://allowed.example"
    assert response.headers["vary"] == "Origin"
    assert response.headers["access-control-allow-methods"] == "GET, POST, PATCH, DELETE, OPTIONS"
    assert response.headers["access-control-allow-headers"] == (
        "Authorization, Content-Type, X-Qwen-Client-Id, Last-Event-ID"
    )
    assert response.headers["access-control-max-age"] == "86400"
    assert response.headers["access-control-expose-headers"] == "Retry-After"
    assert "access-control-allow-credentials" not in response.headers
    assert "allow_origin" in response.json()["features"]
    # The allowlist itself is never reflected.
    assert "allowed.example" not in response.text


async def test_allowlisted_origin_still_needs_the_bearer(api: ApiFactory) -> None:
    client = await api(token=TOKEN, allow_origin=["http://allowed.example"])
    response = await client.get("/capabilities", headers={"Origin": "http://allowed.example"})
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED


async def test_preflight_of_an_allowlisted_origin_is_204(api: ApiFactory) -> None:
    client = await api(token=TOKEN, allow_origin=["http://allowed.example"])
    response = await client.options(
        "/session",
        headers={
            "Origin": "http://allowed.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    assert response.status_code == 204
    assert response.content == b""
    assert CORS_HEADERS <= set(response.headers)


async def test_preflight_of_a_foreign_origin_is_403(api: ApiFactory) -> None:
    client = await api(token=TOKEN, allow_origin=["http://allowed.example"])
    response = await client.options(
        "/session",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert response.status_code == 403
    assert response.json() == CORS_DENIED
    assert response.headers["vary"] == "Origin"
    assert _access_control(response) == set()


async def test_star_echoes_the_origin_verbatim_but_refuses_null(api: ApiFactory) -> None:
    client = await api(token=TOKEN, allow_origin=["*"])
    response = await client.get("/capabilities", headers={"Origin": "https://Any.Example", **AUTH})
    assert response.headers["access-control-allow-origin"] == "https://Any.Example"
    response = await client.get("/capabilities", headers={"Origin": "null", **AUTH})
    assert response.status_code == 403
    assert response.json() == CORS_DENIED


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:4170",
        "http://localhost:4170",
        "http://[::1]:4170",
        "http://host.docker.internal:4170",
    ],
)
async def test_same_origin_loopback_is_stripped_before_cors(api: ApiFactory, origin: str) -> None:
    client = await api()
    response = await client.get("/capabilities", headers={"Origin": origin})
    assert response.status_code == 200
    assert _access_control(response) == set()


async def test_loopback_origin_on_another_port_is_foreign(api: ApiFactory) -> None:
    client = await api()
    response = await client.get("/capabilities", headers={"Origin": "http://127.0.0.1:9999"})
    assert response.status_code == 403


# -- Host allowlist ------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "evil.example:4170", "127.0.0.1:4171"])
async def test_foreign_host_is_403(api: ApiFactory, host: str) -> None:
    client = await api(token=TOKEN)
    response = await client.get("/health", headers={"Host": host})
    assert response.status_code == 403
    assert response.json()["code"] == "host_not_allowed"
    # Even with the right bearer: the rebinding guard comes first.
    assert (await client.get("/capabilities", headers={"Host": host, **AUTH})).status_code == 403


@pytest.mark.parametrize("host", ["127.0.0.1:4170", "localhost:4170", "[::1]:4170"])
async def test_loopback_hosts_pass(api: ApiFactory, host: str) -> None:
    client = await api()
    assert (await client.get("/health", headers={"Host": host})).status_code == 200


async def test_extra_allowed_hosts(api: ApiFactory) -> None:
    client = await api(allowed_hosts=["agentrt.internal:4170"])
    response = await client.get("/health", headers={"Host": "agentrt.internal:4170"})
    assert response.status_code == 200


# -- bodies ----------------------------------------------------------------------------------


async def test_malformed_json_is_400(api: ApiFactory) -> None:
    client = await api(routes=_test_routes)
    response = await client.post(
        "/_test/echo", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json() == {"error": "Invalid JSON in request body"}


async def test_wrong_shape_is_400_with_a_clear_error(api: ApiFactory) -> None:
    client = await api(routes=_test_routes)
    response = await client.post("/_test/echo", json={"value": "nope"})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"
    assert "value" in response.json()["error"]


async def test_body_over_10_mb_is_413_json(api: ApiFactory) -> None:
    client = await api(routes=_test_routes)
    big = b'{"value": 1, "pad": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    response = await client.post(
        "/_test/echo", content=big, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"


async def test_chunked_body_over_10_mb_is_413_json(api: ApiFactory) -> None:
    client = await api(routes=_test_routes)

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"value": 1, "pad": "'
        for _ in range(11):
            yield b"x" * (1024 * 1024)
        yield b'"}'

    response = await client.post(
        "/_test/echo", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"


async def test_chunked_body_under_the_limit_reaches_the_route(api: ApiFactory) -> None:
    client = await api(routes=_test_routes)

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"val'
        yield b'ue": 7}'

    response = await client.post(
        "/_test/echo", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert response.json() == {"value": 7}


async def test_unknown_route_is_a_json_404(api: ApiFactory) -> None:
    client = await api()
    response = await client.get("/nope")
    assert response.status_code == 404
    assert response.json() == {"error": "Cannot GET /nope"}


# -- rate limiting ---------------------------------------------------------------------------


async def _rate_limited(api: ApiFactory, **overrides: Any) -> httpx.AsyncClient:
    """An app with rate limiting on, on a stopped clock: its buckets never refill.

    These tests count requests up to a tier's limit; on a loaded machine the read tier
    (120 a minute, a token every 0.5 s) would refill one before the limit is reached.
    """
    client = await api(rate_limit=True, **overrides)
    limiter: RateLimiter = client.app.state.rate_limiter  # type: ignore[attr-defined]
    limiter.clock = lambda: 1000.0
    return client


async def test_rate_limit_is_off_by_default(api: ApiFactory) -> None:
    client = await api()
    for _ in range(130):
        assert (await client.get("/capabilities")).status_code == 200
    assert "rate_limit" not in (await client.get("/capabilities")).json()["features"]


async def test_read_tier_429_with_retry_after(api: ApiFactory) -> None:
    client = await _rate_limited(api)
    statuses = [(await client.get("/capabilities")).status_code for _ in range(120)]
    assert statuses == [200] * 120
    response = await client.get("/capabilities")
    assert response.status_code == 429
    body = response.json()
    assert body["code"] == "rate_limit_exceeded"
    assert body["tier"] == "read"
    assert body["limit"] == 120
    assert body["retryAfterMs"] > 0
    assert int(response.headers["retry-after"]) >= 1
    status = (await client.get("/daemon/status", headers={"X-Qwen-Client-Id": "other"})).json()
    assert status["runtime"]["rateLimit"] == {
        "enabled": True,
        "rejectedSinceStart": {"prompt": 0, "mutation": 0, "read": 1},
    }
    assert "rate_limit_hits" in {issue["code"] for issue in status["issues"]}


async def test_prompt_and_mutation_tiers(api: ApiFactory) -> None:
    client = await _rate_limited(api)
    prompts = [(await client.post("/session/s1/prompt")).status_code for _ in range(11)]
    assert 429 not in prompts[:10] and prompts[10] == 429
    mutations = [(await client.post("/session")).status_code for _ in range(31)]
    assert 429 not in mutations[:30] and mutations[30] == 429
    last = await client.post("/session")
    assert last.json()["tier"] == "mutation"


async def test_exempt_requests(api: ApiFactory) -> None:
    client = await _rate_limited(api, allow_origin=["http://allowed.example"], token=TOKEN)
    for _ in range(130):
        assert (await client.get("/health")).status_code == 200
        assert (await client.get("/session/s1/events", headers=AUTH)).status_code != 429
        preflight = await client.options(
            "/session",
            headers={"Origin": "http://allowed.example", "Access-Control-Request-Method": "POST"},
        )
        assert preflight.status_code == 204


async def test_buckets_are_per_client_id_on_loopback(api: ApiFactory) -> None:
    client = await _rate_limited(api)
    for _ in range(120):
        await client.get("/capabilities", headers={"X-Qwen-Client-Id": "a"})
    assert (await client.get("/capabilities", headers={"X-Qwen-Client-Id": "a"})).status_code == 429
    assert (await client.get("/capabilities", headers={"X-Qwen-Client-Id": "b"})).status_code == 200


async def test_buckets_are_per_ip_off_loopback(api: ApiFactory) -> None:
    client = await _rate_limited(api, hostname="0.0.0.0", token=TOKEN)
    for i in range(120):
        await client.get("/capabilities", headers={"X-Qwen-Client-Id": f"c{i}", **AUTH})
    response = await client.get("/capabilities", headers={"X-Qwen-Client-Id": "new", **AUTH})
    assert response.status_code == 429


async def test_unauthenticated_requests_get_401_not_429(api: ApiFactory) -> None:
    """The tier buckets come after the bearer: they never see a refused request (failed
    bearer checks have a bound of their own, tests/api/test_bearer_failures.py)."""
    client = await _rate_limited(api, token=TOKEN, auth_failures_per_minute=1000)
    for _ in range(125):
        assert (await client.get("/capabilities")).status_code == 401


@pytest.mark.parametrize(
    ("method", "path", "tier"),
    [
        ("GET", "/health", None),
        ("OPTIONS", "/session", None),
        ("GET", "/session/abc/events", None),
        ("GET", "/capabilities", "read"),
        ("GET", "/api/v1/agent-tools/events", "read"),
        ("POST", "/session/abc/prompt", "prompt"),
        ("POST", "/session", "mutation"),
        ("DELETE", "/session/abc", "mutation"),
        ("PATCH", "/session/abc/metadata", "mutation"),
    ],
)
def test_tier_classification(method: str, path: str, tier: str | None) -> None:
    assert classify(method, path) == tier


def test_token_bucket_refills_continuously() -> None:
    bucket = TokenBucket(capacity=2, period=60)
    assert bucket.take(100.0) == 0
    assert bucket.take(100.0) == 0
    assert bucket.take(100.0) == pytest.approx(30.0)
    assert bucket.take(115.0) == pytest.approx(15.0)
    assert bucket.take(130.0) == 0


def test_rate_limiter_counts_rejections_per_tier() -> None:
    now = [0.0]
    limiter = RateLimiter({"prompt": 1, "mutation": 1, "read": 1}, clock=lambda: now[0])
    assert limiter.check("c", "prompt") == 0
    assert limiter.check("c", "prompt") > 0
    assert limiter.check("c", "read") == 0
    assert limiter.rejected == {"prompt": 1, "mutation": 0, "read": 0}
