"""`scripted` for standing agents: a deterministic planner driven by the event's text.

The sessions' scripted model (activities/llm/scripted.py) answers the last user
message; an agent's episode needs an ending tool call instead, so agents use
this sibling (same `/call TOOL {json}` directive syntax, parsed by the same
`parse_script`). It reads the episode's event message (`Event: <kind>` ... `Text:`
then the event's text) and, one tool call per model turn:

- on an event whose text holds `/call` lines: exactly those calls, in order;
- else on `AgentInitialized`: `soa_send_message` with a short greeting;
- else on `OperatorMessage`: `soa_send_message` answering the message;
- then `phase_complete` (unless a call already ended the episode).

A directive that cannot be parsed becomes `phase_blocked` with the reason. Calls
to tools the mode does not offer are still made: the governance rail blocks
them, which is what a demo of the rail wants to show. Usage counts words.
"""

from __future__ import annotations

from activities.llm.contracts import (
    ChatMessage,
    DeltaCallback,
    ModelReply,
    ToolCall,
    ToolSpec,
    Usage,
)
from activities.llm.scripted import MODEL_NAME, parse_script
from runtime.standing_agents.catalog import PHASE_BLOCKED, PHASE_COMPLETE
from runtime.standing_agents.contracts import EventKind
from runtime.standing_agents.episode import EVENT_PREFIX, TEXT_MARKER

GREETING = "Hello, I am your standing agent. I am set up and will check in on my heartbeat."
ECHO_LIMIT = 200


class ScriptedAgentModel:
    name = MODEL_NAME

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        call = next_call(messages)
        calls = [call] if call is not None else []
        content = "" if calls else "Done."
        prompt = sum(len(m.content.split()) for m in messages)
        return ModelReply(
            content=content,
            tool_calls=calls,
            finish_reason="tool_calls" if calls else "stop",
            requested_model=MODEL_NAME,
            served_model=MODEL_NAME,
            usage=Usage(prompt_tokens=prompt, completion_tokens=len(content.split()) + 4),
        )


def next_call(messages: list[ChatMessage]) -> ToolCall | None:
    index = _event_index(messages)
    if index is None:
        return ToolCall(id="call_1", name=PHASE_BLOCKED, arguments={"reason": "no event"})
    content = messages[index].content
    kind = content.splitlines()[0].removeprefix(EVENT_PREFIX).strip()
    text = content.split("\n" + TEXT_MARKER + "\n", 1)[1] if TEXT_MARKER in content else ""
    planned: list[ToolCall] = []
    for position, directive in enumerate(parse_script(text).calls):
        if directive.error is not None:
            reason = f"cannot run /call {directive.name}: {directive.error}"
            planned.append(ToolCall(id="", name=PHASE_BLOCKED, arguments={"reason": reason}))
            break
        planned.append(
            ToolCall(id=str(position), name=directive.name, arguments=directive.arguments)
        )
    if not planned and kind == EventKind.AGENT_INITIALIZED.value:
        planned.append(ToolCall(id="", name="soa_send_message", arguments={"text": GREETING}))
    elif not planned and kind == EventKind.OPERATOR_MESSAGE.value:
        answer = f"Received your message: {_shorten(text, ECHO_LIMIT)}"
        planned.append(ToolCall(id="", name="soa_send_message", arguments={"text": answer}))
    issued = [call for m in messages[index + 1 :] for call in m.tool_calls]
    if any(call.name in (PHASE_COMPLETE, PHASE_BLOCKED) for call in issued):
        return None
    if len(issued) < len(planned):
        call = planned[len(issued)]
    else:
        call = ToolCall(id="", name=PHASE_COMPLETE, arguments={"summary": "done"})
    return call.model_copy(update={"id": f"call_{len(issued) + 1}"})


def _event_index(messages: list[ChatMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and message.content.startswith(EVENT_PREFIX):
            return index
    return None


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
