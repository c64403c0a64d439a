"""Model providers: the scripted model's table, and the openai client against a real fake server."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.llm import (
    ChatMessage,
    ModelError,
    ModelProvider,
    ModelReply,
    OpenAIProvider,
    ScriptedModel,
    ToolCall,
    ToolSpec,
    Usage,
    provider_from_settings,
)
from activities.llm.openai import _usage as openai_usage
from runtime.llm.contracts import UsageSource
from runtime.llm.token_estimate import estimate_usage
from runtime.settings import Settings
from tests.fakes.openai_server import FakeOpenAI

KEY = "sk-test-0123456789abcdef"
SEARCH = ToolSpec(
    name="investigation.search",
    description="Search the investigation notes.",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}},
)
GET_NODE = ToolSpec(
    name="graph.get_node",
    description="One node of the graph.",
    parameters={"type": "object", "properties": {"id": {"type": "string"}}},
)
TOOLS = [SEARCH, GET_NODE]


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def called(call_id: str, name: str, **arguments: Any) -> ChatMessage:
    call = ToolCall(id=call_id, name=name, arguments=arguments)
    return ChatMessage(role="assistant", tool_calls=[call])


def result(call_id: str, content: str) -> ChatMessage:
    return ChatMessage(role="tool", content=content, tool_call_id=call_id)


TWO_CALLS = '/call investigation.search {"query": "disk full"}\n/call graph.get_node {"id": "n1"}'
LONG = "word " * 60
FIRST_TURN = [
    user("/call graph.get_node"),
    called("call_1", "graph.get_node"),
    result("call_1", "x"),
    ChatMessage(role="assistant", content="Done."),
]

SCRIPTED_TABLE: list[tuple[str, list[ChatMessage], list[ToolSpec], str, list[ToolCall]]] = [
    ("echo", [user("hello   there\nfriend")], TOOLS, "You said: hello there friend", []),
    ("echo-cut", [user(LONG)], TOOLS, "You said: " + LONG.strip()[:199] + "…", []),
    ("no-user", [ChatMessage(role="system", content="sys")], TOOLS, "You said nothing.", []),
    (
        "first-call",
        [user(TWO_CALLS)],
        TOOLS,
        "",
        [ToolCall(id="call_1", name="investigation.search", arguments={"query": "disk full"})],
    ),
    (
        "call-without-args",
        [user("look:\n   /call graph.get_node   \nthanks")],
        TOOLS,
        "",
        [ToolCall(id="call_1", name="graph.get_node", arguments={})],
    ),
    (
        "next-call",
        [user(TWO_CALLS), called("call_1", "investigation.search"), result("call_1", "3 hits")],
        TOOLS,
        "",
        [ToolCall(id="call_2", name="graph.get_node", arguments={"id": "n1"})],
    ),
    (
        "summary",
        [
            user(TWO_CALLS),
            called("call_1", "investigation.search"),
            result("call_1", "3 hits"),
            called("call_2", "graph.get_node"),
            result("call_2", '{"id": "n1",\n "label": "disk"}'),
        ],
        TOOLS,
        "Done: called investigation.search, graph.get_node.\ninvestigation.search: 3 hits\n"
        'graph.get_node: {"id": "n1", "label": "disk"}',
        [],
    ),
    (
        "say-after-call",
        [
            user("/call graph.get_node\n/say All good."),
            called("c", "graph.get_node"),
            result("c", "x"),
        ],
        TOOLS,
        "All good.",
        [],
    ),
    ("say-only", [user("/say Hi\n/say there")], TOOLS, "Hi\nthere", []),
    (
        "not-offered",
        [user("/call shell.exec {}")],
        TOOLS,
        "Tool shell.exec is not available; offered tools: investigation.search, graph.get_node.",
        [],
    ),
    (
        "no-tools",
        [user("/call graph.get_node")],
        [],
        "Tool graph.get_node is not available; offered tools: none.",
        [],
    ),
    (
        "args-not-object",
        [user("/call graph.get_node [1]")],
        TOOLS,
        "Cannot run /call graph.get_node: the arguments must be a JSON object.",
        [],
    ),
    ("no-name", [user("/call")], TOOLS, "Cannot run /call: no tool name given.", []),
    (
        "only-last-user-message",
        [*FIRST_TURN, user("thanks")],
        TOOLS,
        "You said: thanks",
        [],
    ),
    (
        "ids-unique-across-turns",
        [*FIRST_TURN, user("/call graph.get_node")],
        TOOLS,
        "",
        [ToolCall(id="call_2", name="graph.get_node", arguments={})],
    ),
]


@pytest.mark.parametrize(
    ("messages", "tools", "content", "calls"),
    [case[1:] for case in SCRIPTED_TABLE],
    ids=[case[0] for case in SCRIPTED_TABLE],
)
async def test_scripted_table(
    messages: list[ChatMessage], tools: list[ToolSpec], content: str, calls: list[ToolCall]
) -> None:
    provider: ModelProvider = ScriptedModel()
    reply = await provider.complete(messages, tools)
    assert (reply.content, reply.tool_calls) == (content, calls)
    assert reply.finish_reason == ("tool_calls" if calls else "stop")
    assert (reply.requested_model, reply.served_model) == ("scripted", "scripted")


async def test_scripted_streams_word_groups() -> None:
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    prompt = "/say one two three four five six  seven eight nine"
    reply = await ScriptedModel().complete([user(prompt)], TOOLS, on_delta=on_delta)
    assert deltas == ["one two three four ", "five six  seven eight ", "nine"]
    assert "".join(deltas) == reply.content

    deltas.clear()
    reply = await ScriptedModel().complete([user("/call graph.get_node")], TOOLS, on_delta=on_delta)
    assert reply.tool_calls and deltas == []


async def test_scripted_usage_counts_words() -> None:
    messages = [
        ChatMessage(role="system", content="be brief"),
        user("/call graph.get_node\n/say hello world"),
        called("call_1", "graph.get_node", id="n1"),  # 1 + 2 words: graph.get_node {"id": "n1"}
        result("call_1", "a node"),
    ]
    reply = await ScriptedModel().complete(messages, TOOLS)
    assert reply.usage == Usage(prompt_tokens=2 + 5 + 3 + 2, completion_tokens=2)


async def test_replies_cross_temporal() -> None:
    reply = await ScriptedModel().complete([user('/call graph.get_node {"id": "n1"}')], TOOLS)
    converter = pydantic_data_converter.payload_converter
    payloads = converter.to_payloads([reply, [user("hi"), called("c", "graph.get_node")]])
    back = converter.from_payloads(payloads, [ModelReply, list[ChatMessage]])
    assert back == [reply, [user("hi"), called("c", "graph.get_node")]]


def test_provider_from_settings() -> None:
    assert isinstance(provider_from_settings(Settings()), ScriptedModel)
    settings = Settings(
        model_provider="openai",
        openai_base_url="http://127.0.0.1:9/v1/",
        openai_api_key=KEY,
        openai_model="local-model",
    )
    provider = provider_from_settings(settings)
    assert isinstance(provider, OpenAIProvider)
    assert (provider.name, provider.url, provider.model) == (
        "openai",
        "http://127.0.0.1:9/v1/chat/completions",
        "local-model",
    )


async def test_the_stream_is_read_as_the_event_stream_format_has_it() -> None:
    """Comments, `event:` lines and events without data are skipped; an event's `data`
    lines are joined with newlines, with or without a space after the colon (httpx-sse
    parses the stream); a stream may end without a blank line after `[DONE]`."""
    stream = (
        ": keep-alive\n\n"
        "event: x\n"
        'data: {"choices": [{"index": 0, "delta": {"content": "a"}}]\n'
        "data:}\n\n"
        "retry: 1000\n\n"
        'data: {"choices": [{"index": 0, "delta": {"content": "b"}, "finish_reason": "stop"}]}\n\n'
        "data: [DONE]"
    )

    def answer(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=stream)

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        provider = OpenAIProvider(base_url="http://model.test/v1", model="m", client=client)
        reply = await provider.complete([ChatMessage(role="user", content="hi")], [])
    assert (reply.content, reply.finish_reason) == ("ab", "stop")


async def test_a_stream_cut_in_its_finish_event_is_an_incomplete_reply() -> None:
    """The event a stream ends in the middle of is discarded (the SSE standard): without
    its finish chunk the reply is incomplete, and the attempt says so."""
    stream = (
        'data: {"choices": [{"index": 0, "delta": {"content": "a"}}]}\n\n'
        'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}'
    )

    def answer(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=stream)

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        provider = OpenAIProvider(base_url="http://model.test/v1", model="m", client=client)
        with pytest.raises(ModelError, match="ended before the reply was complete"):
            await provider.complete([ChatMessage(role="user", content="hi")], [])


# --- openai, against a real OpenAI-compatible server on loopback ---------------------------


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def openai_at(fake: FakeOpenAI, **options: Any) -> OpenAIProvider:
    options.setdefault("api_key", KEY)
    return OpenAIProvider(base_url=fake.base_url, model="gpt-test", **options)


async def test_openai_streams_text(fake_openai: FakeOpenAI) -> None:
    text = "Hello there, streaming world!"
    fake_openai.queue_text(text, model="gpt-test-2024-08-06", usage=(12, 5))
    deltas: list[str] = []

    async def on_delta(piece: str) -> None:
        deltas.append(piece)

    reply = await openai_at(fake_openai).complete([user("hi")], [], on_delta=on_delta)

    assert reply.content == text and "".join(deltas) == text and len(deltas) > 1
    assert (reply.finish_reason, reply.tool_calls) == ("stop", [])
    assert (reply.requested_model, reply.served_model) == ("gpt-test", "gpt-test-2024-08-06")
    assert reply.usage == Usage(prompt_tokens=12, completion_tokens=5)
    [request] = fake_openai.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_openai_streams_tool_calls_under_their_own_names(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_tool_calls(
        [
            {
                "id": "call_a",
                "name": "investigation__search",
                "arguments": {"query": "disk full", "limit": 3},
            },
            {"id": "call_b", "name": "graph__get_node", "arguments": {"id": "n1"}},
        ]
    )
    reply = await openai_at(fake_openai).complete([user("look")], TOOLS)

    assert reply.tool_calls == [
        ToolCall(
            id="call_a", name="investigation.search", arguments={"query": "disk full", "limit": 3}
        ),
        ToolCall(id="call_b", name="graph.get_node", arguments={"id": "n1"}),
    ]
    assert (reply.content, reply.finish_reason) == ("", "tool_calls")
    assert fake_openai.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": wire,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        for wire, tool in [("investigation__search", SEARCH), ("graph__get_node", GET_NODE)]
    ]


async def test_openai_sends_the_key_only_when_set(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_text("a")
    fake_openai.queue_text("b")
    await openai_at(fake_openai).complete([user("hi")], [])
    async with httpx.AsyncClient() as client:  # a caller's shared client works too
        await openai_at(fake_openai, api_key=None, client=client).complete([user("hi")], [])
    assert [r.authorization for r in fake_openai.requests] == [f"Bearer {KEY}", None]


async def test_openai_message_round_trip(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_tool_calls(
        [
            {"id": "call_a", "name": "investigation__search", "arguments": {"query": "q"}},
            {"id": "call_b", "name": "graph__get_node", "arguments": {"id": "n1"}},
        ]
    )
    fake_openai.queue_text("The node is a disk.")
    provider = openai_at(fake_openai)
    history = [ChatMessage(role="system", content="Be brief."), user("What is n1?")]
    first = await provider.complete(history, TOOLS)
    history += [
        ChatMessage(role="assistant", content=first.content, tool_calls=first.tool_calls),
        result("call_a", "3 hits"),
        result("call_b", '{"label": "disk"}'),
    ]
    second = await provider.complete(history, TOOLS)

    assert second.content == "The node is a disk."
    assert fake_openai.requests[1].body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is n1?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "investigation__search", "arguments": '{"query": "q"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "graph__get_node", "arguments": '{"id": "n1"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "3 hits"},
        {"role": "tool", "tool_call_id": "call_b", "content": '{"label": "disk"}'},
    ]


@pytest.mark.parametrize("stream", [True, False])
async def test_openai_without_usage_estimates_it(fake_openai: FakeOpenAI, stream: bool) -> None:
    """llama.cpp's server reports no usage, streamed or not, even asked with include_usage:
    the tokens are counted from the text (runtime/llm/token_estimate.py), never left at 0."""
    call = {"name": "graph__get_node", "arguments": {"id": "n1"}}
    fake_openai.queue_tool_calls([call], content="Looking.", send_usage=False, model="served-model")
    messages = [user("What is n1? " * 10)]
    reply = await openai_at(fake_openai, stream=stream).complete(messages, TOOLS)
    if stream:
        assert fake_openai.requests[0].body["stream_options"] == {"include_usage": True}
    assert reply.served_model == "served-model"
    assert reply.usage == estimate_usage(messages, TOOLS, reply.content, reply.tool_calls)
    assert reply.usage.source is UsageSource.ESTIMATED
    assert reply.usage.prompt_tokens > 30 and reply.usage.completion_tokens > 3


async def test_openai_usage_counting_no_tokens_is_no_report(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_text("hello there", usage=(0, 0))
    fake_openai.queue_text("hello there", usage=(12, 2))
    provider = openai_at(fake_openai)
    assert (await provider.complete([user("hi")], [])).usage.source is UsageSource.ESTIMATED
    reported = (await provider.complete([user("hi")], [])).usage
    assert reported == Usage(prompt_tokens=12, completion_tokens=2, source=UsageSource.REPORTED)


@pytest.mark.parametrize("stream", [True, False])
async def test_openai_negative_usage_is_no_report(fake_openai: FakeOpenAI, stream: bool) -> None:
    """A server reporting a negative count must not give itself credit back: its report
    is dropped and the tokens estimated, as if it had sent none."""
    fake_openai.queue_text("hello there", usage=(-5_000_000, 1))
    fake_openai.queue_text("hello there", usage=(120, 4), cached_tokens=500)  # cached > prompt
    provider = openai_at(fake_openai, stream=stream)
    messages = [user("hi")]
    for _ in range(2):
        reply = await provider.complete(messages, [])
        assert reply.usage.source is UsageSource.ESTIMATED
        assert reply.usage == estimate_usage(messages, [], reply.content, reply.tool_calls)
        assert reply.usage.prompt_tokens > 0 and reply.usage.cached_prompt_tokens == 0


CACHED = (10, -1, 2.0)  # more cached than the prompt, negative, not an integer


@pytest.mark.parametrize(
    "raw",
    [
        {"prompt_tokens": -5_000_000, "completion_tokens": 1},
        {"prompt_tokens": 10, "completion_tokens": -1},
        {"prompt_tokens": 10.5, "completion_tokens": 1},
        {"prompt_tokens": "10", "completion_tokens": 1},
        {"prompt_tokens": True, "completion_tokens": 1},
        *[{"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": n}} for n in CACHED],
    ],
)
def test_a_usage_that_does_not_add_up_is_no_report(raw: dict[str, Any]) -> None:
    assert openai_usage(raw) is None


def test_a_usage_that_adds_up_is_kept() -> None:
    details = {"cached_tokens": 10}
    raw = {"prompt_tokens": 10, "completion_tokens": 0, "prompt_tokens_details": details}
    assert openai_usage(raw) == Usage(prompt_tokens=10, cached_prompt_tokens=10)
    # Absent counts are 0, a null `prompt_tokens_details` none cached.
    raw = {"prompt_tokens": 3, "prompt_tokens_details": None}
    assert openai_usage(raw) == Usage(prompt_tokens=3)


@pytest.mark.parametrize("stream", [True, False])
async def test_openai_reports_cached_prompt_tokens(fake_openai: FakeOpenAI, stream: bool) -> None:
    fake_openai.queue_text("hi", usage=(120, 4), cached_tokens=100)
    fake_openai.queue_text("hi", usage=(120, 4))  # no prompt_tokens_details: none cached
    provider = openai_at(fake_openai, stream=stream)
    first = await provider.complete([user("hi")], [])
    second = await provider.complete([user("hi")], [])
    assert first.usage == Usage(prompt_tokens=120, completion_tokens=4, cached_prompt_tokens=100)
    assert second.usage.cached_prompt_tokens == 0


async def test_openai_without_streaming(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_tool_calls(
        [{"id": "call_a", "name": "graph__get_node", "arguments": {"id": "n1"}}],
        usage=(7, 3),
        model="gpt-test-0613",
    )
    fake_openai.queue_text("Plain answer.")
    provider = openai_at(fake_openai, stream=False)
    deltas: list[str] = []

    async def on_delta(piece: str) -> None:
        deltas.append(piece)

    calls = await provider.complete([user("n1?")], TOOLS, on_delta=on_delta)
    text = await provider.complete([user("hi")], [], on_delta=on_delta)

    assert calls.tool_calls == [
        ToolCall(id="call_a", name="graph.get_node", arguments={"id": "n1"})
    ]
    assert (calls.finish_reason, calls.served_model, calls.usage) == (
        "tool_calls",
        "gpt-test-0613",
        Usage(prompt_tokens=7, completion_tokens=3),
    )
    assert (text.content, text.finish_reason, deltas) == (
        "Plain answer.",
        "stop",
        ["Plain answer."],
    )
    body = fake_openai.requests[0].body
    assert body["stream"] is False and "stream_options" not in body


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_openai_invalid_arguments_raise(fake_openai: FakeOpenAI, stream: bool) -> None:
    fake_openai.queue_tool_calls([{"name": "graph__get_node", "arguments": '{"id": "n1"'}])
    with pytest.raises(ModelError, match=r"arguments for tool graph\.get_node are not a JSON"):
        await openai_at(fake_openai, stream=stream).complete([user("n1?")], TOOLS)


@pytest.mark.parametrize(
    ("status", "retryable"), [(401, False), (400, False), (429, True), (500, True)]
)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_openai_http_errors_raise_without_the_key(
    fake_openai: FakeOpenAI, status: int, retryable: bool, stream: bool
) -> None:
    fake_openai.queue_error(status)
    with pytest.raises(ModelError) as caught:
        await openai_at(fake_openai, stream=stream).complete([user("hi")], [])
    message = str(caught.value)
    assert f"HTTP {status}" in message and KEY not in message
    assert (caught.value.status, caught.value.retryable) == (status, retryable)
    if status == 401:  # the fake echoes the key it received, as OpenAI partly does
        assert "Incorrect API key provided: [redacted]" in message


async def test_openai_truncated_stream_raises(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_text("Hello, world", truncate=True)
    with pytest.raises(ModelError, match="ended before the reply was complete"):
        await openai_at(fake_openai).complete([user("hi")], [])


async def test_openai_unreachable_raises() -> None:
    with socket.socket() as sock:  # a port that nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAIProvider(base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key=KEY)
    with pytest.raises(ModelError, match="ConnectError") as caught:
        await provider.complete([user("hi")], [])
    assert caught.value.status is None and caught.value.retryable and KEY not in str(caught.value)


async def test_openai_refuses_colliding_wire_names() -> None:
    provider = OpenAIProvider(base_url="http://127.0.0.1:9/v1", model="m")
    tools = [SEARCH, SEARCH.model_copy(update={"name": "investigation__search"})]
    with pytest.raises(ModelError, match="share the wire name"):
        await provider.complete([user("hi")], tools)


def test_wire_arguments_are_json_text() -> None:
    from activities.llm.openai import to_wire_message

    wire = to_wire_message(called("c", "graph.get_node", id="n1"))
    assert json.loads(wire["tool_calls"][0]["function"]["arguments"]) == {"id": "n1"}
    with pytest.raises(ModelError, match="tool_call_id"):
        to_wire_message(ChatMessage(role="tool", content="x"))


def test_a_tool_messages_images_follow_it_as_a_user_message() -> None:
    """A tool message's content must be text: its images come next, as a user message
    with image_url parts; an image not resolved stays a mention of its reference."""
    from activities.llm.openai import to_wire_messages
    from runtime.llm.contracts import ImageRef

    shown = ImageRef(ref="windows-screenshots/t/h#3", data_url="data:image/png;base64,AAAA")
    pruned = ImageRef(ref="windows-screenshots/t/h#1")
    message = ChatMessage(role="tool", tool_call_id="c1", content="{}", images=[shown, pruned])
    tool, user_message = to_wire_messages(message)
    assert tool == {"role": "tool", "tool_call_id": "c1", "content": "{}"}
    assert user_message["role"] == "user"
    assert user_message["content"] == [
        {"type": "text", "text": "Screenshot windows-screenshots/t/h#3 from the call c1"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {
            "type": "text",
            "text": "Screenshot windows-screenshots/t/h#1 from the call c1 (not shown)",
        },
    ]
    assert to_wire_messages(ChatMessage(role="user", content="hi")) == [
        {"role": "user", "content": "hi"}
    ]
