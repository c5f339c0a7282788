"""The runtime's small parts: sampling, chat rendering, SSE parsing, retries, the scripted model."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grammar
from grammar import Grammar, Matcher
from grammar._ir import chars, lit, repeat, seq
from runtimes import ConnectionFailure, GrammarIgnored, RuntimeFailure, ServerError
from runtimes._chat import ChatTemplate, json_separators, tool_call_envelope, tool_instructions
from runtimes._hf_vocab import vocabulary_from_tokenizer_json
from runtimes._retry import with_retries
from runtimes._sampling import Sampler
from runtimes._sse import sse_data
from runtimes.testing import ScriptedRuntime, synthetic_vocabulary

SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
HERMES_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n# Tools\n<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools>\n"
    "Call with <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call><|im_end|>\n{%- endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather now.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}
DIGITS = Grammar({"root": seq(lit("n="), repeat(chars([(48, 57)]), 1, 3))})


# --- sampling ---------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), temperature=st.sampled_from([0.0, 0.5, 1.0, 3.0]),
       top_p=st.sampled_from([0.1, 0.8, 1.0]), prefix=st.sampled_from(["", "n=", "n=1"]))
def test_selection_never_leaves_the_mask(seed, temperature, top_p, prefix):
    vocab = synthetic_vocabulary()
    matcher = Matcher(grammar.compile(DIGITS, vocab))
    assert matcher.accept_bytes(prefix.encode()) or not prefix
    logits = np.random.default_rng(seed).standard_normal(vocab.size).astype(np.float32) * 5
    mask = matcher.next_token_mask()
    token = Sampler(temperature, top_p, seed).select(logits.copy(), mask)
    assert token in set(mask.allowed_ids().tolist())


def test_greedy_picks_the_best_allowed_token_and_tiny_top_p_is_greedy():
    logits = np.array([0.0, 5.0, 1.0, 9.0, 2.0], dtype=np.float32)
    assert Sampler().select(logits.copy()) == 3
    assert all(Sampler(1.0, 1e-6, s).select(logits.copy()) == 3 for s in range(20))


def test_seeded_sampling_follows_the_distribution():
    logits = np.log(np.array([0.7, 0.2, 0.1], dtype=np.float64)).astype(np.float32)
    sampler = Sampler(1.0, 1.0, seed=0)
    counts = np.bincount([sampler.select(logits.copy()) for _ in range(3000)], minlength=3) / 3000
    assert np.allclose(counts, [0.7, 0.2, 0.1], atol=0.04)


# --- chat rendering ---------------------------------------------------------------------------


def test_template_renders_with_generation_prompt():
    template = ChatTemplate(SMOLLM2_TEMPLATE)
    text = template.render([{"role": "user", "content": "Hi"}])
    assert text.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert not template.takes_tools and template.envelope == "json"


def test_tools_go_into_a_system_message_when_the_template_has_no_tool_support():
    template = ChatTemplate(SMOLLM2_TEMPLATE)
    text = template.render([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Rain?"}], [WEATHER])
    system = text.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\nBe brief.")
    assert "get_weather: Weather now." in system
    assert json.dumps(WEATHER["function"]["parameters"]) in system
    assert '{"name":"<tool name>","arguments":' in system
    assert text.count("<|im_start|>system") == 1


def test_templates_with_tool_support_get_the_tools_and_choose_hermes():
    template = ChatTemplate(HERMES_TEMPLATE)
    assert template.takes_tools and template.envelope == "hermes"
    text = template.render([{"role": "user", "content": "Rain?"}], [WEATHER])
    assert '"name": "get_weather"' in text and "You can call" not in text
    assert "<tools>" not in template.render([{"role": "user", "content": "Rain?"}])
    assert tool_call_envelope(None) == "json"
    assert tool_instructions([WEATHER], "hermes").splitlines()[1].startswith("<tool_call>")


def test_templates_asking_for_python_calls_choose_the_python_envelope():
    pythonic = (
        "{% if tools %}{{ 'Answer [func_name1(params_name1=params_value1, params_name2=params_value2), "
        "func_name2(params)]' }}{% endif %}{% for m in messages %}{{ m['content'] }}{% endfor %}"
    )
    assert tool_call_envelope(pythonic) == "python" and ChatTemplate(pythonic).envelope == "python"
    assert tool_call_envelope("{{ messages }} [1, 2] f(x)") == "json"
    text = tool_instructions([WEATHER], "python")
    assert "[tool_name(argument=value, ...)] for one call" in text and "- get_weather:" in text


def test_a_template_that_shows_json_gives_its_separators():
    chatml = "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' }}{% endfor %}"
    assert json_separators(chatml) is None and json_separators(None) is None
    assert json_separators("{% for t in tools %}{{ t | tojson }}{% endfor %}") == (", ", ": ")
    assert json_separators('{{- \'{"name": function name, "parameters": dictionary}\' }}') == (", ", ": ")
    assert json_separators('{{ "<tool_call>\\n{\\"name\\": <function-name>}" }}') == (", ", ": ")
    assert json_separators('{{ \'{"name":"x"}\' }}') is None  # compact JSON shows no blank


def test_template_errors_say_where():
    with pytest.raises(ValueError, match="does not parse"):
        ChatTemplate("{% for %}")
    refusing = ChatTemplate("{{ raise_exception('no system role') }}")
    with pytest.raises(ValueError, match="no system role"):
        refusing.render([{"role": "user", "content": "x"}])


# --- server-sent events -----------------------------------------------------------------------


async def lines_of(text: str):
    for line in text.split("\n"):
        yield line


async def test_sse_events_are_split_joined_and_cut_events_dropped():
    text = ": ping\n\ndata: {\"a\": 1}\n\nevent: x\ndata: line1\ndata: line2\nid: 3\n\ndata:no-space\n\ndata: cut"
    events = [e async for e in sse_data(lines_of(text))]
    assert events == ['{"a": 1}', "line1\nline2", "no-space"]


# --- retries ----------------------------------------------------------------------------------


async def test_retries_back_off_and_stop_at_non_retryable_errors(monkeypatch):
    slept: list[float] = []

    async def fake_sleep(seconds):
        slept.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    calls = 0

    async def flaky():
        nonlocal calls
        calls += 1
        if calls < 3:
            raise ConnectionFailure("refused")
        return "ok"

    assert await with_retries(flaky, retries=3, backoff=0.5, retryable=lambda e: isinstance(e, ConnectionFailure)) == "ok"
    assert slept == [0.5, 1.0]

    async def bad_request():
        raise ServerError("400", status=400)

    slept.clear()
    with pytest.raises(ServerError):
        await with_retries(bad_request, retries=3, backoff=0.5, retryable=lambda e: e.status >= 500)
    assert slept == []

    async def always_down():
        raise ConnectionFailure("refused")

    with pytest.raises(ConnectionFailure):
        await with_retries(always_down, retries=2, backoff=1.0, retryable=lambda e: True)
    assert slept == [1.0, 2.0]


# --- tokenizer.json vocabularies --------------------------------------------------------------


def test_byte_level_tokenizer_json_maps_back_to_bytes(tmp_path):
    spec = {
        "model": {"type": "BPE", "vocab": {"a": 0, "Ġb": 1, "Ã©": 2, "Ċ": 3}},
        "added_tokens": [{"id": 4, "content": "<|end|>", "special": True},
                         {"id": 5, "content": "<think>", "special": False}],
        "pre_tokenizer": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"},
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    vocab = vocabulary_from_tokenizer_json(path, eos_ids=[4], size=8)
    assert vocab.tokens[:4] == [b"a", b" b", "é".encode(), b"\n"]
    assert vocab.tokens[5] == b"<think>"
    assert vocab.eos_ids == {4} and {4, 6, 7} <= vocab.special_ids and vocab.size == 8


def test_sentencepiece_tokenizer_json_maps_spaces_and_byte_pieces(tmp_path):
    spec = {"model": {"type": "BPE", "vocab": {"<s>": 0, "▁hi": 1, "<0x0A>": 2, "é": 3}},
            "added_tokens": [{"id": 0, "content": "<s>", "special": True}],
            "decoder": {"type": "Sequence", "decoders": [{"type": "Replace"}, {"type": "ByteFallback"}]}}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    vocab = vocabulary_from_tokenizer_json(path, eos_ids=[])
    assert vocab.tokens == [b"", b" hi", b"\n", "é".encode()]


# --- the scripted model -----------------------------------------------------------------------


async def test_scripted_runtime_answers_in_order_and_checks_the_grammar():
    runtime = ScriptedRuntime(["n=12", "hello", "n=1234567"])
    first = await runtime.generate([{"role": "user", "content": "x"}], grammar=DIGITS, tools=[WEATHER])
    assert (first.text, first.finish_reason) == ("n=12", "grammar_complete")
    with pytest.raises(GrammarIgnored) as caught:
        await runtime.generate("x", grammar=DIGITS)
    assert caught.value.text == "hello"
    cut = await runtime.generate("x", grammar=DIGITS, max_tokens=4)
    assert (cut.text, cut.finish_reason) == ("n=12", "length")
    assert runtime.calls[0].tools == [WEATHER]
    with pytest.raises(RuntimeFailure, match="no response left"):
        await runtime.generate("x")


async def test_scripted_stream_gives_the_text_in_pieces():
    runtime = ScriptedRuntime(["héllo wörld, 日本"])
    stream = runtime.stream("x")
    assert "".join([p async for p in stream]) == "héllo wörld, 日本"
    assert stream.generation.finish_reason == "stop"


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10_000), top_p=st.floats(0.05, 0.999), size=st.sampled_from([5, 100, 3000]))
def test_the_nucleus_is_the_smallest_most_probable_set_reaching_top_p(seed, top_p, size):
    probs = np.random.default_rng(seed).dirichlet(np.full(size, 0.3))
    kept = Sampler(1.0, top_p)._nucleus(probs)
    order = np.argsort(-probs, kind="stable")
    cumulative = np.cumsum(probs[order])
    expected = int(np.searchsorted(cumulative, top_p * probs.sum())) + 1
    assert len(kept) == min(expected, size)
    assert np.isclose(probs[kept].sum(), cumulative[len(kept) - 1])
