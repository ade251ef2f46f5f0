"""IAM enforced on the emulator (moto in process): requests signed with a role's credentials are authorized against
that role's policies by moto's policy evaluator (`moto.iam.access_control.IAMPolicy`), on the resource ARNs AWS
would check (rebalancer_tools.iam.requests); a request that no statement allows gets AWS's AccessDenied.

    with Enforcer(region, account) as iam:
        creds = iam.role("collect", policy_document)       # a moto IAM role, assumed through moto's STS
        with iam.acting_as(creds, "collect"):              # every boto3 request signed in here is that role's
            ...
        iam.decisions                                      # (role, caller, action, resource, allowed), in order

The role is known from the request's access key (in process and over HTTP alike); the caller label only in
process. Requests signed with any other credentials (a test's own setup) are not checked: moto's own switch
(`INITIAL_NO_AUTH_ACTION_COUNT`) would check those too, and on "*" only, as moto does not know resource ARNs.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, NoReturn
from unittest import mock
from urllib.parse import parse_qs, unquote

import boto3
from botocore.credentials import Credentials
from botocore.signers import RequestSigner

from rebalancer_tools.iam import requests as iam_requests

_ACTING_AS: contextvars.ContextVar[tuple[Credentials, str] | None] = contextvars.ContextVar("acting_as", default=None)
# The IAM action prefix of each service whose signing name differs from it.
_IAM_PREFIX = {"monitoring": "cloudwatch"}
# Services answering in XML (query protocol): AccessDenied goes out as XML there, as JSON elsewhere.
_QUERY_SERVICES = {"sns", "sts", "iam"}


@dataclass(frozen=True, slots=True)
class Decision:
    role: str
    caller: str  # the label `acting_as` was given (the local stack: the function's name)
    action: str
    resource: str
    allowed: bool


@dataclass(frozen=True, slots=True)
class _Role:
    name: str
    arn: str
    session_arn: str
    documents: list[dict[str, Any]]


@dataclass
class Enforcer:
    region: str
    account: str
    decisions: list[Decision] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._roles: dict[str, _Role] = {}  # access key id → role
        self._lock = threading.Lock()
        self._exit = ExitStack()
        self._iam_sts: tuple[Any, Any] | None = None

    def __enter__(self) -> Enforcer:
        from moto.core.authorization import ActionAuthenticatorMixin

        enforcer = self
        original_auth = ActionAuthenticatorMixin._authenticate_and_authorize_normal_action
        original_signer = RequestSigner.get_auth_instance

        def authorize(response: Any, resource: str = "*") -> None:
            role = enforcer._role_of(response)
            if role is None:
                original_auth(response, resource)
                return
            enforcer._authorize(response, role)

        def get_auth_instance(signer: Any, *args: Any, **kwargs: Any) -> Any:
            acting = _ACTING_AS.get()
            if acting is not None:
                kwargs["request_credentials"] = acting[0]
            return original_signer(signer, *args, **kwargs)

        self._exit.enter_context(mock.patch.object(
            ActionAuthenticatorMixin, "_authenticate_and_authorize_normal_action", authorize))
        self._exit.enter_context(mock.patch.object(RequestSigner, "get_auth_instance", get_auth_instance))
        return self

    def __exit__(self, *exc: object) -> None:
        self._exit.close()

    # --- roles ---------------------------------------------------------------------------------------------------
    def role(self, name: str, policy: dict[str, Any]) -> Credentials:
        """Create IAM role `name` holding `policy` inline (moto's IAM), assume it (moto's STS) and return its
        credentials. Outside `acting_as`, so the harness's own credentials make these calls."""
        iam, sts = self._clients()
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                         "Principal": {"Service": "lambda.amazonaws.com"}}]}
        arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        iam.put_role_policy(RoleName=name, PolicyName="function", PolicyDocument=json.dumps(policy))
        got = sts.assume_role(RoleArn=arn, RoleSessionName=name)
        c = got["Credentials"]
        with self._lock:
            self._roles[c["AccessKeyId"]] = _Role(name, arn, got["AssumedRoleUser"]["Arn"], [policy])
        return Credentials(c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"])

    def _clients(self) -> tuple[Any, Any]:
        """IAM and STS clients, made once: a boto3 client costs a few hundred milliseconds to make."""
        if self._iam_sts is None:
            self._iam_sts = (boto3.client("iam", region_name=self.region),
                             boto3.client("sts", region_name=self.region))
        return self._iam_sts

    @staticmethod
    @contextmanager
    def acting_as(creds: Credentials | None, caller: str = "") -> Iterator[None]:
        token = _ACTING_AS.set((creds, caller) if creds is not None else None)
        try:
            yield
        finally:
            _ACTING_AS.reset(token)

    # --- checking ------------------------------------------------------------------------------------------------
    def _role_of(self, response: Any) -> _Role | None:
        auth = response.headers.get("Authorization", "")
        key = auth.partition("Credential=")[2].partition("/")[0]
        return self._roles.get(key)

    def _authorize(self, response: Any, role: _Role) -> None:
        from moto.iam.access_control import IAMPolicy, PermissionResult

        # The access key names the role (moto's STS issued it); the signature is not re-checked: moto rebuilds the
        # request from its parsed form, which does not reproduce every protocol's canonical request (REST paths).
        operation = response._get_action()
        service = _service_of(response)
        try:
            pairs = iam_requests.authorized(service, operation, _params(response), self._where())
        except iam_requests.UnknownOperation as e:
            self._deny(service, role, f"{service}:{operation}", "*", str(e))
        for action, resource in pairs:
            results = [IAMPolicy(json.dumps(d)).is_action_permitted(action, resource) for d in role.documents]
            allowed = PermissionResult.PERMITTED in results and PermissionResult.DENIED not in results
            with self._lock:
                self.decisions.append(Decision(role.name, _caller(), action, resource, allowed))
            if not allowed:
                self._deny(service, role, action, resource)

    def _deny(self, service: str, role: _Role, action: str, resource: str, why: str = "") -> NoReturn:
        from moto.core.exceptions import JsonRESTError
        from moto.core.exceptions import _RESTError as RESTError

        message = (f"User: {role.session_arn} is not authorized to perform: {action} on resource: {resource} "
                   f"because no identity-based policy allows the {action} action") + (f" ({why})" if why else "")
        if service in _QUERY_SERVICES:
            error = RESTError("AuthorizationError" if service == "sns" else "AccessDenied", message)
            error.code = 403
            raise error
        denied = JsonRESTError("AccessDeniedException", message)
        denied.code = 403
        raise denied

    def _where(self) -> iam_requests.Where:
        return iam_requests.Where(self.region, self.account, cluster_arn=self._cluster_arn,
                                  eks_cluster_of=self._eks_cluster_of, secret_arn=self._secret_arn,
                                  appconfig_configuration=self._appconfig_configuration)

    def _appconfig_configuration(self, params: Any) -> str | None:
        from moto.appconfig.models import appconfig_backends

        from rebalancer_tools.emulator import appconfig

        return appconfig.configuration_arn(appconfig_backends[self.account][self.region], dict(params))

    def _cluster_arn(self, ref: str) -> str | None:
        c = self._cluster(ref)
        return str(c.arn) if c is not None else None

    def _eks_cluster_of(self, ref: str) -> str | None:
        c = self._cluster(ref)
        eks = getattr(c, "eks_cluster_arn", None) if c is not None else None
        return str(eks).rsplit("/", 1)[-1] if eks else None

    def _cluster(self, ref: str) -> Any:
        from moto.sagemaker.models import sagemaker_backends

        for c in sagemaker_backends[self.account][self.region].clusters.values():
            if ref in (c.arn, c.cluster_name):
                return c
        return None

    def _secret_arn(self, ref: str) -> str | None:
        from moto.secretsmanager.models import secretsmanager_backends

        backend = secretsmanager_backends[self.account][self.region]
        for arn, secret in backend.secrets.items():
            if ref in (arn, getattr(secret, "name", None), getattr(secret, "arn", None)):
                return str(getattr(secret, "arn", arn))
        return None


def _caller() -> str:
    acting = _ACTING_AS.get()
    return acting[1] if acting is not None else ""


def _service_of(response: Any) -> str:
    auth = response.headers.get("Authorization", "")
    scope = auth.partition("Credential=")[2].partition(",")[0].split("/")
    signing = scope[3] if len(scope) > 3 else ""
    return _IAM_PREFIX.get(signing, signing)


def _params(response: Any) -> dict[str, Any]:
    """The request's parameters, whatever the protocol (JSON body, query string or form, REST path)."""
    parsed = getattr(response, "params", None)
    out: dict[str, Any] = dict(parsed) if isinstance(parsed, dict) else {}
    body = response.body
    if isinstance(body, bytes):
        body = body.decode(errors="replace")
    if isinstance(body, str) and body.strip().startswith("{"):
        with suppress(ValueError):
            out = {**json.loads(body), **out}
    elif isinstance(body, str) and "=" in body:
        out = {**{k: v[0] for k, v in parse_qs(body).items()}, **out}
    for k, v in (getattr(response, "querystring", None) or {}).items():
        out.setdefault(k, v[0] if isinstance(v, list) else v)
    # REST paths (EKS): /clusters/{name}[/addons/{addonName} | /access-entries/{principalArn}]
    parts = [unquote(x) for x in str(getattr(response, "raw_path", "") or "").split("?")[0].split("/") if x]
    if len(parts) >= 2 and parts[0] == "clusters":
        out.setdefault("name", parts[1])
        if len(parts) >= 4:
            out.setdefault({"addons": "addonName", "access-entries": "principalArn"}.get(parts[2], parts[2]), parts[3])
    return out
