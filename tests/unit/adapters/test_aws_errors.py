"""AWS errors become one line of the right kind: which call, which resource, what AWS said."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, ParamValidationError

from rebalancer.adapters.aws import aws_call, classify
from rebalancer.errors import ConflictError, PermanentError, TransientError


def client_error(code: str, message: str, status: int) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, "UpdateComputeQuota")


@pytest.mark.parametrize(("code", "status", "kind"), [
    ("ThrottlingException", 400, TransientError),
    ("ServiceUnavailable", 503, TransientError),
    ("SomethingNew", 502, TransientError),
    ("ConflictException", 409, ConflictError),
    ("ValidationException", 400, PermanentError),
    ("ResourceNotFound", 400, PermanentError),
    ("AccessDeniedException", 403, PermanentError),
])
def test_kind_follows_code_and_status(code: str, status: int, kind: type[Exception]) -> None:
    err = classify("UpdateComputeQuota", "quota q1 of team a", client_error(code, "it said so", status))
    assert type(err) is kind
    assert str(err) == f"UpdateComputeQuota on quota q1 of team a: {code}: it said so"


def test_conflict_is_not_transient() -> None:
    """The state machine must not retry a conflict: retrying with a new version would overwrite an edit."""
    assert not issubclass(ConflictError, TransientError)


def test_aws_call_wraps_client_and_connection_errors() -> None:
    expected = r"^DescribeCluster on cluster x: ValidationException: no such"
    with pytest.raises(PermanentError, match=expected), aws_call("DescribeCluster", "cluster x"):
        raise client_error("ValidationException", "no such", 400)
    expected = r"^DescribeCluster on cluster x: cannot reach the endpoint"
    with pytest.raises(TransientError, match=expected), aws_call("DescribeCluster", "cluster x"):
        raise EndpointConnectionError(endpoint_url="https://api.sagemaker.us-east-1.amazonaws.com")
    with pytest.raises(PermanentError, match="no AWS credentials"), aws_call("DescribeCluster", "cluster x"):
        raise NoCredentialsError()


def test_multi_line_messages_become_one_line() -> None:
    report = "Invalid type for parameter TargetVersion,\nvalue: x, type: <class 'str'>"
    with pytest.raises(PermanentError) as e, aws_call("UpdateComputeQuota", "quota q1 of team a"):
        raise ParamValidationError(report=report)
    assert "\n" not in str(e.value)
    assert str(e.value).startswith("UpdateComputeQuota on quota q1 of team a: Parameter validation failed: Invalid")
