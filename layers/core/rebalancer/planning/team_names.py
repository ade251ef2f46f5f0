"""No permanent name by accident: a quota's TeamName can never be changed, so a policy team that has no quota yet and
whose name is close to an existing team's (equal up to case, `-` and `_`, or a few edits away: `reserch` beside
`research`) is refused with "did you mean research?", unless the policy marks it `new: true`. Names of a series
(`team-0002` beside `team-0001`, `team-b` beside `team-a`) are not typos of one another.

The policy alone cannot tell a typo from a new team: the existing names are the cluster's quotas' (a snapshot's, at
plan time). So the check lives here, and every path that plans or publishes a policy against a cluster runs it: the
planner (the controller's Plan step, `plan`, `apply`), `diff` and `policy push`. Pure."""

from collections.abc import Iterable

from rebalancer.domain.policy import Policy
from rebalancer.domain.spelling import edit_distance
from rebalancer.errors import InvalidInput

# How many edits make two names "close", by the length of the new one: none for a name of a few letters (every
# other short name is an edit or two away: `a` and `b`, `cv` and `ml`), one up to LONG_NAME, two beyond.
SHORT_NAME, LONG_NAME = 3, 7


def folded(name: str) -> str:
    """The name as people confuse it: case, `-` and `_` ignored."""
    return name.lower().replace("-", "").replace("_", "")


def within(name: str) -> int:
    return 0 if len(name) <= SHORT_NAME else 1 if len(name) <= LONG_NAME else 2


def siblings(a: str, b: str) -> bool:
    """Names of a series, not a typo of one another: they differ in one `-`-separated part only, and there both are
    numbers (`team-0001`, `team-0002`) or a letter or two (`team-a`, `team-b`)."""
    pa, pb = a.split("-"), b.split("-")
    if len(pa) != len(pb):
        return False
    differ = [(x, y) for x, y in zip(pa, pb, strict=True) if x != y]
    return len(differ) == 1 and all((x.isdigit() and y.isdigit()) or (len(x) <= 2 and len(y) <= 2)
                                    for x, y in differ)


def close_to(name: str, existing: Iterable[str]) -> str | None:
    """The existing name `name` is most likely a typo of, or None."""
    best: tuple[int, str] | None = None
    for other in sorted(set(existing)):
        if other == name:
            return None
        if folded(other) != folded(name) and siblings(name, other):
            continue
        d = 0 if folded(other) == folded(name) else edit_distance(name, other)
        if d <= within(name) and (best is None or d < best[0]):
            best = (d, other)
    return best[1] if best else None


def name_problems(policy: Policy, existing: Iterable[str]) -> list[tuple[str, str]]:
    """(policy team, the existing team it is close to) for every team the policy would create a quota for."""
    names = set(existing)
    out = []
    for team, tp in sorted(policy.teams.items()):
        if team in names or tp.new or tp.remove:
            continue
        near = close_to(team, names)
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
