"""Budget periods (calendar months and ISO weeks in a time zone) and the budget part of the policy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from support.props import properties

from rebalancer.domain.budget import Budget, BudgetUsage, parse_period_label, period_window, reached_thresholds
from rebalancer.domain.policy import Policy

instants = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 1, 1), timezones=st.just(UTC))
zones = st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"])


def test_a_month_in_berlin_starts_at_local_midnight_and_dst_shortens_it() -> None:
    w = period_window(datetime(2026, 3, 15, tzinfo=UTC), "month", "Europe/Berlin")
    assert w.label == "2026-03"
    assert w.start == datetime(2026, 2, 28, 23, 0, tzinfo=UTC)
    assert w.end == datetime(2026, 3, 31, 22, 0, tzinfo=UTC)
    assert w.end - w.start == timedelta(days=31, hours=-1)


def test_weeks_are_iso_weeks_across_the_year_end() -> None:
    w = period_window(datetime(2027, 1, 2, 12, tzinfo=UTC), "week")
    assert (w.label, w.start) == ("2026-W53", datetime(2026, 12, 28, tzinfo=UTC))
    assert w.end == datetime(2027, 1, 4, tzinfo=UTC)
    assert parse_period_label("2026-W53", "week") == w


def test_december_rolls_into_january() -> None:
    w = period_window(datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC), "month")
    assert (w.label, w.end) == ("2026-12", datetime(2027, 1, 1, tzinfo=UTC))


@properties(200)
@given(at=instants, zone=zones, period=st.sampled_from(["month", "week"]))
def test_every_instant_is_in_exactly_one_period(at: datetime, zone: str, period: str) -> None:
    w = period_window(at, period, zone)  # type: ignore[arg-type]
    assert w.start <= at < w.end
    after = period_window(w.end, period, zone)  # type: ignore[arg-type]
    assert after.start == w.end
    assert after.label != w.label
    before = period_window(w.start - timedelta(microseconds=1), period, zone)  # type: ignore[arg-type]
    assert before.end == w.start
    assert parse_period_label(w.label, period, zone) == w  # type: ignore[arg-type]


def test_a_naive_instant_is_refused() -> None:
    with pytest.raises(ValueError, match="no time zone"):
        period_window(datetime(2026, 11, 1), "month")


def test_a_bad_period_label_names_itself() -> None:
    with pytest.raises(ValueError, match=r"'2026-13' is not a month like 2026-11"):
        parse_period_label("2026-13", "month")


@pytest.mark.parametrize(("budget", "message"), [
    ({}, "needs accelerator_hours, money, or both"),
    ({"accelerator_hours": -5}, "greater than or equal to 0.01"),
    ({"accelerator_hours": 10, "timezone": "Mars/Olympus"}, "'Mars/Olympus' is not a time zone"),
    ({"accelerator_hours": 10, "scope": "ml.m5"}, "scope 'ml.m5'"),
    ({"accelerator_hours": 10, "on_exhausted": "shrug"}, "guarantee_only"),
    ({"accelerator_hours": 10, "notify_at": [0]}, "greater than or equal to 1"),
])
def test_a_bad_budget_is_refused_with_its_field(budget: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message) as info:
        Policy.model_validate({"teams": {"research": {"budget": budget}}})
    assert "teams.research.budget" in str(info.value)


def test_no_borrowing_needs_the_sharing_to_restore() -> None:
    with pytest.raises(ValidationError, match="needs the team's sharing"):
        Policy.model_validate({"teams": {"a": {"budget": {"accelerator_hours": 5, "on_exhausted": "no_borrowing"}}}})
    Policy.model_validate({"teams": {"a": {"budget": {"accelerator_hours": 5, "on_exhausted": "no_borrowing"},
                                           "sharing": {"strategy": "LendAndBorrow", "borrow_limit": 50}}}})


def test_prices_are_per_known_instance_type_and_positive() -> None:
    with pytest.raises(ValidationError, match=r"'ml\.p5' is not one"):
        Policy.model_validate({"teams": {}, "prices": {"ml.p5": 10}})
    with pytest.raises(ValidationError, match="greater than 0"):
        Policy.model_validate({"teams": {}, "prices": {"ml.p5.48xlarge": 0}})


def test_scope_covers_the_family_or_the_type_and_never_cpu() -> None:
    family = Budget(accelerator_hours=1, scope="ml.p5")
    assert family.covers("ml.p5en.48xlarge")
    assert not family.covers("ml.trn1.32xlarge")
    assert Budget(accelerator_hours=1).covers("ml.trn1.32xlarge")
    assert not Budget(accelerator_hours=1).covers("ml.m5.xlarge")


def test_the_fraction_is_the_larger_of_hours_and_money() -> None:
    b = Budget(accelerator_hours=100, money=1000, notify_at=(100, 50, 80))
    assert b.notify_at == (50, 80, 100)
    used = BudgetUsage(period="2026-11", accelerator_hours=40, cost=850)
    assert used.fraction(b) == pytest.approx(0.85)
    assert reached_thresholds(b, used) == (50, 80)
