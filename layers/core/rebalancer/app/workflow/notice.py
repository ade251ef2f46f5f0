"""Notice before reclaim: a plan whose writes would make Kueue preempt running work is not written at once. The run
tells the teams that lose the work (the controller's outlets, and each team's own topic where the policy names one:
`teams.<team>.notice_topic`), waits `reclaim.notice_minutes`, reads the cluster again and checks the plan as after an
approval (app.workflow.recheck): a stale plan is made again, and nothing is written that the notice did not name: a
plan that would now preempt a workload the notice did not name gives a new notice (a bounded number of times).

The run's NOTICE document holds what the notice named (the workloads, by team/name@pool), the teams' topics, and its
round; the Notify step sends it, the Recheck step reads it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic import Field, NonNegativeInt, PositiveInt

from rebalancer.app.workflow.state import Artifacts, RunRef
from rebalancer.domain.frozen import Frozen
from rebalancer.domain.outlook import workload_key
from rebalancer.domain.plan import Plan, Preemption

if TYPE_CHECKING:  # the Notify step reads a notice without the policy's and the snapshot's models
    from rebalancer.domain.policy import Policy
    from rebalancer.domain.snapshot import Snapshot

MAX_NOTICE_ROUNDS = 3  # notices one run gives before it stops: a cluster that keeps moving is not chased forever


class Notice(Frozen):
    """What a run told the teams it preempts: the workloads named, each team's own topic, the round."""

    named: tuple[str, ...] = ()  # workload_key of each workload named
    targets: dict[str, str] = Field(default_factory=dict)  # team → the SNS topic the policy names for it
    seconds: NonNegativeInt = 0  # how long the write waits after it
    round: PositiveInt = 1


def key(p: Preemption) -> str:
    return workload_key(p.team, p.workload, p.pool)


def notice_seconds(policy: Policy) -> int:
    return round(policy.reclaim.notice_minutes * 60)


def needs_notice(plan: Plan) -> bool:
    """Whether writing the plan would preempt running work: then the teams are told first."""
    return bool(plan.preemptions or plan.preemptions_unlisted) and plan.mode != "dry-run" and not plan.is_empty


def record_notice(artifacts: Artifacts, run: RunRef, plan: Plan, policy: Policy,
                  found: Sequence[Preemption] | None = None) -> Notice:
    """The run's NOTICE for `plan`: the workloads it names (`found`: all it would preempt, when the plan lists only
    the largest: rebalancer.planning.preemptions), the topics of their teams, the next round."""
    before = load_notice(artifacts, run)
    named = plan.preemptions if found is None else found
    teams = {p.team for p in named}
    notice = Notice(named=tuple(key(p) for p in named),
                    targets={t: tp.notice_topic for t, tp in sorted(policy.teams.items())
                             if t in teams and tp.notice_topic is not None},
                    seconds=notice_seconds(policy), round=before.round + 1 if before is not None else 1)
    artifacts.put(run.execution_name, "NOTICE", notice.model_dump(mode="json"))
    return notice


def all_preempted(snapshot: Snapshot, plan: Plan) -> Sequence[Preemption]:
    """Every workload writing `plan` would preempt: its own list when complete, else found again."""
    if not plan.preemptions_unlisted:
        return plan.preemptions
    from rebalancer.planning.preemptions import preemptions

    return preemptions(snapshot, plan.allocations, plan.changes)[0]


def load_notice(artifacts: Artifacts, run: RunRef) -> Notice | None:
    doc = artifacts.get(run.execution_name, "NOTICE")
    return None if doc is None else Notice.model_validate(doc)


def unnoticed(notice: Notice | None, preemptions: Iterable[Preemption]) -> list[Preemption]:
    """Of the workloads a write would preempt now, those the run's notice did not name (all, with no notice)."""
    named = set(notice.named) if notice is not None else set()
    return [p for p in preemptions if key(p) not in named]


def by_team(preemptions: Iterable[Preemption]) -> Mapping[str, tuple[Preemption, ...]]:
    out: dict[str, list[Preemption]] = {}
    for p in preemptions:
        out.setdefault(p.team, []).append(p)
    return {t: tuple(ps) for t, ps in sorted(out.items())}
