"""Analyses of an IR rule set shared by the back ends: which rules derive the empty string,
which derive anything at all, and left recursion (which neither llama.cpp nor the automaton
can run)."""

from __future__ import annotations

from typing import Iterator

from .counted import liveness
from .nodes import NOTHING, Alt, Chars, Counted, Lit, Node, Ref, Repeat, Seq, alt, children_first, repeat, seq, walk


def _derives(node: Node, known: set[str], lit_ok: bool, chars_ok: bool) -> bool:
    """Whether `node` derives a string of the kind asked: a sequence needs all its items, an
    alternation one, a repeat its item unless it may be skipped, a reference a rule in `known`.

    A loop over an explicit stack (with the short cuts `all` and `any` take), not a recursion:
    front ends may build nodes nested deeper than Python's stack goes. `lit_ok`: whether a
    non-empty literal counts; `chars_ok`: whether a non-empty class does.
    """
    frames: list[tuple[bool, Iterator[Node]]] = []  # (needs all items, items not looked at)
    while True:
        kind = type(node)
        result: bool | None = None  # None: a frame was opened, its first item is next
        if kind is Seq or kind is Alt:
            frames.append((kind is Seq, iter(node.items)))
        elif kind is Repeat and node.min > 0:
            node = node.item
            continue
        elif kind is Repeat:
            result = True
        elif kind is Lit:
            result = lit_ok or not node.text
        elif kind is Chars:
            result = chars_ok and bool(node.ranges)
        elif kind is Counted:  # never empty (see `counted`): nullable where it starts final
            result = lit_ok or bool(liveness(node).exits(0) & 1)
        else:
            result = node.name in known
        # Hand the result up until a frame has another item to look at.
        while frames:
            needs_all, items = frames[-1]
            if result is not None and result != needs_all:
                frames.pop()  # decided: `all` met a False, or `any` a True
                continue
            nxt = next(items, None)
            if nxt is None:
                frames.pop()
                result = needs_all
                continue
            node = nxt
            break
        else:
            return bool(result)


def nullable(node: Node, known: set[str]) -> bool:
    """Whether `node` derives the empty string (rules in `known` do)."""
    return _derives(node, known, lit_ok=False, chars_ok=False)


def nullable_rules(rules: dict[str, Node]) -> set[str]:
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, node in rules.items():
            if name not in found and nullable(node, found):
                found.add(name)
                changed = True
    return found


def productive(node: Node, known: set[str]) -> bool:
    """Whether `node` derives at least one finite string (rules in `known` do)."""
    return _derives(node, known, lit_ok=True, chars_ok=True)


def pruned(rules: dict[str, Node], productive: set[str]) -> dict[str, Node]:
    """The productive rules, each reference to an unproductive rule replaced by nothing (the IR
    constructors then drop what needed it), so that every prefix the rules match can still be
    completed. Nodes that refer to no unproductive rule are kept as they are."""
    memo: dict[int, Node] = {}  # by identity, for the composite nodes

    def pruned_node(node: Node) -> Node:
        kind = type(node)
        if kind is Ref:
            return node if node.name in productive else NOTHING
        if kind is Seq or kind is Alt or kind is Repeat:
            return memo[id(node)]
        return node

    for name, root in rules.items():
        if name not in productive:
            continue
        for node in children_first(root):
            if id(node) in memo:
                continue
            if type(node) is Repeat:
                item = pruned_node(node.item)
                found = node if item is node.item else repeat(item, node.min, node.max)
            else:
                items = [pruned_node(i) for i in node.items]
                same = all(a is b for a, b in zip(items, node.items))
                found = node if same else (seq if type(node) is Seq else alt)(*items)
            memo[id(node)] = found

    return {name: pruned_node(node) for name, node in rules.items() if name in productive}


def productive_rules(rules: dict[str, Node]) -> set[str]:
    """The rules that derive at least one finite string. A worklist: a rule is looked at again
    only when a rule it refers to turns out productive, so long chains cost linear time."""
    users: dict[str, list[str]] = {}
    for name, node in rules.items():
        for n in walk(node):
            if isinstance(n, Ref):
                users.setdefault(n.name, []).append(name)
    found: set[str] = set()
    todo = list(rules)
    while todo:
        name = todo.pop()
        if name not in found and productive(rules[name], found):
            found.add(name)
            todo.extend(users.get(name, ()))
    return found


def left_refs(node: Node, empty: set[str]) -> set[str]:
    """Rules that can be entered before any character of `node` is read."""
    out: set[str] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        kind = type(n)
        if kind is Ref:
            out.add(n.name)
        elif kind is Seq:
            for item in n.items:
                todo.append(item)
                if not nullable(item, empty):
                    break
        elif kind is Alt:
            todo.extend(n.items)
        elif kind is Repeat and n.max != 0:
            todo.append(n.item)
    return out


def left_recursion(rules: dict[str, Node], empty: set[str]) -> list[str] | None:
    """A cycle of rules each entered first by the previous one, or None."""
    edges = {
        name: sorted(left_refs(node, empty) & rules.keys())
        for name, node in rules.items()
    }
    state: dict[str, int] = {}  # 1: on the path, 2: done
    for start in rules:
        if start in state:
            continue
        path = [start]
        stack = [iter(edges[start])]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(edges[nxt]))
    return None
