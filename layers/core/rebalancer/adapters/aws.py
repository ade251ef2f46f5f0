"""boto3 clients with the retry policy we want, and AWS errors turned into one line of the right error kind.

Endpoints follow botocore's own configuration (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_SAGEMAKER`, ...), which is how
the CLI and the tests point at the emulator; nothing here special-cases it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any, Literal

import boto3
import botocore.loaders
import botocore.session
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionError,
    EndpointConnectionError,
    HTTPClientError,
    NoCredentialsError,
)

from rebalancer.errors import ConflictError, PermanentError, RebalancerError, TransientError

RetryMode = Literal["standard", "adaptive"]

# Error codes worth a retry at a higher level (the state machine's Retry) once botocore's own retries are spent.
TRANSIENT_CODES = frozenset({
    "ThrottlingException", "Throttling", "ThrottledException", "RequestThrottledException", "TooManyRequestsException",
    "RequestLimitExceeded", "RequestThrottled", "SlowDown", "LimitExceededException", "ServiceUnavailable",
    "ServiceUnavailableException", "InternalFailure", "InternalServerError", "InternalError", "RequestTimeout",
    "RequestTimeoutException", "ProvisionedThroughputExceededException",
})
CONFLICT_CODES = frozenset({"ConflictException"})


class AwsClients:
    """Lazily made, reused clients of one session. `max_attempts` counts the first try."""

    __slots__ = ("_clients", "_session", "max_attempts", "profile", "region", "retry_mode")

    def __init__(self, region: str | None = None, profile: str | None = None, retry_mode: RetryMode = "standard",
                 max_attempts: int = 10) -> None:
        self.region = region
        self.profile = profile
        self.retry_mode = retry_mode
        self.max_attempts = max_attempts
        self._session: boto3.Session | None = None
        self._clients: dict[str, Any] = {}

    @property
    def session(self) -> boto3.Session:
        if self._session is None:
            core = botocore.session.get_session()
            core.register_component("data_loader", _shared_loader())
            self._session = boto3.Session(botocore_session=core, region_name=self.region, profile_name=self.profile)
        return self._session

    @property
    def region_name(self) -> str:
        region = self.session.region_name
        if not region:
            raise PermanentError("no AWS region: pass --region or set AWS_REGION / AWS_DEFAULT_REGION")
        return region

    def client(self, service: str) -> Any:
        if service not in self._clients:
            config = Config(retries={"mode": self.retry_mode, "total_max_attempts": self.max_attempts},
                            user_agent_extra="hyperpod-rebalancer")
            self._clients[service] = self.session.client(service, region_name=self.region_name,  # type: ignore[call-overload]
                                                         config=config)
        return self._clients[service]


@cache
def _shared_loader() -> botocore.loaders.Loader:
    """One loader per process: the SageMaker service model is parsed once, not once per session (a warm Lambda
    and the tests make many sessions)."""
    return botocore.loaders.create_loader()


def error_code(e: ClientError) -> str:
    return str(e.response.get("Error", {}).get("Code", "Unknown"))


def one_line(text: object) -> str:
    return " ".join(str(text).split())


def error_message(e: ClientError) -> str:
    return one_line(e.response.get("Error", {}).get("Message", "")) or "(no message)"


def describe_error(call: str, resource: str, e: ClientError) -> str:
    """`UpdateComputeQuota on quota q-123: ConflictException: version 3 is stale` — which call, which resource,
    what AWS said."""
    return f"{call} on {resource}: {error_code(e)}: {error_message(e)}"


def classify(call: str, resource: str, e: ClientError) -> RebalancerError:
    code = error_code(e)
    message = describe_error(call, resource, e)
    status = int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    if code in CONFLICT_CODES:
        return ConflictError(message)
    if code in TRANSIENT_CODES or status >= 500:
        return TransientError(message)
    return PermanentError(message)


@contextmanager
def aws_call(call: str, resource: str) -> Iterator[None]:
    """Run one AWS call; any failure leaves as a TransientError, PermanentError or ConflictError of one line."""
    try:
        yield
    except ClientError as e:
        raise classify(call, resource, e) from e
    except NoCredentialsError as e:
        raise PermanentError(f"{call} on {resource}: no AWS credentials found ({e})") from e
    except EndpointConnectionError as e:
        raise TransientError(f"{call} on {resource}: cannot reach the endpoint: {one_line(e)}") from e
    except BotoCoreError as e:  # e.g. ParamValidationError, whose message spans lines
        raise PermanentError(f"{call} on {resource}: {one_line(e)}") from e


def cause_of(e: BaseException, call: str, resource: str) -> RebalancerError | None:
    """The kind of an AWS error a library wrapped (Powertools' parameters raise GetParameterError from inside their
    `except`, so the AWS error is its context): None when the context is no AWS error."""
    cause = e.__cause__ or e.__context__
    if isinstance(cause, ClientError):
        return classify(f"{call}:{cause.operation_name}", resource, cause)
    if isinstance(cause, ConnectionError | HTTPClientError):
        return TransientError(f"{call} on {resource}: cannot reach the endpoint: {one_line(cause)}")
    return None
