"""The worker's HTTP client for URLs it was given: the egress rule checked at connect time.

A URL's host is checked when the URL is accepted (`runtime.egress.url_refusal`), but a
name can resolve to the metadata service later (or to a public address for the check and
to 169.254.169.254 for the connection: DNS rebinding). So the check that counts is made
on the address each connection is actually opened to: `EgressNetworkBackend` is the
httpcore network backend that resolves the host itself, refuses it if *any* of its
addresses is link-local or metadata, and then connects to one of the addresses it
checked, by address, so nothing resolves the name a second time. TLS still verifies the
certificate against the URL's host name (httpcore passes it as `server_hostname`).

The backend sits under the connection pool, so every connection is checked: the first,
one reopened from the pool later, and one to a host a redirect names. `EgressTransport`
is an httpx transport over httpcore's public API (httpx 0.28 has no way to hand its own
transport a network backend); `egress_client()` is an `httpx.AsyncClient` on it.
Environment proxies (`HTTPS_PROXY`, ...) are not used by these clients: a proxy would
resolve the name where this check cannot see the address.
"""

from __future__ import annotations

import functools
import socket
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpcore
import httpx

from runtime.egress import Refusal, address_refusal, literal_address

Resolver = Callable[[str, int], Awaitable[list[str]]]


class EgressRefused(httpx.ConnectError):
    """The egress rule refused a connection; nothing was sent."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


class _Refused(httpcore.ConnectError):
    """Raised inside httpcore, turned into `EgressRefused` by the transport."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


async def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, in the resolver's order (tests replace this)."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[str] = []
    for *_, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def refused_address(host: str, addresses: Iterable[str]) -> Refusal | None:
    """The egress rule on what `host` resolved to: refused if *any* address is (a name
    that resolves to both a public and a metadata address is not connected to)."""
    for address in addresses:
        parsed = literal_address(address)
        refusal = address_refusal(host, parsed) if parsed is not None else None
        if refusal is not None:
            return refusal
    return None


class EgressNetworkBackend(httpcore.AsyncNetworkBackend):
    """Connects only to addresses the egress rule allows, and to the very ones it checked."""

    def __init__(
        self,
        inner: httpcore.AsyncNetworkBackend | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        self._inner = inner or httpcore.AnyIOBackend()
        self._resolver = resolver

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Resolve `host`, check every address it resolves to, then connect to one of them.

        The addresses are tried in the resolver's order, by address, until one connects;
        `timeout` bounds the resolution, and the resolution and the attempts together.

        Returns:
            The inner backend's stream to the first address that accepted the connection.

        Raises:
            httpcore.ConnectError: any of the addresses is refused by the egress rule (a
                private subclass, which `EgressTransport` raises as `EgressRefused`), the
                name does not resolve, or no address accepted the connection.
            httpcore.ConnectTimeout: the resolution, or the last attempt, timed out.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        addresses = await self._addresses(host, port, timeout)
        refusal = refused_address(host, addresses)
        if refusal is not None:
            raise _Refused(refusal)
        failure: Exception = httpcore.ConnectError(f"{host} resolves to no address")
        for address in addresses:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                return await self._inner.connect_tcp(
                    address, port, left, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as err:
                failure = err  # the next address, as a resolver's client would
        raise failure

    async def _addresses(self, host: str, port: int, timeout: float | None) -> list[str]:
        # Looked up at each call, so that a test can replace the module's `resolve`.
        resolver = self._resolver or resolve
        try:
            with anyio.fail_after(timeout):
                return await resolver(host, port)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"resolving {host} timed out") from None
        except OSError as err:
            raise httpcore.ConnectError(f"cannot resolve {host}: {err}") from err

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Refused: the egress client connects over TCP only.

        Raises:
            httpcore.ConnectError: always.
        """
        raise httpcore.ConnectError("the worker's egress client connects over TCP only")

    async def sleep(self, seconds: float) -> None:
        """The inner backend's sleep."""
        await self._inner.sleep(seconds)


# httpcore's failures as httpx's, most specific first. This mirrors the private
# `HTTPCORE_EXC_MAP` of httpx's own transport (`_load_httpcore_exceptions` in
# `httpx/_transports/default.py`, httpx 0.28), which is not public API and so is not
# imported; httpx picks the closest class by MRO, here the order does it. It is needed
# because `EgressTransport` replaces httpx's transport, and the gateway and the pool
# client catch httpx's exceptions (`httpx.TimeoutException`, `httpx.ConnectError`, ...),
# never httpcore's. Keep it in step with httpx's map when httpx is upgraded: a failure
# missing here reaches the callers as httpcore's, and they would not classify it (a
# timeout read as a crash).
_MAPPED: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except _Refused as err:
        raise EgressRefused(err.refusal) from err
    except Exception as err:
        for core, mapped in _MAPPED:
            if isinstance(err, core):
                raise mapped(str(err)) from err
        raise


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        if hasattr(self._stream, "aclose"):
            with _httpx_errors():
                await self._stream.aclose()


@functools.cache
def tls_context(verify: bool = True) -> ssl.SSLContext:
    """One TLS context per process and setting. Building one loads the CA bundle (about
    25 ms of CPU), and the worker makes a client per model call, device-flow poll and
    webhook delivery; a context serves any number of connections, from any thread. The
    bundle is read once: a change to it takes a restart of the process."""
    return httpx.create_ssl_context(verify=verify)


class EgressTransport(httpx.AsyncBaseTransport):
    """httpx over an httpcore pool whose every connection goes through `EgressNetworkBackend`."""

    def __init__(
        self,
        *,
        limits: httpx.Limits | None = None,
        verify: bool = True,
        resolver: Resolver | None = None,
    ) -> None:
        limits = limits or httpx.Limits(max_connections=100, max_keepalive_connections=20)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=tls_context(verify),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=EgressNetworkBackend(resolver=resolver),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` through the pool; its response streams its body as it is read.

        Raises:
            EgressRefused: the egress rule refused the address a connection was to go to;
                nothing was sent.
            httpx.HTTPError: httpcore's failure as httpx's class of it (a timeout as
                `httpx.TimeoutException`, ...), as httpx's own transport raises it.
        """
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = await self._pool.handle_async_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close the pool and its connections."""
        await self._pool.aclose()


def egress_client(
    *,
    timeout: httpx.Timeout | float | None = None,
    limits: httpx.Limits | None = None,
    **options: Any,
) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` that connects only where the egress rule allows.

    Args:
        timeout: the client's timeout; None gives 5 seconds (not "no timeout").
        limits: the pool's limits; None gives 100 connections, 20 kept alive.
        **options: any other `httpx.AsyncClient` argument (`headers`, ...). Not
            `transport` (it is the `EgressTransport`), nor `proxy` or `mounts` (httpx
            would send through transports of its own, unchecked); `verify` has no effect
            (the transport always verifies certificates).
    """
    return httpx.AsyncClient(
        timeout=timeout if timeout is not None else httpx.Timeout(5.0),
        transport=EgressTransport(limits=limits),
        **options,
    )
