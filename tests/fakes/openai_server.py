"""A real OpenAI-compatible HTTP server on loopback, scripted by the test that runs it.

`FakeOpenAI` serves `POST /v1/chat/completions` with uvicorn in a background
thread, so the provider under test goes through real HTTP, chunked transfer
and SSE parsing, not a mock of its client. Streamed replies are shaped like
OpenAI's: a first chunk with the role, content and tool-call arguments cut
into small fragments, a chunk with `finish_reason`, a usage chunk with empty
`choices` when the request asks `stream_options.include_usage`, then
`data: [DONE]`. Requests without `stream: true` get one `chat.completion`.

`FakeReply(send_usage=False)` answers as llama.cpp's server does: no usage anywhere,
streamed or not, even when the request asks `stream_options.include_usage`; and
`FakeReply(model=...)` names a served model of its own (one the price table does not
know, or `scripted`), whatever the request asked for.

One server can also stand for several providers' credentials: `answer_key(key, reply)`
makes every request bearing that API key get `reply` (not consumed), so a test can set
up a rate-limited key (429 with `Retry-After`), a revoked one (401), a failing one
(500), a refused request (400) and a good one naming a served model of its own.

    with FakeOpenAI() as fake:
        fake.answer_key("k-busy", FakeReply(status=429, retry_after="2"))
        fake.answer_key("k-good", FakeReply(content="Hi", model="served-1", usage=(10, 2)))
        fake.queue_text("Hello")
        fake.queue_tool_calls([{"name": "graph__get_node", "arguments": {"id": "n1"}}])
        ...  # point a provider at fake.base_url
        fake.requests[0].body["messages"]
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

FRAGMENT_CHARS = 4  # about one token per fragment, like OpenAI's deltas


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


@dataclass
class FakeReply:
    """One scripted answer. `tool_calls` items: {"name", "arguments" (dict or raw text), "id"?}."""

    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str = "stop"
    model: str | None = None  # served model; None echoes the requested one
    usage: tuple[int, int] | None = None  # (prompt, completion); None: word counts
    # Of the prompt tokens, how many the server read from its cache
    # (`usage.prompt_tokens_details.cached_tokens`); None: no details, as older servers.
    cached_tokens: int | None = None
    # False: report no usage at all (no usage chunk, no `usage` key in any chunk or in a
    # completion), as llama.cpp's server streams none even when asked with include_usage.
    send_usage: bool = True
    truncate: bool = False  # stop the stream before finish_reason and [DONE]
    status: int = 200
    error_message: str | None = None
    delay: float = 0.0  # seconds before answering: a slow model, to crash a worker mid-call
    retry_after: str | None = None  # the `Retry-After` header of an error answer


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._replies: deque[FakeReply] = deque()
        self._by_key: dict[str, FakeReply] = {}
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def queue_text(self, text: str, **options: Any) -> None:
        self.queue(FakeReply(content=text, **options))

    def queue_tool_calls(self, calls: list[dict[str, Any]], **options: Any) -> None:
        options.setdefault("finish_reason", "tool_calls")
        self.queue(FakeReply(tool_calls=calls, **options))

    def queue_error(self, status: int, message: str | None = None) -> None:
        self.queue(FakeReply(status=status, error_message=message))

    def answer_key(self, key: str, reply: FakeReply) -> None:
        """Every request with `Authorization: Bearer {key}` gets `reply` (kept, not popped)."""
        with self._lock:
            self._by_key[key] = reply

    def requests_with_key(self, key: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.authorization == f"Bearer {key}"]

    def queue(self, reply: FakeReply) -> None:
        with self._lock:
            self._replies.append(reply)

    def start(self) -> None:
        # Bind first (port 0) and hand the socket to uvicorn: no free-port race.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = int(sock.getsockname()[1])
        app = Starlette(routes=[Route("/v1/chat/completions", self._handle, methods=["POST"])])
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("FakeOpenAI did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)

    def __enter__(self) -> FakeOpenAI:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def _handle(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            self.requests.append(RecordedRequest(request.url.path, dict(request.headers), body))
            key = request.headers.get("authorization", "").removeprefix("Bearer ")
            reply = self._by_key.get(key)
            if reply is None:
                reply = self._replies.popleft() if self._replies else None
        if reply is None:
            return _error(500, "FakeOpenAI: no reply queued", "server_error")
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status >= 400:
            error = _error(reply.status, reply.error_message or _default_error(reply, request))
            if reply.retry_after is not None:
                error.headers["Retry-After"] = reply.retry_after
            return error
        served = reply.model or str(body.get("model", ""))
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = _chunks(reply, served, body, include_usage)
            events = _sse(chunks, done=not reply.truncate)
            return StreamingResponse(events, media_type="text/event-stream")
        return JSONResponse(_completion(reply, served, body))


def _default_error(reply: FakeReply, request: Request) -> str:
    if reply.status == 401:
        # OpenAI echoes (part of) the key it was given; here all of it, so that
        # tests prove the provider keeps the key out of its errors.
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        return f"Incorrect API key provided: {key}. You can find your API key in your account."
    return "The server had an error while processing your request."


def _error(status: int, message: str, kind: str = "invalid_request_error") -> Response:
    error = {"message": message, "type": kind, "param": None, "code": None}
    return JSONResponse({"error": error}, status_code=status)


def _chunks(
    reply: FakeReply, served: str, body: dict[str, Any], include_usage: bool
) -> Iterator[dict[str, Any]]:
    base = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": served,
        "system_fingerprint": "fp_fake",
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        extra = {"usage": None} if include_usage and reply.send_usage else {}
        return {**base, "choices": [choice], **extra}

    first_content = None if reply.tool_calls and not reply.content else ""
    yield chunk({"role": "assistant", "content": first_content, "refusal": None})
    for piece in _fragments(reply.content):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        head = {
            "index": index,
            "id": call.get("id", f"call_fake_{index}"),
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for piece in _fragments(_arguments_text(call)):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    if reply.truncate:
        return
    yield chunk({}, reply.finish_reason)
    if include_usage and reply.send_usage:
        yield {**base, "choices": [], "usage": _usage(reply, body)}


async def _sse(chunks: Iterator[dict[str, Any]], *, done: bool) -> AsyncIterator[str]:
    for data in chunks:
        yield f"data: {json.dumps(data)}\n\n"
    if done:
        yield "data: [DONE]\n\n"


def _completion(reply: FakeReply, served: str, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.content or None,
        "refusal": None,
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.get("id", f"call_fake_{index}"),
                "type": "function",
                "function": {"name": call["name"], "arguments": _arguments_text(call)},
            }
            for index, call in enumerate(reply.tool_calls)
        ]
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": reply.finish_reason,
    }
    completion = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": served,
        "choices": [choice],
    }
    if reply.send_usage:
        completion["usage"] = _usage(reply, body)
    return completion


def _usage(reply: FakeReply, body: dict[str, Any]) -> dict[str, Any]:
    if reply.usage is not None:
        prompt, completion = reply.usage
    else:
        prompt = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
        completion = len(reply.content.split())
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if reply.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    return usage


def _arguments_text(call: dict[str, Any]) -> str:
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _fragments(text: str) -> list[str]:
    return [text[i : i + FRAGMENT_CHARS] for i in range(0, len(text), FRAGMENT_CHARS)]
