"""An agent run traced with OpenTelemetry: the run, each model request and each tool call.

    pip install 'agentkit[otel]' opentelemetry-sdk
    python examples/traced_agent.py

Runs on the embedded default model and prints each finished span with its GenAI attributes
(tokens in and out, finish reason, whether a grammar held the turn, the tool's outcome). An
application would export them (OTLP, say) instead of printing them.
"""

from __future__ import annotations

import sys

from agentkit import Agent, RunError, tool

try:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
except ImportError:
    sys.exit("this example needs opentelemetry-api and opentelemetry-sdk: pip install 'agentkit[otel]' opentelemetry-sdk")


@tool
def get_time(city: str) -> str:
    """The local time in a city.

    Args:
        city: The city's name in English.
    """
    return "14:05"


def main() -> None:
    provider = TracerProvider()
    trace.set_tracer_provider(provider)
    spans = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    agent = Agent([get_time], tool_choice="required", max_steps=3, max_tokens=64)
    try:
        print("answer:", agent.run_sync("What time is it in Paris?").output.strip())
    except RunError as error:
        print(f"stopped: {type(error).__name__}: {error}")
    for span in spans.get_finished_spans():
        shown = {k: v for k, v in span.attributes.items()
                 if k.startswith(("gen_ai.usage", "gen_ai.response", "agentkit.grammar", "agentkit.tool.outcome"))}
        print(f"{span.name:<32} {(span.end_time - span.start_time) / 1e6:8.1f} ms  {shown}")


if __name__ == "__main__":
    main()
