"""A policy larger than SSM holds, end to end with PolicySource=appconfig: 1,000 teams (far over SSM's 8 KB) pushed
as `rebalancer policy push` does — a hosted configuration version in the template's profile, whose JSON-schema
validator (the published policy schema, draft 4) AppConfig runs before it deploys — deployed with the template's
strategy, read by the plan step through Powertools' AppConfig provider (AppConfig Data over the emulator, under the
plan role's IAM: the two calls on that one profile), and planned. A bad policy is refused by the validator with
one line naming the field, and the deployed policy stays the one the next run reads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from support.emulator import EmulatorHandle, in_process_emulator
from support.events import load_event

from rebalancer.app import wiring
from rebalancer_tools.emulator import DEMO
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import LocalStack

pytestmark = pytest.mark.slow  # deploys the local stack and plans 1,000 teams

CLUSTER = DEMO.cluster_name
TEAMS = 1000
SSM_ADVANCED_MAX = 8 * 1024


def policy(teams: int, weight: int = 1) -> str:
    lines = ["mode: dry-run", "stability: {cooldown_minutes: 0}", "teams:"]
    lines += [f"  team-{i:04d}: {{weight: {weight}, cap: {{ml.p5.48xlarge: 8}}}}" for i in range(teams)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def stack() -> Iterator[tuple[LocalStack, EmulatorHandle, TickingClock]]:
    with in_process_emulator(seed_demo=True) as emu:
        clock = TickingClock()
        with LocalStack(clusters={CLUSTER: policy(TEAMS)}, now=clock, policy_source="appconfig") as s:
            yield s, emu, clock


def planned(s: LocalStack, clock: TickingClock) -> dict[str, Any]:
    clock.advance(minutes=10)  # past the trigger's debounce window
    event = load_event("hyperpod-node-health")
    event["detail"]["ClusterName"] = CLUSTER
    assert s.trigger(event)["status"] == "started"
    arn = s.executions()[-1]
    assert s.wait(arn, timeout=120)["status"] == "SUCCEEDED", s.history(arn)[-3:]
    plan: dict[str, Any] = wiring.store().artifacts.get(arn.rsplit(":", 1)[-1], "PLAN")
    return plan


def created(plan: dict[str, Any]) -> set[str]:
    """The policy's teams the dry-run plan would create a quota for (the demo cluster has none of them)."""
    return {c["team"] for c in plan["field_changes"] if c["field"] == "ComputeQuota" and c["before"] is None}


def test_a_thousand_team_policy_is_pushed_deployed_read_and_planned_a_bad_one_refused_and_a_new_one_read_next(
        stack: tuple[LocalStack, EmulatorHandle, TickingClock]) -> None:
    """One stack, three runs: the deployed 1,000-team policy is planned; a bad version is refused and the next run
    still plans the deployed one; a new version pushed is what the run after reads."""
    s, emu, clock = stack
    assert len(policy(TEAMS).encode()) > 4 * SSM_ADVANCED_MAX  # no SSM parameter could hold it

    plan = planned(s, clock)
    assert created(plan) == {f"team-{i:04d}" for i in range(TEAMS)}
    assert sum(r["operation"] == "CreateComputeQuota" for r in plan["requests"]) == TEAMS

    ac = emu.client("appconfig")
    deployments = ac.list_deployments(ApplicationId=s.appconfig["PolicyApplication"],
                                      EnvironmentId=s.appconfig["PolicyEnvironment"])["Items"]
    assert [(d["DeploymentNumber"], d["State"]) for d in deployments] == [(1, "COMPLETE")]
    # The plan role read it with the two AppConfig Data calls, on the profile's ARN in ids.
    reads = {(d.action, d.resource) for d in s.iam.decisions if d.action.startswith("appconfig:")} if s.iam else set()
    profile = (f"arn:aws:appconfig:{s.region}:{s.account}:application/{s.appconfig['PolicyApplication']}/environment/"
               f"{s.appconfig['PolicyEnvironment']}/configuration/{s.appconfig['PolicyConfigurationProfile']}")
    assert reads == {("appconfig:StartConfigurationSession", profile), ("appconfig:GetLatestConfiguration", profile)}

    # A bad policy is refused by the validator, naming the field; the deployed one stays.
    bad = {"mode": "dry-run", "teams": {"team-0000": {"weight": -3}}}
    version = ac.create_hosted_configuration_version(
        ApplicationId=s.appconfig["PolicyApplication"],
        ConfigurationProfileId=s.appconfig["PolicyConfigurationProfile"],
        Content=json.dumps(bad).encode(), ContentType="application/json")["VersionNumber"]
    with pytest.raises(ClientError) as refused:
        ac.start_deployment(ApplicationId=s.appconfig["PolicyApplication"],
                            EnvironmentId=s.appconfig["PolicyEnvironment"],
                            DeploymentStrategyId=s.appconfig["PolicyDeploymentStrategy"],
                            ConfigurationProfileId=s.appconfig["PolicyConfigurationProfile"],
                            ConfigurationVersion=str(version))
    message = refused.value.response["Error"]["Message"]
    assert refused.value.response["Error"]["Code"] == "BadRequestException"
    assert "\n" not in message
    assert "$.teams.team-0000.weight" in message, message
    from aws_lambda_powertools.utilities import parameters

    parameters.clear_caches()  # type: ignore[no-untyped-call]  # Powertools' 60 s cache, as a later run would
    plan = planned(s, clock)  # the 1,000-team policy is still the deployed one
    assert len(created(plan)) == TEAMS

    # A new version pushed (the refused one kept its version number) is what the next run reads.
    pushed = s.push_policy(policy(3, weight=2))
    assert (pushed.version, pushed.deployment, pushed.state, pushed.teams) == (version + 1, 2, "COMPLETE", 3)
    parameters.clear_caches()  # type: ignore[no-untyped-call]
    assert created(planned(s, clock)) == {"team-0000", "team-0001", "team-0002"}
