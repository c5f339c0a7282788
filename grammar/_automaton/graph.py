"""The rule graph as the automaton needs it: the rules that recurse, those used in several places
(both become calls), and left recursion refused."""

from __future__ import annotations

from .._ir.analysis import left_recursion, nullable_rules
from .._errors import CompileError
from .._ir import Ref, Rules, walk


def _recursive_rules(graph: dict[str, list[str]]) -> set[str]:
    """Names of rules that lie on a reference cycle (Tarjan's SCC, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: set[str] = set()
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                scc = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    scc.append(w)
                    if w == node:
                        break
                if len(scc) > 1 or node in graph[node]:
                    out.update(scc)
    return out


def _shared_rules(rules: Rules, graph: dict[str, list[str]], recursive: set[str]) -> set[str]:
    """Rules referred to from several places that do not recurse: emitted once and called, so
    the states inside them share their token sets across every place that uses them, and so
    the automaton stays in proportion to the grammar (a rule inlined at two places that inlines
    one at two places, and so on, as an object's optional members do, doubles at each level)."""
    uses: dict[str, int] = {}
    for name in graph:
        for node in walk(rules.rules[name]):
            if isinstance(node, Ref) and node.name not in recursive:
                uses[node.name] = uses.get(node.name, 0) + 1
    return {name for name, n in uses.items() if n > 1}


def check_left_recursion(rules: Rules, graph: dict[str, list[str]], recursive: set[str]) -> None:
    """Refuse left recursion: a rule that can reach itself before consuming any input (only
    rules on a reference cycle can)."""
    if not recursive:
        return
    reachable = {name: rules.rules[name] for name in graph}
    cycle = left_recursion(reachable, nullable_rules(reachable))
    if cycle:
        raise CompileError(
            f"rule {cycle[0]!r} is left-recursive ({' -> '.join(cycle)})", keyword="left-recursion"
        )
