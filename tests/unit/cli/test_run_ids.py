"""Run ids as `history` prints them are what `--run` and `--snapshot-of` take: the short id, the full name, or a
unique prefix; a prefix naming two runs is refused naming both."""

from __future__ import annotations

import pytest

from rebalancer.errors import InvalidInput
from rebalancer_tools.reports.run_ids import resolve_run, short_run

CLUSTER = "ml-prod-1"  # a cluster name with dashes: the id is not "the part after the last dash"
RUNS = [f"{CLUSTER}-20261201T180000", f"{CLUSTER}-20261201T180000-2acefbc", f"{CLUSTER}-cli20261201T180900",
        f"{CLUSTER}-20261202T060000"]


def test_the_shown_id_drops_only_the_cluster_prefix() -> None:
    assert [short_run(r, CLUSTER) for r in RUNS] == ["20261201T180000", "20261201T180000-2acefbc",
                                                     "cli20261201T180900", "20261202T060000"]
    assert short_run("other-20261201T180000", CLUSTER) == "other-20261201T180000"


@pytest.mark.parametrize(("typed", "expected"), [
    ("cli20261201T180900", RUNS[2]), (RUNS[2], RUNS[2]), ("cli", RUNS[2]), ("  cli2026 ", RUNS[2]),
    ("20261202", RUNS[3]), ("20261201T180000", RUNS[0]),  # exact beats the longer run it prefixes
    ("20261201T180000-2a", RUNS[1]), (f"{CLUSTER}-2026120", None),
])
def test_every_form_history_shows_resolves_to_one_run(typed: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(InvalidInput) as e:
            resolve_run(typed, RUNS, CLUSTER, option="--run")
        assert str(e.value).startswith("--run: ")
        assert "names 3 runs" in str(e.value)
        assert "20261202T060000" in str(e.value)
    else:
        assert resolve_run(typed, RUNS, CLUSTER, option="--run") == expected


def test_an_ambiguous_prefix_is_refused_with_the_candidates() -> None:
    with pytest.raises(InvalidInput) as e:
        resolve_run("2026120", RUNS, CLUSTER, option="--snapshot-of")
    assert str(e.value) == ("--snapshot-of: '2026120' names 3 runs of ml-prod-1 (20261201T180000, "
                            "20261201T180000-2acefbc, 20261202T060000): type more of the id")


def test_an_unknown_id_is_passed_through_for_the_callers_not_stored_message() -> None:
    assert resolve_run("nope", RUNS, CLUSTER, option="--run") == "nope"
    assert resolve_run("x", [], CLUSTER, option="--run") == "x"
