"""Rate limiting (off by default; `--rate-limit` on): token buckets per client and tier.

Tiers per minute: prompt 10, mutation 30, read 120. `/health`, SSE streams and
`OPTIONS` are exempt. On a loopback bind the client is its `X-Qwen-Client-Id`
(falling back to the peer address); otherwise it is the peer IP, since a
remote caller could mint client ids at will.
"""

from __future__ import annotations

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

    def take(self, now: float) -> float:
        """Take one token; returns 0 on success, else the seconds until one is available."""
        if self.updated:
            self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


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
        key = (client, tier)
        bucket = self._buckets.pop(key, None) or TokenBucket(capacity=self.limits[tier])
        self._buckets[key] = bucket
        if len(self._buckets) > _MAX_BUCKETS:
            self._buckets.popitem(last=False)
        wait = bucket.take(self.clock())
        if wait:
            self.rejected[tier] += 1
        return wait


class RateLimit:
    def __init__(self, app: ASGIApp, *, limiter: RateLimiter | None, loopback: bool) -> None:
        self.app = app
        self.limiter = limiter
        self.loopback = loopback

    def client_key(self, scope: Scope) -> str:
        peer = scope.get("client")
        ip = peer[0] if peer else "unknown"
        if self.loopback:
            client_id = header(scope, b"x-qwen-client-id")
            if client_id:
                return f"client:{client_id}"
        return f"ip:{ip}"

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
        retry_after_ms = math.ceil(wait * 1000)
        body = {
            "error": f"Rate limit exceeded for {tier} requests",
            "code": "rate_limit_exceeded",
            "tier": tier,
            "limit": self.limiter.limits[tier],
            "windowMs": 60_000,
            "retryAfterMs": retry_after_ms,
        }
        await send_json(send, 429, body, [("Retry-After", str(math.ceil(wait)))])
