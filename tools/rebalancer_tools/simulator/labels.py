"""Team labels of a real trace (any string: `app_0`, `App 0`, `Équipe/ML`) → valid HyperPod team names.

A label that is already a valid name keeps it. Any other label is folded: accents dropped (NFKD), lowercased, every
run of characters that are not a letter or digit becomes one '-', leading and trailing '-' stripped, cut to the
length limit. Labels that fold to a name another label already has get the first free `-2`, `-3`, ... suffix, in
the sorted order of the labels, so the mapping depends only on the set of labels (not on their order in the file)
and is injective. A label with no letter or digit to keep is refused.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from rebalancer.domain.policy import TEAM_NAME, TEAM_NAME_MAX

_NOT_NAME = re.compile(r"[^a-z0-9]+")


def is_team_name(label: str) -> bool:
    return len(label) <= TEAM_NAME_MAX and TEAM_NAME.fullmatch(label) is not None


def fold(label: str) -> str:
    """The label's name material ('' when it has none)."""
    ascii_only = unicodedata.normalize("NFKD", label).encode("ascii", "ignore").decode()
    return _NOT_NAME.sub("-", ascii_only.lower()).strip("-")[:TEAM_NAME_MAX].rstrip("-")


def _with_suffix(base: str, n: int) -> str:
    suffix = f"-{n}"
    return base[:TEAM_NAME_MAX - len(suffix)].rstrip("-") + suffix


def team_names(labels: Iterable[str]) -> dict[str, str]:
    """label → team name for every distinct label. ValueError naming a label that has no name material."""
    distinct = sorted(set(labels))
    names = {label: label for label in distinct if is_team_name(label)}
    taken = set(names.values())
    for label in distinct:
        if label in names:
            continue
        base = fold(label)
        if not base:
            raise ValueError(f"team label {label!r} has no letter or digit to make a HyperPod team name from")
        name, n = base, 1
        while name in taken:
            n += 1
            name = _with_suffix(base, n)
        names[label] = name
        taken.add(name)
    return names


def renamed(mapping: dict[str, str]) -> dict[str, str]:
    """The labels that did not keep their own text, sorted."""
    return {label: name for label, name in sorted(mapping.items()) if label != name}
