"""No permanent name by accident: a quota's TeamName can never be changed, so a policy team that has no quota yet and
whose name is close to an existing team's is refused with "did you mean research?", unless the policy marks it
`new: true`. Close: the same name to a reader (one skeleton: case, `-` and `_`, and look-alike characters such as `0`
and `o`, `1` and `l`, or a Cyrillic `е` for a Latin `e`, ignored: rebalancer.spelling.skeleton), or a few
edits away between skeletons, two letters swapped counting as one (`reserch` or `reseacrh` beside `research`).
Names of a series (`team-0002` beside `team-0001`, `team-b` beside `team-a`) are not typos of one another; a digit
for the letter it looks like (`team-1`, `team-l`) or two letters swapped (`team-ab`, `team-ba`) are no series.

The policy alone cannot tell a typo from a new team: the existing names are the cluster's quotas' (a snapshot's, at
plan time). So the check lives here, and every path that plans or publishes a policy against a cluster runs it: the
planner (the controller's Plan step, `plan`, `apply`; once per plan, not in the forecasts' re-plans, which plan the
same policy against the same teams), `diff` and `policy push`. Each policy team without a quota is compared letter
by letter only with the existing teams that can be close to it (`Existing`): at 1,000 teams and 40 new ones the
check costs a few percent of the plan (benchmarks/plan_bench.py). Pure."""

from collections import defaultdict
from collections.abc import Iterable

from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput
from rebalancer.spelling import edit_distance, skeleton

# How many edits make two names "close", by the length of the new one: none for a name of a few letters (every
# other short name is an edit or two away: `a` and `b`, `cv` and `ml`), one up to LONG_NAME, two beyond.
SHORT_NAME, LONG_NAME = 3, 7


def within(name: str) -> int:
    return 0 if len(name) <= SHORT_NAME else 1 if len(name) <= LONG_NAME else 2


def siblings(a: str, b: str) -> bool:
    """Names of a series, not a typo of one another: they differ in one `-`-separated part only, and there both are
    numbers (`team-0001`, `team-0002`) or labels of a letter or two (`team-a`, `team-b`) that neither look alike
    (`team-1`, `team-l`) nor are the same letters swapped (`team-ab`, `team-ba`)."""
    pa, pb = a.split("-"), b.split("-")
    if len(pa) != len(pb):
        return False
    differ = [(x, y) for x, y in zip(pa, pb, strict=True) if x != y]
    return len(differ) == 1 and all(_numbers(x, y) or _labels(x, y) for x, y in differ)


def _numbers(x: str, y: str) -> bool:
    return x.isascii() and y.isascii() and x.isdigit() and y.isdigit()


def _labels(x: str, y: str) -> bool:
    return len(x) <= 2 and len(y) <= 2 and skeleton(x) != skeleton(y) and sorted(x) != sorted(y)


class Existing:
    """The existing names, to compare new names with: by skeleton, and by the pairs of neighbouring letters in their
    skeletons (built on first use), so that a new name is compared letter by letter with the few names that can be
    close to it, not with all of them (at 1,000 teams and 40 new ones, 40,000 edit distances in Python took 2.3 s)."""

    def __init__(self, names: Iterable[str]):
        self.names = sorted(set(names))
        self.known = set(self.names)
        self.skeletons = [skeleton(n) for n in self.names]
        self.by_skeleton: dict[str, str] = {}
        for name, sk in zip(self.names, self.skeletons, strict=True):
            self.by_skeleton.setdefault(sk, name)
        self._pairs: dict[str, list[int]] | None = None

    def close_to(self, name: str) -> str | None:
        """The existing name `name` is most likely a typo of, or None."""
        if name in self.known:
            return None
        sk = skeleton(name)
        if sk in self.by_skeleton:
            return self.by_skeleton[sk]
        bound = within(name)
        if bound == 0:
            return None
        near = sorted((d, self.names[i]) for i in self._candidates(sk, bound) if not siblings(name, self.names[i])
                      and (d := edit_distance(sk, self.skeletons[i])) <= bound)
        return near[0][1] if near else None

    def _candidates(self, sk: str, bound: int) -> list[int]:
        """The names that can be `bound` edits or fewer from the skeleton `sk`: of a length within `bound`, and, when
        `sk` cut in 2·bound + 1 pieces has no piece shorter than two letters, having the first two letters of one
        of them: each edit changes one piece, a swap of two neighbours two, so one piece is left whole in the other."""
        pieces = _pieces(sk, 2 * bound + 1)
        found: Iterable[int] = range(len(self.names))
        if min(len(p) for p in pieces) >= 2:
            index = self._pair_index()
            found = sorted(set().union(*(index.get(p[:2], ()) for p in pieces)))
        return [i for i in found if abs(len(self.skeletons[i]) - len(sk)) <= bound]

    def _pair_index(self) -> dict[str, list[int]]:
        if self._pairs is None:
            self._pairs = defaultdict(list)
            for i, sk in enumerate(self.skeletons):
                for pair in {sk[j:j + 2] for j in range(len(sk) - 1)}:
                    self._pairs[pair].append(i)
        return self._pairs


def _pieces(text: str, count: int) -> list[str]:
    """`text` cut in `count` contiguous pieces whose lengths differ by one at most (some empty when it is shorter)."""
    size, longer = divmod(len(text), count)
    starts = [k * size + min(k, longer) for k in range(count + 1)]
    return [text[starts[k]:starts[k + 1]] for k in range(count)]


def close_to(name: str, existing: Iterable[str]) -> str | None:
    """The existing name `name` is most likely a typo of, or None."""
    return Existing(existing).close_to(name)


def name_problems(policy: Policy, existing: Iterable[str]) -> list[tuple[str, str]]:
    """(policy team, the existing team it is close to) for every team the policy would create a quota for."""
    names = set(existing)
    fresh = [team for team, tp in sorted(policy.teams.items()) if team not in names and not tp.new and not tp.remove]
    if not fresh:
        return []
    known = Existing(names)
    out = []
    for team in fresh:
        near = known.close_to(team)
        if near is not None:
            out.append((team, near))
    return out


def check_team_names(policy: Policy, existing: Iterable[str], source: str | None = None) -> None:
    """InvalidInput naming the first team whose name looks like a typo of an existing team's."""
    problems = name_problems(policy, existing)
    if problems:
        team, near = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InvalidInput(f"team {team!r} has no quota and is close to the existing team {near!r}: did you mean "
                           f"{near}? A quota's team name can never be changed; if {team} is a new team, mark it "
                           f"`new: true`{more}", source=source, field=f"teams.{team}", value=team)
