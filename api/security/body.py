"""Refuse request bodies over the limit (10 MB) with a JSON 413, streaming or not."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.security.asgi import header, is_http, send_json


def too_large(limit: int) -> dict[str, object]:
    return {"error": "Request body too large", "code": "payload_too_large", "limit": limit}


class BodyLimit:
    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not is_http(scope) or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        length = header(scope, b"content-length")
        if length is not None:
            if length.isdigit() and int(length) > self.limit:
                await send_json(send, 413, too_large(self.limit))
                return
            await self.app(scope, receive, send)
            return
        # Chunked: buffer up to the limit, then replay to the route.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await send_json(send, 413, too_large(self.limit))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
