"""IR rules -> nonterminals with flat productions, or counted repeats: the form the
recognizer's tables are built from."""

from __future__ import annotations

from .._errors import CompileError
from .._ir import Alt, Chars, Counted, Lit, Node, Ref, Repeat, Rules, Seq, liveness, one_char_ranges
from .._ir.ranges import Ranges, normal, union
from .scan import counted_scan

# Symbols of a lowered production:
#   ("N", nonterminal) | ("L", text) | ("C", ranges) | ("R", ranges, min, max)
#   | ("S", first ranges, scan, nullable): a `Counted` language, whose ends `scan` finds


def class_of(node: Node) -> Ranges | None:
    """The code points `node` matches if it matches exactly one of a set of them, else None."""
    one = one_char_ranges(node)
    if one is not None:
        return normal(one)
    if isinstance(node, Alt):
        out: Ranges = ()
        for item in node.items:
            part = class_of(item)
            if part is None:
                return None
            out = union(out, part)
        return out
    return None


class Lowering:
    """Rules -> nonterminals with flat productions (or counted repeats)."""

    def __init__(self, rules: Rules):
        self.rules = rules
        self.prods: list[list[list[tuple]]] = []
        self.reps: dict[int, tuple[int, int, int | None, Ranges]] = {}
        self.rule_nt: dict[str, int] = {}
        self.alt_nt: dict[int, int] = {}
        self.wrap_nt: dict[int, int] = {}
        self.repeat_syms: dict[int, list[tuple]] = {}
        self.todo: list[tuple[int, Node]] = []
        self.made: list[Node] = []  # nodes built here, kept alive while ids key the caches

    def run(self) -> int:
        root = self.rule(self.rules.root)
        while self.todo:
            nt, node = self.todo.pop()
            if isinstance(node, Alt) and len(node.items) > 1 and class_of(node) is None:
                self.prods[nt] = [self.symbols(item) for item in node.items]
            else:
                self.prods[nt] = [self.symbols(node)]
        return root

    def new_nt(self) -> int:
        self.prods.append([])
        return len(self.prods) - 1

    def rule(self, name: str) -> int:
        nt = self.rule_nt.get(name)
        if nt is None:
            if name not in self.rules.rules:
                raise CompileError(f"rule {name!r} is referenced but not defined", keyword="ref")
            nt = self.rule_nt[name] = self.new_nt()
            self.todo.append((nt, self.rules.rules[name]))
        return nt

    def symbols(self, node: Node) -> list[tuple]:
        if isinstance(node, Lit):
            return [("L", node.text)] if node.text else []
        if isinstance(node, Chars):
            return [("C", normal(node.ranges))]
        if isinstance(node, Ref):
            return [("N", self.rule(node.name))]
        if isinstance(node, Seq):
            out: list[tuple] = []
            for item in node.items:
                for sym in self.symbols(item):
                    if sym[0] == "L" and out and out[-1][0] == "L":
                        out[-1] = ("L", out[-1][1] + sym[1])
                    else:
                        out.append(sym)
            return out
        if isinstance(node, Alt):
            if len(node.items) == 1:
                return self.symbols(node.items[0])
            cls = class_of(node)
            if cls is not None:
                return [("C", cls)]
            nt = self.alt_nt.get(id(node))
            if nt is None:
                nt = self.alt_nt[id(node)] = self.new_nt()
                self.prods[nt] = [self.symbols(item) for item in node.items]
            return [("N", nt)]
        if isinstance(node, Counted):
            scan = counted_scan(node)
            return [("S", scan.first, scan, bool(liveness(node).exits(0) & 1))]
        if isinstance(node, Repeat):
            syms = self.repeat_syms.get(id(node))
            if syms is None:
                syms = self.repeat_syms[id(node)] = self.repeat(node.item, node.min, node.max)
            return list(syms)
        raise CompileError(f"unknown grammar node {type(node).__name__}", keyword="node")

    def wrap(self, node: Node) -> int:
        """A nonterminal deriving exactly `node`."""
        nt = self.wrap_nt.get(id(node))
        if nt is None:
            syms = self.symbols(node)
            if len(syms) == 1 and syms[0][0] == "N":
                nt = syms[0][1]
            else:
                nt = self.new_nt()
                self.prods[nt] = [syms]
            self.wrap_nt[id(node)] = nt
        return nt

    def counted(self, item: int, least: int, most: int | None, scan: Ranges = ()) -> tuple:
        """A repeat of `item`, or of one code point of `scan`, counted in the item."""
        nt = self.new_nt()
        self.prods[nt] = []
        self.reps[nt] = (item, least, most, scan)
        return ("N", nt)

    def repeat(self, item: Node, least: int, most: int | None) -> list[tuple]:
        if least < 0 or (most is not None and most < least):
            return [("C", ())]
        if most == 0:
            return []
        cls = class_of(item)
        if cls is not None:
            if not cls:
                return [] if least == 0 else [("C", ())]
            if least == most == 1:
                return [("C", cls)]
            return [("R", cls, least, most)]
        if least == most == 1:
            return self.symbols(item)
        if least == 0 and most == 1:
            nt = self.new_nt()
            self.prods[nt] = [self.symbols(item), []]
            return [("N", nt)]
        if isinstance(item, Alt):
            single = [part for part in item.items if class_of(part) is not None]
            other = [part for part in item.items if class_of(part) is None]
            cls = ()
            for part in single:
                cls = union(cls, class_of(part))
            if cls and other:
                rest = other[0] if len(other) == 1 else Alt(tuple(other))
                self.made.append(rest)
                if most is not None:
                    # Bounded: the repeat scans runs of the class itself and waits on the rest.
                    return [self.counted(self.wrap(rest), least, most, cls)]
                # (c | e)* == c* (e c*)*: the class runs scan in one step.
                run = ("R", cls, 0, None)
                body = self.new_nt()
                self.prods[body] = [self.symbols(rest) + [run]]
                tail = [run, self.counted(body, 0, None)]
                if least == 0:
                    return tail
                return self.repeat(item, least, least) + tail
        return [self.counted(self.wrap(item), least, most)]
