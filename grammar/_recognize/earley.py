"""The Earley loop: sets of items over the text's positions, each item one int."""

from __future__ import annotations

from .._errors import LimitError
from .tables import CHAR, CLASS, DONE, LIT, NT, REP, RUN, SCAN, Compiled


def recognize(g: Compiled, text: str, limit: int) -> bool:
    """Earley sets over positions 0..n; an item is one int: state + S * (origin + (n+1) * count)."""
    n = len(text)
    size = g.size
    span = n + 1
    step = size * span  # one more repetition of a counted repeat
    chars = list(text)
    chars.append("")
    kind, arg, lhs, look, nullable = g.kind, g.arg, g.lhs, g.look, g.nullable
    predictions, predict = g.predictions, g.predict

    pending: list[list[int] | None] = [None] * span
    seen: list[set[int] | None] = [None] * span
    waiting: list[dict[int, list[int]] | None] = [None] * span
    pending[0] = [g.start]
    seen[0] = {g.start}
    furthest = 0
    used = 0

    def advance(p: int, item: int) -> None:
        """Add `item` to the set at position `p` (after the current one) and its work list."""
        nonlocal furthest
        found = seen[p]
        if found is None:
            seen[p] = {item}
            pending[p] = [item]
            if p > furthest:
                furthest = p
        elif item not in found:
            found.add(item)
            pending[p].append(item)

    for j in range(span):
        work = pending[j]
        if work is None:
            if j > furthest:
                return False
            continue
        pending[j] = None
        here = seen[j]
        ch = chars[j]
        waits: dict[int, list[int]] = {}
        waiting[j] = waits
        predicted: set[int] = set()
        base = size * j
        while work:
            key = work.pop()
            s = key % size
            k = kind[s]
            if k == NT:
                want = arg[s]
                queue = waits.get(want)
                if queue is None:
                    waits[want] = [key]
                else:
                    queue.append(key)
                if want not in predicted:
                    cached = predictions[want].get(ch)
                    states, covered = cached if cached is not None else predict(want, ch)
                    predicted |= covered
                    for t in states:
                        t += base
                        if t not in here:
                            here.add(t)
                            work.append(t)
                if nullable[want] and look[s + 1][ch]:
                    key += 1
                    if key not in here:
                        here.add(key)
                        work.append(key)
            elif k == DONE:
                origin = key // size
                if origin == j:
                    continue  # empty: its waiters were advanced when they predicted it
                queue = waiting[origin].get(lhs[s])
                if not queue:
                    continue
                used += len(queue)
                if used > limit:
                    raise LimitError(
                        f"recognizer work exceeded {limit} steps at offset {j} of {n}",
                        keyword="accepts",
                    )
                for w in queue:
                    t = w % size
                    if kind[t] == REP:
                        least, most = arg[t][1], arg[t][2]
                        if most is None and w // step >= least:
                            nxt = w
                        else:
                            nxt = w + step
                    else:
                        t += 1
                        nxt = w + 1
                    if look[t][ch] and nxt not in here:
                        here.add(nxt)
                        work.append(nxt)
            elif k == CHAR:
                if ch == arg[s]:
                    p = j + 1
                    if look[s + 1][chars[p]]:
                        advance(p, key + 1)
            elif k == CLASS:
                if arg[s][ch]:
                    p = j + 1
                    if look[s + 1][chars[p]]:
                        advance(p, key + 1)
            elif k == LIT:
                lit = arg[s]
                if text.startswith(lit, j):
                    p = j + len(lit)
                    if look[s + 1][chars[p]]:
                        advance(p, key + 1)
            elif k == RUN:
                match, least, alone = arg[s]
                after = look[s + 1]
                if least == 0 and after[ch] and key + 1 not in here:
                    here.add(key + 1)
                    work.append(key + 1)
                m = match(text, j).end() - j
                if m:
                    used += m >> 4
                    ends = (m,) if alone else range(max(least, 1), m + 1)
                    nxt = key + 1
                    for e in ends:
                        p = j + e
                        if e < least or not after[chars[p]]:
                            continue
                        advance(p, nxt)
            elif k == SCAN:
                scan, null = arg[s]
                after = look[s + 1]
                if null and after[ch] and key + 1 not in here:
                    here.add(key + 1)
                    work.append(key + 1)
                nxt = key + 1
                for p in scan(text, j):
                    used += 1
                    if not after[chars[p]]:
                        continue
                    advance(p, nxt)
            else:  # REP: a counted repeat, item count in the key
                rest = key // size
                origin = rest % span
                count = rest // span
                item, least, most, runs = arg[s]
                if count >= least and origin != j and look[s + 1][ch]:
                    done = s + 1 + size * origin
                    if done not in here:
                        here.add(done)
                        work.append(done)
                if most is not None and count >= most:
                    continue
                queue = waits.get(item)
                if queue is None:
                    waits[item] = [key]
                else:
                    queue.append(key)
                if item not in predicted:
                    cached = predictions[item].get(ch)
                    states, covered = cached if cached is not None else predict(item, ch)
                    predicted |= covered
                    for t in states:
                        t += base
                        if t not in here:
                            here.add(t)
                            work.append(t)
                if runs is None:
                    continue
                # Copies that are single code points of the scanned class (bounded repeats
                # only): one run at a time.
                match, alone, starts = runs
                m = match(text, j).end() - j
                if m > most - count:
                    m = most - count
                if not m:
                    continue
                used += m >> 4
                done = s + 1 + size * origin
                again = s + size * origin
                after = look[s + 1]
                for e in (m,) if alone else range(1, m + 1):
                    p = j + e
                    c = count + e
                    nxt_ch = chars[p]
                    if c >= least and after[nxt_ch]:
                        advance(p, done)
                    if c < most and starts[nxt_ch]:
                        advance(p, again + step * c)
        used += len(here)
        if used > limit:
            raise LimitError(
                f"recognizer work exceeded {limit} steps at offset {j} of {n}", keyword="accepts"
            )
        if j < n:
            seen[j] = None
    final = seen[n]
    return final is not None and g.accept in final
