"""The simulator's run is bounded (issue 25): a job submitted 31,000 years ahead, a duration of 1e15 s, 10,000 team
labels or a subnormal team weight are refused when the trace or teams file is read, in one line naming the row."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalancer.errors import InvalidInput
from rebalancer_tools.simulator.teams import load_teams
from rebalancer_tools.simulator.trace import MAX_TEAMS, parse_trace

HEAD = "job_id,team,submit_s,duration_s,gpus"


@pytest.mark.parametrize(("row", "words"), [
    ("j1,a,978000000000,60,8", r"t.csv:2: submit_s: at most 315360000 s \(ten years\)"),
    ("j1,a,0,1e15,8", r"t.csv:2: duration_s: at most 31536000 s \(a year\)"),
    ("j1,a,0,60,1000000", "t.csv:2: gpus: must be from 1 to 100,000"),
    ("j1,a,nan,60,8", "t.csv:2: submit_s: must be a finite number"),
])
def test_a_trace_row_beyond_the_simulator_s_bounds_is_refused(row: str, words: str) -> None:
    with pytest.raises(InvalidInput, match=words):
        parse_trace([HEAD, row], "t.csv")


def test_more_team_labels_than_the_bound_are_refused_at_the_first_one_over() -> None:
    rows = [f"j{i},team-{i},0,60,1" for i in range(MAX_TEAMS + 5)]
    with pytest.raises(InvalidInput, match=f"t.csv:{MAX_TEAMS + 2}: team: more than {MAX_TEAMS:,} teams"):
        parse_trace([HEAD, *rows], "t.csv")
    assert len(parse_trace([HEAD, *rows[:MAX_TEAMS]], "t.csv").labels) == MAX_TEAMS


@pytest.mark.parametrize("weight", ["1e-300", "nan", "inf", "2e6", "-1"])
def test_a_team_weight_outside_its_range_is_refused(tmp_path: Path, weight: str) -> None:
    teams = tmp_path / "teams.csv"
    teams.write_text(f"team,weight,guarantee\na,{weight},8\n")
    with pytest.raises(InvalidInput, match="weight must be 0 or from 1e-06 to 1e"):
        load_teams(teams)
