"""The sandbox shows the reclaim to fair share (docs/cli/emulator.md, "A new team in a full cluster"): work that
`emulator add-demand` gets admitted is admitted now on the sandbox's clock, the demo's own work hours before, so a
team that waits in a full cluster makes `plan` name the young work of a protected team above its fair share, and
the same plan made max_age_minutes later takes nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support.sandbox_cli import rebalancer

from rebalancer_tools.emulator.demo_cluster import DEMO, P5
from rebalancer_tools.local.sandbox import Sandbox

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = DEMO.cluster_name


def _plan(policy: Path, *more: str) -> dict[str, Any]:
    code, out = rebalancer("plan", "--cluster", CLUSTER, "--policy", str(policy), "--format", "json", *more)
    assert code == 0, out
    plan: dict[str, Any] = json.loads(out[out.index("{"):])
    return plan


def test_a_team_waiting_in_a_full_cluster_gets_the_young_work_of_a_team_above_its_fair_share(
        sandbox: Sandbox, tmp_path: Path) -> None:
    # The walk's policy: the demo's, without the cooldown that holds every quota for the sandbox's first 30 minutes
    policy = tmp_path / "no-cooldown.yaml"
    policy.write_text((ROOT / "examples" / "demo-policy.yaml").read_text().replace("cooldown_minutes: 30",
                                                                                  "cooldown_minutes: 0"))
    # inference (protected_in_use) fills the 8 H100s nobody runs on: one workload admitted 20 minutes ago, one now
    opened = sandbox.clock
    sandbox.clock = lambda: datetime.now(UTC) - timedelta(minutes=20)
    code, out = rebalancer("emulator", "add-demand", "--team", "inference", "--instance-type", P5,
                           "--accelerators", "4", "--name", "serve-old")
    sandbox.clock = opened
    assert (code, out.strip()) == (0, f"workload serve-old admitted for inference: 1 × 4 on {P5}")
    code, out = rebalancer("emulator", "add-demand", "--team", "inference", "--instance-type", P5,
                           "--accelerators", "4", "--name", "serve-new")
    assert (code, out.strip()) == (0, f"workload serve-new admitted for inference: 1 × 4 on {P5}")
    code, out = rebalancer("apply", "--cluster", CLUSTER, "--policy", str(policy), "--yes")
    assert code == 0, out
    assert "applied 3 request(s); every quota settled" in out  # inference's quota follows what it runs: 12

    # platform, idle on the H100s, asks for 4: the cluster is full, so it waits
    code, out = rebalancer("emulator", "add-demand", "--team", "platform", "--instance-type", P5,
                           "--accelerators", "4")
    assert (code, out.strip()) == (0, f"workload platform-job-1 pending for platform: 1 × 4 on {P5}")
    plan = _plan(policy)
    after = {(c["team"], c["instance_type"]): c["after"] for c in plan["changes"]}
    assert after == {("inference", P5): 8, ("platform", P5): 4}
    assert [(p["team"], p["workload"], p["accelerators"]) for p in plan["preemptions"]] == [
        ("inference", "serve-new", 4)]  # serve-old and the demo's llm-serving (6 h) run on
    assert plan["preempted_gpu_hours"] < 0.1

    # the same cluster planned 16 minutes on: serve-new is older than reclaim.max_age_minutes (15), nothing is taken
    later = (datetime.now(UTC) + timedelta(minutes=16)).strftime("%Y-%m-%dT%H:%M:%SZ")
    plan = _plan(policy, "--now", later)
    assert plan["changes"] == []
    assert plan["preemptions"] == []
    [held] = [c for c in plan["held"] if c["team"] == "platform"]
    assert held["hold"]["rule"] == "capacity"
