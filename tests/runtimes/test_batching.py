"""Continuous batching in the local decode loop: concurrent calls share forward passes and
each gets exactly what it would have got alone (the random-logits model depends only on
(seed, prompt), so batched and unbatched runs are comparable token for token)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from grammar import Grammar, Matcher
from grammar._ir import alt, chars, lit, repeat, seq
from runtimes import LocalRuntime, RuntimeFailure
from runtimes.testing import RandomRuntime

DIGITS = chars([(ord("0"), ord("9"))])
LETTERS = chars([(ord("a"), ord("z"))])
RECORD = Grammar({
    "root": seq(lit('{"id":'), alt(lit("0"), seq(chars([(49, 57)]), repeat(DIGITS, 0, 5))),
                lit(',"name":"'), repeat(LETTERS, 1, 30), lit('","ok":'), alt(lit("true"), lit("false")), lit("}")),
})
PREFIX = "You read the text and answer with one record of what it says, as JSON. " * 3

request_lists = st.lists(
    st.tuples(
        st.text(alphabet="abcdefgh ", min_size=1, max_size=30),  # the part after a shared prefix
        st.booleans(),  # under the grammar or free
        st.sampled_from([0.0, 1.0]),  # temperature
        st.integers(20, 60),  # max_tokens
    ),
    min_size=1,
    max_size=7,
)


async def answers(runtime: RandomRuntime, requests, stagger: bool = False) -> list:
    async def one(i, text, constrained, temperature, max_tokens):
        if stagger:
            await asyncio.sleep(0.001 * i)
        return await runtime.generate(PREFIX + text, grammar=RECORD if constrained else None,
                                      max_tokens=max_tokens, temperature=temperature, seed=i)

    return await asyncio.gather(*(one(i, *r) for i, r in enumerate(requests)))


def chosen(generation) -> tuple:
    """What a generation chose, without the passes it took: a batched step may carry fewer
    forced tokens than a solo one (each sequence's share of the pass), never other tokens."""
    usage = generation.usage
    assert 1 <= usage.forward_passes <= usage.completion_tokens
    return (generation.text, generation.finish_reason, generation.token_ids, generation.steered_from,
            usage.prompt_tokens, usage.completion_tokens)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests=request_lists, max_batch=st.integers(2, 5), batch_tokens=st.integers(8, 64),
       prefill_chunk=st.integers(1, 40), stagger=st.booleans())
async def test_batched_calls_get_exactly_what_they_get_alone(requests, max_batch, batch_tokens, prefill_chunk, stagger):
    expected = await answers(RandomRuntime(seed=3), requests)  # one at a time: no batch
    batched = RandomRuntime(seed=3, max_batch=max_batch, batch_tokens=max(batch_tokens, max_batch),
                            prefill_chunk=prefill_chunk)
    got = await answers(batched, requests, stagger)
    assert [chosen(g) for g in got] == [chosen(g) for g in expected]
    for generation, (_, constrained, _, _) in zip(got, requests, strict=True):
        if constrained:
            assert generation.finish_reason == "grammar_complete"
            assert RECORD.accepts(generation.text)
    assert max(batched.batch_sizes) <= max_batch


async def test_concurrent_calls_share_forward_passes():
    # Steps a few milliseconds long: all eight calls are admitted before the shortest answer
    # can finish (with instant steps, one could end before the eighth arrived).
    runtime = RandomRuntime(seed=1, max_batch=8, step_delay=0.003)
    got = await answers(runtime, [(f"text {i}", True, 0.0, 40) for i in range(8)])
    assert all(RECORD.accepts(g.text) for g in got)
    longest = max(g.usage.completion_tokens for g in got)
    assert max(runtime.batch_sizes) == 8
    assert runtime.forward_calls <= longest + 8  # one pass per step, not one per call and step


def counting_reads(runtime: RandomRuntime) -> list[int]:
    """The tokens each of `runtime`'s steps reads, as they are read."""
    read: list[int] = []
    original = runtime.read_batch

    def counting(feeds):
        read.append(sum(len(f.tokens) for f in feeds))
        return original(feeds)

    runtime.read_batch = counting
    return read


async def test_a_shared_prompt_prefix_is_read_once():
    runtime = RandomRuntime(seed=1, max_batch=4, batch_tokens=64, prefill_chunk=64)
    read = counting_reads(runtime)
    await answers(runtime, [(f"item {i}", True, 0.0, 30) for i in range(4)])
    prompt = len(runtime._prompt_ids(PREFIX + "item 0", None))
    generated = runtime.forward_calls * 4  # at most one decoded token per call and step
    assert sum(read) < 2 * prompt + generated  # the prefix was not read four times


async def test_a_prompt_sharing_only_a_few_tokens_leaves_a_long_cache_for_the_next_turn():
    """A short prompt that shares only its first tokens with a long cached one (another
    template's system line) is started in an empty slot: the next turn of the long one reads
    only its new tokens."""
    runtime = RandomRuntime(seed=1, max_batch=4, batch_tokens=512, prefill_chunk=512)
    read = counting_reads(runtime)
    await runtime.generate(PREFIX + "first turn", grammar=RECORD, max_tokens=30)
    await runtime.generate(PREFIX[:12] + "an unrelated question", grammar=RECORD, max_tokens=30)
    read.clear()
    await runtime.generate(PREFIX + "first turn, then the second", grammar=RECORD, max_tokens=30)
    prompt = len(runtime._prompt_ids(PREFIX + "first turn, then the second", None))
    assert read[0] < prompt // 4  # the shared prefix came from the cache


async def test_cancelling_one_call_leaves_the_others_running():
    runtime = RandomRuntime(seed=2, max_batch=4, step_delay=0.002)
    requests = [(f"text {i}", True, 0.0, 60) for i in range(3)]
    expected = await answers(RandomRuntime(seed=2), requests)
    others = [asyncio.create_task(runtime.generate(PREFIX + t, grammar=RECORD, max_tokens=m, temperature=0.0, seed=i))
              for i, (t, _, _, m) in enumerate(requests)]
    endless = asyncio.create_task(runtime.generate("go on", max_tokens=100_000, temperature=1.0, seed=9))
    while runtime.forward_calls < 5:
        await asyncio.sleep(0.002)
    endless.cancel()
    with pytest.raises(asyncio.CancelledError):
        await endless
    assert await asyncio.gather(*others) == expected
    assert runtime.forward_calls < 1000


async def test_a_budget_steered_call_in_a_batch_still_closes_its_document():
    runtime = RandomRuntime(seed=5, max_batch=4, scale=8.0)
    shortest = Matcher(grammar.compile(RECORD, runtime.vocabulary)).min_tokens_to_complete()
    tight = [(f"tight {i}", True, 1.0, shortest + 2) for i in range(2)]
    loose = [(f"loose {i}", False, 1.0, 80) for i in range(2)]
    got = await answers(runtime, tight + loose)
    for generation in got[:2]:
        assert generation.finish_reason == "grammar_complete"
        assert RECORD.accepts(generation.text)
        # A prompt ending in a word is healed: its re-written last token is not counted against max_tokens.
        assert generation.usage.completion_tokens <= shortest + 2 + (1 if generation.healed else 0)
    assert any(g.steered_from is not None for g in got[:2])


async def test_calls_wait_for_cache_room_and_all_finish():
    runtime = RandomRuntime(seed=4, max_batch=4, cache_cells=400)
    runtime.context_length = 400
    requests = [(f"text {i}", True, 0.0, 60) for i in range(6)]
    prompt = len(runtime._prompt_ids(PREFIX + "text 0", None))
    got = await answers(runtime, requests)
    assert all(g.finish_reason == "grammar_complete" for g in got)
    assert max(runtime.batch_sizes) <= 400 // (prompt + 60)


async def test_a_call_queued_while_an_admission_looks_is_started_not_failed(monkeypatch):
    """The decoder admits what waits, then, with nothing running, fails the head of the queue
    as one that can never start. A call queued between the two was never tried: it is tried
    on the next pass, not failed (under load, concurrent calls met this)."""
    runtime = RandomRuntime(seed=4, max_batch=2)
    scheduler = runtime._scheduler
    admit = scheduler._admit
    calls = []

    def looks_too_early():  # the first admission saw the queue before the call came
        calls.append(None)
        return [] if len(calls) == 1 else admit()

    monkeypatch.setattr(scheduler, "_admit", looks_too_early)
    generation = await runtime.generate(PREFIX + "text", grammar=RECORD, max_tokens=40, temperature=0.0,
                                        heal=False)
    assert generation.finish_reason == "grammar_complete" and len(calls) > 1


async def test_streams_in_a_batch_deliver_their_own_text():
    runtime = RandomRuntime(seed=6, max_batch=3)

    async def streamed(i):
        stream = runtime.stream(PREFIX + f"s{i}", grammar=RECORD, max_tokens=50, temperature=0.0, seed=i)
        pieces = [piece async for piece in stream]
        return "".join(pieces), stream.generation

    for text, generation in await asyncio.gather(*(streamed(i) for i in range(3))):
        assert text == generation.text and RECORD.accepts(text)


class FailingRuntime(RandomRuntime):
    """Its first model step that serves two sequences or more raises, as a model that runs out
    of memory would; `failed` is how many sequences that step served."""

    failed = 0

    def read_batch(self, feeds):
        if not self.failed and len(feeds) >= 2:
            self.failed = len(feeds)
            raise MemoryError("no room for the batch")
        return super().read_batch(feeds)


async def test_a_failed_model_step_fails_its_calls_with_a_typed_error_and_the_runtime_goes_on():
    runtime = FailingRuntime(seed=7, max_batch=4)
    got = await asyncio.gather(*(runtime.generate(PREFIX + f"x{i}", grammar=RECORD, max_tokens=40, seed=i)
                                 for i in range(3)), return_exceptions=True)
    failures = [g for g in got if isinstance(g, BaseException)]
    assert len(failures) == runtime.failed >= 2
    assert all(isinstance(f, RuntimeFailure) and "no room for the batch" in str(f) for f in failures)
    assert all(RECORD.accepts(g.text) for g in got if not isinstance(g, BaseException))
    after = await runtime.generate(PREFIX + "again", grammar=RECORD, max_tokens=40)
    assert after.finish_reason == "grammar_complete"


async def test_closing_waits_for_running_calls_then_refuses_new_ones():
    runtime = RandomRuntime(seed=8, max_batch=2, step_delay=0.001)
    running = [asyncio.create_task(runtime.generate(PREFIX + f"c{i}", grammar=RECORD, max_tokens=40, seed=i))
               for i in range(2)]
    for _ in range(10_000):  # until one model step serves both: both calls are running
        if runtime.batch_sizes and max(runtime.batch_sizes) >= 2:
            break
        await asyncio.sleep(0.001)
    await runtime.aclose()
    assert all(g.finish_reason == "grammar_complete" for g in await asyncio.gather(*running))
    with pytest.raises(RuntimeFailure, match="closed"):
        await runtime.generate("x", max_tokens=2)


class SerialOnly(RandomRuntime):
    """A model that can only read one sequence (the default read_batch), asked to batch."""

    read_batch = LocalRuntime.read_batch


async def test_batching_a_model_that_reads_one_sequence_is_a_clear_error():
    runtime = SerialOnly(seed=0, max_batch=4)
    with pytest.raises(RuntimeFailure, match="max_batch=4 needs a model that reads several sequences"):
        await runtime.generate("x", max_tokens=2)
