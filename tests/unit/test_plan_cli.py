"""`rebalancer plan`: output formats and exit codes, through click's runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebalancer.errors import RebalancerError
from rebalancer_tools.cli import cli

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = str(ROOT / "examples/snapshot.json")
POLICY = str(ROOT / "examples/policy.yaml")


def run(*args: str, columns: int | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["plan", *args], env={"COLUMNS": str(columns) if columns else None})
    return result.exit_code, result.stdout, result.stderr


def test_json_output_has_the_documented_keys_and_requests_in_apply_order() -> None:
    code, out, _ = run("--snapshot", SNAPSHOT, "--policy", POLICY, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert {"allocations", "changes", "requests", "requires_approval", "warnings"} <= doc.keys()
    kinds = [c["after"] > c["before"] for c in doc["changes"]]
    assert kinds == sorted(kinds)  # decreases first
    assert doc["allocations"]["research"]["ml.p5.48xlarge"] == {"accelerators": 18}


@pytest.mark.parametrize("columns", [100, 80, 60, 40])
def test_table_output_fits_the_terminal_and_shows_reasons(columns: int) -> None:
    code, out, _ = run("--snapshot", SNAPSHOT, "--policy", POLICY, columns=columns)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= columns
    assert "16 → 18" in out
    assert "unhealthy" in " ".join(out.split())


def test_piped_without_a_width_each_change_is_one_line_and_csv_has_the_rows() -> None:
    code, out, _ = run("--snapshot", SNAPSHOT, "--policy", POLICY)
    assert code == 0
    doc = json.loads(run("--snapshot", SNAPSHOT, "--policy", POLICY, "--format", "json")[1])
    rows = [line for line in out.splitlines() if "→" in line and "│" in line]
    assert len(rows) == len(doc["changes"])
    code, text, _ = run("--snapshot", SNAPSHOT, "--policy", POLICY, "--format", "csv")
    assert code == 0
    header, *lines = text.splitlines()
    assert header == "team,pool,resource,before,after,wanted,hold,reason"
    assert len(lines) == len(doc["changes"])


def test_now_drives_the_cooldown() -> None:
    # speech was last changed on 2026-11-20 at 10:00: ten minutes later it keeps its quota, so vision waits.
    _, out, _ = run("--snapshot", SNAPSHOT, "--policy", POLICY, "--format", "json", "--now", "2026-11-20T10:10:00Z")
    cooling = {(c["team"], c["instance_type"]) for c in json.loads(out)["changes"]}
    _, out, _ = run("--snapshot", SNAPSHOT, "--policy", POLICY, "--format", "json")
    later = {(c["team"], c["instance_type"]) for c in json.loads(out)["changes"]}
    trn = "ml.trn1.32xlarge"
    assert ("speech", trn) in later
    assert ("vision", trn) in later
    assert ("speech", trn) not in cooling
    assert ("vision", trn) not in cooling


def test_invalid_policy_exits_2_naming_file_field_and_value(tmp_path: Path) -> None:
    bad = tmp_path / "policy.yaml"
    bad.write_text("teams:\n  research:\n    weight: -3\n")
    code, _, err = run("--snapshot", SNAPSHOT, "--policy", str(bad))
    assert code == 2
    assert str(bad) in err
    assert "teams.research.weight" in err
    assert "-3" in err


def test_unknown_instance_type_in_snapshot_exits_2(tmp_path: Path) -> None:
    doc = json.loads(Path(SNAPSHOT).read_text())
    doc["nodes"][0]["InstanceType"] = "ml.p9.96xlarge"
    bad = tmp_path / "snap.json"
    bad.write_text(json.dumps(doc))
    code, _, err = run("--snapshot", str(bad), "--policy", POLICY)
    assert code == 2
    assert "ml.p9.96xlarge" in err


@pytest.mark.parametrize("args", [("--now", "yesterday"), ("--snapshot", "/nonexistent/snap.json")])
def test_bad_options_exit_2(args: tuple[str, str]) -> None:
    opts = {"--snapshot": SNAPSHOT, "--policy": POLICY, args[0]: args[1]}
    code, _, err = run(*[x for kv in opts.items() for x in kv])
    assert code == 2
    assert args[1] in err


@pytest.mark.parametrize("args", [("--now", "yesterday"), ("--snapshot", "/nonexistent/snap.json"),
                                  ("--policy", str(ROOT / "examples/snapshot.json"))])
def test_bad_input_is_refused_before_anything_is_said_of_planning(args: tuple[str, str]) -> None:
    opts = {"--snapshot": SNAPSHOT, "--policy": POLICY, args[0]: args[1]}
    code, _, err = run(*[x for kv in opts.items() for x in kv], "--table", "")
    assert code == 2
    assert err.startswith("error:"), err
    assert "planned from the snapshot alone" not in err
    # and a plan that was made says what it was made from
    code, _, err = run("--snapshot", SNAPSHOT, "--policy", POLICY, "--table", "")
    assert code == 0
    assert err.startswith("warning: no table"), err


def test_other_failures_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: object, **__: object) -> None:
        raise RebalancerError("planning failed")

    monkeypatch.setattr("rebalancer.app.workflow.run_plan.make_plan", boom)
    code, _, err = run("--snapshot", SNAPSHOT, "--policy", POLICY)
    assert code == 1
    assert "planning failed" in err
