"""The combinator soundness check on many schemas, with a seed of your choice; counts, not a
first failure.

    python tests/grammar/soundness_survey.py --schemas 600 --seed 1

Prints how many schemas compiled or were refused, how many texts were accepted while the
validator rejects them (and under how many schemas), how many matcher walks finished an invalid
document, and how many exceptions other than the grammar package's escaped; lists examples.
Exits non-zero unless the unsound and untyped counts are both 0.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from combinator_schemas import drawn_values, schemas  # noqa: E402
from grammar import CompileError, GrammarError, from_json_schema  # noqa: E402
from test_jsonschema_soundness import invalid_walk, texts_for, unsound, walk_tables, walked_document  # noqa: E402


def survey(n: int, seed_value: int, walks: int, leaves: int) -> Counter:
    counts: Counter = Counter()
    examples: list[str] = []
    seen: set[str] = set()

    @seed(seed_value)
    @settings(max_examples=n, database=None, derandomize=False, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(schema=schemas(leaves), data=st.data())
    def one(schema, data):
        key = json.dumps(schema, sort_keys=True)
        counts["schemas"] += 1
        if key in seen:
            counts["repeated schemas"] += 1
        seen.add(key)
        try:
            g = from_json_schema(schema)
            counts["compiled"] += 1
        except CompileError as e:
            counts["refused"] += 1
            counts[f"refused: {e.keyword}"] += 1
            return
        except Exception as e:  # noqa: BLE001 -- what the survey counts
            counts["untyped exceptions"] += 1
            examples.append(f"untyped {type(e).__name__}: {e} under {key}")
            return
        try:
            bad = unsound(schema, g, texts_for(schema, data.draw(st.lists(drawn_values(schema), max_size=12))))
            compiled = walk_tables(g)
            rng = random.Random(data.draw(st.integers(0, 2**32)))
            documents = [walked_document(compiled, rng) for _ in range(walks)] if compiled is not None else []
            counts["empty languages"] += compiled is None
        except GrammarError as e:
            counts[f"grammar error after compile: {type(e).__name__}"] += 1
            examples.append(f"{type(e).__name__}: {e} under {key}")
            return
        except Exception as e:  # noqa: BLE001
            counts["untyped exceptions"] += 1
            examples.append(f"untyped {type(e).__name__}: {e} under {key}")
            return
        if bad:
            counts["unsound accepts"] += len(bad)
            counts["schemas with unsound accepts"] += 1
            examples.append(f"accepted {bad[:4]} under {key}")
        for document in documents:
            if document is None:
                counts["walks not finished"] += 1
                continue
            counts["walks"] += 1
            why = invalid_walk(schema, document)
            if why is not None:
                counts["invalid walks"] += 1
                examples.append(f"walk {document!r}: {why} under {key}")

    one()
    for line in examples[:25]:
        print(line)
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemas", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--walks", type=int, default=2, help="matcher walks per compiled schema")
    parser.add_argument("--leaves", type=int, default=6, help="at most this many leaf schemas per schema")
    args = parser.parse_args()
    counts = survey(args.schemas, args.seed, args.walks, args.leaves)
    for key in sorted(counts):
        print(f"{key:40s} {counts[key]}")
    print(f"unsound accepts: {counts['unsound accepts']}, invalid walks: {counts['invalid walks']}, "
          f"untyped exceptions: {counts['untyped exceptions']}")
    return 0 if counts["unsound accepts"] == counts["invalid walks"] == counts["untyped exceptions"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
