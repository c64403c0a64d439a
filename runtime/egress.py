"""What the worker may send, and where (issue 18): the provider-key rule and the egress rule.

Whoever holds the API token chooses a provider's `baseUrl` and the environment variable
its key is read from (`apiKeyEnv`). Unchecked, that lets them have the worker send
`AGENTRT_WINDOWS_POOL_TOKEN` or `DATABASE_URL` as a bearer to their own server, or reach
the cloud's metadata service. So:

- **the provider-key rule**: `apiKeyEnv` names a variable ending in `_API_KEY`
  (optionally `_<digits>`), or one the operator lists in `AGENTRT_PROVIDER_KEY_ENVS`, and
  never one of agentrt's own settings or secrets (`RESERVED_ENV_PREFIXES`,
  `RESERVED_ENV_NAMES`), listed or not;
- **the egress rule**: a URL the worker calls is `http`/`https` with a host and no
  user-info, a base URL (one the worker appends paths to) has no query or fragment, and
  neither it nor the address the worker connects to is link-local or a cloud-metadata
  address (`LINK_LOCAL_OR_METADATA`, IPv4 embedded in IPv6 included). The host is read
  as httpx reads it (IDNA: `169。254。169。254` is 169.254.169.254), and as a resolver
  reads it (`2852039166`, octal, a trailing dot). Loopback and private ranges are
  allowed: local model servers live there.

Both are checked where a value is accepted (`PUT /api/v1/llm/providers/{id}`, the
start-up check of the settings) and again where it is used (the worker reads no variable
and opens no connection the rules refuse: `runtime.egress_client` checks the address each
connection is made to). Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
RuleName = Literal[
    "provider_key_env",
    "url_scheme",
    "url_userinfo",
    "url_query_or_fragment",
    "link_local_or_metadata",
]

KEY_ENV_PATTERN = re.compile(r"^[A-Z][A-Z0-9_]*_API_KEY(_[0-9]+)?$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,199}$")
# agentrt's own settings and secrets: never a provider key, even when listed.
RESERVED_ENV_PREFIXES = ("AGENTRT_", "TEMPORAL_", "OTEL_", "PG")
RESERVED_ENV_NAMES = frozenset({"DATABASE_URL", "QWEN_SERVER_TOKEN"})
KEY_ENV_SETTING = "AGENTRT_PROVIDER_KEY_ENVS"
# How the rule texts name them: "AGENTRT_*, TEMPORAL_*, ..., DATABASE_URL, QWEN_SERVER_TOKEN".
RESERVED_ENV_TEXT = ", ".join(
    [f"{prefix}*" for prefix in RESERVED_ENV_PREFIXES] + sorted(RESERVED_ENV_NAMES)
)

LINK_LOCAL_OR_METADATA = tuple(
    ipaddress.ip_network(n)
    for n in (
        "169.254.0.0/16",  # IPv4 link-local: AWS, GCP, Azure, OCI metadata at .169.254
        "fe80::/10",  # IPv6 link-local
        "fd00:ec2::254/128",  # AWS metadata over IPv6
        "100.100.100.200/32",  # Alibaba Cloud metadata
    )
)
# Prefixes that carry an IPv4 address in their last 32 bits and reach it: NAT64's
# well-known prefix, and the deprecated IPv4-compatible form.
_IPV4_TRAILING = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("::/96"))
# NAT64's local-use prefix (RFC 8215): a network may use any prefix of /48 to /96 inside
# it, so the IPv4 address may sit at any of RFC 6052's positions for those lengths.
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")
# RFC 6052 §2.2: for each prefix length, the bit ranges (from the most significant bit)
# that hold the IPv4 address, around the reserved bits 64-71.
_RFC6052_IPV4_BITS = (
    ((48, 64), (72, 88)),  # /48
    ((56, 64), (72, 96)),  # /56
    ((72, 104),),  # /64
    ((96, 128),),  # /96
)

RULES: dict[RuleName, str] = {
    "provider_key_env": (
        "apiKeyEnv may name only a variable ending in _API_KEY (optionally followed by "
        f"_<digits>) or one listed in {KEY_ENV_SETTING}, and never one of agentrt's own "
        f"settings or secrets ({RESERVED_ENV_TEXT})"
    ),
    "url_scheme": "it must be an http(s) URL with a host, e.g. https://api.openai.com/v1",
    "url_userinfo": "it must not carry user-info (user:password@) in its authority",
    "url_query_or_fragment": (
        "a base URL must not carry a query or a fragment, not even an empty one (a "
        "trailing ? or #): the paths the worker appends to it would land there"
    ),
    "link_local_or_metadata": (
        "the worker never connects to a link-local or cloud-metadata address ("
        + ", ".join(
            str(n.network_address) if n.num_addresses == 1 else str(n)
            for n in LINK_LOCAL_OR_METADATA
        )
        + ", IPv4 embedded in IPv6 included: mapped, NAT64, 6to4, Teredo)"
    ),
}


@dataclass(frozen=True)
class Refusal:
    """A rule a value breaks: `rule` names it, `message` says which value and why."""

    rule: RuleName
    message: str


# -- the provider-key rule ------------------------------------------------------------------------


def reserved_env(name: str) -> bool:
    """Whether `name` is one of agentrt's own settings or secrets (compared
    case-insensitively, to be safe)."""
    upper = name.upper()
    return upper in RESERVED_ENV_NAMES or upper.startswith(RESERVED_ENV_PREFIXES)


def key_env_refusal(name: str, listed: Collection[str] = ()) -> Refusal | None:
    """Why a credential may not read its key from variable `name`; None when it may.

    Args:
        name: the credential's `apiKeyEnv`.
        listed: the operator's extra names (`AGENTRT_PROVIDER_KEY_ENVS`).
    """
    if not reserved_env(name) and (KEY_ENV_PATTERN.match(name) or name in listed):
        return None
    return Refusal(
        "provider_key_env",
        f"apiKeyEnv {name!r} is not allowed: {RULES['provider_key_env']}",
    )


def listed_key_env_refusal(name: str) -> str | None:
    """Why `AGENTRT_PROVIDER_KEY_ENVS` may not list `name` (a start-up refusal); or None."""
    if not ENV_NAME.match(name):
        return f"{KEY_ENV_SETTING} lists {name!r}, which is not an environment variable name"
    if reserved_env(name):
        return (
            f"{KEY_ENV_SETTING} lists {name!r}: agentrt's own settings and secrets "
            f"({RESERVED_ENV_TEXT}) are never a provider key"
        )
    return None


# -- the egress rule ------------------------------------------------------------------------------

_AUTHORITY_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*:)?//[^/?#]*@")
_UNSAFE_URL_CHARS = re.compile(r"[\s\\\x00-\x1f\x7f]")


def redact_url(url: str) -> str:
    """`url` without its user-info (`https://u:p@h/v1` → `https://h/v1`): how it is shown."""
    return _AUTHORITY_USERINFO.sub(lambda m: f"{m.group(1) or ''}//", url, count=1)


def forbidden_address(address: IPAddress) -> bool:
    """A link-local or cloud-metadata address, directly or as IPv4 embedded in IPv6
    (`::ffff:169.254.169.254`, NAT64, 6to4, Teredo)."""
    if any(address in network for network in LINK_LOCAL_OR_METADATA):
        return True
    if isinstance(address, ipaddress.IPv6Address):
        return any(forbidden_address(embedded) for embedded in embedded_ipv4(address))
    return False


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address `address` may carry and reach: IPv4-mapped, 6to4, Teredo (its
    server and client), NAT64 (the well-known and the local-use prefix), IPv4-compatible."""
    found: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    bits = int(address)
    if any(address in prefix for prefix in _IPV4_TRAILING):
        found.append(ipaddress.IPv4Address(bits & 0xFFFFFFFF))
    if address in _LOCAL_NAT64:
        for ranges in _RFC6052_IPV4_BITS:
            value = 0
            for start, end in ranges:
                width = end - start
                value = (value << width) | ((bits >> (128 - end)) & ((1 << width) - 1))
            found.append(ipaddress.IPv4Address(value))
    return found


def literal_address(host: str) -> IPAddress | None:
    """The address a URL's host spells literally, or None for a name. Also reads the IPv4
    forms a resolver accepts (`2852039166`, `0xa9fea9fe`, `169.254.43518`, octal) and a
    trailing dot (`169.254.169.254.`)."""
    host = host.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    host = host.rstrip(".")
    if not host or not re.fullmatch(r"[0-9A-Fa-fXx.]+", host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def address_refusal(host: str, address: IPAddress) -> Refusal | None:
    """Why the worker may not connect to `address` (what `host` resolved to); or None."""
    if not forbidden_address(address):
        return None
    shown = host if host == str(address) else f"{host} ({address})"
    return Refusal(
        "link_local_or_metadata",
        f"refused to connect to {shown}: {RULES['link_local_or_metadata']}",
    )


def url_refusal(url: str, what: str = "baseUrl", *, base: bool = True) -> Refusal | None:
    """Why the worker may not call `url`; or None.

    A host name is not resolved here: the address it resolves to is checked when the
    connection is made (`runtime.egress_client`). The host is checked as `urlsplit` and
    as httpx read it: httpx, which makes the request, IDNA-normalises it
    (`169。254。169。254` → `169.254.169.254`).

    Args:
        url: the URL, as configured.
        what: how the refusal's message names it (a field or a setting).
        base: the worker appends paths to `url` (a provider's `baseUrl`, the pool's URL),
            so it may carry no query or fragment; False for a URL called as it is (a
            device-flow endpoint), which may carry a query but no fragment.

    Returns:
        The first rule `url` breaks, with a message that shows `url` without its
        user-info; None when it breaks none.
    """
    shown = redact_url(url)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError on a port out of range)
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or _UNSAFE_URL_CHARS.search(url)
    ):
        return _url_refused("url_scheme", what, shown)
    if "@" in parts.netloc:
        return _url_refused("url_userinfo", what, shown)
    try:
        host: str | None = httpx.URL(url).host
    except (httpx.InvalidURL, ValueError):
        host = None  # httpx cannot call it (refused below, once its spelling is checked)
    for spelled in (parts.hostname, host):
        address = literal_address(spelled) if spelled else None
        if address is not None and forbidden_address(address):
            return _url_refused("link_local_or_metadata", what, shown)
    if host is None:
        return _url_refused("url_scheme", what, shown)
    if "#" in url or (base and "?" in url):
        return _url_refused("url_query_or_fragment", what, shown)
    return None


def _url_refused(rule: RuleName, what: str, shown: str) -> Refusal:
    return Refusal(rule, f"{what} {shown!r} is refused: {RULES[rule]}")
