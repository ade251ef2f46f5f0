from __future__ import annotations

from pathlib import Path

import pytest

from rebalancer.errors import InvalidInput
from rebalancer_tools.simulator.teams import default_teams, load_teams
from rebalancer_tools.simulator.trace import TraceJob, load_trace, parse_rows

HEADER = "job_id,team,submit_s,duration_s,gpus,extra\n"


def test_rows_are_sorted_by_submit_time_and_extra_columns_ignored() -> None:
    jobs = parse_rows([HEADER, "b,t1,20,100,8,x\n", "a,t2,5,50,1,y\n"], "t.csv")
    assert [j.job_id for j in jobs] == ["a", "b"]
    assert jobs[1] == TraceJob("b", "t1", 20.0, 100.0, 8)


def test_a_trace_may_say_what_each_job_declares_of_its_run_time() -> None:
    jobs = parse_rows(["job_id,team,submit_s,duration_s,gpus,declared_s\n", "a,t1,0,100,8,90\n", "b,t1,5,50,1,\n"],
                      "t.csv")
    assert [(j.duration_s, j.declared_s) for j in jobs] == [(100.0, 90.0), (50.0, None)]
    with pytest.raises(InvalidInput, match=r"t.csv:2: .*declared_s.*must be above 0 .* got '0'"):
        parse_rows(["job_id,team,submit_s,duration_s,gpus,declared_s\n", "a,t1,0,100,8,0\n"], "t.csv")


@pytest.mark.parametrize(("row", "needle"), [
    ("a,t1,zero,100,8,x", "submit_s: must be a number, got 'zero'"),
    ("a,t1,0,100,1.5,x", "gpus: must be a whole number, got '1.5'"),
    ("a,t1,0,100,0,x", "gpus: must be from 1 to 100,000"),
    ("a,t1,-3,100,1,x", "submit_s: must be a finite number >= 0"),
    ("a,___,0,100,1,x", "team: '___' has no letter or digit to make a HyperPod team name from"),
    ("a, ,0,100,1,x", "team: is empty"),
    ("a,t1,0", "expected 6 columns, got 3"),
])
def test_malformed_row_names_the_line(row: str, needle: str) -> None:
    with pytest.raises(InvalidInput) as e:
        parse_rows([HEADER, "ok,t1,0,10,1,x\n", row + "\n"], "trace.csv")
    assert str(e.value).startswith("trace.csv:3: ")
    assert needle in str(e.value)


def test_missing_column_is_named(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("job_id,team,submit_s,gpus\na,t,0,1\n")
    with pytest.raises(InvalidInput, match="lacks column\\(s\\) duration_s"):
        load_trace(p)


def test_default_quotas_are_whole_nodes_proportional_to_gpu_hours() -> None:
    jobs = [TraceJob("1", "big", 0, 3600, 30), TraceJob("2", "mid", 0, 3600, 10), TraceJob("3", "tiny", 0, 60, 1)]
    teams = {t.name: t.quota for t in default_teams(jobs, 64, 8)}
    assert sum(teams.values()) == 64
    assert teams["tiny"] == 1
    assert teams["mid"] % 8 == 0
    assert teams["big"] > teams["mid"] > 0


def test_teams_file(tmp_path: Path) -> None:
    p = tmp_path / "teams.csv"
    p.write_text("team,weight,guarantee\nml,2,16\ninfra,1,8\n")
    assert [(t.name, t.weight, t.quota) for t in load_teams(p)] == [("ml", 2.0, 16), ("infra", 1.0, 8)]
    p.write_text("team,weight,guarantee\nml,two,16\n")
    with pytest.raises(InvalidInput, match=":2: "):
        load_teams(p)
