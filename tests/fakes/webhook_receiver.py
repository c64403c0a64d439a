"""A webhook receiver on loopback, as a user would write one: it verifies each delivery's
Standard Webhooks signature with the scheme's own library, deduplicates on `webhook-id`,
and can be told to answer 500 (down) for a while."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from standardwebhooks.webhooks import Webhook, WebhookVerificationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.conftest import loopback_socket


@dataclass
class Receiver:
    url: str = ""
    secret: str = ""
    # Answer 500 to this many requests (-1: to every one) before taking any.
    failing: int = 0
    received: list[dict[str, Any]] = field(default_factory=list)  # verified, deduplicated
    requests: int = 0
    rejected: int = 0  # bad signatures

    def events(self, event_type: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.received if event_type is None or e["type"] == event_type]

    async def handle(self, request: Request) -> Response:
        self.requests += 1
        body = await request.body()
        try:
            Webhook(self.secret).verify(body, dict(request.headers))
        except WebhookVerificationError:
            self.rejected += 1
            return Response(status_code=400)
        if self.failing:
            self.failing -= 1 if self.failing > 0 else 0
            return Response(status_code=500)
        message = request.headers["webhook-id"]
        if all(e["webhookId"] != message for e in self.received):
            self.received.append({**json.loads(body), "webhookId": message})
        return Response(status_code=204)


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def webhook_receiver() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    app = Starlette(routes=[Route("/hook", receiver.handle, methods=["POST"])])
    sock = loopback_socket()
    port = sock.getsockname()[1]
    server = _Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        receiver.url = f"http://127.0.0.1:{port}/hook"
        yield receiver
    finally:
        server.should_exit = True
        await task
        sock.close()
