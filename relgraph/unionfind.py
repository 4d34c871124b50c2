"""Disjoint sets with path compression: the e-graph's e-classes and the compiler's
groups of dimensions that must agree are both kept with one :class:`UnionFind`.

>>> sets = UnionFind()
>>> sets.union("a", "b"); sets.union("b", "c")
'a'
'a'
>>> sets.find("c"), sets.find("z")
('a', 'z')
>>> sorted(sets.groups()["a"])
['a', 'b', 'c']
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["UnionFind"]

K = TypeVar("K", bound=Hashable)


class UnionFind(Generic[K]):
    """Disjoint sets of hashable keys; a key never joined is a set of its own."""

    def __init__(self) -> None:
        self._parent: dict[K, K] = {}

    @property
    def parents(self) -> dict[K, K]:
        """Each key's parent (a root's is itself): read it, never change it."""
        return self._parent

    def __len__(self) -> int:
        """How many keys were added or joined."""
        return len(self._parent)

    def add(self, key: K) -> None:
        """Make ``key`` known, as a set of its own."""
        self._parent.setdefault(key, key)

    def find(self, key: K) -> K:
        """The root of ``key``'s set."""
        parent = self._parent
        root = key
        while parent.get(root, root) != root:
            root = parent[root]
        while key != root:  # path compression
            parent[key], key = root, parent[key]
        return root

    def union(self, keep: K, other: K) -> K:
        """Join the sets of ``keep`` and ``other``; the root of ``keep``'s survives."""
        a, b = self.find(keep), self.find(other)
        self._parent.setdefault(a, a)
        if a != b:
            self._parent[b] = a
        return a

    def groups(self) -> dict[K, set[K]]:
        """Every set of more than one key known, by its root (the root included)."""
        members: dict[K, set[K]] = {}
        for key in list(self._parent):
            members.setdefault(self.find(key), set()).add(key)
        return {root: keys | {root} for root, keys in members.items()}
