"""The configurations agentrt refuses to start with (spec 002), and its start-up warnings.

`check_startup(settings)` runs before anything listens (cli.py): a bearer token where
one is required, canonical `--allow-origin` patterns, and the egress rule on every URL
the settings have the worker call (runtime/egress.py). A refusal is one line the CLI
prints before exiting with 2.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from runtime.device_flow.providers import parse_providers
from runtime.egress import listed_key_env_refusal, url_refusal
from runtime.settings import Settings


class StartupRefusal(Exception):
    """A configuration the daemon refuses to start with (spec 002); exit code 2."""


def canonical_origin(pattern: str) -> str | None:
    """The WHATWG `new URL(pattern).origin` of a pattern, or None when it has none.

    Returns:
        `<scheme>://<host>[:<port>]`, the host lower-cased and the scheme's default port
        left out; None unless `pattern` is an http(s) URL with a host and a valid port.
    """
    try:
        parts = urlsplit(pattern)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    default_port = 80 if parts.scheme == "http" else 443
    suffix = f":{port}" if port is not None and port != default_port else ""
    return f"{parts.scheme}://{host}{suffix}"


def check_startup(settings: Settings) -> list[str]:
    """Refuse the configurations spec 002 refuses; returns start-up warnings.

    Raises:
        StartupRefusal: with the one line the CLI prints before exiting with 2.
    """
    if settings.require_auth and not settings.token_configured:
        raise StartupRefusal(
            "--require-auth needs a bearer token: pass --token or set QWEN_SERVER_TOKEN"
        )
    if not settings.loopback_bind and not settings.token_configured:
        raise StartupRefusal(
            f"refusing to bind non-loopback hostname {settings.hostname!r} without a bearer "
            "token: pass --token or set QWEN_SERVER_TOKEN"
        )
    warnings: list[str] = []
    for pattern in settings.allow_origin:
        if pattern == "*":
            if not settings.token_configured:
                raise StartupRefusal(
                    "--allow-origin '*' needs a bearer token: pass --token or set "
                    "QWEN_SERVER_TOKEN (any origin could otherwise drive this daemon)"
                )
            warnings.append("--allow-origin '*' admits every browser origin")
            continue
        canonical = canonical_origin(pattern)
        if canonical != pattern:
            hint = f"use {canonical!r}" if canonical else "expected <scheme>://<host>[:<port>]"
            raise StartupRefusal(
                f"InvalidAllowOriginPatternError: --allow-origin {pattern!r} is not a canonical "
                f"origin; {hint}"
            )
    check_egress(settings)
    return warnings


def outbound_urls(settings: Settings) -> list[tuple[str, str]]:
    """The URLs the settings have the worker call, each with the setting that names it.

    Returns:
        `(setting, url)` pairs: the OpenAI base URL (only with the `openai` provider),
        the Windows pool's URL (when set), the qwen-oauth base URL and each configured
        device-flow provider's two endpoints (`...deviceAuthorizationEndpoint`,
        `...tokenEndpoint`).
    """
    urls: list[tuple[str, str]] = []
    if settings.model_provider == "openai":
        urls.append(("OPENAI_BASE_URL", settings.openai_base_url))
    if settings.windows_pool_url:
        urls.append(("AGENTRT_WINDOWS_POOL_URL", settings.windows_pool_url))
    urls.append(("AGENTRT_QWEN_OAUTH_BASE_URL", settings.qwen_oauth_base_url))
    for provider_id, provider in parse_providers(settings.device_flow_providers).items():
        where = f"AGENTRT_DEVICE_FLOW_PROVIDERS[{provider_id!r}]"
        urls.append(
            (f"{where}.deviceAuthorizationEndpoint", provider.device_authorization_endpoint)
        )
        urls.append((f"{where}.tokenEndpoint", provider.token_endpoint))
    return urls


def check_egress(settings: Settings) -> None:
    """The provider-key rule and the egress rule (runtime/egress.py) on the settings.

    Raises:
        StartupRefusal: a listed key variable that is agentrt's own (or not a name), or
            an outbound URL the egress rule refuses.
    """
    for name in settings.provider_key_envs:
        problem = listed_key_env_refusal(name)
        if problem is not None:
            raise StartupRefusal(problem)
    for setting, url in outbound_urls(settings):
        # A device-flow endpoint is called as it is (it may carry a query); every other
        # URL is a base URL the worker appends paths to.
        refusal = url_refusal(url, setting, base=not setting.endswith("Endpoint"))
        if refusal is not None:
            raise StartupRefusal(refusal.message)
