"""One naming rule for module functions: the bare name is sync, the `a` prefix async.
`stream_extract` is sync now; for one release it also iterates with `async for` (warning),
and `stream_extract_sync` is a deprecated alias."""

from __future__ import annotations

import inspect
import warnings

import pytest
from pydantic import BaseModel

import agentkit
from agentkit import astream_extract, stream_extract, stream_extract_sync
from runtimes.testing import ScriptedRuntime

ANSWER = '{"name":"Ann","age":31}'


class Person(BaseModel):
    name: str
    age: int


EXPECTED = [{}, {"name": "Ann"}, {"name": "Ann", "age": 31}, Person(name="Ann", age=31)]


def _is_async(fn: object) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)


def test_every_async_module_function_is_the_a_spelling_of_a_sync_one() -> None:
    functions = {n: getattr(agentkit, n) for n in agentkit.__all__ if inspect.isfunction(getattr(agentkit, n))}
    for name, fn in functions.items():
        twin = functions.get(name[1:]) if name.startswith("a") else None
        if _is_async(fn):
            assert twin is not None and not _is_async(twin), f"{name} is async: its sync twin {name[1:]} is missing"
        elif twin is not None:
            raise AssertionError(f"{name} is sync, yet named as the async twin of {name[1:]}")
    for name in ("extract", "stream_extract", "extract_iter"):
        assert not _is_async(functions[name]) and _is_async(functions["a" + name])


def test_stream_extract_is_a_plain_iterator() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the sync spelling warns of nothing
        values = list(stream_extract(Person, "Ann is 31.", runtime=ScriptedRuntime([ANSWER])))
        stream = stream_extract(Person, "Ann is 31.", runtime=ScriptedRuntime([ANSWER]))
        assert next(stream) == {} and iter(stream) is stream
        assert list(stream) == EXPECTED[1:]
    assert values == EXPECTED


async def test_astream_extract_is_the_async_one() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = [v async for v in astream_extract(Person, "Ann is 31.", runtime=ScriptedRuntime([ANSWER]))]
    assert values == EXPECTED


async def test_async_for_over_stream_extract_still_works_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match="astream_extract"):
        values = [v async for v in stream_extract(Person, "Ann is 31.", runtime=ScriptedRuntime([ANSWER]))]
    assert values == EXPECTED


def test_stream_extract_sync_is_a_deprecated_alias() -> None:
    with pytest.warns(DeprecationWarning, match="stream_extract is sync now"):
        values = list(stream_extract_sync(Person, "Ann is 31.", runtime=ScriptedRuntime([ANSWER])))
    assert values == EXPECTED


async def test_iterating_stream_extract_inside_an_event_loop_names_the_async_spelling() -> None:
    stream = stream_extract(Person, "x", runtime=ScriptedRuntime([ANSWER]))
    with pytest.raises(RuntimeError, match=r"async for \.\.\. in astream_extract"):
        next(stream)
    with pytest.raises(RuntimeError, match="astream_extract"), pytest.warns(DeprecationWarning):
        stream_extract_sync(Person, "x", runtime=ScriptedRuntime([ANSWER]))


def test_leaving_a_sync_stream_early_closes_it() -> None:
    stream = stream_extract(list[int], "x", runtime=ScriptedRuntime(["[1,2,3,4,5,6,7,8,9]"]))
    assert isinstance(next(stream), list)
    stream.close()
    with pytest.raises(StopIteration):
        next(stream)
