"""`UsageLimits`: what one run may spend, in model requests, tool calls and tokens. A request or
call limit is checked before the request or call that would pass it, so it is never passed; a
token limit after the request that passed it, as no runtime can say beforehand what a prompt
will cost (pydantic-ai's rule). The agent's own limits are the defaults: `max_steps` is the
request limit and `token_budget` the output tokens' (both kept as they were)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from runtimes import Usage

from .._errors import InvalidArgument, StepLimitExceeded, TokenLimitExceeded, UsageLimitExceeded


@dataclass(frozen=True)
class UsageLimits:
    """What one run may spend; a limit left None is the agent's (`max_steps` for
    `request_limit`, `token_budget` for `output_tokens_limit`), else none.

    `request_limit`: model requests (turns). `tool_calls_limit`: calls that run a tool function
    (a repeat answered from an earlier call runs none). `input_tokens_limit`,
    `output_tokens_limit`, `total_tokens_limit`: prompt, completion and both tokens, summed over
    the run's requests. Past one, the run raises a `UsageLimitExceeded` whose `limit` names it:
    before a request or a turn's calls that would pass a request or call limit (nothing of them
    runs), after the request that passed a token limit (its tokens spent, its turn not used).
    """

    request_limit: int | None = None
    tool_calls_limit: int | None = None
    input_tokens_limit: int | None = None
    output_tokens_limit: int | None = None
    total_tokens_limit: int | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise InvalidArgument(f"usage_limits.{f.name}", f"must be an int of at least 0 or None, got {value!r}")


@dataclass(frozen=True)
class RunLimits:
    """A run's limits: the run's `UsageLimits` over the agent's defaults, field by field, and
    which agent option each default came from (for the messages)."""

    limits: UsageLimits
    sources: dict[str, str]

    @classmethod
    def of(cls, given: Any, *, max_steps: int, token_budget: int | None) -> RunLimits:
        if given is not None and not isinstance(given, UsageLimits):
            raise InvalidArgument("usage_limits", f"must be an agentkit.UsageLimits or None, not {type(given).__name__}")
        given = given or UsageLimits()
        defaults = {"request_limit": ("max_steps", max_steps), "output_tokens_limit": ("token_budget", token_budget)}
        values = {f.name: getattr(given, f.name) for f in dataclasses.fields(UsageLimits)}
        sources = {}
        for name, (option, default) in defaults.items():
            if values[name] is None and default is not None:
                values[name], sources[name] = default, option
        return cls(UsageLimits(**values), sources)

    def _name(self, field: str) -> str:
        option = self.sources.get(field)
        return f"{field}, the agent's {option}" if option else field

    def before_request(self, requests: int, context: dict[str, Any]) -> None:
        """Refuse a request past `request_limit` (`requests` made so far)."""
        limit = self.limits.request_limit
        if limit is not None and requests >= limit:
            raise StepLimitExceeded(f"no final answer after {limit} model requests ({self._name('request_limit')})",
                                    **context)

    def before_calls(self, ran: int, calls: int, context: dict[str, Any]) -> None:
        """Refuse a turn's `calls` (none runs) where they would take the run's tool runs, `ran`
        so far, past `tool_calls_limit`."""
        limit = self.limits.tool_calls_limit
        if limit is not None and ran + calls > limit:
            raise UsageLimitExceeded(f"the turn's {calls} tool call(s) would pass the tool_calls_limit of {limit} "
                                     f"({ran} ran before)", limit="tool_calls", **context)

    def output_left(self, usage: Usage, context: dict[str, Any]) -> int | None:
        """The completion tokens the next request may spend under `output_tokens_limit` (a
        turn's budget is held to it, so the limit is not passed where a runtime keeps to its
        budget); None for no limit; a run with none left stops before its request."""
        limit = self.limits.output_tokens_limit
        if limit is None:
            return None
        left = limit - usage.completion_tokens
        if left < 1:
            raise TokenLimitExceeded(f"the run used its {limit} output tokens ({self._name('output_tokens_limit')})",
                                     limit="output_tokens", **context)
        return left

    def after_request(self, usage: Usage, context: dict[str, Any]) -> None:
        """After a request: stop the run where its tokens passed a token limit."""
        for field, limit_name, used in (
            ("input_tokens_limit", "input_tokens", usage.prompt_tokens),
            ("output_tokens_limit", "output_tokens", usage.completion_tokens),
            ("total_tokens_limit", "total_tokens", usage.total_tokens),
        ):
            limit = getattr(self.limits, field)
            if limit is not None and used > limit:
                raise TokenLimitExceeded(f"the run used {used} {limit_name.replace('_', ' ')}, more than its "
                                         f"{self._name(field)} of {limit}", limit=limit_name, **context)
