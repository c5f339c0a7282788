"""Grammar-aligned sampling (`sampling="asap"`): repeated samples of one request come to follow
the model's distribution conditioned on the grammar, computed here exactly by teacher forcing
every token path of a small finite grammar through the test model."""

from __future__ import annotations

import asyncio
import math
import tracemalloc
import zlib
from collections import Counter, defaultdict

import numpy as np
import pytest

import grammar
import runtimes._asap
from runtimes import InvalidRequest, OpenAICompatible
from runtimes._asap import MAX_NODES, Trees, Walk
from runtimes.testing import GreedyTokenizer, RandomRuntime, render_plain

PROMPT = "Pick one."


def exact_distribution(rt: RandomRuntime, prompt: str, g: grammar.Grammar, temperature: float) -> dict[str, float]:
    """P(text | the answer is in the grammar) under the test model, over every token path."""
    tokens = GreedyTokenizer(rt.vocabulary).encode(render_plain(prompt, None))
    hashes: list[int] = []
    for token in tokens:
        hashes.append(zlib.crc32(token.to_bytes(8, "little", signed=True), hashes[-1] if hashes else 0))
    matcher = grammar.Matcher(grammar.compile(g, rt.vocabulary), stop_when_complete=True)
    found: dict[str, float] = defaultdict(float)

    def walk(prob: float, text: bytes) -> None:
        if matcher.is_terminated():  # the runtime ends here without asking the model
            found[text.decode()] += prob
            return
        row = rt._logits(tokens, hashes[-1]).astype(np.float64) / temperature
        probs = np.exp(row - row.max())
        probs /= probs.sum()
        for token in matcher.next_token_mask().allowed_ids().tolist():
            if token in rt.vocabulary.eos_ids:
                found[text.decode()] += prob * probs[token]
                continue
            assert matcher.accept_token(token)
            tokens.append(token)
            hashes.append(zlib.crc32(token.to_bytes(8, "little", signed=True), hashes[-1]))
            walk(prob * probs[token], text + rt.vocabulary.token_bytes(token))
            tokens.pop()
            hashes.pop()
            matcher.rollback(1)

    walk(1.0, b"")
    total = sum(found.values())
    return {text: p / total for text, p in found.items()}


def kl(samples: list[str], exact: dict[str, float]) -> float:
    counts = Counter(samples)
    n = len(samples)
    return sum(c / n * math.log(c / n / exact[text]) for text, c in counts.items())


async def _samples(rt: RandomRuntime, g: grammar.Grammar, n: int, sampling: str) -> list[str]:
    texts = []
    for seed in range(n):  # one after another: each sample's estimates guide the next
        texts.append((await rt.generate(PROMPT, grammar=g, temperature=1.0, seed=seed, max_tokens=16,
                                        sampling=sampling)).text)
    return texts


@pytest.mark.parametrize("pattern, seed", [("(a|b|c)[a-e]?[a-e]?", 0), ("(ab|ac|ba|x|xyz|yx)", 3), ("t(rue|ab)?[0-9]?", 5)])
def test_asap_samples_approach_the_grammar_conditioned_distribution(pattern, seed):
    g = grammar.from_regex(pattern)
    rt = RandomRuntime(seed=seed, scale=3.0)
    exact = exact_distribution(rt, PROMPT, g, 1.0)
    masked = asyncio.run(_samples(rt, g, 1500, "masked"))
    aligned = asyncio.run(_samples(RandomRuntime(seed=seed, scale=3.0), g, 1500, "asap"))
    assert set(aligned) <= set(exact) and set(masked) <= set(exact)  # every sample is in the grammar
    assert kl(aligned, exact) < 0.5 * kl(masked, exact), (kl(aligned, exact), kl(masked, exact))


def test_the_first_asap_sample_is_a_masked_sample():
    g = grammar.from_regex("(ab|ac|ba|x|xyz|yx)")
    first = RandomRuntime(seed=3).generate_sync(PROMPT, grammar=g, temperature=1.0, seed=7, sampling="asap")
    plain = RandomRuntime(seed=3).generate_sync(PROMPT, grammar=g, temperature=1.0, seed=7)
    assert first.text == plain.text


@pytest.mark.parametrize("options", [dict(temperature=0.0), dict(top_p=0.9, temperature=1.0), dict(grammar=None),
                                     dict(sampling="best")])
def test_asap_options_are_checked(options):
    request = dict(grammar=grammar.from_regex("a|b"), temperature=1.0, sampling="asap") | options
    with pytest.raises(InvalidRequest, match="sampling"):
        RandomRuntime().generate_sync(PROMPT, **request)


def test_a_server_refuses_asap():
    server = OpenAICompatible("http://127.0.0.1:9", model="m", max_retries=0)
    with pytest.raises(InvalidRequest, match="sampling.*local"):
        asyncio.run(server.generate(PROMPT, grammar=grammar.from_regex("a|b"), temperature=1.0, sampling="asap"))


def test_the_benchmarks_exact_distribution_is_the_teacher_forced_one():
    from bench.asap import exact_distribution as read_through_the_model

    g = grammar.from_regex("t(rue|ab)?[0-9]?")
    rt = RandomRuntime(seed=5, scale=3.0)
    messages = [{"role": "user", "content": PROMPT}]
    found, passes = read_through_the_model(rt, messages, g)
    expected = exact_distribution(rt, render_plain(messages, None), g, 1.0)
    assert passes > 0 and set(found) <= set(expected)
    for text, p in expected.items():  # the benchmark prunes paths below 1e-12 of the allowed mass
        assert found.get(text, 0.0) == pytest.approx(p, rel=1e-6, abs=1e-9)


def test_asap_samples_of_a_healed_prompt_stay_in_the_grammar_and_learn():
    g = grammar.from_regex("(ab|ac|ba|x|xyz|yx)")
    rt = RandomRuntime(seed=3, scale=3.0)
    texts = asyncio.run(_healed_samples(rt, g, 60))
    assert all(g.accepts(t) for t in texts)
    tree = next(iter(rt._asap._trees.values()))
    assert tree.nodes > 1 and tree.root.efg < 1.0  # the estimates were updated through the healed step


async def _healed_samples(rt: RandomRuntime, g: grammar.Grammar, n: int) -> list[str]:
    out = []
    for seed in range(n):
        generation = await rt.generate("Pick one", grammar=g, temperature=1.0, seed=seed, sampling="asap")
        assert generation.healed
        out.append(generation.text)
    return out


# --- memory (issue #65: the documented bounds came to some 1.6 GiB) ----------------------------


def test_the_trees_of_many_requests_hold_at_most_max_nodes_in_some_tens_of_mib():
    """Random walks through 40 requests' trees, 5,000 new prefixes each: past `MAX_NODES` in
    all, the least recently used trees go, and the memory they hold stays bounded."""
    rng = np.random.default_rng(0)
    width = 256
    allowed = np.arange(width)
    trees = Trees()
    kept = []  # the prefixes all the trees hold, after each request
    tracemalloc.start()
    try:
        for request in range(40):
            tree = trees.get(("request", request))
            made = 0
            while made < 5_000:
                walk = Walk(tree, 1.0)
                for token in rng.integers(0, width, size=50).tolist():
                    raw = np.zeros(width)
                    walk.reweight(raw, allowed, raw.copy())
                    before = tree.nodes
                    walk.took(token)
                    made += tree.nodes - before
                walk.finished()
                if walk.left:
                    break
            kept.append(sum(t.nodes for t in trees._trees.values()))
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 48 * 2**20  # MAX_NODES of some 330 bytes
    assert max(kept) <= MAX_NODES and kept[-1] == trees.nodes and len(trees._trees) < 40


def test_a_tree_that_holds_the_whole_budget_leaves_its_samples_masked(monkeypatch):
    monkeypatch.setattr(runtimes._asap, "MAX_NODES", 40)
    g = grammar.from_regex("[a-e]{3,6}")
    rt = RandomRuntime(seed=5, scale=3.0)
    first = asyncio.run(_samples(rt, g, 20, "asap"))
    [tree] = rt._asap._trees.values()
    assert rt._asap.nodes == tree.nodes == 40  # full: later samples leave it where it ends
    other = asyncio.run(rt.generate("Another.", grammar=g, temperature=1.0, seed=1, sampling="asap"))
    assert all(g.accepts(t) for t in [*first, other.text])
    assert tree.dropped and tree not in rt._asap._trees.values()  # it gave its room to the newer request
    assert rt._asap.nodes == sum(t.nodes for t in rt._asap._trees.values()) <= 40
