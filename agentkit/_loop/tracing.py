"""OpenTelemetry spans of a run, where `opentelemetry-api` is installed (the `otel` extra):
one for the run (`invoke_agent`), one per model request (`chat`), one per tool call
(`execute_tool`), with the GenAI semantic conventions' attributes (`gen_ai.*`) and a few of
agentkit's own (`agentkit.*`). Without the package nothing is imported and every call here
does nothing; with it and no SDK configured, its no-op tracer does nothing either.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from runtimes import Generation, Runtime

from .._errors import log_text, safe_str
from .._version import VERSION

logger = logging.getLogger("agentkit")
T = TypeVar("T")
_UNSET: Any = object()
_trace: Any = _UNSET


def _otel() -> Any:
    """`opentelemetry.trace`, imported on first use; None where it is not installed, or where
    its import fails in any way (a broken install, a plugin that raises): no tracing rather
    than no agent, said once in the log."""
    global _trace
    if _trace is _UNSET:
        try:
            from opentelemetry import trace
        except ImportError:  # not installed
            trace = None
        except Exception as exc:  # installed, but its import raised: runs go on untraced
            logger.warning("opentelemetry could not be imported (%s: %s); runs are not traced",
                           type(exc).__name__, log_text(exc))
            trace = None
        _trace = trace
    return _trace


def _untraced_on_failure(method: Callable[..., T]) -> Callable[..., T | None]:
    """A trace method that never fails the run: where the tracer provider (the user's, or the
    process's) raises, the failure is logged and this run goes on untraced."""

    @functools.wraps(method)
    def guarded(self: "RunTrace", *args: Any, **kwargs: Any) -> T | None:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            self._give_up(exc)
            return None

    return guarded


class RunTrace:
    """The spans of one run; each method does nothing where tracing is off, and a tracer that
    raises turns this run's tracing off (logged) rather than failing the run."""

    def __init__(self, runtime_name: str, attributes: dict[str, Any], provider: Any = None):
        """`provider`: a tracer provider of the agent's own; None is the process's global one."""
        trace = _otel()
        self._trace = trace
        self._span: Any = None
        self._context: Any = None
        if trace is None:
            return
        self._start(trace, runtime_name, attributes, provider)

    @_untraced_on_failure
    def _start(self, trace: Any, runtime_name: str, attributes: dict[str, Any], provider: Any) -> None:
        self._tracer = (provider or trace.get_tracer_provider()).get_tracer("agentkit", VERSION)
        self._span = self._tracer.start_span("invoke_agent agentkit", attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "agentkit",
            "gen_ai.provider.name": runtime_name.split(":")[0],
            **{k: v for k, v in attributes.items() if v is not None},
        })
        self._context = trace.set_span_in_context(self._span)

    @classmethod
    def off(cls) -> "RunTrace":
        """A trace that records nothing."""
        trace = cls.__new__(cls)
        trace._trace, trace._span, trace._context = None, None, None
        return trace

    @property
    def on(self) -> bool:
        return self._span is not None

    def _give_up(self, exc: Exception) -> None:
        logger.warning("tracing failed (%s: %s); this run goes on untraced", type(exc).__name__, log_text(exc))
        self._span = None

    @_untraced_on_failure
    def model_request(self, runtime: Runtime, step: int, options: dict[str, Any], *, withheld: tuple[str, ...] = (),
                      ungrounded: bool = False) -> Any:
        """Start a model request's span (`end_model_request` ends it); None where tracing is off.
        `withheld`: the tools the turn did not offer, as the conversation holds no value for a
        required grounded argument; `ungrounded`: a turn that had to call was left unheld."""
        if self._span is None:
            return None
        model = getattr(runtime, "model", None) or runtime.name
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": runtime.name.split(":")[0],
            "gen_ai.request.model": str(model),
            "gen_ai.request.max_tokens": options.get("max_tokens"),
            "gen_ai.request.temperature": options.get("temperature"),
            "gen_ai.request.top_p": options.get("top_p"),
            "gen_ai.request.seed": options.get("seed"),
            "agentkit.step": step,
            "agentkit.grammar_held": options.get("grammar") is not None,
            "agentkit.tools_withheld": list(withheld) or None,
            "agentkit.arguments_ungrounded": ungrounded or None,
        }
        return self._tracer.start_span(f"chat {model}", context=self._context,
                                       attributes={k: v for k, v in attributes.items() if v is not None})

    @_untraced_on_failure
    def end_model_request(self, span: Any, generation: Generation | None, error: BaseException | None = None) -> None:
        if span is None:
            return
        if generation is not None:
            span.set_attributes({
                "gen_ai.response.finish_reasons": [generation.finish_reason],
                "gen_ai.usage.input_tokens": generation.usage.prompt_tokens,
                "gen_ai.usage.output_tokens": generation.usage.completion_tokens,
                "agentkit.steered": generation.steered,
            })
        self._fail(span, error)
        span.end()

    @contextlib.contextmanager
    def tool_call(self, name: str, call_id: str) -> Iterator[Any]:
        """A tool call's span, current while the tool runs (so a tool's own spans nest under
        it); yields the span (None where tracing is off) for `tool_outcome`."""
        if self._span is None:
            yield None
            return
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id,
                      "gen_ai.tool.type": "function"}
        try:
            spans = self._tracer.start_as_current_span(f"execute_tool {name}", context=self._context,
                                                       attributes=attributes, record_exception=False,
                                                       set_status_on_exception=False)
            span = spans.__enter__()
        except Exception as exc:
            self._give_up(exc)
            yield None
            return
        try:
            yield span
        finally:
            try:
                spans.__exit__(None, None, None)
            except Exception as exc:
                self._give_up(exc)

    @_untraced_on_failure
    def tool_outcome(self, span: Any, outcome: str, error: BaseException | None = None) -> None:
        """`outcome`: "ok", "error", "retry" (the tool raised `ModelRetry`), "aborted" (it
        ended the run)."""
        if span is None:
            return
        span.set_attribute("agentkit.tool.outcome", outcome)
        self._fail(span, error)

    @_untraced_on_failure
    def end(self, *, steps: int, usage: Any, error: BaseException | None = None, pending: int = 0) -> None:
        if self._span is None:
            return
        self._span.set_attributes({
            "agentkit.steps": steps,
            "gen_ai.usage.input_tokens": usage.prompt_tokens,
            "gen_ai.usage.output_tokens": usage.completion_tokens,
            "agentkit.tool_runs": getattr(usage, "tool_runs", 0),
            "agentkit.pending_calls": pending,
        })
        self._fail(self._span, error)
        self._span.end()
        self._span = None

    def _fail(self, span: Any, error: BaseException | None) -> None:
        if error is None:
            return
        span.set_attribute("error.type", type(error).__qualname__)
        try:
            span.record_exception(error)
        except Exception:  # an exception whose str() or traceback cannot be read: its type is recorded
            pass
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, safe_str(error)[:200]))
