"""A minimal OpenAI-compatible endpoint on loopback for the `llm-chain` benchmark.

Non-streamed `chat.completion` answers, chosen by API key: `k-busy` is rate-limited
(429, no Retry-After, so the chain rotates at once), any other key gets a short reply
naming its own served model, with usage; a standing agent's request (one offering
`phase_complete`) is answered with a call to it. Real HTTP, so the figures include the socket
round trip a provider call costs at its very cheapest.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

BUSY_KEY = "k-busy"
GOOD_KEY = "k-good"
SERVED_MODEL = "bench-served"


# A standing agent's episode ends with this tool (runtime/standing_agents/catalog.py).
PHASE_COMPLETE = "phase_complete"


def _reply(
    message: dict[str, Any], finish_reason: str, *, prompt_tokens: int, completion_tokens: int
) -> Response:
    """A non-streamed `chat.completion` from SERVED_MODEL."""
    return JSONResponse(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": SERVED_MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        }
    )


def _ends_episode(body: dict[str, Any]) -> Response | None:
    """A request offering `phase_complete` (a standing agent's tick) is answered by calling
    it: one model call a tick. Usage: a token per four characters of the messages and of
    the tool definitions (JSON), as the reservation estimates it."""
    names = {str((t.get("function") or {}).get("name")) for t in body.get("tools") or []}
    if PHASE_COMPLETE not in names:
        return None
    chars = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
    chars += len(json.dumps(body.get("tools") or []))
    call = {
        "id": "call-bench",
        "type": "function",
        "function": {"name": PHASE_COMPLETE, "arguments": "{}"},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return _reply(message, "tool_calls", prompt_tokens=chars // 4, completion_tokens=8)


async def _completions(request: Request) -> Response:
    body: dict[str, Any] = await request.json()
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    if key == BUSY_KEY:
        error = {"message": "rate limited", "type": "rate_limit_error"}
        return JSONResponse({"error": error}, status_code=429)
    ended = _ends_episode(body)
    if ended is not None:
        return ended
    message = {"role": "assistant", "content": "ok"}
    prompt = len(body.get("messages", []))
    return _reply(message, "stop", prompt_tokens=prompt, completion_tokens=1)


class LoopbackProvider:
    def __init__(self) -> None:
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> LoopbackProvider:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = int(sock.getsockname()[1])
        app = Starlette(routes=[Route("/v1/chat/completions", _completions, methods=["POST"])])
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the loopback provider did not start")
            time.sleep(0.01)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
