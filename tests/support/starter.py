"""The trigger's Starter on moto: a state machine whose runs end at once beside the controller's table, so a test
drives starts, debounces, locks and follow-ups through real boto3 clients. Call inside `mock_aws()`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import boto3

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app.trigger.start import Starter

MANAGED = ("ml-cluster", "other")  # ml-cluster: the cluster of the events in events/


def starter_on(store: Store, managed: Sequence[str] = MANAGED, lock_ttl: timedelta = timedelta(hours=1)) -> Starter:
    sfn = boto3.client("stepfunctions")
    arn = sfn.create_state_machine(name="rebalancer-rebalance", roleArn="arn:aws:iam::123456789012:role/sfn",
                                   definition=json.dumps({"StartAt": "S", "States": {"S": {"Type": "Succeed"}}})
                                   )["stateMachineArn"]
    return Starter(store=store, sfn=sfn, state_machine_arn=arn, managed=tuple(managed), lock_ttl=lock_ttl,
                   debounce=timedelta(minutes=2), clock=store.now)


def executions(starter: Starter) -> list[dict[str, Any]]:
    """The state machine's executions, oldest first."""
    out = starter.sfn.list_executions(stateMachineArn=starter.state_machine_arn)["executions"]
    return sorted(out, key=lambda e: e["startDate"])
