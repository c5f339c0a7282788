"""Analyses of an IR rule set shared by the back ends: which rules derive the empty string,
which derive anything at all, and left recursion (which neither llama.cpp nor the automaton
can run)."""

from __future__ import annotations

from ._ir import NOTHING, Alt, Chars, Lit, Node, Ref, Repeat, Seq, alt, repeat, seq, walk



def nullable(node: Node, known: set[str]) -> bool:
    if isinstance(node, Lit):
        return not node.text
    if isinstance(node, Chars):
        return False
    if isinstance(node, Seq):
        return all(nullable(item, known) for item in node.items)
    if isinstance(node, Alt):
        return any(nullable(item, known) for item in node.items)
    if isinstance(node, Repeat):
        return node.min == 0 or nullable(node.item, known)
    return node.name in known


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
    """Whether `node` derives at least one finite string."""
    if isinstance(node, Lit):
        return True
    if isinstance(node, Chars):
        return bool(node.ranges)
    if isinstance(node, Seq):
        return all(productive(item, known) for item in node.items)
    if isinstance(node, Alt):
        return any(productive(item, known) for item in node.items)
    if isinstance(node, Repeat):
        return node.min == 0 or productive(node.item, known)
    return node.name in known


def pruned(rules: dict[str, Node], productive: set[str]) -> dict[str, Node]:
    """The productive rules, each reference to an unproductive rule replaced by nothing (the IR
    constructors then drop what needed it), so that every prefix the rules match can still be
    completed. Nodes that refer to no unproductive rule are kept as they are."""
    memo: dict[int, Node] = {}

    def prune(node: Node) -> Node:
        kind = type(node)
        if kind is Ref:
            return node if node.name in productive else NOTHING
        if kind is not Seq and kind is not Alt and kind is not Repeat:
            return node
        found = memo.get(id(node))
        if found is None:
            if kind is Repeat:
                item = prune(node.item)
                found = node if item is node.item else repeat(item, node.min, node.max)
            else:
                items = [prune(i) for i in node.items]
                same = all(a is b for a, b in zip(items, node.items))
                found = node if same else (seq if kind is Seq else alt)(*items)
            memo[id(node)] = found
        return found

    return {name: prune(node) for name, node in rules.items() if name in productive}


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
    if isinstance(node, Ref):
        return {node.name}
    if isinstance(node, Seq):
        out: set[str] = set()
        for item in node.items:
            out |= left_refs(item, empty)
            if not nullable(item, empty):
                break
        return out
    if isinstance(node, Alt):
        return set().union(*(left_refs(item, empty) for item in node.items))
    if isinstance(node, Repeat) and node.max != 0:
        return left_refs(node.item, empty)
    return set()


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
