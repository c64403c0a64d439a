"""`scripted`: the built-in deterministic model (no network), driven by the prompt text.

It exists so that the whole runtime (turns, tools, permissions, streaming) can
be exercised in tests and demos without a real model. It only reads the LAST
user message, line by line (leading and trailing spaces ignored):

- `/call TOOL_NAME {json-args}` is a directive to call a tool. The JSON object
  is optional (default `{}`); anything after the name must be a JSON object.
- `/say TEXT` is text to answer once every call is done (several `/say` lines
  are joined with newlines).
- Any other line is ignored when directives are present.

On each `complete` call it counts the tool messages after the last user
message (the directives already answered) and:

1. if a `/call` directive remains, it emits the next one as a single tool call
   (finish_reason `tool_calls`), with id `call_<n>` where n is 1 + the number
   of tool calls already in the conversation, so ids stay unique across turns;
   if that tool is not in the offered tools it answers instead with
   `Tool NAME is not available; offered tools: ...` (finish_reason `stop`),
   and with `Cannot run /call NAME: ...` when the arguments are not a JSON
   object;
2. when every call is done, it answers with the `/say` text if any, else with
   `Done: called A, B.` followed by one line `NAME: result` per tool result
   (whitespace collapsed, each cut to 80 characters);
3. with no directive at all, it answers `You said: <prompt>` (whitespace
   collapsed, cut to 200 characters).

Text is streamed to `on_delta` in groups of four words (the pieces join back
to the exact text). Usage counts whitespace-separated words, an approximation
of tokens: prompt = words in all messages (contents, tool names, JSON
arguments), completion = words of the reply. requested and served model are
both `scripted`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from activities.llm.contracts import (
    ChatMessage,
    DeltaCallback,
    ModelReply,
    ToolCall,
    ToolSpec,
    Usage,
)

MODEL_NAME = "scripted"
WORDS_PER_DELTA = 4
ECHO_LIMIT = 200
RESULT_LIMIT = 80

_CALL = re.compile(r"^/call(?:\s+(?P<name>\S+)\s*(?P<args>.*))?$")
_SAY = re.compile(r"^/say(?:\s+(?P<text>.*))?$")


@dataclass(frozen=True)
class _Call:
    name: str
    arguments: dict[str, Any]
    error: str | None = None  # why the directive cannot run, answered as text


@dataclass(frozen=True)
class _Script:
    calls: list[_Call]
    says: list[str]

    @property
    def empty(self) -> bool:
        return not self.calls and not self.says


class ScriptedModel:
    """The `scripted` provider; stateless, so one instance can serve every call."""

    name = MODEL_NAME

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        content, calls = script_reply(messages, tools)
        if on_delta is not None and content:
            for piece in word_groups(content, WORDS_PER_DELTA):
                await on_delta(piece)
        completion = _words(content) + sum(_call_words(call) for call in calls)
        return ModelReply(
            content=content,
            tool_calls=calls,
            finish_reason="tool_calls" if calls else "stop",
            requested_model=MODEL_NAME,
            served_model=MODEL_NAME,
            usage=Usage(prompt_tokens=_prompt_words(messages), completion_tokens=completion),
        )


def script_reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> tuple[str, list[ToolCall]]:
    """The scripted model's decision: (text, []) or ("", [one tool call])."""
    last_user = _last_user_index(messages)
    if last_user is None:
        return "You said nothing.", []
    script = parse_script(messages[last_user].content)
    if script.empty:
        return f"You said: {_shorten(messages[last_user].content, ECHO_LIMIT)}", []
    results = [m.content for m in messages[last_user + 1 :] if m.role == "tool"]
    if len(results) < len(script.calls):
        call = script.calls[len(results)]
        if call.error is not None:
            directive = f"/call {call.name}" if call.name else "/call"
            return f"Cannot run {directive}: {call.error}.", []
        offered = [tool.name for tool in tools]
        if call.name not in offered:
            listed = ", ".join(offered) if offered else "none"
            return f"Tool {call.name} is not available; offered tools: {listed}.", []
        issued = sum(len(m.tool_calls) for m in messages)
        return "", [ToolCall(id=f"call_{issued + 1}", name=call.name, arguments=call.arguments)]
    if script.says:
        return "\n".join(script.says), []
    names = ", ".join(call.name for call in script.calls)
    lines = [f"Done: called {names}."]
    lines += [
        f"{call.name}: {_shorten(result, RESULT_LIMIT)}"
        for call, result in zip(script.calls, results, strict=False)
    ]
    return "\n".join(lines), []


def parse_script(prompt: str) -> _Script:
    calls: list[_Call] = []
    says: list[str] = []
    for raw in prompt.splitlines():
        line = raw.strip()
        if call := _CALL.match(line):
            calls.append(_parse_call(call.group("name"), call.group("args")))
        elif say := _SAY.match(line):
            says.append(say.group("text") or "")
    return _Script(calls=calls, says=says)


def _parse_call(name: str | None, args: str | None) -> _Call:
    if not name:
        return _Call(name="", arguments={}, error="no tool name given")
    if not args:
        return _Call(name=name, arguments={})
    try:
        parsed = json.loads(args)
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        return _Call(name=name, arguments={}, error="the arguments must be a JSON object")
    return _Call(name=name, arguments=parsed)


def word_groups(text: str, size: int) -> list[str]:
    """`text` cut after every `size` words; the pieces concatenate back to `text`."""
    tokens = re.findall(r"\S+\s*|\s+", text)
    return ["".join(tokens[i : i + size]) for i in range(0, len(tokens), size)]


def _last_user_index(messages: list[ChatMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index
    return None


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _words(text: str) -> int:
    return len(text.split())


def _call_words(call: ToolCall) -> int:
    return _words(call.name) + _words(json.dumps(call.arguments))


def _prompt_words(messages: list[ChatMessage]) -> int:
    return sum(
        _words(m.content) + sum(_call_words(call) for call in m.tool_calls) for m in messages
    )
