"""The MCP transports' HTTP client: the egress rule checked on the address each
connection is opened to (as runtime/egress_client does for provider calls).

The SDK speaks HTTP through `httpx2` (its own fork of httpx, over `httpcore2`), so the
worker's httpx client cannot serve it. `McpEgressBackend` is the httpcore2 network
backend that resolves the host itself, refuses it if any of its addresses is link-local
or cloud metadata, and connects to an address it checked (nothing resolves the name a
second time: no DNS rebinding). `mcp_http_client()` is an httpx2 client on it, with the
MCP transports' timeouts, no environment proxy (a proxy would resolve the name where
this check cannot see the address) and no redirects (the SDK follows same-origin ones
itself).

httpx2 0.x takes no network backend: the client's transport gets a connection pool on
this backend in place of its own (`_pool`, the one private attribute touched; a test
checks that the refusal happens, so an httpx2 upgrade that moves it fails the suite).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2

from runtime import egress_client
from runtime.egress import Refusal


class EgressRefusedError(httpcore2.ConnectError):
    """The egress rule refused a connection; nothing was sent."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


class McpEgressBackend(httpcore2.AsyncNetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            # Looked up at each call: a test replaces the resolver (as for egress_client).
            addresses = await egress_client.resolve(host, port)
        except OSError as err:
            raise httpcore2.ConnectError(f"cannot resolve {host}: {err}") from err
        refusal = egress_client.refused_address(host, addresses)
        if refusal is not None:
            raise EgressRefusedError(refusal)
        failure: Exception = httpcore2.ConnectError(f"{host} resolves to no address")
        for address in addresses:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                return await self._inner.connect_tcp(
                    address, port, left, local_address, socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as err:
                failure = err
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("MCP servers are reached over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def mcp_http_client(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """An httpx2 client whose every connection passes the egress rule (the signature of
    the SDK's `McpHttpClientFactory`, so the SSE transport can take it too)."""
    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    transport._pool = httpcore2.AsyncConnectionPool(network_backend=McpEgressBackend())
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout or httpx2.Timeout(30.0, read=300.0),
        auth=auth,
        transport=transport,
        trust_env=False,
        follow_redirects=False,
    )


def egress_refused(err: BaseException) -> EgressRefusedError | None:
    """The egress refusal somewhere in `err`'s causes, if any."""
    seen: set[int] = set()
    stack = [err]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, EgressRefusedError):
            return current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                stack.append(linked)
    return None
