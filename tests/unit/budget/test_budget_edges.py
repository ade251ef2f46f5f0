"""Budgets and dates are total (issue 25 item 3): every value the loader accepts gives finite figures, strict JSON and
a plan; what would not (infinity, a subnormal budget, a folder of the tz database, a year the calendar cannot hold
in every zone) is refused where it enters, in one line."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError
from rich.console import Console
from support.clock import T0
from support.clusters import policy, snapshot

from rebalancer.domain.budget import Budget, BudgetUsage, check_year, parse_period_label, period_window
from rebalancer.domain.context import PlanningContext
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import load_text
from rebalancer.planning.planner import make_plan
from rebalancer_tools.cli.history_cmd import parse_since
from rebalancer_tools.reports import usage_report

P5 = "ml.p5.48xlarge"


def _policy_text(budget: str) -> str:
    return f"teams:\n  research:\n    weight: 1\n    budget: {budget}\n  training:\n    weight: 1\n"


def test_an_exhausted_guarantee_only_budget_without_thresholds_plans_instead_of_raising() -> None:
    snap = snapshot({P5: 4}, quotas={"research": {P5: 24}, "training": {P5: 8}}, pending={"research": {P5: 8}})
    context = PlanningContext(budget_usage={"research": BudgetUsage(period="2026-11", accelerator_hours=1500)})
    pol = policy({"research": {"weight": 3, "guarantee": {P5: 8},
                               "budget": {"accelerator_hours": 1000, "on_exhausted": "guarantee_only",
                                          "notify_at": []}},
                  "training": {"weight": 1}})
    plan = make_plan(snap, pol, T0, context=context)  # was KeyError: 'research'
    [change] = [c for c in plan.changes if c.team == "research"]
    assert change.after == 8
    assert "budget 150 % used" in change.reason
    assert "quota held at its guarantee" in change.reason


def test_numbers_in_exponent_form_are_numbers_as_yaml_1_2_reads_them() -> None:
    """PyYAML (YAML 1.1) reads `1e6` as a string; the strict policy models would refuse it as no number."""
    pol = load_text(Policy, _policy_text("{accelerator_hours: 1e6, money: 2.5e5}"), "policy.yaml")
    budget = pol.teams["research"].budget
    assert budget is not None
    assert (budget.accelerator_hours, budget.money) == (1e6, 2.5e5)


@pytest.mark.parametrize(("budget", "words"), [
    ("{accelerator_hours: '1e400'}", "budget.accelerator_hours"),
    ("{accelerator_hours: 5e-324}", "greater than or equal to 0.01"),
    ("{money: .nan}", "must be a finite number"),
    ("{accelerator_hours: 10, timezone: America}", "is not a time zone name"),
    ("{accelerator_hours: 10, timezone: ../../etc/passwd}", "is not a time zone name"),
])
def test_a_budget_out_of_its_range_is_refused_by_the_loader_in_one_line(budget: str, words: str) -> None:
    with pytest.raises(InvalidInput, match=words) as e:
        load_text(Policy, _policy_text(budget), "policy.yaml")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("field", ["accelerator_hours", "borrowed_hours", "cost"])
@pytest.mark.parametrize("value", [-1.0, float("inf"), float("nan"), 1e16])
def test_budget_usage_is_validated_like_the_rest(field: str, value: float) -> None:
    """Period-to-date use reaches the planner in its context, not in the snapshot; the model refuses what no meter
    could have measured, naming the field."""
    with pytest.raises(ValidationError, match=field):
        BudgetUsage.model_validate({"period": "2026-11", field: value})


def test_a_snapshot_carrying_budget_figures_is_refused() -> None:
    doc = snapshot({P5: 1}).model_dump(mode="json")
    doc["budget_usage"] = {"research": {"period": "2026-11", "accelerator_hours": 5}}
    with pytest.raises(InvalidInput, match="budget_usage"):
        load_text(Snapshot, json.dumps(doc), "snapshot.json")


@pytest.mark.parametrize(("at", "zone"), [
    (datetime(1, 1, 1, 0, 30, tzinfo=UTC), "Asia/Tokyo"),
    (datetime(1, 1, 1, 0, 30, tzinfo=UTC), "America/New_York"),
    (datetime(9999, 12, 31, 23, 0, tzinfo=UTC), "Pacific/Kiritimati"),
    (datetime(9999, 12, 31, 23, 0, tzinfo=UTC), "UTC"),
])
def test_periods_at_the_ends_of_the_calendar_are_a_value_error_not_an_overflow(at: datetime, zone: str) -> None:
    for period in ("month", "week"):
        with pytest.raises(ValueError, match="outside the years 2 to 9998"):
            period_window(at, period, zone)  # type: ignore[arg-type]


def test_periods_inside_the_calendar_are_computed_in_every_zone() -> None:
    for zone in ("Pacific/Kiritimati", "Pacific/Pago_Pago", "UTC"):
        assert parse_period_label("0002-01", "month", zone).label == "0002-01"
        assert parse_period_label("9998-12", "month", zone).label == "9998-12"
        assert period_window(datetime(9998, 12, 31, 23, tzinfo=UTC), "week", zone).end.year == 9999
    with pytest.raises(ValueError, match="outside the years"):
        parse_period_label("0001-01", "month", "Asia/Tokyo")
    assert check_year(T0) == T0


def test_history_since_that_overflows_the_calendar_is_one_line() -> None:
    with pytest.raises(InvalidInput, match="--since: goes back before the year 1"):
        parse_since("99999999999d", T0)
    with pytest.raises(InvalidInput, match="--since: expected a duration"):
        parse_since("1" * 40 + "d", T0)
    assert parse_since("2d", T0) == T0 - timedelta(days=2)


def test_usage_json_is_strict_and_names_unpriced_types() -> None:
    pol = Policy.model_validate({"teams": {"research": {"budget": {"money": 0.01}}},
                                 "prices": {"ml.p4d.24xlarge": 30.0}})
    from rebalancer.budgets.metering import Fact

    fact = Fact(start=T0, end=T0 + timedelta(hours=1), at_start={"research": {P5: (8.0, 0.0)}},
                at_end={"research": {P5: (8.0, 0.0)}})
    report = usage_report.rows([fact], pol, T0 + timedelta(hours=1), None)
    assert report[0].unpriced == (P5,)
    doc = json.loads(usage_report.render(report, "json"), parse_constant=lambda c: pytest.fail(c))
    assert doc[0]["unpriced"] == [P5]
    console = Console(width=100, record=True, color_system=None)
    console.print(usage_report.table(report))
    table = console.export_text()
    assert f"research: no price for {P5}" in table
    assert "inf" not in table


def test_the_smallest_budget_gives_finite_percentages() -> None:
    pol = Policy.model_validate({"teams": {"research": {"budget": {"accelerator_hours": 0.01}}}})
    from rebalancer.budgets.metering import Fact

    fact = Fact(start=T0, end=T0 + timedelta(days=30), at_start={"research": {P5: (1e6, 0.0)}},
                at_end={"research": {P5: (1e6, 0.0)}})
    [row] = usage_report.rows([fact], pol, T0 + timedelta(days=30), None)
    assert row.used_percent is not None
    json.dumps([row.used_percent, row.forecast_hours], allow_nan=False)
    assert isinstance(Budget(accelerator_hours=0.01).accelerator_hours, float)
