"""A system prompt made per run: `Agent(system_prompt=fn)`, `fn` (sync or async) given the run's
`RunContext`, called once per run; what it raises ends the run with `CallbackFailed`."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentkit import Agent, CallbackFailed, FinalResult, InvalidArgument, RunContext
from runtimes.testing import ScriptedRuntime


@dataclass
class User:
    name: str


def greeting(ctx: RunContext[User]) -> str:
    return f"The user is {ctx.deps.name}."


def test_a_prompt_function_is_called_per_run_with_the_runs_deps() -> None:
    rt = ScriptedRuntime(["Hi Ann.", "Hi Bo."])
    agent = Agent([], rt, system_prompt=greeting)
    first = agent.run_sync("Hello", deps=User("Ann"))
    second = agent.run_sync("Hello", deps=User("Bo"))
    assert first.messages[0] == {"role": "system", "content": "The user is Ann."}
    assert second.messages[0] == {"role": "system", "content": "The user is Bo."}
    assert rt.calls[1].messages[0]["content"] == "The user is Bo."


async def test_an_async_prompt_function_is_awaited_and_sees_the_conversation() -> None:
    seen: list[tuple[str, ...]] = []

    async def prompt(ctx: RunContext[None]) -> str:
        seen.append(tuple(m["role"] for m in ctx.messages))
        return "Be brief."

    class Answer(BaseModel):
        text: str

    rt = ScriptedRuntime(['{"text":"ok"}'])
    result = await Agent([], rt, system_prompt=prompt, output_type=Answer).run("Hello")
    assert seen == [("user",)]
    system = result.messages[0]["content"]
    assert system.startswith("Be brief.\n\n") and "JSON value of this form" in system  # the prompt first, then the output's


def test_a_prompt_function_that_raises_ends_the_run_before_any_request() -> None:
    def broken(ctx: RunContext[None]) -> str:
        raise LookupError("no profile")

    rt = ScriptedRuntime(["never"])
    with pytest.raises(CallbackFailed) as info:
        Agent([], rt, system_prompt=broken).run_sync("Hello")
    assert info.value.callback == "system_prompt" and isinstance(info.value.__cause__, LookupError)
    assert info.value.messages == [{"role": "user", "content": "Hello"}] and rt.calls == []


@pytest.mark.parametrize("returned", [42, b"bytes", "\ud800"])
def test_a_prompt_function_that_returns_no_text_ends_the_run(returned: object) -> None:
    with pytest.raises(CallbackFailed) as info:
        Agent([], ScriptedRuntime(["never"]), system_prompt=lambda ctx: returned).run_sync("Hello")  # type: ignore[arg-type, return-value]
    assert info.value.callback == "system_prompt"


def test_no_text_means_no_system_message_and_streams_call_it_too() -> None:
    rt = ScriptedRuntime(["a"])
    events = list(Agent([], rt, system_prompt=lambda ctx: "").run_stream_sync("Hello"))
    final = events[-1]
    assert isinstance(final, FinalResult) and final.result.messages[0]["role"] == "user"
    with pytest.raises(InvalidArgument):
        Agent([], rt, system_prompt=3)  # type: ignore[arg-type]


@settings(max_examples=20, deadline=None)
@given(names=st.lists(st.text(st.characters(categories=["L"]), min_size=1, max_size=8), min_size=1, max_size=4))
def test_each_run_has_its_own_prompt_once(names: list[str]) -> None:
    calls: list[str] = []

    def prompt(ctx: RunContext[User]) -> str:
        calls.append(ctx.deps.name)
        return f"The user is {ctx.deps.name}."

    rt = ScriptedRuntime(["ok"] * len(names))
    agent = Agent([], rt, system_prompt=prompt)
    for name in names:
        result = agent.run_sync("Hello", deps=User(name))
        assert result.messages[0]["content"] == f"The user is {name}."
    assert calls == names
