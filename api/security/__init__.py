"""The security chain, outermost first (spec 002, DESIGN.md "Security"):

same-origin loopback Origin strip -> CORS wall or allowlist -> Host allowlist ->
bearer -> rate limit -> body limit -> route.

Each link is a pure ASGI middleware so that it runs before the body is read
and never buffers a streaming (SSE) response.
"""

from api.security.bearer import BearerAuth
from api.security.body import BodyLimit
from api.security.cors import CorsPolicy
from api.security.guards import require_configured_token
from api.security.hosts import HostAllowlist
from api.security.origin import SameOriginStrip
from api.security.ratelimit import RateLimit, RateLimiter

__all__ = [
    "BearerAuth",
    "BodyLimit",
    "CorsPolicy",
    "HostAllowlist",
    "RateLimit",
    "RateLimiter",
    "SameOriginStrip",
    "require_configured_token",
]
