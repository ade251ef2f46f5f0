"""The run history is bounded by design: however it is filled, halving it comes down to an empty history in a
bounded number of steps, each step a part of the one before (newest runs and outcomes kept); and a history the store
will not take never fails the plan step: the outlook is marked degraded and says why, and so does the run."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from support.clock import ticking
from support.clusters import T0, policy
from support.why_runs import CLUSTER, P5, run, waiting_snapshot

from rebalancer.app.why import why
from rebalancer.app.workflow import state
from rebalancer.app.workflow.steps.plan import plan
from rebalancer.domain.outlook import Outcome, Outlook, RunHistory, Seen, Told
from rebalancer.errors import PermanentError, RebalancerError, RecordUnreadable, TransientError
from rebalancer_tools.fakes.memory_store import MemoryStore

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
names = st.text("abc-", min_size=1, max_size=6)
runs = st.lists(st.floats(0, 1e6), min_size=1, max_size=60).map(tuple)
histories = st.builds(
    RunHistory,
    finished=st.dictionaries(names, runs, max_size=20), declared=st.dictionaries(names, runs, max_size=20),
    running=st.dictionaries(names.map(lambda n: f"t/{n}@{P5}"), st.just(Seen(team="t", started=NOW, last_seen=NOW)),
                            max_size=20),
    told=st.dictionaries(names.map(lambda n: f"t/{n}@{P5}"), st.just(Told(queued=NOW)), max_size=20),
    outcomes=st.lists(st.builds(Outcome, waited_s=st.floats(0, 1e6)), max_size=200).map(tuple))


def part_of(smaller: RunHistory, larger: RunHistory) -> bool:
    def suffixes(a: dict[str, tuple[float, ...]], b: dict[str, tuple[float, ...]]) -> bool:
        return a.keys() <= b.keys() and all(d == b[k][len(b[k]) - len(d):] for k, d in a.items())

    return (suffixes(smaller.finished, larger.finished) and suffixes(smaller.declared, larger.declared)
            and smaller.running.items() <= larger.running.items() and smaller.told.items() <= larger.told.items()
            and smaller.outcomes == larger.outcomes[len(larger.outcomes) - len(smaller.outcomes):])


@settings(max_examples=60, deadline=None)
@given(histories)
def test_halving_any_history_comes_down_to_nothing_each_step_a_part_of_the_last(history: RunHistory) -> None:
    steps = 0
    while (smaller := history.halved()) is not None:
        assert smaller != history
        assert part_of(smaller, history)
        history, steps = smaller, steps + 1
        assert steps < 60
    assert history == RunHistory()


class RefusingDurations:
    """A run history store that refuses every write, as the table does an item above 400 KB."""

    def history(self, cluster_name: str) -> RunHistory:
        return RunHistory()

    def record(self, cluster_name: str, history: RunHistory) -> None:
        raise PermanentError("dynamodb:PutItem on table t: ValidationException: Item size has exceeded the maximum "
                             "allowed size")


def test_a_history_the_store_refuses_leaves_the_run_planned_with_its_estimates_marked_degraded() -> None:
    store = MemoryStore(now=ticking())
    store.durations = RefusingDurations()  # type: ignore[assignment]
    state.record_snapshot(store.artifacts, run("test-0003"), waiting_snapshot())
    result = plan(run("test-0003"), store=store, load_policy=lambda _: policy({"a": {}, "b": {}}), now=T0)
    outlook = Outlook.model_validate(store.artifacts.get("test-0003", "OUTLOOK"))
    assert outlook.degraded is not None
    assert outlook.degraded.startswith("the run history could not be stored (dynamodb:PutItem on table t: "
                                       "ValidationException")
    assert result["notes"] == [outlook.degraded]  # the run's notifications carry it
    assert store.artifacts.get("test-0003", "PLAN") is not None
    assert f"the estimates: {outlook.degraded}" in why(store, CLUSTER, "a").lines()


class ReadFailing(RefusingDurations):
    """A run history store whose stored history cannot be read: `error` the way it fails; writes are kept."""

    def __init__(self, error: RebalancerError):
        self.error = error
        self.kept: list[RunHistory] = []

    def history(self, cluster_name: str) -> RunHistory:
        raise self.error

    def record(self, cluster_name: str, history: RunHistory) -> None:
        self.kept.append(history)


def test_a_history_this_version_cannot_read_is_replaced_and_one_not_read_for_now_is_kept() -> None:
    for error, replaced in ((RecordUnreadable("the run history of cluster test was recorded by an older version"),
                             True), (TransientError("dynamodb:GetItem on table t: throttled"), False)):
        store = MemoryStore(now=ticking())
        durations = ReadFailing(error)
        store.durations = durations  # type: ignore[assignment]
        state.record_snapshot(store.artifacts, run("test-0003"), waiting_snapshot())
        result = plan(run("test-0003"), store=store, load_policy=lambda _: policy({"a": {}, "b": {}}), now=T0)
        outlook = Outlook.model_validate(store.artifacts.get("test-0003", "OUTLOOK"))
        assert outlook.degraded == (f"the run history could not be read ({error}): these estimates start from no "
                                    "runs seen before")
        assert result["notes"] == [outlook.degraded]
        assert bool(durations.kept) == replaced
