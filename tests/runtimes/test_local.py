"""The shared local decode loop, exercised through the random-logits test runtime."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from grammar import Grammar, Matcher, Vocabulary
from grammar._ir import chars, lit, plus, ref, repeat, seq, alt, opt
from runtimes import Generation, InvalidRequest, RuntimeFailure, Usage
from runtimes._protocol import Request
from runtimes._sampling import Sampler
from runtimes.checks import GREEDY_BELOW
from runtimes.testing import RandomRuntime, synthetic_vocabulary

DIGITS = chars([(ord("0"), ord("9"))])
LETTERS = chars([(ord("a"), ord("z")), (0xE9, 0xE9), (0x65E5, 0x65E5)])  # a-z, é, 日

# {"id":<int>,"tags":["..",...],"ok":true|false} with bounded sizes.
RECORD = Grammar({
    "root": seq(lit('{"id":'), alt(lit("0"), seq(chars([(49, 57)]), repeat(DIGITS, 0, 5))),
                lit(',"tags":['), opt(seq(ref("tag"), repeat(seq(lit(","), ref("tag")), 0, 3))),
                lit('],"ok":'), alt(lit("true"), lit("false")), lit("}")),
    "tag": seq(lit('"'), repeat(LETTERS, 1, 10), lit('"')),
})
# Nested lists: recursion, so the matcher's pushdown part is used too.
NESTED = Grammar({"root": ref("list"), "list": seq(lit("["), opt(seq(ref("item"), repeat(seq(lit(","), ref("item")), 0, 4))), lit("]")),
                  "item": alt(plus(DIGITS), ref("list"))})
GRAMMARS = [RECORD, NESTED]


@pytest.fixture(scope="module")
def runtime() -> RandomRuntime:
    return RandomRuntime(seed=1)


def shortest_possible(g: Grammar, vocab: Vocabulary) -> int:
    return Matcher(grammar.compile(g, vocab)).min_tokens_to_complete()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(GRAMMARS), seed=st.integers(0, 2**16), temperature=st.sampled_from([0.0, 0.7, 1.5]),
       top_p=st.sampled_from([1.0, 0.9]), extra=st.integers(0, 40))
async def test_constrained_generation_with_enough_budget_is_a_whole_sentence(
    runtime, which, seed, temperature, top_p, extra
):
    budget = shortest_possible(which, runtime.vocabulary) + extra
    gen = await runtime.generate("prompt", grammar=which, max_tokens=max(budget, 1),
                                 temperature=temperature, top_p=top_p, seed=seed)
    assert gen.finish_reason == "grammar_complete"
    assert which.accepts(gen.text)
    # A raw prompt ending in a word is healed: its last token, written again, is not the answer's.
    assert gen.usage.completion_tokens <= max(budget, 1) + (1 if gen.healed else 0)
    assert runtime.vocabulary.decode(gen.token_ids) == gen.healed + gen.text.encode("utf-8")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), short=st.integers(1, 5))
async def test_budget_below_the_shortest_document_ends_with_length_and_a_valid_prefix(runtime, seed, short):
    needed = shortest_possible(RECORD, runtime.vocabulary)
    gen = await runtime.generate("p", grammar=RECORD, max_tokens=max(needed - short, 1), temperature=1.0, seed=seed)
    assert gen.finish_reason == "length"
    assert not RECORD.accepts(gen.text)
    prefix = Matcher(grammar.compile(RECORD, runtime.vocabulary))
    assert prefix.accept_bytes(gen.text.encode())


TOOL_CALLS = grammar.tool_calls([
    grammar.ToolSchema("search", {"type": "object", "properties": {
        "query": {"type": "string", "minLength": 3}, "limit": {"type": "integer", "minimum": 1}},
        "required": ["query", "limit"], "additionalProperties": False}),
    grammar.ToolSchema("book_restaurant_table", {"type": "object", "properties": {
        "restaurant": {"type": "string"}, "party_size": {"type": "integer"},
        "seating": {"enum": ["indoor", "outdoor", "bar counter"]}, "notes": {"type": "array", "items": {"type": "string"}}},
        "required": ["restaurant", "party_size", "seating", "notes"], "additionalProperties": False}),
], max_calls=2)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), temperature=st.sampled_from([0.0, 1.0, 2.0]), budget=st.integers(1, 90))
async def test_a_budget_that_can_hold_a_document_always_ends_with_one(smollm2_vocabulary, seed, temperature, budget):
    """Whatever the model prefers, a generation whose budget can be proved enough at the start
    ends with a whole document; where the runtime overrode the model, it says from where."""
    runtime = RandomRuntime(smollm2_vocabulary, seed=seed)
    gen = await runtime.generate("call", grammar=TOOL_CALLS, max_tokens=budget, temperature=temperature, seed=seed)
    if Matcher(runtime.compiled(TOOL_CALLS)).can_complete_within(budget):
        assert gen.finish_reason == "grammar_complete", gen.text
        assert TOOL_CALLS.accepts(gen.text)
    assert gen.usage.completion_tokens <= budget
    if gen.steered:
        assert 0 <= gen.steered_from <= len(gen.text)
    elif gen.finish_reason == "grammar_complete":
        assert gen.steered_from is None


async def test_greedy_and_seeded_sampling_are_reproducible(runtime):
    messages = [{"role": "user", "content": "a list please"}]
    for options in ({"temperature": 0.0}, {"temperature": 0.9, "top_p": 0.95, "seed": 7}):
        first = await runtime.generate(messages, grammar=NESTED, max_tokens=40, **options)
        second = await runtime.generate(messages, grammar=NESTED, max_tokens=40, **options)
        assert first == second


async def test_unconstrained_generation_decodes_its_tokens(runtime):
    gen = await runtime.generate("free text", max_tokens=30, temperature=1.0, seed=3)
    assert gen.finish_reason in ("stop", "length")
    assert gen.healed == b"text"  # "free text" ends in a word: its last token is written again
    assert gen.text == runtime.vocabulary.decode(gen.token_ids)[len(gen.healed):].decode("utf-8", errors="replace")
    assert gen.usage.prompt_tokens > 0


async def test_end_of_sequence_stops_an_unconstrained_generation():
    vocab = synthetic_vocabulary()
    (eos,) = vocab.eos_ids
    runtime = RandomRuntime(vocab, seed=0)
    stops = [await runtime.generate("x", max_tokens=2000, temperature=1.0, seed=s) for s in range(4)]
    assert any(g.finish_reason == "stop" for g in stops)
    for g in stops:
        assert eos not in g.token_ids
        assert (g.finish_reason == "stop") == (g.usage.completion_tokens == len(g.token_ids) + 1)


def split_character_vocabulary() -> Vocabulary:
    """Only single bytes: every non-ASCII character is split across tokens."""
    tokens = [bytes([b]) for b in range(256)] + [b""]
    return Vocabulary.from_tokens(tokens, eos_ids=[256], special_ids=[256])


async def test_stream_holds_back_split_characters_and_matches_generate():
    runtime = RandomRuntime(split_character_vocabulary(), seed=2)
    word = Grammar({"root": repeat(chars([(0xE9, 0xE9), (0x65E5, 0x65E5), (0x1F600, 0x1F600)]), 3, 6)})
    stream = runtime.stream("x", grammar=word, max_tokens=40, temperature=1.0, seed=5)
    pieces = [piece async for piece in stream]
    whole = await runtime.generate("x", grammar=word, max_tokens=40, temperature=1.0, seed=5)
    assert "".join(pieces) == whole.text
    assert all("\ufffd" not in p for p in pieces)
    assert len(whole.token_ids) > len(whole.text)  # characters really were split
    assert stream.generation == whole


async def test_concurrent_callers_queue_and_the_event_loop_stays_free():
    runtime = RandomRuntime(seed=4, step_delay=0.002)
    prompts = [f"prompt {i}" for i in range(6)]
    sequential = [await runtime.generate(p, grammar=RECORD, max_tokens=30) for p in prompts]
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    beat = asyncio.create_task(ticker())
    concurrent = await asyncio.gather(*(runtime.generate(p, grammar=RECORD, max_tokens=30) for p in prompts))
    beat.cancel()
    assert concurrent == sequential
    assert ticks > len(prompts)


async def test_cancelling_stops_the_worker_and_frees_the_model():
    runtime = RandomRuntime(seed=0, step_delay=0.005)
    task = asyncio.create_task(runtime.generate("long", max_tokens=100_000, temperature=1.0, seed=1))
    while runtime.forward_calls < 3:
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    stopped_at = runtime.forward_calls
    after = await runtime.generate("next", grammar=RECORD, max_tokens=40)
    assert after.finish_reason == "grammar_complete"
    assert runtime.forward_calls - stopped_at == after.usage.forward_passes  # nothing else ran
    assert stopped_at < 1000


async def test_closing_a_stream_early_cancels_the_generation():
    runtime = RandomRuntime(seed=0, step_delay=0.002)
    stream = runtime.stream("long", max_tokens=100_000, temperature=1.0, seed=2)
    async with contextlib.aclosing(stream):
        async for _ in stream:
            break
    stopped_at = runtime.forward_calls
    again = await runtime.generate("again", max_tokens=5)
    assert runtime.forward_calls - stopped_at == again.usage.completion_tokens
    assert stream.generation is None


async def test_the_context_window_bounds_the_budget():
    runtime = RandomRuntime(seed=0)
    runtime.context_length = 40
    gen = await runtime.generate("abc", max_tokens=1000, temperature=1.0, seed=0)
    assert gen.usage.prompt_tokens + gen.usage.completion_tokens <= 40
    with pytest.raises(RuntimeFailure, match="context window"):
        await runtime.generate("x" * 50, max_tokens=5)


async def test_tools_are_shown_to_the_model():
    runtime = RandomRuntime(seed=0)
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather now.",
                                               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    plain = runtime._prompt_ids([{"role": "user", "content": "hi"}], None)
    with_tools = runtime._prompt_ids([{"role": "user", "content": "hi"}], tools)
    assert len(with_tools) > len(plain)
    assert b"get_weather" in runtime.vocabulary.decode(with_tools)


@pytest.mark.parametrize("bad", [{"max_tokens": 0}, {"temperature": -1.0}, {"top_p": 0.0}, {"top_p": 1.5}])
async def test_invalid_arguments_are_refused(runtime, bad):
    with pytest.raises(ValueError):
        await runtime.generate("x", **bad)


def test_usage_adds_up():
    assert Usage(3, 4) + Usage(1, 2) == Usage(4, 6)
    assert (Usage(3, 4) + Usage(1, 2)).total_tokens == 10


def test_generation_is_a_plain_record():
    g = Generation("x", "stop", Usage(1, 1), [5])
    assert (g.text, g.finish_reason, g.token_ids) == ("x", "stop", [5])


async def test_a_timeout_cancels_the_generation_and_frees_the_model():
    runtime = RandomRuntime(seed=0, step_delay=0.005)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(runtime.generate("slow", max_tokens=100_000, temperature=1.0), 0.05)
    stopped_at = runtime.forward_calls
    quick = await runtime.generate("quick", max_tokens=3)
    assert runtime.forward_calls - stopped_at == quick.usage.completion_tokens


async def test_a_closed_runtime_refuses_work():
    runtime = RandomRuntime(seed=0)
    await runtime.generate("x", max_tokens=2)
    await runtime.aclose()
    with pytest.raises(RuntimeFailure, match="closed"):
        await runtime.generate("x", max_tokens=2)


async def test_calls_without_a_seed_differ_but_a_runtime_seed_makes_them_reproducible():
    async def answers(runtime_seed):
        runtime = RandomRuntime(seed=runtime_seed)
        return [(await runtime.generate("same", grammar=RECORD, max_tokens=40, temperature=2.0)).text for _ in range(4)]

    first, again = await answers(11), await answers(11)
    assert first == again
    assert len(set(first)) > 1


# --- hostile requests (issue #65) ----------------------------------------------------------------

@pytest.mark.parametrize("max_batch", [1, 3])
async def test_an_empty_prompt_is_refused_not_spun_on(max_batch):
    runtime = RandomRuntime(seed=0, max_batch=max_batch, batch_tokens=16 if max_batch > 1 else None)
    with pytest.raises(InvalidRequest, match="the prompt is empty") as caught:
        await asyncio.wait_for(runtime.generate(""), 10)  # the loop spun on it before: a timeout, not a hang
    assert caught.value.argument == "messages"
    with pytest.raises(InvalidRequest, match="the prompt is empty"):
        await asyncio.wait_for(anext(aiter(runtime.stream(""))), 10)
    assert (await runtime.generate("x", max_tokens=2)).usage.completion_tokens >= 1  # the loop goes on serving


def test_the_decode_loop_never_starts_a_sequence_with_nothing_to_read():
    runtime = RandomRuntime(seed=0)
    sequence = runtime._sequence(Request("x"), 0, None, threading.Event())
    sequence.prompt = []  # as a runtime whose tokenizer reads no token would hand it over
    runtime._scheduler.submit(sequence)
    with pytest.raises(RuntimeFailure, match="empty prompt"):
        sequence.future.result(timeout=10)


@pytest.mark.parametrize("temperature", [5e-324, 1e-308, 1e-200, 1e-6])
async def test_a_temperature_below_the_greedy_floor_is_greedy(runtime, temperature):
    greedy = await runtime.generate("abc", grammar=RECORD, max_tokens=40)
    tiny = await runtime.generate("abc", grammar=RECORD, max_tokens=40, temperature=temperature, seed=5)
    free = await runtime.generate("abc", max_tokens=12, temperature=temperature, seed=5)
    assert tiny.token_ids == greedy.token_ids
    assert free.token_ids == (await runtime.generate("abc", max_tokens=12)).token_ids
    assert Request("abc", temperature=temperature).temperature == 0.0 < GREEDY_BELOW
    with pytest.raises(InvalidRequest, match="temperature of at least"):
        await runtime.generate("abc", grammar=RECORD, temperature=temperature, sampling="asap")


async def test_a_temperature_at_the_floor_samples():
    assert Request("abc", temperature=GREEDY_BELOW).temperature == GREEDY_BELOW
    assert not Sampler(GREEDY_BELOW).greedy and Sampler(GREEDY_BELOW / 2).greedy
