"""What constrained decoding costs inside the decode loop, with the default model on the CPU.

    python -m bench.runtime [--rounds 5] [--schema NAME ...] [--peer-tokens 48] [--model NAME|PATH]

1. Mask cost vs model step. A greedy constrained generation gives a token sequence; then, in
   interleaved rounds, the same tokens are fed through two loops: unconstrained (model step +
   argmax) and constrained (model step + everything the matcher adds: budget check, mask,
   masked selection, accept). The mask cost is the constrained loop's extra time per token;
   it is compared with the median unconstrained step. Round 1 also visits grammar states for
   the first time (lazy mask computation) and is reported apart as "cold".
2. Versus llama.cpp's own grammar sampler on the same schema and model: llama-cpp-python's
   `response_format` JSON-schema path and a GBNF grammar (our grammar's `to_gbnf()`), each
   timed per generated token against the same call without a grammar, interleaved. Ratios
   are of the time each adds per token.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, field


import grammar
import runtimes
from bench import models
from bench._progress import progress
from runtimes._sampling import Sampler
from runtimes._batch import Feed

SCHEMAS = {
    "person": {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 40}, "age": {"type": "integer", "minimum": 0},
                       "email": {"type": "string"}},
        "required": ["name", "age", "email"], "additionalProperties": False,
    },
    "weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]},
                       "days": {"type": "integer", "minimum": 1}},
        "required": ["city", "unit", "days"], "additionalProperties": False,
    },
    "order": {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
                "required": ["sku", "qty"], "additionalProperties": False}, "minItems": 1, "maxItems": 4},
            "gift": {"type": "boolean"},
        },
        "required": ["id", "items", "gift"], "additionalProperties": False,
    },
}
BUDGET = 256  # max_tokens of the reference generations

PROMPTS = {
    "person": "Describe a fictional customer as a JSON object with name, age and email.",
    "weather": "Ask for the weather in Lisbon for five days, as JSON.",
    "order": "Write an order with three different items as JSON.",
}


def chat(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@dataclass
class LoopTimes:
    """Per-token seconds, one list per round."""

    step: list[list[float]] = field(default_factory=list)  # model step + argmax, unconstrained
    added: list[list[float]] = field(default_factory=list)  # constrained loop minus unconstrained select


def feed(rt: runtimes.LlamaCpp, prompt: list[int], tokens: list[int], compiled: grammar.CompiledGrammar | None,
         ) -> tuple[list[float], list[float]]:
    """Feed `tokens` after `prompt`; per token: (model step + selection) and selection alone.

    With `compiled`, selection is what the decode loop does under a grammar (mask, masked
    greedy selection, accept, the check that the budget left can close the document); without,
    a plain argmax."""
    sampler = Sampler()
    matcher = grammar.Matcher(compiled, stop_when_complete=True) if compiled is not None else None
    rt.begin_slot(0, 0)
    ((logits,),) = rt.read_batch([Feed(0, 0, prompt, 1)])
    steps, selects = [], []
    for i, token in enumerate(tokens):
        start = time.perf_counter()
        if matcher is None:
            sampler.select(logits)
        else:  # what _DecodeLoop does per token, with the reference token accepted
            sampler.select(logits, matcher.next_token_mask())
            if not matcher.accept_token(token):
                raise AssertionError(f"token {token} at {i} left the grammar")
            if not matcher.is_complete():
                matcher.can_complete_within(BUDGET - i - 1)  # room left to close the document?
            matcher.is_terminated()
        selected = time.perf_counter()
        if i + 1 < len(tokens):
            ((logits,),) = rt.read_batch([Feed(0, len(prompt) + i, [token], 1)])
        end = time.perf_counter()
        selects.append(selected - start)
        steps.append(end - start)
    return steps, selects


def mask_cost(rt: runtimes.LlamaCpp, name: str, rounds: int) -> dict[str, float]:
    # The reference tokens come from a grammar object of their own, so the measured one starts cold.
    reference = rt.generate_sync(chat(PROMPTS[name]), grammar=grammar.from_json_schema(SCHEMAS[name]), max_tokens=BUDGET)
    started = time.perf_counter()
    compiled = rt.compiled(grammar.from_json_schema(SCHEMAS[name]))
    compile_ms = (time.perf_counter() - started) * 1e3
    if reference.finish_reason != "grammar_complete":
        raise SystemExit(f"{name}: the reference generation did not complete ({reference.finish_reason})")
    tokens = reference.token_ids
    prompt = rt._prompt_ids(chat(PROMPTS[name]), None)
    free_steps, added, cold_added = [], [], []
    with rt.model_lock:
        for r in range(rounds + 1):  # round 0 is cold: first visits of the grammar's states
            steps, free_select = feed(rt, prompt, tokens, None)
            _, constrained_select = feed(rt, prompt, tokens, compiled)
            extra = [c - f for c, f in zip(constrained_select, free_select, strict=True)]
            (cold_added if r == 0 else added).extend(extra)
            if r:
                free_steps.extend(steps)
        rt.forget_caches()  # slot 0 holds what was fed here, not what the scheduler last left
    step = statistics.median(free_steps)
    return {
        "tokens": len(tokens),
        "compile_ms": compile_ms,
        "step_ms": step * 1e3,
        "mask_mean_us": statistics.fmean(added) * 1e6,
        "mask_p50_us": statistics.median(added) * 1e6,
        "cold_mean_us": statistics.fmean(cold_added) * 1e6,
        "ratio_mean": statistics.fmean(added) / step,
        "ratio_p50": statistics.median(added) / step,
    }


def per_token(llama, schema_or_grammar: dict | object | None, prompt: str, max_tokens: int) -> float:
    """Seconds per generated token of one llama-cpp-python chat completion."""
    options: dict = {"max_tokens": max_tokens, "temperature": 0.0, "seed": 0}
    if isinstance(schema_or_grammar, dict):
        options["response_format"] = {"type": "json_object", "schema": schema_or_grammar}
    elif schema_or_grammar is not None:
        options["grammar"] = schema_or_grammar
    started = time.perf_counter()
    answer = llama.create_chat_completion(chat(prompt), **options)
    elapsed = time.perf_counter() - started
    return elapsed / max(answer["usage"]["completion_tokens"], 1)


def peer_cost(rt: runtimes.LlamaCpp, name: str, rounds: int, max_tokens: int, ours_added: float) -> dict[str, float]:
    from llama_cpp import Llama, LlamaGrammar

    llama = Llama(str(rt.model_path), n_threads=2, n_threads_batch=2, n_ctx=2048, verbose=False)
    gbnf = LlamaGrammar.from_string(grammar.from_json_schema(SCHEMAS[name]).to_gbnf(), verbose=False)
    free, schema_path, gbnf_path = [], [], []
    for _ in range(rounds):
        free.append(per_token(llama, None, PROMPTS[name], max_tokens))
        schema_path.append(per_token(llama, SCHEMAS[name], PROMPTS[name], max_tokens))
        gbnf_path.append(per_token(llama, gbnf, PROMPTS[name], max_tokens))
    llama.close()
    base = statistics.median(free)
    schema_added = statistics.median(schema_path) - base
    gbnf_added = statistics.median(gbnf_path) - base
    return {
        "free_ms": base * 1e3,
        "schema_x": statistics.median(schema_path) / base,
        "schema_added_ms": schema_added * 1e3,
        "gbnf_added_ms": gbnf_added * 1e3,
        "ours_vs_schema": ours_added / schema_added if schema_added > 0 else float("nan"),
        "ours_vs_gbnf": ours_added / gbnf_added if gbnf_added > 0 else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (at least 5)")
    parser.add_argument("--schema", action="append", choices=sorted(SCHEMAS), help="schemas to run (default all)")
    parser.add_argument("--peer-tokens", type=int, default=48, help="max_tokens of the llama.cpp sampler runs")
    models.add_model_option(parser)
    args = parser.parse_args()
    rounds = max(args.rounds, 5)
    rt = models.runtime(args.model)
    names = args.schema or list(SCHEMAS)
    print(f"model: {rt.model_path.name}, vocabulary {rt.vocabulary.size} ids, {rounds} interleaved rounds\n")
    print("1. mask cost inside the decode loop (same token ids fed to both loops)")
    print(f"{'schema':8} {'tokens':>6} {'compile ms':>10} {'step ms':>8} {'mask µs mean':>12} {'p50':>6} "
          f"{'cold µs':>8} {'mask/step mean':>14} {'p50':>6}")
    costs = {}
    for name in progress(names, "mask cost"):
        c = costs[name] = mask_cost(rt, name, rounds)
        print(f"{name:8} {c['tokens']:>6} {c['compile_ms']:>10.1f} {c['step_ms']:>8.2f} {c['mask_mean_us']:>12.1f} "
              f"{c['mask_p50_us']:>6.1f} {c['cold_mean_us']:>8.1f} {c['ratio_mean']:>13.2%} {c['ratio_p50']:>6.2%}")
    print("\n2. added time per token vs llama.cpp's own grammar sampler (llama-cpp-python, same model)")
    print(f"{'schema':8} {'free ms/tok':>11} {'json_schema ×':>13} {'+json_schema ms':>15} {'+GBNF ms':>9} "
          f"{'ours/json_schema':>16} {'ours/GBNF':>9}")
    for name in progress(names, "llama.cpp sampler"):
        p = peer_cost(rt, name, rounds, args.peer_tokens, costs[name]["mask_mean_us"] / 1e6)
        print(f"{name:8} {p['free_ms']:>11.2f} {p['schema_x']:>12.2f}× {p['schema_added_ms']:>15.2f} "
              f"{p['gbnf_added_ms']:>9.2f} {p['ours_vs_schema']:>16.4f} {p['ours_vs_gbnf']:>9.4f}")


if __name__ == "__main__":
    main()
