"""boto3 clients with the retry policy we want, and AWS errors turned into one line of the right error kind.

Endpoints follow botocore's own configuration (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_SAGEMAKER`, ...), which is how
the CLI and the tests point at the emulator; nothing here special-cases it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
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
    CredentialRetrievalError,
    EndpointConnectionError,
    HTTPClientError,
    InvalidRegionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    RefreshWithMFAUnsupportedError,
    SSOError,
    TokenRetrievalError,
)

from rebalancer.errors import ConflictError, CredentialsError, PermanentError, RebalancerError, TransientError
from rebalancer.spelling import nearest

RetryMode = Literal["standard", "adaptive"]

# Error codes worth a retry at a higher level (the state machine's Retry) once botocore's own retries are spent.
TRANSIENT_CODES = frozenset({
    "ThrottlingException", "Throttling", "ThrottledException", "RequestThrottledException", "TooManyRequestsException",
    "RequestLimitExceeded", "RequestThrottled", "SlowDown", "LimitExceededException", "ServiceUnavailable",
    "ServiceUnavailableException", "InternalFailure", "InternalServerError", "InternalError", "RequestTimeout",
    "RequestTimeoutException", "ProvisionedThroughputExceededException",
})
CONFLICT_CODES = frozenset({"ConflictException"})
# Error codes that say the request's credentials, not the request, are wrong.
EXPIRED_CODES = frozenset({"ExpiredToken", "ExpiredTokenException"})
INVALID_CREDENTIAL_CODES = frozenset({"InvalidClientTokenId", "UnrecognizedClientException", "AuthFailure",
                                      "InvalidSignatureException", "SignatureDoesNotMatch"})
NO_REGION = "no AWS region: pass --region or set AWS_REGION / AWS_DEFAULT_REGION (or the profile's region)"
ENDPOINT_OVERRIDE = "AWS_ENDPOINT_URL"  # botocore's own setting (and its per-service AWS_ENDPOINT_URL_<SERVICE>)


@dataclass(slots=True)
class AwsClients:
    """Lazily made, reused clients of one session. `max_attempts` counts the first try. Prints and compares as its
    settings; the session and clients it made are kept out of both."""

    region: str | None = None
    profile: str | None = None
    retry_mode: RetryMode = "standard"
    max_attempts: int = 10
    _session: boto3.Session | None = field(default=None, init=False, repr=False, compare=False)
    _clients: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def session(self) -> boto3.Session:
        if self._session is None:
            try:
                self._session = boto3.Session(botocore_session=botocore_session(), region_name=self.region,
                                              profile_name=self.profile)
            except ProfileNotFound as e:
                raise CredentialsError(credentials_problem(e) or str(e)) from e
            if self._session.region_name:
                check_region(self._session.region_name)
        return self._session

    @property
    def region_name(self) -> str:
        region = self.session.region_name
        if not region:
            raise CredentialsError(NO_REGION)
        return region

    def client(self, service: str) -> Any:
        if service not in self._clients:
            config = Config(retries={"mode": self.retry_mode, "total_max_attempts": self.max_attempts},
                            user_agent_extra="hyperpod-rebalancer")
            self._clients[service] = self.session.client(service, region_name=self.region_name,  # type: ignore[call-overload]
                                                         config=config)
        return self._clients[service]


def botocore_session() -> botocore.session.Session:
    """A new botocore session (its own credentials and configuration) on the process's one loader."""
    core = botocore.session.get_session()
    core.register_component("data_loader", _shared_loader())
    return core


@cache
def _shared_loader() -> botocore.loaders.Loader:
    """One loader per process: a service model (SageMaker's is megabytes) is parsed once, not once per session
    (a warm Lambda and the tests make many sessions)."""
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


def known_regions() -> frozenset[str]:
    """Every region of every partition botocore's endpoint data names."""
    data = _shared_loader().load_data("endpoints")
    return frozenset(r for p in data.get("partitions", ()) for r in p.get("regions", {}))


def check_region(region: str) -> None:
    """CredentialsError for a region botocore does not know (a typo would otherwise surface as an endpoint that
    cannot be reached), unless an endpoint is set explicitly (the emulator takes any region)."""
    if any(k.startswith(ENDPOINT_OVERRIDE) for k in os.environ) or region in known_regions():
        return
    near = nearest(region, known_regions(), within=3)
    hint = f"; did you mean {near}?" if near else ""
    raise CredentialsError(f"unknown AWS region {region!r}: botocore {botocore.__version__} knows no such region "
                           f"(check --region, AWS_REGION / AWS_DEFAULT_REGION and the profile's region){hint}")


def credentials_problem(e: BaseException) -> str | None:
    """One line saying what is wrong with the caller's AWS configuration (profile, credentials, region), or None when
    `e` is about something else. The one place these are worded: `aws_call`, `AwsClients` and the CLI use it."""
    if isinstance(e, ProfileNotFound):
        return (f"AWS profile {e.kwargs.get('profile')!r} not found in the AWS config or credentials file "
                "(~/.aws/config, ~/.aws/credentials; AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE)")
    if isinstance(e, NoCredentialsError | PartialCredentialsError):
        return f"no AWS credentials found: pass --profile, set AWS_PROFILE, or configure credentials ({one_line(e)})"
    if isinstance(e, SSOError | TokenRetrievalError):
        return f"the AWS SSO session has expired or is not signed in: run `aws sso login` ({one_line(e)})"
    if isinstance(e, CredentialRetrievalError | RefreshWithMFAUnsupportedError):
        return f"the AWS credentials could not be loaded: {one_line(e)}"
    if isinstance(e, NoRegionError):
        return NO_REGION
    if isinstance(e, InvalidRegionError):
        return f"unknown AWS region {e.kwargs.get('region_name')!r}: not a region name"
    if isinstance(e, ClientError):
        code = error_code(e)
        if code in EXPIRED_CODES:
            return f"the AWS credentials have expired ({code}): refresh them (for SSO: `aws sso login`) and run again"
        if code in INVALID_CREDENTIAL_CODES:
            return f"the AWS credentials are not valid ({code}: {error_message(e)})"
    return None


@contextmanager
def aws_call(call: str, resource: str) -> Iterator[None]:
    """Run one AWS call; any failure leaves as a TransientError, PermanentError, ConflictError or CredentialsError of
    one line."""
    try:
        yield
    except (ClientError, BotoCoreError) as e:
        problem = credentials_problem(e)
        if problem is not None:
            raise CredentialsError(problem) from e
        if isinstance(e, ClientError):
            raise classify(call, resource, e) from e
        if isinstance(e, EndpointConnectionError):
            raise TransientError(f"{call} on {resource}: cannot reach the endpoint: {one_line(e)}") from e
        raise PermanentError(f"{call} on {resource}: {one_line(e)}") from e  # e.g. ParamValidationError's lines


def cause_of(e: BaseException, call: str, resource: str) -> RebalancerError | None:
    """The kind of an AWS error a library wrapped (Powertools' parameters raise GetParameterError from inside their
    `except`, so the AWS error is its context): None when the context is no AWS error."""
    cause = e.__cause__ or e.__context__
    if isinstance(cause, ClientError):
        return classify(f"{call}:{cause.operation_name}", resource, cause)
    if isinstance(cause, ConnectionError | HTTPClientError):
        return TransientError(f"{call} on {resource}: cannot reach the endpoint: {one_line(cause)}")
    return None
