"""How far apart two names are, for "did you mean …?": the optimal-string-alignment distance (Damerau's edits:
insert, delete, substitute, or swap two neighbours, each 1, no substring edited twice), so `reserch` is 1 from
`research` and `us-esat-1` 1 from `us-east-1`. Ten lines of the textbook recurrence, not a compiled dependency in the
layer."""

from __future__ import annotations

from collections.abc import Iterable


def edit_distance(a: str, b: str) -> int:
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], previous2[j - 2] + 1)
        previous2, previous = previous, row
    return previous[len(b)]


def nearest(name: str, candidates: Iterable[str], within: int) -> str | None:
    """The candidate closest to `name` within `within` edits (ties: the first in sorted order), or None."""
    best: tuple[int, str] | None = None
    for c in sorted(set(candidates)):
        if abs(len(c) - len(name)) > within:  # at least that many edits apart: not worth the distance
            continue
        d = edit_distance(name, c)
        if d <= within and (best is None or d < best[0]):
            best = (d, c)
    return best[1] if best else None
