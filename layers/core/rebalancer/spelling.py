"""How far apart two names are, for "did you mean …?", and how they look.

`edit_distance`: the optimal-string-alignment distance (Damerau's edits: insert, delete, substitute, or swap two
neighbours, each 1, no substring edited twice), so `reserch` is 1 from `research`, `reseacrh` 1 and `us-esat-1` 1 from
`us-east-1`: ten lines of the textbook recurrence, not a compiled dependency in the layer (rapidfuzz's would add 5.5 MB
to a layer at 59.7 of its 60; the team-name check compares few pairs instead: rebalancer.planning.team_names).
`skeleton`: the name as it looks, after Unicode's skeleton idea (UTS #39) in small: NFKC,
lowercase, and the characters people take for one another folded to one (`0` and `o`; `1`, `I` and `l`; Cyrillic and
Greek letters drawn like Latin ones), so that `team-1` and `team-l`, or `research` with a Cyrillic `е`, are the
same name to a reader."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

# Folded to the Latin letter they are drawn like: digits, and the Cyrillic and Greek letters that look Latin in the
# fonts consoles use (the part of Unicode's confusables.txt that reaches lowercase Latin letters and digits; capitals
# are lowercased first, except `I`, which is drawn as `l`).
LOOK_ALIKE = str.maketrans({
    "0": "o", "1": "l", "I": "l", "|": "l", "ı": "i",
    "а": "a", "в": "b", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j", "к": "k", "м": "m", "н": "h",
    "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l",
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "ω": "w",
})
SEPARATORS = str.maketrans("", "", "-_. ")


def skeleton(name: str) -> str:
    """What a reader sees of `name`: NFKC, look-alikes folded (LOOK_ALIKE), lowercase, `-`, `_`, `.` and spaces
    dropped. Two names of one skeleton are the same name to a reader."""
    text = unicodedata.normalize("NFKC", name).translate(LOOK_ALIKE).lower().translate(LOOK_ALIKE)
    return text.translate(SEPARATORS)


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
