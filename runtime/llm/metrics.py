"""The chain's OpenTelemetry counters (issue 11 "The chain").

Counted by the workflow side (`workflows.llm.chain`) outside replay only, so a replayed
history never counts twice. Through the API only: without an SDK meter provider they
cost nothing.
"""

from __future__ import annotations

from opentelemetry import metrics

_meter = metrics.get_meter("agentrt.llm")
fallback_advance = _meter.create_counter(
    "subagent.llm_call.fallback_advance",
    description="model calls that moved to the next entry of their fallback chain",
)
all_providers_exhausted = _meter.create_counter(
    "subagent.llm_call.all_providers_exhausted",
    description="model calls whose every attempt failed",
)
