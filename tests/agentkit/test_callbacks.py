"""The functions an agent is given beside its tools (issue #65): an output validator, an approval
predicate, a validator of the output type. Whatever one raises, `SystemExit` included, ends the
run with `CallbackFailed`, which keeps the messages and chains the cause; `ModelRetry` and a
validation failure keep their meaning; `KeyboardInterrupt` propagates; one that returns past
the run's timeout is a `RunTimeout`."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, field_validator

from agentkit import Agent, CallbackFailed, ModelRetry, RunError, RunTimeout, tool
from runtimes.testing import FunctionRuntime, ScriptedRuntime

RAN: list[int] = []


@tool(idempotent=False)
def lookup(x: int) -> int:
    """Look a number up."""
    RAN.append(x)
    return x * 2


CALL = json.dumps({"name": "lookup", "arguments": {"x": 3}})


class Custom(BaseException):
    pass


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


RAISED: dict[str, Any] = {
    "value_error": lambda: ValueError("no"),
    "runtime_error": lambda: RuntimeError("x" * 100_000),
    "recursion": lambda: RecursionError(),
    "type_error": lambda: TypeError("bad"),
    "unprintable": lambda: Unprintable(),
    "system_exit": lambda: SystemExit(3),
    "generator_exit": lambda: GeneratorExit(),
    "custom_base": lambda: Custom(),
    "stop_iteration": lambda: StopIteration(),
}


def _raiser(kind: str, is_async: bool) -> Any:
    def sync(_: Any) -> Any:
        raise RAISED[kind]()

    async def async_(_: Any) -> Any:
        raise RAISED[kind]()

    return async_ if is_async else sync


def _agent(where: str, kind: str, is_async: bool) -> Agent[Any]:
    """A run that calls `lookup` (which runs), then answers; `where` raises `kind`."""
    rt = ScriptedRuntime([CALL, "The answer is 6."])
    if where == "output_validator":
        return Agent([lookup], rt, output_validator=_raiser(kind, is_async))
    return Agent([lookup], rt, requires_approval=_raiser(kind, is_async))


@given(where=st.sampled_from(["output_validator", "requires_approval"]), kind=st.sampled_from(sorted(RAISED)),
       is_async=st.booleans(), stream=st.booleans())
@settings(max_examples=60, deadline=None)
def test_a_callback_that_raises_anything_ends_the_run_typed_with_its_messages(
        where: str, kind: str, is_async: bool, stream: bool) -> None:
    RAN.clear()
    agent = _agent(where, kind, is_async)
    with pytest.raises(CallbackFailed) as info:
        if stream:
            list(agent.run_stream_sync("Look 3 up"))
        else:
            agent.run_sync("Look 3 up")
    error = info.value
    assert isinstance(error, RunError) and error.callback == where
    cause = error.__cause__
    if is_async and kind == "stop_iteration":  # Python makes it a RuntimeError leaving the coroutine
        cause = cause.__cause__ if cause is not None else None
    assert type(cause).__name__ == type(RAISED[kind]()).__name__
    assert error.messages and error.messages[0] == {"role": "user", "content": "Look 3 up"}
    if where == "output_validator":  # the tool ran, and its answer is kept
        assert RAN == [3] and any(m["role"] == "tool" for m in error.messages)
    else:  # asked before the call ran: it did not
        assert RAN == []
    assert len(str(error)) < 2_000


def test_a_validator_of_the_output_type_that_raises_is_a_callback_failure() -> None:
    class Answer(BaseModel):
        value: int

        @field_validator("value")
        @classmethod
        def check(cls, v: int) -> int:
            raise LookupError("the table is gone")

    agent = Agent([], ScriptedRuntime(['{"value":6}']), output_type=Answer)
    with pytest.raises(CallbackFailed) as info:
        agent.run_sync("go")
    assert info.value.callback == "output_type" and isinstance(info.value.__cause__, LookupError)


def test_model_retry_and_validation_failures_keep_their_meaning() -> None:
    seen: list[str] = []

    def picky(answer: str) -> str:
        seen.append(answer)
        if len(seen) == 1:
            raise ModelRetry("say it with a number")
        return answer

    result = Agent([], ScriptedRuntime(["six", "6"]), output_validator=picky).run_sync("go")
    assert result.output == "6" and seen == ["six", "6"]


@pytest.mark.parametrize("where", ["output_validator", "requires_approval"])
def test_keyboard_interrupt_from_a_callback_still_interrupts(where: str) -> None:
    def interrupt(_: Any) -> Any:
        raise KeyboardInterrupt

    rt = ScriptedRuntime([CALL, "Done."])
    agent = (Agent([lookup], rt, output_validator=interrupt) if where == "output_validator"
             else Agent([lookup], rt, requires_approval=interrupt))
    with pytest.raises(KeyboardInterrupt):
        agent.run_sync("Look 3 up")


def test_a_sync_validator_that_returns_past_the_timeout_times_the_run_out() -> None:
    def slow(answer: str) -> str:
        time.sleep(0.3)  # holds the event loop: no timer can fire
        return answer

    agent = Agent([], ScriptedRuntime(["6"]), output_validator=slow, timeout=0.1)
    with pytest.raises(RunTimeout) as info:
        agent.run_sync("go")
    assert info.value.messages


def test_an_async_validator_past_the_timeout_is_stopped() -> None:
    async def hangs(answer: str) -> str:
        await asyncio.sleep(30)
        return answer

    agent = Agent([], ScriptedRuntime(["6"]), output_validator=hangs, timeout=0.1)
    with pytest.raises(RunTimeout):
        agent.run_sync("go")


def test_an_async_predicate_decides() -> None:
    async def costly(call: Any) -> bool:
        await asyncio.sleep(0)
        return call.arguments.x > 2

    paused = Agent([lookup], ScriptedRuntime([CALL]), requires_approval=costly).run_sync("Look 3 up")
    assert [p.tool for p in paused.pending] == ["lookup"]


class Place(BaseModel):
    """A tool argument whose validator raises what `PLACE_RAISES` names."""

    city: str

    @field_validator("city")
    @classmethod
    def check(cls, v: str) -> str:
        raise RAISED[PLACE_RAISES[0]]()


PLACE_RAISES = ["type_error"]
WEATHER_RAN: list[str] = []


@tool
def weather(place: Place) -> str:
    """Weather in a place."""
    WEATHER_RAN.append(place.city)
    return "sunny"


@given(kind=st.sampled_from(sorted(set(RAISED) - {"value_error"})))  # a ValueError is pydantic's failure
@settings(max_examples=20, deadline=None)
def test_a_validator_of_a_tools_arguments_that_raises_anything_is_a_callback_failure(kind: str) -> None:
    """A validation failure of the arguments goes back to the model; anything else a validator
    raises is the user's code failing: the run ends typed, the tool not run, the messages kept."""
    PLACE_RAISES[0] = kind
    WEATHER_RAN.clear()
    rt = ScriptedRuntime(['[{"name":"weather","arguments":{"place":{"city":"Oslo"}}}]', "Sunny."])
    with pytest.raises(CallbackFailed) as info:
        Agent([weather], rt).run_sync("Weather in Oslo?")
    assert info.value.callback == "the argument validators of tool 'weather'" and WEATHER_RAN == []
    assert info.value.messages[0] == {"role": "user", "content": "Weather in Oslo?"}


class Named(BaseModel):
    """An output type whose validator raises what `NAMED_RAISES` names."""

    name: str

    @field_validator("name")
    @classmethod
    def check(cls, v: str) -> str:
        raise RAISED[NAMED_RAISES[0]]()


NAMED_RAISES = ["type_error"]


class Person(BaseModel):
    name: str


@given(kind=st.sampled_from(sorted(set(RAISED) - {"value_error"})), where=st.sampled_from(["output_type", "output_validator"]))
@settings(max_examples=30, deadline=None)
def test_extract_ends_typed_where_its_type_or_validator_raises_anything(kind: str, where: str) -> None:
    """As in a run: what a validator of the type, or `output_validator`, raises past a
    validation failure or `ModelRetry` is a `CallbackFailed` keeping the answer's messages."""
    from agentkit import extract

    NAMED_RAISES[0] = kind
    rt = ScriptedRuntime(['{"name":"Ann"}'])
    with pytest.raises(CallbackFailed) as info:
        if where == "output_type":
            extract(Named, "Ann", runtime=rt)
        else:
            extract(Person, "Ann", runtime=rt, output_validator=_raiser(kind, False))
    assert info.value.callback == where
    assert info.value.messages[-1] == {"role": "assistant", "content": '{"name":"Ann"}'}


@given(kind=st.sampled_from(sorted(set(RAISED) - {"value_error"})), how=st.sampled_from(["stream", "iter", "iter_end"]))
@settings(max_examples=30, deadline=None)
def test_streamed_and_item_by_item_extractions_end_typed_where_the_type_raises(kind: str, how: str) -> None:
    from agentkit import extract_iter, stream_extract

    NAMED_RAISES[0] = kind
    with pytest.raises(CallbackFailed) as info:
        if how == "stream":
            list(stream_extract(Named, "Ann", runtime=ScriptedRuntime(['{"name":"Ann"}'])))
        else:  # an item closed mid-stream, or only at the answer's end (a list of one, read whole)
            spellings = ['[{"name":"Ann"},{"name":"Bo"}]', '[{"name": "Ann"}, {"name": "Bo"}]'] if how == "iter" \
                else ['[{"name":"Ann"}]', '[{"name": "Ann"}]']
            rt = FunctionRuntime(lambda messages, info: next(t for t in spellings if info.grammar.accepts(t)))
            list(extract_iter(Named, "Ann and Bo", runtime=rt))
    assert info.value.callback == "output_type" and info.value.messages[-1]["role"] == "assistant"
