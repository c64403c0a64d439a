"""`openai`: any OpenAI-compatible `/chat/completions` endpoint, streamed, with tool calls.

Configured by `OPENAI_BASE_URL`, `OPENAI_API_KEY` (optional: local servers
need none) and `OPENAI_MODEL`. Tool ids contain dots (`graph.get_node`) that
OpenAI function names may not (`^[a-zA-Z0-9_-]+$`), so names are rewritten on
the wire (`.` → `__`, any other forbidden character → `_`) and mapped back
through a per-request table: callers only ever see the original ids.

A server that reports no token usage (none streamed despite
`stream_options.include_usage`, as llama.cpp's server does, or a `usage` counting no
tokens) gets its reply's usage estimated from the text (`runtime.llm.token_estimate`),
marked `estimated`: an attempt is never recorded as free because its server kept quiet.
"""

from __future__ import annotations

import json
import re
import time
from contextlib import aclosing
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
from httpx_sse import EventSource

from activities.llm.contracts import (
    ChatMessage,
    DeltaCallback,
    ModelError,
    ModelReply,
    ToolCall,
    ToolSpec,
    Usage,
)
from runtime.egress import redact_url
from runtime.egress_client import egress_client
from runtime.llm.contracts import UsageSource
from runtime.llm.token_estimate import estimate_usage

# Read is per chunk when streaming, so it bounds a stall, not the whole reply.
DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=120.0, write=30.0, pool=10.0)
EXCERPT_LIMIT = 300

_WIRE_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
# What a payload of the wrong shape raises while it is read (a list where an
# object belongs, a string for a count...): reported as a ModelError instead.
_MALFORMED = (AttributeError, TypeError, ValueError, KeyError)


def wire_name(name: str) -> str:
    """The OpenAI function name sent for tool id `name`."""
    return _WIRE_UNSAFE.sub("_", name.replace(".", "__"))


class ToolNames:
    """The reversible mapping between tool ids and wire names, for one request."""

    def __init__(self, tools: list[ToolSpec]) -> None:
        self._from_wire: dict[str, str] = {}
        for tool in tools:
            wire = wire_name(tool.name)
            other = self._from_wire.setdefault(wire, tool.name)
            if other != tool.name:
                raise ModelError(f"tools {other!r} and {tool.name!r} share the wire name {wire!r}")

    def original(self, wire: str) -> str:
        # A name the model invented is returned as sent; the caller rejects it as unknown.
        return self._from_wire.get(wire, wire)


class OpenAIProvider:
    """The `openai` provider. Stateless apart from its optional shared client."""

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        stream: bool = True,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        # How the URL appears in errors (attempt rows, events): never with its user-info.
        self.shown_url = redact_url(self.url)
        self.model = model
        self.stream = stream
        # The output cap of one reply (a standing agent's per-turn budget); None: the server's.
        self.max_tokens = max_tokens
        # A preset overlay's sampling temperature; None: the server's default.
        self.temperature = temperature
        self._api_key = api_key
        self._timeout = timeout
        # Without a client each call opens its own: an activity may run on any
        # event loop, and a pooled client must not outlive the loop it was made on.
        self._client = client

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        names = ToolNames(tools)
        body = self._body(messages, tools)
        try:
            if self._client is not None:
                reply = await self._post(self._client, body, names, on_delta)
            else:
                # Connects only where the egress rule allows (runtime/egress_client.py).
                async with egress_client(timeout=self._timeout) as client:
                    reply = await self._post(client, body, names, on_delta)
        except httpx.HTTPError as exc:
            detail = self._redact(f"{type(exc).__name__}: {exc}")
            raise ModelError(
                f"POST {self.shown_url} failed: {detail}",
                timed_out=isinstance(exc, httpx.TimeoutException),
            ) from exc
        if reply.usage.source is UsageSource.ESTIMATED:  # the server reported none
            usage = estimate_usage(messages, tools, reply.content, reply.tool_calls)
            reply = reply.model_copy(update={"usage": usage})
        return reply

    def _body(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [wire for m in messages for wire in to_wire_messages(m)],
            "stream": self.stream,
        }
        # OpenAI rejects an empty `tools` array, so it is left out instead.
        if tools:
            body["tools"] = [to_wire_tool(t) for t in tools]
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    async def _post(
        self,
        client: httpx.AsyncClient,
        body: dict[str, Any],
        names: ToolNames,
        on_delta: DeltaCallback | None,
    ) -> ModelReply:
        headers = {"Accept": "text/event-stream" if self.stream else "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        async with client.stream("POST", self.url, json=body, headers=headers) as response:
            if response.status_code >= 400:
                await response.aread()
                excerpt = self._excerpt(response.text)
                raise ModelError(
                    f"{self.shown_url} answered HTTP {response.status_code}: {excerpt}",
                    status=response.status_code,
                    retry_after=retry_after_s(response.headers),
                )
            try:
                return await self._read_answer(response, names, on_delta)
            except ModelError as err:
                err.answered = True  # after a 2xx: the provider may have billed it
                raise
            except httpx.HTTPError as exc:
                detail = self._redact(f"{type(exc).__name__}: {exc}")
                raise ModelError(
                    f"POST {self.shown_url} failed while reading the reply: {detail}",
                    timed_out=isinstance(exc, httpx.TimeoutException),
                    answered=True,
                ) from exc

    async def _read_answer(
        self, response: httpx.Response, names: ToolNames, on_delta: DeltaCallback | None
    ) -> ModelReply:
        # Some compatible servers ignore `stream` and answer one JSON document.
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return await self._read_stream(response, names, on_delta)
        await response.aread()
        try:
            reply = reply_from_completion(self._json(response.text), self.model, names)
        except _MALFORMED as exc:
            raise ModelError(f"{self.shown_url} sent a malformed completion: {exc}") from exc
        if on_delta is not None and reply.content:
            await on_delta(reply.content)
        return reply

    async def _read_stream(
        self, response: httpx.Response, names: ToolNames, on_delta: DeltaCallback | None
    ) -> ModelReply:
        stream = _StreamReply(requested_model=self.model)
        # httpx-sse parses the event stream (comments, `event:`, multi-line `data`). As the
        # SSE standard says, an event the stream ends in the middle of (no blank line after
        # it) is discarded: a reply whose finish chunk is lost so ends incomplete.
        async with aclosing(EventSource(response).aiter_sse()) as events:
            async for event in events:
                data = event.data
                if not data:
                    # An event without data (`event:`, `id:` or `retry:` alone, or an empty
                    # `data:`) carries no chunk.
                    continue
                if data == "[DONE]":
                    stream.done = True
                    break
                chunk = self._json(data)
                try:
                    text = stream.feed(chunk)
                except _MALFORMED as exc:
                    excerpt = self._excerpt(data)
                    raise ModelError(f"{self.shown_url} sent a malformed chunk: {excerpt}") from exc
                # Outside the try: the caller's own errors must not pass for a bad chunk.
                if text and on_delta is not None:
                    await on_delta(text)
        return stream.reply(names)

    def _json(self, text: str) -> dict[str, Any]:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            excerpt = self._excerpt(text)
            raise ModelError(f"{self.shown_url} sent data that is not a JSON object: {excerpt}")
        if "error" in data and not data.get("choices"):
            raise ModelError(
                f"{self.shown_url} reported an error: {self._excerpt(json.dumps(data))}"
            )
        return data

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "[redacted]") if self._api_key else text

    def _excerpt(self, text: str) -> str:
        # Redact before cutting, so no prefix of the key can survive at the cut.
        return _shorten(self._redact(text), EXCERPT_LIMIT)


def retry_after_s(headers: httpx.Headers, now: float | None = None) -> float | None:
    """The wait a server asks for, in seconds: `retry-after-ms` (OpenAI's), else
    `Retry-After` as delta-seconds or an HTTP date (RFC 9110 §10.2.3); None if absent or
    unreadable."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(when.timestamp() - current, 0.0)


def to_wire_messages(message: ChatMessage) -> list[dict[str, Any]]:
    """A ChatMessage as OpenAI messages: itself, then, for a tool message that produced
    images, a user message showing them (a tool message's content must be text).
    Images the step did not resolve (older ones, pruned ones) stay a mention by reference."""
    wire = [to_wire_message(message)]
    if message.role != "tool" or not message.images:
        return wire
    parts: list[dict[str, Any]] = []
    for image in message.images:
        text = f"Screenshot {image.ref} from the call {message.tool_call_id}"
        if image.data_url is None:
            parts.append({"type": "text", "text": f"{text} (not shown)"})
            continue
        parts.append({"type": "text", "text": text})
        parts.append({"type": "image_url", "image_url": {"url": image.data_url}})
    return [*wire, {"role": "user", "content": parts}]


def to_wire_message(message: ChatMessage) -> dict[str, Any]:
    """A ChatMessage in OpenAI's format (tool names rewritten, arguments as JSON text)."""
    if message.role == "tool":
        if message.tool_call_id is None:
            raise ModelError("a tool message needs the tool_call_id of the call it answers")
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        # OpenAI's own assistant turns carry null content next to tool calls.
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": wire_name(call.name), "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
    return wire


def to_wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": wire_name(tool.name),
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class _StreamReply:
    """A reply assembled from `chat.completion.chunk` objects."""

    requested_model: str
    content: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish_reason: str | None = None
    served_model: str = ""
    usage: Usage | None = None  # None: the server reported none (yet)
    done: bool = False

    def feed(self, chunk: dict[str, Any]) -> str:
        """Take in one chunk; returns its new reply text ("" when none)."""
        if chunk.get("model"):
            self.served_model = str(chunk["model"])
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"]) or self.usage
        text = ""
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue  # n > 1 is never requested
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text += str(delta["content"])
            for position, fragment in enumerate(delta.get("tool_calls") or []):
                self._feed_call(fragment.get("index", position), fragment)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        self.content.append(text)
        return text

    def _feed_call(self, index: int, fragment: dict[str, Any]) -> None:
        # The id and name come in a call's first fragment, the arguments in pieces.
        partial = self.calls.setdefault(index, _PartialCall())
        function = fragment.get("function") or {}
        if fragment.get("id") and not partial.id:
            partial.id = str(fragment["id"])
        if function.get("name") and not partial.name:
            partial.name = str(function["name"])
        arguments = function.get("arguments")
        if arguments:
            partial.arguments += arguments if isinstance(arguments, str) else json.dumps(arguments)

    def reply(self, names: ToolNames) -> ModelReply:
        if self.finish_reason is None and not self.done:
            raise ModelError("the stream ended before the reply was complete")
        calls = [
            _tool_call(p.id or f"call_{i}", p.name, p.arguments, names)
            for i, p in sorted(self.calls.items())
        ]
        return ModelReply(
            content="".join(self.content),
            tool_calls=calls,
            finish_reason=self.finish_reason or ("tool_calls" if calls else "stop"),
            requested_model=self.requested_model,
            served_model=self.served_model or self.requested_model,
            usage=self.usage or _UNREPORTED,
        )


def reply_from_completion(data: dict[str, Any], requested: str, names: ToolNames) -> ModelReply:
    """A reply from a non-streamed `chat.completion` object."""
    choices = data.get("choices") or []
    if not choices:
        raise ModelError("the completion has no choices")
    message = choices[0].get("message") or {}
    calls = [
        _tool_call(
            str(raw.get("id") or f"call_{i}"),
            str((raw.get("function") or {}).get("name") or ""),
            (raw.get("function") or {}).get("arguments"),
            names,
        )
        for i, raw in enumerate(message.get("tool_calls") or [])
    ]
    return ModelReply(
        content=message.get("content") or "",
        tool_calls=calls,
        finish_reason=str(choices[0].get("finish_reason") or ("tool_calls" if calls else "stop")),
        requested_model=requested,
        served_model=str(data.get("model") or requested),
        usage=_usage(data.get("usage")) or _UNREPORTED,
    )


def _tool_call(call_id: str, wire: str, arguments: Any, names: ToolNames) -> ToolCall:
    if not wire:
        raise ModelError(f"tool call {call_id} has no function name")
    name = names.original(wire)
    if isinstance(arguments, dict):  # a few servers send an object, not JSON text
        return ToolCall(id=call_id, name=name, arguments=arguments)
    if arguments is None:
        arguments = ""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    try:
        parsed = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        raise ModelError(
            f"the model's arguments for tool {name} are not a JSON object: {_shorten(text, 120)!r}"
        )
    return ToolCall(id=call_id, name=name, arguments=parsed)


# The usage of a reply whose server reported none: `complete` estimates it.
_UNREPORTED = Usage(source=UsageSource.ESTIMATED)


def _usage(raw: Any) -> Usage | None:
    """The server's `usage`; None without one, or with one that does not add up: that
    counts no token at all (a real exchange has a prompt), holds a count that is not a
    non-negative integer, or more cached prompt tokens than prompt tokens. Such a report
    is no report (estimated instead): a remote server must not be able to give itself
    credit back with a negative count."""
    if not isinstance(raw, dict):
        return None
    details = raw.get("prompt_tokens_details")
    counts = (
        _count(raw.get("prompt_tokens")),
        _count(raw.get("completion_tokens")),
        _count(details.get("cached_tokens") if isinstance(details, dict) else None),
    )
    prompt, completion, cached = counts
    if prompt is None or completion is None or cached is None or cached > prompt:
        return None
    if prompt <= 0 and completion <= 0:
        return None
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_prompt_tokens=cached)


def _count(value: Any) -> int | None:
    """A token count as reported: absent (None) is 0; anything but a non-negative
    integer (a negative, a float, a string, a boolean) is None, "not a count"."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
