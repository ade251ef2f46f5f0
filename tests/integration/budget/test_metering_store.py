"""Metering against DynamoDB (moto): each interval counted once under retries, concurrent runs, missed runs, period
roll-over and a clock that goes backwards."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from support.item_size import ITEM_LIMIT, item_size
from support.template import create_table

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app.budgets import period_to_date
from rebalancer.budgets.metering import EXPECTED_GAP, Reading
from rebalancer.domain.policy import Policy

P5 = "ml.p5.48xlarge"
NOV_30 = datetime(2026, 11, 30, 22, 0, tzinfo=UTC)
STEP = timedelta(minutes=15)


@pytest.fixture
def store() -> Iterator[Store]:
    with mock_aws():
        create_table(boto3.client("dynamodb"))
        yield Store("t", now=lambda: NOV_30)


def reading(at: datetime, gpus: float, borrowed: float = 0.0, team: str = "research") -> Reading:
    return Reading(at=at, rates={team: {P5: (gpus, borrowed)}})


POLICY = Policy.model_validate({"teams": {"research": {"budget": {"accelerator_hours": 1000}}}})


def used(store: Store, at: datetime) -> float:
    return period_to_date(store.meter, "c", POLICY, at)["research"].accelerator_hours


def test_the_first_reading_starts_the_meter_and_the_next_records_the_interval(store: Store) -> None:
    assert store.meter.record("c", reading(NOV_30, 8), EXPECTED_GAP).status == "first"
    result = store.meter.record("c", reading(NOV_30 + STEP, 8), EXPECTED_GAP)
    assert result.status == "recorded"
    assert used(store, NOV_30 + STEP) == pytest.approx(2.0)


def test_a_retried_run_counts_nothing_twice(store: Store) -> None:
    store.meter.record("c", reading(NOV_30, 8), EXPECTED_GAP)
    again = reading(NOV_30 + STEP, 8)
    assert store.meter.record("c", again, EXPECTED_GAP).status == "recorded"
    assert store.meter.record("c", again, EXPECTED_GAP).status == "stale"
    assert used(store, NOV_30 + STEP) == pytest.approx(2.0)


class StaleLast:
    """A table whose next LAST read returns what it held before: two runs that read the meter at the same time."""

    def __init__(self, table: Any, item: dict[str, Any]):
        self._table, self._item = table, item

    def get_item(self, **kwargs: Any) -> dict[str, Any]:
        return {"Item": self._item}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


def test_two_runs_that_read_the_same_last_reading_count_the_interval_once(store: Store) -> None:
    store.meter.record("c", reading(NOV_30, 8), EXPECTED_GAP)
    last = store.table.table.get_item(Key={"pk": "METER#c", "sk": "LAST"})["Item"]
    assert store.meter.record("c", reading(NOV_30 + STEP, 8), EXPECTED_GAP).status == "recorded"
    racing = Store("t", now=lambda: NOV_30)
    racing.table._table = StaleLast(store.table.table, last)
    assert racing.meter.record("c", reading(NOV_30 + 2 * STEP, 64), EXPECTED_GAP).status == "duplicate"
    assert used(store, NOV_30 + 2 * STEP) == pytest.approx(2.0)  # the loser's 64 GPUs never count
    assert store.meter.record("c", reading(NOV_30 + 3 * STEP, 8), EXPECTED_GAP).status == "recorded"
    assert used(store, NOV_30 + 3 * STEP) == pytest.approx(2.0 + 4.0)


def test_missed_runs_are_filled_from_the_readings_around_them_and_marked_estimated(store: Store) -> None:
    store.meter.record("c", reading(NOV_30 - timedelta(hours=10), 0), EXPECTED_GAP)
    result = store.meter.record("c", reading(NOV_30 - timedelta(hours=6), 8), EXPECTED_GAP)
    assert result.fact is not None
    assert result.fact.estimated
    usage = period_to_date(store.meter, "c", POLICY, NOV_30)["research"]
    assert usage.accelerator_hours == pytest.approx(16.0)  # the line from 0 to 8 GPUs over 4 hours
    assert usage.estimated


def test_a_reading_from_a_clock_behind_the_last_one_counts_nothing(store: Store) -> None:
    store.meter.record("c", reading(NOV_30, 8), EXPECTED_GAP)
    assert store.meter.record("c", reading(NOV_30 - timedelta(minutes=3), 800), EXPECTED_GAP).status == "stale"
    assert store.meter.record("c", reading(NOV_30 + STEP, 8), EXPECTED_GAP).status == "recorded"
    assert used(store, NOV_30 + STEP) == pytest.approx(2.0)


def test_an_interval_across_the_month_end_is_split_exactly(store: Store) -> None:
    at = NOV_30
    store.meter.record("c", reading(at, 8, 8), EXPECTED_GAP)
    for _ in range(16):  # 22:00 Nov 30 → 02:00 Dec 1, 8 own + 8 borrowed GPUs
        at += STEP
        store.meter.record("c", reading(at, 8, 8), EXPECTED_GAP)
    # The last November interval straddles midnight only if a reading falls off the quarter-hour: add one.
    store.meter.record("c", reading(at + timedelta(minutes=7), 8, 8), EXPECTED_GAP)
    at += timedelta(minutes=7)
    november = period_to_date(store.meter, "c", POLICY, datetime(2026, 11, 30, 23, 59, 59, 999999, tzinfo=UTC))
    december = period_to_date(store.meter, "c", POLICY, at)["research"]
    assert november["research"].period == "2026-11"
    assert december.period == "2026-12"
    total = november["research"].accelerator_hours + december.accelerator_hours
    assert total == pytest.approx(16 * (at - NOV_30).total_seconds() / 3600, rel=1e-6)
    assert december.borrowed_hours == pytest.approx(december.accelerator_hours / 2)


def test_a_day_of_readings_adds_up(store: Store) -> None:
    at = NOV_30 - timedelta(days=1)
    store.meter.record("c", reading(at, 4), EXPECTED_GAP)
    for _ in range(96):
        at += STEP
        store.meter.record("c", reading(at, 4), EXPECTED_GAP)
    assert used(store, at) == pytest.approx(4 * 24, rel=1e-9)
    assert used(store, at - timedelta(hours=6)) == pytest.approx(4 * 18, rel=1e-9)


def test_the_fair_share_window_reads_the_tables_facts_as_the_in_memory_meter_does(store: Store) -> None:
    from rebalancer.app.budgets import trailing
    from rebalancer_tools.fakes.memory_store import MemoryStore

    windowed = Policy.model_validate({"teams": {"research": {}, "ops": {}}, "fairness": {"window_hours": 2}})
    memory = MemoryStore()
    for i in range(16):  # four hours every 15 min: research 8 own, ops 4 borrowed from the second hour on
        rates = {"research": {P5: (8.0, 0.0)}, **({"ops": {P5: (0.0, 4.0)}} if i >= 4 else {})}
        for meter in (store.meter, memory.meter):
            meter.record("c", Reading(at=NOV_30 + i * STEP, rates=rates), EXPECTED_GAP)
    at = NOV_30 + 15 * STEP
    table, in_memory = trailing(store.meter, "c", windowed, at), trailing(memory.meter, "c", windowed, at)
    assert table is not None
    assert in_memory is not None
    assert table.hours(at) == in_memory.hours(at) == {"ops": {P5: 8.0}, "research": {P5: 16.0}}
    assert trailing(store.meter, "c", POLICY, at) is None  # no window, nothing read


def test_readings_of_ten_thousand_teams_too_big_for_one_item_are_kept_in_parts(store: Store) -> None:
    """A reading of every team and type of a cluster ten times the largest benchmarked one compresses to about as
    much as DynamoDB's item holds (a fact carries two): metered in parts, each item within the limit."""
    import random

    rnd = random.Random(5)
    types = [P5, "ml.p4d.24xlarge", "ml.g5.48xlarge", "ml.trn1.32xlarge", "ml.p5e.48xlarge"]

    def big(at: datetime) -> Reading:
        return Reading(at=at, rates={f"team-{i:05d}": {t: (float(rnd.randint(0, 64)), float(rnd.randint(0, 8)))
                                                       for t in types} for i in range(10_000)})

    assert store.meter.record("c", big(NOV_30), EXPECTED_GAP).status == "first"
    assert store.meter.record("c", big(NOV_30 + STEP), EXPECTED_GAP).status == "recorded"
    items = boto3.resource("dynamodb").Table("t").scan()["Items"]
    assert any(i["pk"].startswith("PART#METER#c#") for i in items)
    assert max(item_size(i) for i in items) < ITEM_LIMIT * 0.75
    [fact] = store.meter.facts("c", NOV_30, NOV_30 + STEP)
    assert len(fact.at_end) == 10_000
