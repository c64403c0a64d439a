"""The token estimate of a reply whose provider reported no usage (issue 18): one token per
four characters, rounded up, of what was sent and what came back."""

from __future__ import annotations

import json

from runtime.llm.contracts import ChatMessage, ImageRef, ToolCall, ToolSpec, Usage, UsageSource
from runtime.llm.token_estimate import (
    CHARS_PER_TOKEN,
    IMAGE_TOKENS,
    completion_chars,
    estimate_tokens,
    estimate_usage,
    prompt_chars,
)


def test_four_characters_a_token_rounded_up() -> None:
    assert CHARS_PER_TOKEN == 4
    assert [estimate_tokens(n) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]


def test_the_prompt_counts_texts_tool_calls_and_tool_definitions() -> None:
    call = ToolCall(id="c1", name="read_file", arguments={"path": "a.txt"})
    messages = [
        ChatMessage(role="system", content="Be brief."),  # 9
        ChatMessage(role="user", content="Read a.txt"),  # 10
        ChatMessage(role="assistant", content="", tool_calls=[call]),
        ChatMessage(role="tool", content="hello world", tool_call_id="c1"),  # 11
    ]
    tool = ToolSpec(name="read_file", description="Read a file.", parameters={"type": "object"})
    call_chars = len("read_file") + len(json.dumps({"path": "a.txt"}))
    tool_chars = len("read_file") + len("Read a file.") + len(json.dumps({"type": "object"}))
    assert prompt_chars(messages, []) == 9 + 10 + 11 + call_chars
    assert prompt_chars(messages, [tool]) == 9 + 10 + 11 + call_chars + tool_chars
    usage = estimate_usage(messages, [tool], "done", [])
    assert usage == Usage(
        prompt_tokens=estimate_tokens(9 + 10 + 11 + call_chars + tool_chars),
        completion_tokens=1,
        source=UsageSource.ESTIMATED,
    )


def test_the_completion_counts_its_text_and_its_tool_calls_arguments() -> None:
    calls = [ToolCall(id="c", name="soa_send_message", arguments={"text": "x" * 100})]
    chars = len("soa_send_message") + len(json.dumps({"text": "x" * 100}))
    assert completion_chars("", calls) == chars
    assert completion_chars("four", calls) == 4 + chars
    usage = estimate_usage([ChatMessage(role="user", content="go")], [], "", calls)
    assert usage.completion_tokens == estimate_tokens(chars) > 25
    assert usage.prompt_tokens == 1 and usage.cached_prompt_tokens == 0


def test_an_image_shown_counts_a_fixed_amount_and_one_only_mentioned_nothing() -> None:
    shown = ImageRef(ref="s#1", data_url="data:image/png;base64," + "A" * 40_000)
    mentioned = ImageRef(ref="s#2")
    message = ChatMessage(role="tool", content="", tool_call_id="c", images=[shown, mentioned])
    usage = estimate_usage([message], [], "", [])
    # The base64 bytes are not text the model reads as tokens.
    assert usage.prompt_tokens == IMAGE_TOKENS


def test_a_usage_without_source_is_reported() -> None:
    """Usage crosses Temporal inside replies: those recorded before the field read so."""
    assert Usage.model_validate({"prompt_tokens": 5}).source is UsageSource.REPORTED
