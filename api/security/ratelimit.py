"""Rate limiting (off by default; `--rate-limit` on): token buckets per client and tier.

Tiers per minute: prompt 10, mutation 30, read 120. `/health`, SSE streams and
`OPTIONS` are exempt. (Failed bearer checks have a limiter of their own, always on:
api/security/bearer.py.) On a loopback bind the client is its `X-Qwen-Client-Id`
(falling back to the peer address); otherwise it is the peer IP, since a
remote caller could mint client ids at will.
"""

from __future__ import annotations

import ipaddress
import math
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Receive, Scope, Send

from api.security.asgi import header, is_http, send_json

TIER_LIMITS_PER_MINUTE: dict[str, int] = {"prompt": 10, "mutation": 30, "read": 120}
_PROMPT = re.compile(r"^/session/[^/]+/prompt$")
_SSE = re.compile(r"^/session/[^/]+/events$")
_MAX_BUCKETS = 10_000


def classify(method: str, path: str) -> str | None:
    """The tier of a request, or None when it is exempt."""
    if method == "OPTIONS" or path == "/health":
        return None
    if method in ("GET", "HEAD"):
        return None if _SSE.match(path) else "read"
    if method == "POST" and _PROMPT.match(path):
        return "prompt"
    return "mutation"


@dataclass
class TokenBucket:
    """`capacity` tokens, refilled continuously at `capacity` per `period` seconds."""

    capacity: float
    period: float = 60.0
    tokens: float = field(default=-1.0)
    updated: float = 0.0

    def __post_init__(self) -> None:
        if self.tokens < 0:
            self.tokens = self.capacity

    @property
    def rate(self) -> float:
        return self.capacity / self.period

    def _refill(self, now: float) -> None:
        if self.updated:
            self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    def take(self, now: float) -> float:
        """Take one token; returns 0 on success, else the seconds until one is available."""
        self._refill(now)
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate

    def wait(self, now: float) -> float:
        """The seconds until a token is available (0: one is), taking none."""
        self._refill(now)
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate


class RateLimiter:
    """Buckets per (client, tier), least recently used evicted past a bound."""

    def __init__(
        self,
        limits: dict[str, int] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = dict(limits or TIER_LIMITS_PER_MINUTE)
        self.clock = clock
        self._buckets: OrderedDict[tuple[str, str], TokenBucket] = OrderedDict()
        self.rejected: dict[str, int] = {tier: 0 for tier in self.limits}

    def check(self, client: str, tier: str) -> float:
        """Take a token of (client, tier); 0, or the seconds to wait (a rejection)."""
        wait = self._bucket(client, tier).take(self.clock())
        if wait:
            self.rejected[tier] += 1
        return wait

    def blocked(self, client: str, tier: str) -> float:
        """The seconds until (client, tier) has a token again (0: it has one), taking none."""
        bucket = self._buckets.get((client, tier))
        return 0.0 if bucket is None else bucket.wait(self.clock())

    def _bucket(self, client: str, tier: str) -> TokenBucket:
        key = (client, tier)
        bucket = self._buckets.pop(key, None) or TokenBucket(capacity=self.limits[tier])
        self._buckets[key] = bucket
        if len(self._buckets) > _MAX_BUCKETS:
            self._buckets.popitem(last=False)
        return bucket


LOOPBACK_KEY = "loopback"


def peer_key(scope: Scope) -> str:
    """The caller's network address as a limiter key: the peer IP (what uvicorn saw; it is
    run without proxy headers, so `X-Forwarded-For` cannot forge it), an IPv6 peer by its
    /64, the smallest block one host is commonly given. Every loopback address (all of
    127.0.0.0/8, `::1`, their IPv4-mapped forms) is one key: a local caller can bind any
    of them, so rotating them must not buy fresh buckets."""
    peer = scope.get("client")
    host = peer[0] if peer else "unknown"
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(host)
    except ValueError:
        return f"ip:{host}"
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        return LOOPBACK_KEY
    if isinstance(address, ipaddress.IPv6Address):
        return f"ip:{ipaddress.ip_network(f'{address}/64', strict=False)}"
    return f"ip:{address}"


async def send_rate_limited(send: Send, *, error: str, tier: str, limit: int, wait: float) -> None:
    """The one 429 of the security chain: `rate_limit_exceeded`, `Retry-After` in seconds."""
    retry_after_ms = math.ceil(wait * 1000)
    body = {
        "error": error,
        "code": "rate_limit_exceeded",
        "tier": tier,
        "limit": limit,
        "windowMs": 60_000,
        "retryAfterMs": retry_after_ms,
    }
    await send_json(send, 429, body, [("Retry-After", str(math.ceil(wait)))])


class RateLimit:
    def __init__(self, app: ASGIApp, *, limiter: RateLimiter | None, loopback: bool) -> None:
        self.app = app
        self.limiter = limiter
        self.loopback = loopback

    def client_key(self, scope: Scope) -> str:
        if self.loopback:
            client_id = header(scope, b"x-qwen-client-id")
            if client_id:
                return f"client:{client_id}"
        return peer_key(scope)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.limiter is None or not is_http(scope):
            await self.app(scope, receive, send)
            return
        tier = classify(scope["method"], scope["path"])
        if tier is None:
            await self.app(scope, receive, send)
            return
        wait = self.limiter.check(self.client_key(scope), tier)
        if not wait:
            await self.app(scope, receive, send)
            return
        await send_rate_limited(
            send,
            error=f"Rate limit exceeded for {tier} requests",
            tier=tier,
            limit=self.limiter.limits[tier],
            wait=wait,
        )
