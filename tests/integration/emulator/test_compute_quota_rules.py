"""Server-side rules of the compute-quota API, through a real boto3 client: in-process and over HTTP on loopback."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from support.emulator import EmulatorHandle, http_emulator, in_process_emulator

from rebalancer_tools.emulator import DEMO, Emulator

P5, TRN1, G5 = "ml.p5.48xlarge", "ml.trn1.32xlarge", "ml.g5.12xlarge"


@pytest.fixture(params=["in-process", "http"])
def emu(request: pytest.FixtureRequest) -> Iterator[EmulatorHandle]:
    start = in_process_emulator if request.param == "in-process" else http_emulator
    with start(seed_demo=True) as handle:
        yield handle


def _create(sm: Any, cluster_arn: str, team: str, resources: list[dict[str, Any]], **extra: Any) -> str:
    return str(sm.create_compute_quota(
        Name=extra.pop("Name", f"{team}-q"), ClusterArn=cluster_arn,
        ComputeQuotaConfig={"ComputeQuotaResources": resources}, ComputeQuotaTarget={"TeamName": team}, **extra,
    )["ComputeQuotaId"])


def _error(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    return exc.value.response["Error"]["Code"], exc.value.response["Error"]["Message"]


def test_create_then_describe_returns_the_request_at_version_1(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    arn = sm.create_cluster(ClusterName="c2", InstanceGroups=[{
        "InstanceGroupName": "g", "InstanceType": P5, "InstanceCount": 1,
        "ExecutionRole": "arn:aws:iam::123456789012:role/r",
        "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-x/", "OnCreate": "on_create.sh"}}])["ClusterArn"]
    qid = _create(sm, arn, "alpha", [{"InstanceType": P5, "Accelerators": 4}], Description="first",
                  ActivationState="Disabled")
    got = sm.describe_compute_quota(ComputeQuotaId=qid)
    assert got["ComputeQuotaVersion"] == 1
    assert got["Status"] == "Created"
    assert got["ClusterArn"] == arn
    assert got["ComputeQuotaConfig"]["ComputeQuotaResources"] == [{"InstanceType": P5, "Accelerators": 4}]
    assert got["ComputeQuotaTarget"] == {"TeamName": "alpha"}
    assert got["ActivationState"] == "Disabled"
    assert got["Description"] == "first"
    assert got["ComputeQuotaArn"].endswith(f":compute-quota/{qid}")


def test_cluster_arns_have_the_aws_shape_and_resolve(emu: EmulatorHandle) -> None:
    assert emu.demo is not None
    arn = emu.demo.cluster_arn
    cluster_id = arn.split("/")[-1]
    assert cluster_id.isalnum()
    assert len(cluster_id) == 12
    assert emu.sagemaker.describe_cluster(ClusterName=arn)["ClusterName"] == DEMO.cluster_name
    with pytest.raises(emu.sagemaker.exceptions.ResourceNotFound):
        emu.sagemaker.describe_cluster(ClusterName="no-such-cluster")


def test_every_update_raises_the_version_and_keeps_history(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    qid = emu.demo.quota_ids["research"]
    for expected, amount in ((2, 10), (3, 9), (4, 8)):
        out = sm.update_compute_quota(ComputeQuotaId=qid, TargetVersion=expected - 1, ComputeQuotaConfig={
            "ComputeQuotaResources": [{"InstanceType": P5, "Accelerators": amount}]})
        assert out["ComputeQuotaVersion"] == expected
    v2 = sm.describe_compute_quota(ComputeQuotaId=qid, ComputeQuotaVersion=2)
    assert v2["ComputeQuotaVersion"] == 2
    assert v2["ComputeQuotaConfig"]["ComputeQuotaResources"] == [{"InstanceType": P5, "Accelerators": 10}]
    assert sm.describe_compute_quota(ComputeQuotaId=qid)["ComputeQuotaVersion"] == 4
    with pytest.raises(sm.exceptions.ResourceNotFound):
        sm.describe_compute_quota(ComputeQuotaId=qid, ComputeQuotaVersion=9)


def test_update_keeps_what_it_does_not_name(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    qid = emu.demo.quota_ids["platform"]
    before = sm.describe_compute_quota(ComputeQuotaId=qid)
    sm.update_compute_quota(ComputeQuotaId=qid, TargetVersion=1, ActivationState="Disabled")
    after = sm.describe_compute_quota(ComputeQuotaId=qid)
    assert after["ActivationState"] == "Disabled"
    assert after["ComputeQuotaConfig"] == before["ComputeQuotaConfig"]
    assert after["ComputeQuotaTarget"] == before["ComputeQuotaTarget"]


def test_stale_target_version_is_a_conflict_and_changes_nothing(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    qid = emu.demo.quota_ids["training"]
    sm.update_compute_quota(ComputeQuotaId=qid, TargetVersion=1, ActivationState="Enabled")
    with pytest.raises(sm.exceptions.ConflictException):
        sm.update_compute_quota(ComputeQuotaId=qid, TargetVersion=1, ComputeQuotaConfig={
            "ComputeQuotaResources": [{"InstanceType": P5, "Accelerators": 1}]})
    got = sm.describe_compute_quota(ComputeQuotaId=qid)
    assert got["ComputeQuotaVersion"] == 2
    assert {"InstanceType": P5, "Accelerators": 12} in got["ComputeQuotaConfig"]["ComputeQuotaResources"]


@pytest.mark.parametrize(("call", "extra"), [
    ("describe_compute_quota", {}),
    ("update_compute_quota", {"TargetVersion": 1, "ActivationState": "Enabled"}),
    ("delete_compute_quota", {}),
])
def test_unknown_quota_id_is_resource_not_found(emu: EmulatorHandle, call: str, extra: dict[str, Any]) -> None:
    sm = emu.sagemaker
    with pytest.raises(sm.exceptions.ResourceNotFound):
        getattr(sm, call)(ComputeQuotaId="000000000000", **extra)


def test_one_quota_per_team_per_cluster(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    with pytest.raises(sm.exceptions.ConflictException) as exc:
        _create(sm, emu.demo.cluster_arn, "research", [{"InstanceType": G5, "Accelerators": 1}], Name="other")
    assert "research" in _error(exc)[1]


def test_names_are_unique(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    with pytest.raises(sm.exceptions.ConflictException):
        _create(sm, emu.demo.cluster_arn, "newteam", [{"InstanceType": G5, "Accelerators": 1}],
                Name="research-quota")


def test_cluster_must_exist(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    missing = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdefabcdef"
    with pytest.raises(ClientError) as exc:
        _create(sm, missing, "x", [{"InstanceType": P5, "Accelerators": 1}])
    code, message = _error(exc)
    assert code == "ValidationException"
    assert missing in message


def test_instance_type_must_be_in_the_cluster(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    with pytest.raises(ClientError) as exc:
        _create(sm, emu.demo.cluster_arn, "x", [{"InstanceType": "ml.p4d.24xlarge", "Accelerators": 8}])
    code, message = _error(exc)
    assert code == "ValidationException"
    assert "ml.p4d.24xlarge" in message


def test_more_than_15_resource_entries_are_rejected_by_the_model_limit(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    entries = [{"InstanceType": P5, "Accelerators": 1}] * 16
    with pytest.raises(ClientError) as exc:
        _create(sm, emu.demo.cluster_arn, "x", entries)
    code, message = _error(exc)
    assert code == "ValidationException"
    assert "'computeQuotaConfig.computeQuotaResources'" in message
    assert "less than or equal to 15" in message


@pytest.mark.parametrize(("field", "value", "constraint"), [
    ("BorrowLimit", 10001, "value less than or equal to 10000"),
    ("BorrowLimit", -1, "value greater than or equal to 0"),
    ("Strategy", "LendSometimes", "enum value set: [Lend, DontLend, LendAndBorrow]"),
])
def test_resource_sharing_config_is_checked_against_the_model(
        emu: EmulatorHandle, field: str, value: Any, constraint: str) -> None:
    # botocore checks minimums on the client; turn that off so the server's answer is what we see.
    sm = emu.client(parameter_validation=False)
    assert emu.demo is not None
    sharing: dict[str, Any] = {"Strategy": "LendAndBorrow", "BorrowLimit": 50, field: value}
    qid = emu.demo.quota_ids["inference"]
    with pytest.raises(ClientError) as exc:
        sm.update_compute_quota(ComputeQuotaId=qid, TargetVersion=1,
                                ComputeQuotaConfig={"ResourceSharingConfig": sharing})
    code, message = _error(exc)
    assert code == "ValidationException"
    assert constraint in message
    assert f"computeQuotaConfig.resourceSharingConfig.{field[0].lower()}{field[1:]}" in message


def test_team_name_pattern_and_weight_range(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    with pytest.raises(ClientError) as exc:
        sm.create_compute_quota(Name="bad", ClusterArn=emu.demo.cluster_arn,
                                ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": G5, "Count": 1}]},
                                ComputeQuotaTarget={"TeamName": "Bad_Team", "FairShareWeight": 101})
    code, message = _error(exc)
    assert code == "ValidationException"
    assert message.startswith("2 validation errors detected")
    assert "'computeQuotaTarget.teamName'" in message
    assert "'computeQuotaTarget.fairShareWeight'" in message


@pytest.mark.parametrize(("entry", "words"), [
    ({"InstanceType": G5, "Count": 1, "Accelerators": 2}, "Count cannot be combined"),
    ({"InstanceType": G5}, "give Count"),
    ({"InstanceType": P5, "AcceleratorPartition": {"Type": "mig-1g.5gb", "Count": 7}}, "not available"),
])
def test_resource_entry_rules(emu: EmulatorHandle, entry: dict[str, Any], words: str) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    with pytest.raises(ClientError) as exc:
        _create(sm, emu.demo.cluster_arn, "newteam", [entry])
    code, message = _error(exc)
    assert code == "ValidationException"
    assert words in message


def test_delete_then_the_team_can_have_a_new_quota(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    qid = emu.demo.quota_ids["platform"]
    sm.delete_compute_quota(ComputeQuotaId=qid)
    with pytest.raises(sm.exceptions.ResourceNotFound):
        sm.describe_compute_quota(ComputeQuotaId=qid)
    new = _create(sm, emu.demo.cluster_arn, "platform", [{"InstanceType": G5, "Accelerators": 2}])
    assert new != qid


def test_status_transitions_after_configured_describe_calls(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    emu.emulator.set_transition_reads(2)
    qid = emu.demo.quota_ids["research"]
    sm.update_compute_quota(ComputeQuotaId=qid, TargetVersion=1, ActivationState="Enabled")
    seen = [sm.describe_compute_quota(ComputeQuotaId=qid)["Status"] for _ in range(4)]
    assert seen == ["Updating", "Updating", "Updated", "Updated"]
    new = _create(sm, emu.demo.cluster_arn, "newteam", [{"InstanceType": G5, "Accelerators": 0}])
    seen = [sm.describe_compute_quota(ComputeQuotaId=new)["Status"] for _ in range(3)]
    assert seen == ["Creating", "Creating", "Created"]


def test_list_filters_sorting_and_pagination(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    names = sorted(t.quota_name for t in DEMO.teams)
    paginator = sm.get_paginator("list_compute_quotas")
    pages = list(paginator.paginate(ClusterArn=emu.demo.cluster_arn, SortBy="Name", SortOrder="Ascending",
                                    PaginationConfig={"PageSize": 2}))
    assert [len(p["ComputeQuotaSummaries"]) for p in pages] == [2, 2, 1]
    assert [q["Name"] for p in pages for q in p["ComputeQuotaSummaries"]] == names
    desc = sm.list_compute_quotas(SortBy="Name", SortOrder="Descending")["ComputeQuotaSummaries"]
    assert [q["Name"] for q in desc] == names[::-1]
    assert [q["Name"] for q in sm.list_compute_quotas(NameContains="data")["ComputeQuotaSummaries"]] == [
        "data-science-quota"]
    assert sm.list_compute_quotas(Status="Updated")["ComputeQuotaSummaries"] == []
    other = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdefabcdef"
    assert sm.list_compute_quotas(ClusterArn=other)["ComputeQuotaSummaries"] == []


def test_list_created_after_and_before_use_the_injected_clock(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    t0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    ticks = iter([t0, t0 + dt.timedelta(hours=1)])
    emu.emulator.set_clock(lambda: next(ticks))
    _create(sm, emu.demo.cluster_arn, "early", [{"InstanceType": G5, "Accelerators": 0}], Name="early")
    _create(sm, emu.demo.cluster_arn, "late", [{"InstanceType": G5, "Accelerators": 0}], Name="late")
    mid = t0 + dt.timedelta(minutes=30)
    after = sm.list_compute_quotas(CreatedAfter=mid)["ComputeQuotaSummaries"]
    assert [q["Name"] for q in after] == ["late"]
    between = sm.list_compute_quotas(CreatedAfter=t0 - dt.timedelta(seconds=1), CreatedBefore=mid)
    assert [q["Name"] for q in between["ComputeQuotaSummaries"]] == ["early"]


def test_a_token_from_another_query_is_rejected(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    token = sm.list_compute_quotas(MaxResults=1)["NextToken"]
    with pytest.raises(ClientError) as exc:
        sm.list_compute_quotas(MaxResults=1, NextToken=token, NameContains="research")
    assert _error(exc)[0] == "ValidationException"


def test_emulator_control_reads_without_counting_as_describe(emu: EmulatorHandle) -> None:
    emulator: Emulator = emu.emulator
    emulator.set_transition_reads(1)
    assert emu.demo is not None
    emu.sagemaker.update_compute_quota(ComputeQuotaId=emu.demo.quota_ids["research"], TargetVersion=1,
                                       ActivationState="Enabled")
    assert emulator.quota("research-quota")["Status"] == "Updating"
    assert emulator.quota("research-quota")["Status"] == "Updating"
    emulator.settle()
    assert emulator.quota("research-quota")["Status"] == "Updated"


@pytest.mark.parametrize("limit", [0, 501])
def test_borrow_limit_outside_the_documented_1_to_500_is_refused_on_create_and_update(
        emu: EmulatorHandle, limit: int) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    sharing = {"Strategy": "LendAndBorrow", "BorrowLimit": limit}
    with pytest.raises(ClientError) as created:
        sm.create_compute_quota(
            Name="newteam-q", ClusterArn=emu.demo.cluster_arn, ComputeQuotaTarget={"TeamName": "newteam"},
            ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": G5, "Count": 1}],
                                "ResourceSharingConfig": sharing})
    with pytest.raises(ClientError) as updated:
        sm.update_compute_quota(ComputeQuotaId=emu.demo.quota_ids["inference"], TargetVersion=1,
                                ComputeQuotaConfig={"ResourceSharingConfig": sharing})
    for exc in (created, updated):
        code, message = _error(exc)
        assert code == "ValidationException"
        assert f"BorrowLimit: {limit} is outside 1-500" in message


def test_team_name_is_create_only(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    assert emu.demo is not None
    qid = emu.demo.quota_ids["inference"]
    with pytest.raises(ClientError) as exc:
        sm.update_compute_quota(ComputeQuotaId=qid, TargetVersion=1,
                                ComputeQuotaTarget={"TeamName": "renamed", "FairShareWeight": 5})
    code, message = _error(exc)
    assert code == "ValidationException"
    assert "TeamName cannot be changed" in message
    sm.update_compute_quota(ComputeQuotaId=qid, TargetVersion=1,
                            ComputeQuotaTarget={"TeamName": "inference", "FairShareWeight": 5})
    assert sm.describe_compute_quota(ComputeQuotaId=qid)["ComputeQuotaTarget"]["FairShareWeight"] == 5


def test_whole_gpus_and_a_mig_profile_of_one_type_are_entries_of_their_own() -> None:
    with in_process_emulator() as handle:
        arn = handle.emulator.create_cluster("mig", [("p5", P5, 2)])
        sm = handle.sagemaker
        mixed = [{"InstanceType": P5, "Accelerators": 4},
                 {"InstanceType": P5, "AcceleratorPartition": {"Type": "mig-1g.10gb", "Count": 7}}]
        qid = _create(sm, arn, "mixed", mixed)
        assert sm.describe_compute_quota(ComputeQuotaId=qid)["ComputeQuotaConfig"]["ComputeQuotaResources"] == mixed
        with pytest.raises(ClientError) as exc:
            _create(sm, arn, "twice", [mixed[1], {**mixed[1], "AcceleratorPartition": {"Type": "mig-1g.10gb",
                                                                                         "Count": 1}}])
    code, message = _error(exc)
    assert code == "ValidationException"
    assert "instance type ml.p5.48xlarge with partition mig-1g.10gb appears more than once" in message
