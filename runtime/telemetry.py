"""OpenTelemetry: spans through the API everywhere, exported only when configured.

agentrt code only uses `opentelemetry-api`; with no exporter configured the
tracer provider is the API's no-op one and spans cost nearly nothing. Setting
`OTEL_TRACES_EXPORTER` (`console` or `otlp`) or `OTEL_EXPORTER_OTLP_ENDPOINT`
installs the SDK's provider with that exporter (`otlp` needs the `otel` extra).
"""

from __future__ import annotations

import logging
import os

from opentelemetry import trace

log = logging.getLogger(__name__)

tracer = trace.get_tracer("agentrt")
_configured = False


def exporter_name() -> str | None:
    """The span exporter the environment asks for, or None when it asks for none.

    Returns:
        None when `OTEL_TRACES_EXPORTER` is `none` (the OpenTelemetry spec's "no
        export"); `OTEL_TRACES_EXPORTER` lower-cased when it is set; otherwise `otlp`
        when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set;
        otherwise None. The name is not checked against the exporters `setup_tracing` knows.
    """
    name = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if name == "none":  # the OpenTelemetry spec: no export, whatever else is set
        return None
    if name:
        return name
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    ):
        return "otlp"
    return None


def setup_tracing(service_name: str) -> str | None:
    """Install an exporting tracer provider when the environment asks for one.

    Once a provider is installed, a later call installs nothing and returns
    `exporter_name()`.

    Args:
        service_name: the spans' `service.name`, unless `OTEL_SERVICE_NAME` is set.

    Returns:
        The exporter's name, or None when spans are not exported (none asked for, an
        unknown exporter, or `otlp` without the `otel` extra).
    """
    global _configured
    name = exporter_name()
    if name is None or _configured:
        return name
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
        SpanExporter,
    )

    provider = TracerProvider(
        resource=Resource.create(
            {"service.name": os.environ.get("OTEL_SERVICE_NAME", service_name)}
        )
    )
    exporter: SpanExporter
    if name == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    elif name == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            log.warning("OTLP export asked for but the `otel` extra is not installed")
            return None
        exporter = OTLPSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))
    else:
        log.warning("unknown OTEL_TRACES_EXPORTER %r; spans are not exported", name)
        return None
    trace.set_tracer_provider(provider)
    _configured = True
    return name
