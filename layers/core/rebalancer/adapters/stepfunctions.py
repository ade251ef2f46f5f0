"""The answer to a waiting Step Functions task (RequestApproval's task token): SendTaskSuccess / SendTaskFailure,
with Step Functions' errors turned into our kinds here, so the approvals use case sees no ClientError."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from rebalancer.adapters.aws import aws_call, error_code
from rebalancer.errors import RunNotWaiting

# The token is spent, timed out or was never issued: the run no longer waits for an answer (it expired or ended).
NOT_WAITING_CODES = frozenset({"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"})


class TaskTokens:
    def __init__(self, client: Any) -> None:
        self.client = client

    def succeed(self, token: str, output: dict[str, Any]) -> None:
        _answer("SendTaskSuccess", lambda: self.client.send_task_success(taskToken=token, output=json.dumps(output)))

    def fail(self, token: str, error: str, cause: str) -> None:
        _answer("SendTaskFailure", lambda: self.client.send_task_failure(taskToken=token, error=error, cause=cause))


def _answer(call: str, send: Callable[[], object]) -> None:
    """RunNotWaiting when the run has moved on; any other failure as aws_call classifies it."""
    with aws_call(call, "the approval's task token"):
        try:
            send()
        except ClientError as e:
            if error_code(e) in NOT_WAITING_CODES:
                raise RunNotWaiting(error_code(e)) from e
            raise
