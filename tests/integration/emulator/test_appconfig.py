"""AppConfig on the emulator, in process and over HTTP, with real boto3 clients and Powertools' AppConfigProvider:
environments, strategies (AWS's predefined and created ones), deployments that run the profile's JSON_SCHEMA
validator first, AppConfig Data sessions serving the latest deployed version (empty when unchanged, one-shot
tokens), a rollback serving the version before; and `rebalancer policy push` publishing a policy there, refusing a
bad one before anything is sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities import parameters
from botocore.exceptions import ClientError
from click.testing import CliRunner
from support.emulator import EmulatorHandle
from support.template import template

from rebalancer.app.policy_source import load_appconfig_policy
from rebalancer_tools.cli import cli
from rebalancer_tools.emulator import appconfig as emu_appconfig
from rebalancer_tools.packaging import appconfig_policy as ac

POLICY = "mode: dry-run\nteams:\n  a: {weight: 2}\n  b: {weight: 1}\n"


@pytest.fixture
def world(any_emulator: EmulatorHandle, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[EmulatorHandle, Any,
                                                                                        ac.Target]]:
    if any_emulator.endpoint:
        monkeypatch.setenv("AWS_ENDPOINT_URL", any_emulator.endpoint)
    parameters.clear_caches()  # type: ignore[no-untyped-call]
    client = any_emulator.client("appconfig")
    app = client.create_application(Name="rebalancer-policy")["Id"]
    env = client.create_environment(ApplicationId=app, Name="live", Monitors=[])["Id"]
    validators = template()["Resources"]["PolicyConfigurationProfile"]["Properties"]["Validators"]
    profile = client.create_configuration_profile(ApplicationId=app, Name="c1", LocationUri="hosted",
                                                  Type="AWS.Freeform", Validators=validators)["Id"]
    yield any_emulator, client, ac.Target(app, env, profile)
    parameters.clear_caches()  # type: ignore[no-untyped-call]


def push(client: Any, target: ac.Target, text: str, strategy: str = "AppConfig.AllAtOnce") -> ac.Pushed:
    content, policy = ac.policy_json(text, "policy.yaml")
    return ac.push(client, target, content, policy, strategy=strategy)


def test_a_pushed_policy_is_read_through_powertools_by_names_or_ids(world: Any) -> None:
    _emu, client, t = world
    pushed = push(client, t, POLICY)
    assert (pushed.version, pushed.deployment, pushed.state, pushed.teams) == (1, 1, "COMPLETE", 2)
    assert load_appconfig_policy(t.application, t.environment, t.profile).teams["a"].weight == 2
    parameters.clear_caches()  # type: ignore[no-untyped-call]
    assert set(load_appconfig_policy("rebalancer-policy", "live", "c1").teams) == {"a", "b"}


def test_a_session_serves_the_latest_deployed_version_once_and_tokens_are_one_shot(world: Any) -> None:
    emu, client, t = world
    push(client, t, POLICY)
    data = emu.client("appconfigdata")
    token = data.start_configuration_session(ApplicationIdentifier=t.application, EnvironmentIdentifier=t.environment,
                                             ConfigurationProfileIdentifier=t.profile)["InitialConfigurationToken"]
    first = data.get_latest_configuration(ConfigurationToken=token)
    assert json.loads(first["Configuration"].read())["teams"]["a"] == {"weight": 2}
    assert first["ContentType"] == "application/json"
    assert first["NextPollIntervalInSeconds"] == 60
    unchanged = data.get_latest_configuration(ConfigurationToken=first["NextPollConfigurationToken"])
    assert unchanged["Configuration"].read() == b""
    push(client, t, POLICY.replace("weight: 2", "weight: 5"))
    changed = data.get_latest_configuration(ConfigurationToken=unchanged["NextPollConfigurationToken"])
    assert json.loads(changed["Configuration"].read())["teams"]["a"] == {"weight": 5}
    with pytest.raises(ClientError) as used:
        data.get_latest_configuration(ConfigurationToken=token)
    assert used.value.response["Error"]["Code"] == "BadRequestException"


def test_nothing_deployed_and_unknown_names_are_not_found(world: Any) -> None:
    emu, _client, t = world
    data = emu.client("appconfigdata")
    token = data.start_configuration_session(ApplicationIdentifier=t.application, EnvironmentIdentifier=t.environment,
                                             ConfigurationProfileIdentifier=t.profile)["InitialConfigurationToken"]
    with pytest.raises(ClientError) as none:
        data.get_latest_configuration(ConfigurationToken=token)
    assert none.value.response["Error"]["Code"] == "ResourceNotFoundException"
    with pytest.raises(ClientError) as unknown:
        data.start_configuration_session(ApplicationIdentifier=t.application, EnvironmentIdentifier="staging",
                                         ConfigurationProfileIdentifier=t.profile)
    assert unknown.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_the_validator_refuses_a_bad_version_naming_the_field_and_nothing_is_deployed(world: Any) -> None:
    _emu, client, t = world
    push(client, t, POLICY)
    version = client.create_hosted_configuration_version(
        ApplicationId=t.application, ConfigurationProfileId=t.profile, ContentType="application/json",
        Content=b'{"teams": {"a": {"weight": 1, "sharing": {"strategy": "Borrow"}}}}')["VersionNumber"]
    with pytest.raises(ClientError) as refused:
        client.start_deployment(ApplicationId=t.application, EnvironmentId=t.environment,
                                DeploymentStrategyId="AppConfig.AllAtOnce", ConfigurationProfileId=t.profile,
                                ConfigurationVersion=str(version))
    assert "$.teams.a.sharing.strategy" in refused.value.response["Error"]["Message"]
    deployments = client.list_deployments(ApplicationId=t.application, EnvironmentId=t.environment)["Items"]
    assert [d["ConfigurationVersion"] for d in deployments] == ["1"]


def test_a_created_strategy_is_used_and_a_rollback_serves_the_version_before(world: Any) -> None:
    emu, client, t = world
    strategy = client.create_deployment_strategy(Name="policy", DeploymentDurationInMinutes=0, GrowthFactor=100,
                                                 FinalBakeTimeInMinutes=15, ReplicateTo="NONE")
    assert client.get_deployment_strategy(DeploymentStrategyId=strategy["Id"])["FinalBakeTimeInMinutes"] == 15
    push(client, t, POLICY, strategy["Id"])
    second = push(client, t, POLICY.replace("  b: {weight: 1}\n", ""), strategy["Id"])
    got = client.get_deployment(ApplicationId=t.application, EnvironmentId=t.environment,
                                DeploymentNumber=second.deployment)
    assert (got["DeploymentStrategyId"], got["FinalBakeTimeInMinutes"]) == (strategy["Id"], 15)
    emu_appconfig.roll_back(emu.emulator.account_id, emu.region, t.application, t.environment)
    assert client.get_environment(ApplicationId=t.application, EnvironmentId=t.environment)["State"] == "RolledBack"
    assert set(load_appconfig_policy(t.application, t.environment, t.profile).teams) == {"a", "b"}


def test_policy_push_publishes_and_says_what_it_did(world: Any, tmp_path: Path) -> None:
    emu, client, t = world
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    target = f"{t.application}/{t.environment}/{t.profile}"
    result = CliRunner().invoke(cli, ["policy", "push", str(path), "--appconfig", target, "--region", emu.region])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().startswith("policy of 2 teams (")
    assert "hosted version 1, deployment 1 COMPLETE (strategy AppConfig.AllAtOnce)" in result.stdout
    # The profile is named after the stack's cluster; there is none here: said, not checked.
    assert result.stderr.startswith("warning: not checked against cluster c1 (the profile's name): DescribeCluster")
    versions = client.list_hosted_configuration_versions(ApplicationId=t.application,
                                                         ConfigurationProfileId=t.profile)["Items"]
    assert len(versions) == 1


def test_policy_push_reads_the_policy_against_its_cluster_first(world: Any, tmp_path: Path) -> None:
    """As the planner and `diff`: a typo of an existing team is refused (nothing pushed), guarantees above the
    cluster's healthy capacity are said."""
    emu, client, t = world
    p5 = "ml.p5.48xlarge"
    arn = emu.emulator.create_cluster("c1", [("p5", p5, 2)])  # 16 GPUs
    emu.sagemaker.create_compute_quota(
        Name="research-quota", ClusterArn=arn, ComputeQuotaTarget={"TeamName": "research", "FairShareWeight": 1},
        ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": p5, "Accelerators": 8}]})
    path, target = tmp_path / "policy.yaml", f"{t.application}/{t.environment}/{t.profile}"

    def push_text(text: str) -> Any:
        path.write_text(text)
        return CliRunner().invoke(cli, ["policy", "push", str(path), "--appconfig", target, "--region", emu.region])

    typo = push_text("mode: dry-run\nteams:\n  research: {}\n  reserch: {}\n")
    assert typo.exit_code == 2, typo.output
    assert "did you mean research?" in typo.stderr
    assert client.list_hosted_configuration_versions(ApplicationId=t.application,
                                                     ConfigurationProfileId=t.profile)["Items"] == []
    over = push_text(f"mode: dry-run\nteams:\n  research: {{guarantee: {{{p5}: 12}}}}\n"
                     f"  training: {{guarantee: {{{p5}: 8}}, new: true}}\n")
    assert over.exit_code == 0, over.output
    assert (f"warning: c1: guarantees and reservations on {p5} sum to 20, above its healthy capacity of 16 "
            "(guarantees are scaled down to fit, and a team without one may get nothing): research 12 guaranteed, "
            "training 8 guaranteed") in over.stderr


@pytest.mark.parametrize(("text", "args", "says"), [
    ("teams:\n  a: {weight: -1}\n", [], "teams.a.weight"),
    ("teams: [\n", [], "policy.yaml"),
    (POLICY, ["--appconfig", "just-an-app"], "--appconfig: expected APPLICATION_ID/ENVIRONMENT_ID/PROFILE_ID"),
])
def test_policy_push_refuses_in_one_line_and_sends_nothing(world: Any, tmp_path: Path, text: str,
                                                            args: list[str], says: str) -> None:
    emu, client, t = world
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    target = args or ["--appconfig", f"{t.application}/{t.environment}/{t.profile}"]
    result = CliRunner().invoke(cli, ["policy", "push", str(path), *target, "--region", emu.region])
    assert result.exit_code != 0
    assert says in result.output, result.output
    assert "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1, result.output
    versions = client.list_hosted_configuration_versions(ApplicationId=t.application,
                                                         ConfigurationProfileId=t.profile)["Items"]
    assert versions == []
