"""Token counts for a reply whose provider reported none (`usageSource` `estimated`).

A real OpenAI-compatible server may send no `usage` at all, even when asked with
`stream_options.include_usage` (llama.cpp's server does so): recorded as it came, the
attempt would have no tokens, cost $0 and never count against a budget or a credit.
agentrt then counts the tokens itself, from the text it sent and received.

No tokenizer is used. The tokenizers that ship their vocabulary inside a package are
OpenAI's encodings, whose servers always report usage; the models that leave it out
are local ones (Llama, Qwen, Mistral...) with tokenizers of their own, which would
have to be downloaded, and nothing is downloaded at run time. The estimate, the same
for every model:

- prompt: one token per `CHARS_PER_TOKEN` characters, rounded up, of every message's
  text, the names and JSON arguments of the tool calls it carries, and every tool
  definition offered (name, description and JSON schema: servers put them into the
  prompt), plus `IMAGE_TOKENS` for each image shown (a tool result's screenshot);
- completion: the same ratio over the reply's text and the names and JSON arguments of
  its tool calls.

Four characters a token is the usual figure for English text with the tokenizers of
today's chat models; code and other languages take more tokens per character, so the
estimate leans low for them (a price set for the model, or a server that reports
usage, is exact). Role markers and chat-template tokens are not counted.
"""

from __future__ import annotations

import json
import math

from runtime.llm.contracts import ChatMessage, ToolCall, ToolSpec, Usage, UsageSource

CHARS_PER_TOKEN = 4
# One image as a model reads it: OpenAI's count for a 1024×1024 image in high detail
# (85 + 4 tiles × 170).
IMAGE_TOKENS = 765


def estimate_tokens(chars: int) -> int:
    """ceil(chars / CHARS_PER_TOKEN)."""
    return math.ceil(max(chars, 0) / CHARS_PER_TOKEN)


def prompt_chars(messages: list[ChatMessage], tools: list[ToolSpec]) -> int:
    """The characters of a request the prompt estimate counts (images apart)."""
    chars = sum(len(m.content) + _calls_chars(m.tool_calls) for m in messages)
    return chars + sum(
        len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in tools
    )


def completion_chars(content: str, tool_calls: list[ToolCall]) -> int:
    return len(content) + _calls_chars(tool_calls)


def estimate_usage(
    messages: list[ChatMessage], tools: list[ToolSpec], content: str, tool_calls: list[ToolCall]
) -> Usage:
    """The estimated usage of one request and its reply (none of it cached)."""
    images = sum(1 for m in messages for image in m.images if image.data_url is not None)
    return Usage(
        prompt_tokens=estimate_tokens(prompt_chars(messages, tools)) + images * IMAGE_TOKENS,
        completion_tokens=estimate_tokens(completion_chars(content, tool_calls)),
        source=UsageSource.ESTIMATED,
    )


def _calls_chars(calls: list[ToolCall]) -> int:
    return sum(len(c.name) + len(json.dumps(c.arguments)) for c in calls)
