"""Failed bearer checks are rate-limited per network address (issue 18, item 8).

A wrong token used to cost nothing but a 401, so a token could be guessed at line speed.
Now each address has `auth_failures_per_minute` failures (a token bucket); past them it is
answered 429 `rate_limit_exceeded` with `Retry-After`, the right token included (an answer
must not tell a guess from the token), while other addresses are not concerned. Every
loopback address is one address, all addresses together have ten times the bound, and
only a wrong bearer counts: a request with no `Authorization` header (a cross-site page's)
does not, so a web page cannot lock the operator out.
"""

from __future__ import annotations

import httpx

from api.security.bearer import AUTH_GLOBAL_TIER, AUTH_TIER, UNAUTHORIZED
from api.security.ratelimit import RateLimiter
from tests.conftest import ApiFactory

TOKEN = "correct-horse-battery-staple"
RIGHT = {"Authorization": f"Bearer {TOKEN}"}
LIMIT = 10


def _wrong(n: int) -> dict[str, str]:
    return {"Authorization": f"Bearer guess-{n}"}


def _from(client: httpx.AsyncClient, address: str) -> httpx.AsyncClient:
    """Another client of the same app, connecting from `address`."""
    app = client.app  # type: ignore[attr-defined]
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=(address, 50_000)),
        base_url=str(client.base_url),
    )


def _stop_clock(client: httpx.AsyncClient) -> list[float]:
    """The failure limiter's clock, stopped (a loaded machine must not refill it)."""
    now = [1000.0]
    limiter: RateLimiter = client.app.state.auth_failure_limiter  # type: ignore[attr-defined]
    limiter.clock = lambda: now[0]
    return now


async def test_guessing_is_answered_429_after_the_bound(api: ApiFactory) -> None:
    client = await api(token=TOKEN)
    now = _stop_clock(client)
    for n in range(LIMIT):
        response = await client.get("/capabilities", headers=_wrong(n))
        assert response.status_code == 401 and response.json() == UNAUTHORIZED
    refused = await client.get("/capabilities", headers=_wrong(LIMIT))
    assert refused.status_code == 429
    body = refused.json()
    assert body["code"] == "rate_limit_exceeded"
    assert body["tier"] == AUTH_TIER and body["limit"] == LIMIT
    assert int(refused.headers["retry-after"]) == 6  # one failure refills every 6 s
    # The right token from the same address waits too: 429 never tells a guess from it.
    assert (await client.get("/capabilities", headers=RIGHT)).status_code == 429
    assert (await client.post("/session", headers=RIGHT, json={})).status_code == 429
    # Refused the same way without a header (while the address is blocked).
    assert (await client.get("/capabilities")).status_code == 429
    # What needs no bearer on loopback stays open.
    assert (await client.get("/health")).status_code == 200

    # Other addresses are not concerned.
    async with _from(client, "10.1.2.3") as other:
        assert (await other.get("/capabilities", headers=RIGHT)).status_code == 200
        assert (await other.get("/capabilities", headers=_wrong(0))).status_code == 401

    # The bucket refills: one more guess after 6 s, and the right token works again.
    now[0] += 6
    assert (await client.get("/capabilities", headers=_wrong(99))).status_code == 401
    assert (await client.get("/capabilities", headers=RIGHT)).status_code == 429
    now[0] += 6
    assert (await client.get("/capabilities", headers=RIGHT)).status_code == 200


async def test_successes_cost_nothing(api: ApiFactory) -> None:
    client = await api(token=TOKEN, auth_failures_per_minute=2)
    _stop_clock(client)
    for _ in range(20):
        assert (await client.get("/capabilities", headers=RIGHT)).status_code == 200
    assert (await client.get("/capabilities", headers=_wrong(0))).status_code == 401
    assert (await client.get("/capabilities", headers=RIGHT)).status_code == 200
    assert (await client.get("/capabilities", headers=_wrong(1))).status_code == 401
    assert (await client.get("/capabilities", headers=RIGHT)).status_code == 429


async def test_an_ipv6_host_is_counted_by_its_64(api: ApiFactory) -> None:
    """Walking the addresses of one's own /64 does not buy fresh guesses."""
    client = await api(token=TOKEN, auth_failures_per_minute=2)
    _stop_clock(client)
    for n, address in enumerate(("2001:db8:0:1::1", "2001:db8:0:1::2")):
        async with _from(client, address) as guesser:
            assert (await guesser.get("/capabilities", headers=_wrong(n))).status_code == 401
    async with _from(client, "2001:db8:0:1::3") as guesser:
        assert (await guesser.get("/capabilities", headers=_wrong(3))).status_code == 429
    async with _from(client, "2001:db8:0:2::1") as neighbour:
        assert (await neighbour.get("/capabilities", headers=RIGHT)).status_code == 200


async def test_a_request_without_a_bearer_is_no_failure(api: ApiFactory) -> None:
    """A cross-site `<img>` (or form, or link) sends no `Authorization`: however many a web
    page fires, the operator is not locked out."""
    client = await api(token=TOKEN, auth_failures_per_minute=2)
    _stop_clock(client)
    for _ in range(20):
        assert (await client.get("/capabilities")).status_code == 401
        assert (await client.post("/session", json={})).status_code == 401
        # Not a bearer at all: no guess at the token either.
        basic = {"Authorization": "Basic dXNlcjpwYXNz"}
        assert (await client.get("/capabilities", headers=basic)).status_code == 401
    assert (await client.get("/capabilities", headers=RIGHT)).status_code == 200


async def test_every_route_needing_the_bearer_counts_a_wrong_one(api: ApiFactory) -> None:
    """HEAD, a mutation, `/health/` (not the exempt `/health`) and an SSE stream all count."""
    session = "00000000-0000-4000-8000-000000000001"
    attempts = [
        ("HEAD", "/capabilities"),
        ("POST", "/session"),
        ("GET", "/health/"),
        ("GET", f"/session/{session}/events"),
    ]
    client = await api(token=TOKEN, auth_failures_per_minute=len(attempts))
    _stop_clock(client)
    for n, (method, path) in enumerate(attempts):
        response = await client.request(method, path, headers=_wrong(n), json={})
        assert response.status_code == 401, (method, path, response.status_code)
    for method, path in attempts:
        response = await client.request(method, path, headers=RIGHT, json={})
        assert response.status_code == 429, (method, path, response.status_code)
    assert (await client.get("/health")).status_code == 200  # the exempt path only


async def test_every_loopback_address_is_one(api: ApiFactory) -> None:
    """Binding another of 127.0.0.0/8 (or ::1) buys no fresh guesses."""
    client = await api(token=TOKEN, auth_failures_per_minute=3)
    _stop_clock(client)
    for n, address in enumerate(("127.0.0.2", "127.1.2.3", "::1")):
        async with _from(client, address) as guesser:
            assert (await guesser.get("/capabilities", headers=_wrong(n))).status_code == 401
    for address in ("127.0.0.1", "127.0.0.9", "::1", "::ffff:127.0.0.5"):
        async with _from(client, address) as guesser:
            refused = await guesser.get("/capabilities", headers=RIGHT)
            assert refused.status_code == 429, address
            assert refused.json()["tier"] == AUTH_TIER
    async with _from(client, "10.1.2.3") as other:
        assert (await other.get("/capabilities", headers=RIGHT)).status_code == 200


async def test_rotating_addresses_meets_the_global_bound(api: ApiFactory) -> None:
    """Ten times the per-address bound across all addresses: a fresh /64 (or more
    addresses than the limiter keeps buckets for) per guess gets no further."""
    client = await api(token=TOKEN, auth_failures_per_minute=2)
    now = _stop_clock(client)
    for n in range(20):  # one guess per /64, each within its own bound
        async with _from(client, f"2001:db8:0:{n:x}::1") as guesser:
            assert (await guesser.get("/capabilities", headers=_wrong(n))).status_code == 401
    async with _from(client, "2001:db8:1::1") as fresh:
        refused = await fresh.get("/capabilities", headers=_wrong(99))
        assert refused.status_code == 429
        assert refused.json()["tier"] == AUTH_GLOBAL_TIER and refused.json()["limit"] == 20
        assert int(refused.headers["retry-after"]) == 3  # 20 a minute: one every 3 s
        assert (await fresh.get("/capabilities", headers=RIGHT)).status_code == 429
    now[0] += 3
    async with _from(client, "10.1.2.3") as other:
        assert (await other.get("/capabilities", headers=RIGHT)).status_code == 200
