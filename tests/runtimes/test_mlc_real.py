"""`runtimes.MLC` on a genuine MLC-LLM model library: SmolLM2-135M-Instruct compiled for the CPU
by mlc-llm's own compiler over apache-tvm, run through the real relax VM, paged KV cache builtins
and the library's `apply_bitmask_inplace` kernel. Only the tokenizer is a stand-in
(`../shared/mlc/compat.py`, over Hugging Face `tokenizers`).

`scripts/build_mlc.sh` builds the library once per machine into a cache outside the clone; where
`../shared/mlc` or that build is absent (a user's clone) every test here skips with the reason.
Decoding with untuned CPU kernels costs 0.3-1 s per token and reading a prompt about 0.2 s per
token, so generations here are a few tokens long. `AGENTKIT_MLC_LONG=1` adds longer runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from pydantic import BaseModel

import grammar
from agentkit import Agent, StepLimitExceeded, extract, tool
from runtimes import MLC

pytestmark = pytest.mark.model

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO.parent / "shared" / "mlc"
LONG = os.environ.get("AGENTKIT_MLC_LONG") == "1"
long_run = pytest.mark.skipif(not LONG, reason="a long generation: set AGENTKIT_MLC_LONG=1")

CAPITAL = [{"role": "user", "content": "What is the capital of France?"}]
CITY = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 16}},
    "required": ["city"],
    "additionalProperties": False,
}
CITY_PROMPT = [{"role": "user", "content": "Name the capital of France as JSON."}]


@pytest.fixture(scope="module")
def folder() -> Path:
    """The folder `scripts/build_mlc.sh` builds into (model/ and lib/), or a skip saying why not."""
    if not RECIPE.is_dir():
        pytest.skip(f"no MLC build recipe at {RECIPE} (../shared/mlc beside the repository)")
    where = subprocess.run(
        ["bash", str(REPO / "scripts" / "build_mlc.sh"), "--where"], check=True, capture_output=True, text=True,
        env={**os.environ, "PYTHON": sys.executable},
    ).stdout.strip()
    found = Path(where)
    if not (found / "model" / "mlc-chat-config.json").is_file() or not (found / "lib" / "model-cpu.so").is_file():
        pytest.skip(f"the MLC model library is not built at {found}: run bash scripts/build_mlc.sh")
    return found


def load(folder: Path, **options) -> MLC:
    pytest.importorskip("tvm", reason="apache-tvm is not installed: run bash scripts/build_mlc.sh")
    if str(RECIPE) not in sys.path:
        sys.path.insert(0, str(RECIPE))
    import compat  # noqa: F401  (mlc_llm's compile-time package and its tokenizer, over apache-tvm)

    return MLC(folder / "model", folder / "lib" / "model-cpu.so", device="cpu", **options)


@pytest.fixture(scope="module")
def mlc(folder):
    runtime = load(folder)
    yield runtime
    asyncio.run(runtime.aclose())


@pytest.fixture(scope="module")
def capital_answer(mlc):
    return mlc.generate_sync(CAPITAL, max_tokens=12)


@pytest.fixture(scope="module")
def city_answer(mlc):
    return mlc.generate_sync(CITY_PROMPT, grammar=grammar.from_json_schema(CITY), max_tokens=16)


def test_the_real_library_loads_and_masks_with_its_own_kernel(mlc):
    assert (mlc.vocabulary.size, mlc.context_length, mlc.prefill_chunk) == (49152, 2048, 128)
    assert mlc.vocabulary.eos_ids
    assert mlc.mask_on_device, mlc.host_masking_reason
    assert mlc.host_masking_reason is None


def test_free_text_answers_the_question(capital_answer):
    assert capital_answer.finish_reason == "stop"
    assert "Paris" in capital_answer.text


def test_a_prompt_read_in_chunks_gives_the_answer_of_one_read_at_once(mlc, capital_answer):
    assert capital_answer.usage.prompt_tokens <= mlc.prefill_chunk
    whole = mlc.prefill_chunk
    mlc.prefill_chunk = 16  # the 37-token prompt in three chunks, each appended to the KV cache
    try:
        chunked = mlc.generate_sync(CAPITAL, max_tokens=12)
    finally:
        mlc.prefill_chunk = whole
    assert chunked.token_ids == capital_answer.token_ids


def test_a_json_schema_answer_validates(city_answer):
    assert city_answer.finish_reason == "grammar_complete" and not city_answer.steered
    jsonschema.validate(json.loads(city_answer.text), CITY)


def test_device_and_host_masking_choose_the_same_tokens(folder, mlc, city_answer):
    applied = []
    kernel = mlc._apply_bitmask

    def counted(*args):
        applied.append(args)
        return kernel(*args)

    mlc._apply_bitmask = counted
    try:
        again = mlc.generate_sync(CITY_PROMPT, grammar=grammar.from_json_schema(CITY), max_tokens=16)
    finally:
        mlc._apply_bitmask = kernel
    assert again == city_answer
    # Every forward pass's logits are masked by the kernel before a token is chosen; tokens the
    # grammar forces (jump-forward) are taken without a pass, so without a mask.
    assert len(applied) == again.usage.forward_passes, "the library's kernel did not mask every step"

    on_host = load(folder, mask_on_device=False)
    try:
        assert not on_host.mask_on_device and on_host.host_masking_reason == "mask_on_device=False was asked for"
        assert on_host.generate_sync(CITY_PROMPT, grammar=grammar.from_json_schema(CITY), max_tokens=16) == city_answer
    finally:
        asyncio.run(on_host.aclose())


def test_scores_are_read_from_the_row_before_the_device_masks_it(folder, mlc):
    g = grammar.from_json_schema(CITY)
    scored = mlc.generate_sync(CITY_PROMPT, grammar=g, max_tokens=16, scores=True)
    on_host = load(folder, mask_on_device=False)
    try:
        expected = on_host.generate_sync(CITY_PROMPT, grammar=g, max_tokens=16, scores=True)
    finally:
        asyncio.run(on_host.aclose())
    assert scored.token_ids == expected.token_ids and len(scored.token_scores) == len(scored.token_ids)
    for got, want in zip(scored.token_scores, expected.token_scores, strict=True):
        assert got.logprob == pytest.approx(want.logprob, abs=1e-4)
        assert got.masked_mass == pytest.approx(want.masked_mass, abs=1e-4)
    assert max(s.masked_mass for s in scored.token_scores) > 0.0  # what the kernel removed is seen


def test_a_small_budget_is_steered_to_a_whole_document(mlc, caplog):
    with caplog.at_level(logging.INFO, logger="runtimes"):
        gen = mlc.generate_sync(CITY_PROMPT, grammar=grammar.from_json_schema(CITY), max_tokens=5)
    assert gen.finish_reason == "grammar_complete" and gen.steered
    assert gen.usage.completion_tokens <= 5
    jsonschema.validate(json.loads(gen.text), CITY)
    assert any("budget steering took over" in r.getMessage() for r in caplog.records)


async def test_closing_a_stream_stops_within_a_step_and_frees_the_model(mlc, capital_answer):
    stream = mlc.stream([{"role": "user", "content": "Count from one to one hundred."}], max_tokens=400)
    pieces = []
    async with contextlib.aclosing(stream):
        async for piece in stream:
            pieces.append(piece)
            if len(pieces) == 2:
                closed_at = time.perf_counter()
                break
    stopped_in = time.perf_counter() - closed_at
    assert stream.generation is None
    assert stopped_in < 5, f"the generation ran {stopped_in:.1f} s after it was cancelled"
    after = await mlc.generate(CAPITAL, max_tokens=12)
    assert after == capital_answer  # the KV cache holds nothing of the cancelled generation


runs: list[str] = []


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: The city name.
    """
    runs.append(city)
    return f"12 degrees and cloudy in {city}"


def test_a_tool_call_through_the_agent(mlc):
    runs.clear()
    agent = Agent([get_weather], mlc, tool_choice="required", max_steps=1, max_tokens=48)
    with pytest.raises(StepLimitExceeded) as stopped:
        agent.run_sync("What is the weather in Paris?")
    assert len(runs) == 1 and isinstance(runs[0], str) and runs[0]
    results = [m for m in stopped.value.messages if m["role"] == "tool"]
    assert results and runs[0] in str(results[0]["content"])


class Person(BaseModel):
    name: str
    age: int


TEXT = "Ann Lee is 31 years old. She lives in Lisbon and plays chess on Sundays."


def test_a_typed_extract(mlc):
    person = extract(Person, TEXT, runtime=mlc, max_tokens=20)
    assert isinstance(person, Person) and isinstance(person.age, int)


@long_run
def test_an_agent_run_ends_with_an_answer(mlc):
    runs.clear()
    result = Agent([get_weather], mlc, tool_choice="required", max_steps=3, max_tokens=48).run_sync(
        "What is the weather in Paris? Use the tool."
    )
    assert runs and result.tool_calls[0].ok
    assert isinstance(result.output, str) and result.output.strip()


@long_run
async def test_seeded_sampling_is_the_same_on_device_and_host(folder, mlc):
    schema = grammar.from_json_schema({"type": "object", "properties": {"name": {"type": "string"}, "age": {
        "type": "integer"}}, "required": ["name", "age"], "additionalProperties": False})
    on_host = load(folder, mask_on_device=False)
    try:
        for seed in range(3):
            options = dict(grammar=schema, max_tokens=32, temperature=0.8, seed=seed)
            a = await mlc.generate([{"role": "user", "content": TEXT}], **options)
            b = await on_host.generate([{"role": "user", "content": TEXT}], **options)
            assert a == b and schema.accepts(a.text)
    finally:
        await on_host.aclose()
