"""`rebalancer doctor --stack` simulates (IAM's policy simulator on the emulator) the update and delete grants of
the apply and rollback roles — what SageMaker does with their permissions while it updates or deletes a quota
(CloudFormation's handler permissions for AWS::SageMaker::ComputeQuota) — one line per role beside the functions' own
calls, and names a grant that is missing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from support.emulator import EmulatorHandle, in_process_emulator
from support.kube_api import serve

from rebalancer_tools.cli import cli
from rebalancer_tools.emulator import DEMO
from rebalancer_tools.local.stack import STACK, LocalStack

pytestmark = pytest.mark.slow  # deploys the local stack

CLUSTER = DEMO.cluster_name
EKS = "demo-eks"
POLICY = "mode: dry-run\nteams:\n  research: {weight: 1}\n"


@pytest.fixture
def deployed() -> Iterator[tuple[EmulatorHandle, LocalStack, str]]:
    with in_process_emulator(seed_demo=True) as emu, serve() as (url, _kube), \
            LocalStack(clusters={CLUSTER: POLICY}, kube_url=url) as stack:
        emu.emulator.provision_eks(CLUSTER, EKS, addon_version="v1.6.0-eksbuild.1",
                                   access_entries={stack.role_arns["collect"]: ["rebalancer-kueue-readers"]})
        yield emu, stack, url


def doctor(url: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(cli, ["doctor", "--cluster", CLUSTER, "--kube-url", url, "--stack", STACK])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output.splitlines()


def grants(lines: list[str]) -> list[str]:
    return [line for line in lines if "update/delete grants of" in line]


def without(doc: dict[str, Any], action: str) -> dict[str, Any]:
    kept = []
    for s in doc["Statement"]:
        actions = [a for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]]) if a != action]
        if actions:
            kept.append({**s, "Action": actions})
    return {**doc, "Statement": kept}


def test_doctor_simulates_the_update_and_delete_grants_and_names_one_missing(
        deployed: tuple[EmulatorHandle, LocalStack, str]) -> None:
    emu, stack, url = deployed
    _code, lines = doctor(url)
    assert grants(lines) == [f"OK   update/delete grants of apply: {stack.role_arns['apply']}: 5 actions allowed",
                             f"OK   update/delete grants of rollback: {stack.role_arns['rollback']}: 5 actions allowed"]

    iam = emu.client("iam")
    role = stack.role_arns["rollback"].rsplit("/", 1)[-1]
    original = iam.get_role_policy(RoleName=role, PolicyName="function")["PolicyDocument"]
    doc = original if isinstance(original, dict) else json.loads(original)
    iam.put_role_policy(RoleName=role, PolicyName="function",
                        PolicyDocument=json.dumps(without(doc, "eks:DisassociateAccessPolicy")))
    code, lines = doctor(url)
    account, region = emu.emulator.account_id, emu.emulator.region
    assert code == 1
    assert grants(lines)[1] == (
        f"FAIL update/delete grants of rollback: {stack.role_arns['rollback']} is denied eks:DisassociateAccessPolicy "
        f"on arn:aws:eks:{region}:{account}:access-entry/{EKS}/role/{account}/x/x — fix: grant them in template.yaml "
        "(the function's Policies) and redeploy")
    # The function's own calls are still all allowed: the line is the update/delete grants' alone.
    assert f"OK   permissions of rollback: {stack.role_arns['rollback']}" in "\n".join(lines)
