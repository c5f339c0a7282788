"""`agent.override(runtime=..., model_settings=...)`: swapped for the block, restored after (an
error too), nested, and held per task and per thread, so concurrent tests do not see each
other's."""

from __future__ import annotations

import asyncio
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import Agent, InvalidArgument
from runtimes.testing import ScriptedRuntime


def test_the_block_runs_on_the_override_and_after_it_on_the_agents_own() -> None:
    own, double = ScriptedRuntime(["own"]), ScriptedRuntime(["double"])
    agent = Agent([], own)
    with agent.override(runtime=double):
        assert agent.runtime is double
        assert agent.run_sync("?").output == "double"
    assert agent.runtime is own
    assert agent.run_sync("?").output == "own"


def test_override_settings_win_over_the_agents_and_the_runs_key_by_key() -> None:
    rt = ScriptedRuntime(["a", "b"])
    agent = Agent([], rt, temperature=0.7, seed=1)
    with agent.override(model_settings={"temperature": 0.0}):
        agent.run_sync("?", model_settings={"temperature": 0.5, "seed": 3})
    agent.run_sync("?", model_settings={"seed": 3})
    assert [(c.temperature, c.seed) for c in rt.calls] == [(0.0, 3), (0.7, 3)]


def test_overrides_nest_and_unwind_even_through_an_error() -> None:
    own, outer, inner = ScriptedRuntime([]), ScriptedRuntime([]), ScriptedRuntime([])
    agent = Agent([], own)
    with agent.override(runtime=outer, model_settings={"temperature": 0.3, "seed": 5}):
        with pytest.raises(KeyError):
            with agent.override(model_settings={"seed": 9}):
                assert agent.runtime is outer  # the inner block changes the settings alone
                inner.responses.append("x")
                with agent.override(runtime=inner):
                    agent.run_sync("?")
                raise KeyError("leaving")
        assert agent.runtime is outer
    assert agent.runtime is own
    assert (inner.calls[0].temperature, inner.calls[0].seed) == (0.3, 9)


async def test_concurrent_tasks_each_see_their_own_override() -> None:
    agent = Agent([], ScriptedRuntime([]))
    both_inside = asyncio.Barrier(2)

    async def run_as(name: str) -> str:
        with agent.override(runtime=ScriptedRuntime([name])):
            await both_inside.wait()  # both blocks are open at once
            return (await agent.run("?")).output

    assert await asyncio.gather(run_as("first"), run_as("second")) == ["first", "second"]


def test_another_thread_does_not_see_the_override() -> None:
    own = ScriptedRuntime([])
    agent = Agent([], own)
    seen = []
    with agent.override(runtime=ScriptedRuntime([])):
        worker = threading.Thread(target=lambda: seen.append(agent.runtime))
        worker.start()
        worker.join()
    assert seen == [own]


def test_a_bad_override_is_refused_before_the_block() -> None:
    agent = Agent([], ScriptedRuntime([]))
    with pytest.raises(InvalidArgument) as info:
        with agent.override(runtime="scripted"):  # type: ignore[arg-type]
            pass
    assert info.value.argument == "runtime"
    with pytest.raises(InvalidArgument):
        with agent.override(model_settings={"temprature": 0.1}):  # type: ignore[typeddict-unknown-key]
            pass


@settings(max_examples=20, deadline=None)
@given(depths=st.lists(st.booleans(), min_size=1, max_size=5))
def test_any_nesting_unwinds_to_what_held_before(depths: list[bool]) -> None:
    """Blocks nested in any order, each swapping the runtime or not: inside each, the innermost
    runtime given holds; after each, the one before it."""
    own = ScriptedRuntime([])
    agent = Agent([], own)

    def enter(level: int, expected: ScriptedRuntime) -> None:
        if level == len(depths):
            return
        swap = ScriptedRuntime([]) if depths[level] else None
        with agent.override(runtime=swap):
            inside = swap or expected
            assert agent.runtime is inside
            enter(level + 1, inside)
            assert agent.runtime is inside
        assert agent.runtime is expected

    enter(0, own)
