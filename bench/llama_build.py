"""What a llama.cpp build's instruction sets cost: prompt and decode speed of the installed build.

    python -m bench.llama_build [--model PATH] [--rounds 5] [--prompt-tokens 600] [--decode-tokens 128]

Run it once in each environment to compare (for example the probed build of
`scripts/build_llama.sh` in one venv and `AGENTKIT_LLAMA_BUILD=native` in another, on a machine
where both run). It times llama.cpp itself, not the grammar: a prompt read in one batch and
greedy single-token decode steps, medians over interleaved-free rounds after one warm-up.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="a GGUF file (default: the default model)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--prompt-tokens", type=int, default=600)
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import llama_cpp

    if args.model:
        model = args.model
    else:
        from runtimes import default_model_path

        model = str(default_model_path())
    context = args.prompt_tokens + args.decode_tokens + 8
    llama = llama_cpp.Llama(
        model, n_ctx=context, n_batch=args.prompt_tokens, n_threads=args.threads,
        n_threads_batch=args.threads, verbose=False,
    )
    text = " ".join(f"Item {i}: the quick brown fox jumps over the lazy dog." for i in range(args.prompt_tokens))
    prompt = llama.tokenize(text.encode(), add_bos=True)[: args.prompt_tokens]
    print(f"llama.cpp compiled for: {llama_cpp.llama_print_system_info().decode().strip()}")
    print(f"model {model}, {args.threads} threads")

    def last_logits() -> np.ndarray:
        pointer = llama_cpp.llama_get_logits_ith(llama.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(llama.n_vocab(),))

    prefill, decode = [], []
    for round_ in range(args.rounds + 1):
        llama.reset()
        started = time.perf_counter()
        llama.eval(prompt)
        prompt_s = time.perf_counter() - started
        token = int(np.argmax(last_logits()))
        started = time.perf_counter()
        for _ in range(args.decode_tokens):
            llama.eval([token])
            token = int(np.argmax(last_logits()))
        decode_s = time.perf_counter() - started
        if round_:  # the first round warms caches and page-ins
            prefill.append(len(prompt) / prompt_s)
            decode.append(args.decode_tokens / decode_s)
    print(f"prompt: {statistics.median(prefill):.0f} tokens/s (median of {args.rounds}; {min(prefill):.0f}-{max(prefill):.0f})")
    print(f"decode: {statistics.median(decode):.1f} tokens/s (median of {args.rounds}; {min(decode):.1f}-{max(decode):.1f})")
    llama.close()


if __name__ == "__main__":
    main()
