"""Grammar-aligned sampling (ASAp, Park et al. 2024, "Grammar-Aligned Decoding").

Masking each step keeps every sample in the grammar but skews which ones come out: a token the
grammar allows is drawn by the model's probability of it, however unlikely the model is to
finish a grammatical answer after it. The distribution users want is the model's own,
conditioned on the answer being grammatical: P(s | s in the grammar). ASAp approaches it over
repeated samples of one request (same prompt, grammar and temperature): it keeps the prefix tree
of the answers sampled so far, and at each visited prefix an estimate of its expected future
grammaticality (EFG: the probability that the model, sampling freely from there, writes a
grammatical answer). A prefix not yet explored counts as 1 where the grammar allows it (so the
first sample is plain masked sampling); after each finished sample the estimates along its path
are recomputed from the model's probabilities: EFG(prefix) = Σ_t P(t | prefix) · EFG(prefix·t),
where the sum runs over allowed tokens. A later sample draws t with weight P(t | prefix) ·
EFG(prefix·t), so as the tree fills, samples follow the conditioned distribution.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

# The most prefixes a runtime's trees keep in all (some 330 bytes each: about 33 MiB). A new
# prefix past it drops the trees used least recently; where the sample's own tree holds them all,
# the sample leaves the tree there: below, it is sampled as masked sampling would (an estimate of
# 1), which keeps the estimates above it sound.
MAX_NODES = 100_000
# The most requests whose trees a runtime keeps (least recently used dropped first).
MAX_TREES = 32


@dataclass(slots=True)
class Node:
    """One sampled prefix: `p`, the model's probability of its last token after its parent;
    `allowed`, the model's mass on the tokens the grammar allows after it (None until a row was
    read there); `efg`, its expected future grammaticality estimate."""

    p: float = 1.0
    allowed: float | None = None
    efg: float = 1.0
    children: dict[int, "Node"] = field(default_factory=dict)


class Tree:
    """The estimates of one request (prompt, grammar and temperature), kept in `owner`."""

    def __init__(self, owner: "Trees", key: tuple) -> None:
        self.owner = owner
        self.key = key
        self.root = Node()
        self.nodes = 1
        self.dropped = False  # left out of its owner's trees: it grows no more

    def grow(self) -> bool:
        """Whether a new prefix may be added (counted if so): see `MAX_NODES`."""
        return self.owner.grow(self)


class Trees:
    """A runtime's trees, by request: at most `MAX_TREES` of them and `MAX_NODES` prefixes in
    all, the least recently used dropped first."""

    def __init__(self) -> None:
        self._trees: OrderedDict[tuple, Tree] = OrderedDict()
        self._lock = threading.Lock()  # requests are prepared on worker threads, grown on the decoder's
        self.nodes = 0  # prefixes in all the trees kept

    def get(self, key: tuple) -> Tree:
        with self._lock:
            tree = self._trees.get(key)
            if tree is None:
                tree = self._trees[key] = Tree(self, key)
                self.nodes += tree.nodes
                while len(self._trees) > MAX_TREES or self.nodes > MAX_NODES:
                    self._drop(next(iter(self._trees.values())))
            self._trees.move_to_end(key)
            return tree

    def grow(self, tree: Tree) -> bool:
        with self._lock:
            while not tree.dropped and self.nodes >= MAX_NODES:
                oldest = next(iter(self._trees.values()))
                if oldest is tree:
                    return False  # it holds the whole budget
                self._drop(oldest)
            if tree.dropped:
                return False
            tree.nodes += 1
            self.nodes += 1
            return True

    def _drop(self, tree: Tree) -> None:
        del self._trees[tree.key]
        tree.dropped = True
        self.nodes -= tree.nodes


class Walk:
    """One sample's path through its request's tree: reweights each step's logits by the
    estimates below it, and updates the estimates along the path once the sample is whole."""

    def __init__(self, tree: Tree, temperature: float):
        self.tree = tree
        self.temperature = temperature
        self.path: list[Node] = [tree.root]
        self._step: tuple[np.ndarray, float] | None = None  # this step's (row / temperature, log-sum)
        self.left = False  # the path left the tree (it was full): no reweighting or update below

    def reweight(self, raw: np.ndarray, allowed: np.ndarray, row: np.ndarray) -> None:
        """Before a choice: note the model's distribution (from the unmasked `raw` logits) and
        its mass on the `allowed` ids; add to `row` (the logits selection reads) τ·log EFG of
        each explored child, so a draw weighs a token by P(t) · EFG(prefix·t)."""
        if self.left:
            return
        scaled = np.asarray(raw, dtype=np.float64) / self.temperature
        top = float(scaled.max())
        log_total = top + math.log(float(np.exp(scaled - top).sum()))
        node = self.path[-1]
        if node.allowed is None:
            node.allowed = float(np.exp(scaled[allowed] - log_total).sum())
        self._step = (scaled, log_total)
        for token, child in node.children.items():
            if child.efg < 1.0:
                row[token] += self.temperature * math.log(child.efg) if child.efg > 0 else -np.inf

    def took(self, token: int) -> None:
        """After a choice: follow `token`."""
        if self.left or self._step is None:
            self.left = True
            return
        scaled, log_total = self._step
        self._step = None
        node = self.path[-1]
        child = node.children.get(token)
        if child is None:
            if not self.tree.grow():
                self.left = True
                return
            child = node.children[token] = Node(p=float(math.exp(scaled[token] - log_total)))
        self.path.append(child)

    def finished(self) -> None:
        """The sample is a whole answer of the grammar: its last prefix is grammatical (EFG 1),
        and each prefix above it is re-estimated from its explored children."""
        if self.left:
            return
        self.path[-1].efg = 1.0
        for node in reversed(self.path[:-1]):
            if node.allowed is None:
                return
            explored = sum(c.p for c in node.children.values())
            below = sum(c.p * c.efg for c in node.children.values())
            node.efg = min(1.0, max(0.0, node.allowed - explored + below))
