"""Talking to the cluster's Kubernetes API from Lambda or a laptop, without the aws CLI or a kubeconfig exec plugin.

The EKS bearer token is what `aws eks get-token` prints: `k8s-aws-v1.` + base64url (unpadded) of an STS
GetCallerIdentity URL presigned for 60 seconds, with the header `x-k8s-aws-id: <EKS cluster name>` among the signed
headers. The API server's authenticator replays the URL against STS to learn who we are.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.signers import RequestSigner

from rebalancer.adapters.aws import AwsClients, aws_call
from rebalancer.errors import PermanentError

if TYPE_CHECKING:
    from kubernetes import client as k8s

TOKEN_PREFIX = "k8s-aws-v1."
TOKEN_TTL_SECONDS = 60
CLUSTER_ID_HEADER = "x-k8s-aws-id"
# Refresh a little before the presigned URL expires; the API server allows some skew but not past expiry.
REFRESH_AFTER_SECONDS = 45


def eks_token(clients: AwsClients, eks_cluster_name: str) -> str:
    session = clients.session
    region = clients.region_name
    sts = clients.client("sts")
    credentials = session.get_credentials()
    if credentials is None:
        raise PermanentError("EKS token: no AWS credentials found")
    signer = RequestSigner(sts.meta.service_model.service_id, region, "sts", "v4", credentials,
                           session._session.get_component("event_emitter"))  # the session's own event hooks
    request = {
        "method": "GET",
        "url": f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
        "body": {},
        "headers": {CLUSTER_ID_HEADER: eks_cluster_name},
        "context": {},
    }
    url = signer.generate_presigned_url(request, region_name=region, expires_in=TOKEN_TTL_SECONDS,
                                        operation_name="")
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def decode_token(token: str) -> str:
    """The presigned URL inside a token (for tests and debugging)."""
    body = token.removeprefix(TOKEN_PREFIX)
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


def eks_cluster_name_of(hyperpod_cluster: dict[str, Any]) -> str:
    """The EKS cluster behind a HyperPod cluster, from DescribeCluster's Orchestrator.Eks.ClusterArn."""
    arn = hyperpod_cluster.get("Orchestrator", {}).get("Eks", {}).get("ClusterArn")
    if not arn:
        raise PermanentError(f"HyperPod cluster {hyperpod_cluster.get('ClusterName')!r} has no EKS orchestrator "
                             "(Orchestrator.Eks.ClusterArn); pass --kube-context or --no-kube")
    return str(arn).rsplit("/", 1)[-1]


def api_client_for_eks(clients: AwsClients, eks_cluster_name: str,
                       clock: Callable[[], float] = time.monotonic) -> k8s.ApiClient:
    """A client for the EKS API server (endpoint and CA from eks:DescribeCluster), refreshing its token itself."""
    eks = clients.client("eks")
    with aws_call("eks:DescribeCluster", f"EKS cluster {eks_cluster_name}"):
        cluster = eks.describe_cluster(name=eks_cluster_name)["cluster"]
    endpoint = cluster.get("endpoint")
    ca = cluster.get("certificateAuthority", {}).get("data")
    if not endpoint or not ca:
        raise PermanentError(f"eks:DescribeCluster on EKS cluster {eks_cluster_name}: no endpoint or CA yet "
                             f"(status {cluster.get('status')})")
    return api_client_with_token(endpoint, lambda: eks_token(clients, eks_cluster_name), ca_file=_ca_file(ca),
                                 clock=clock)


def _ca_file(ca_base64: str) -> str:
    """The CA bundle as a file (the client wants a path), one per distinct CA: a warm Lambda reuses it."""
    data = base64.b64decode(ca_base64)
    path = Path(tempfile.gettempdir()) / f"eks-ca-{hashlib.sha256(data).hexdigest()[:16]}.crt"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return str(path)


def api_client_with_token(host: str, make_token: Callable[[], str], *, ca_file: str | None = None,
                          clock: Callable[[], float] = time.monotonic) -> k8s.ApiClient:
    """A client sending `Authorization: Bearer <token>`, making a new token when the last is about to expire."""
    # The client library (a third of a second to import) loads when a client is made, not with the token code.
    from kubernetes import client as k8s

    configuration = k8s.Configuration(host=host)
    if ca_file:
        configuration.ssl_ca_cert = ca_file
    made_at = [clock()]
    configuration.api_key = {"BearerToken": make_token()}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}

    def refresh(conf: k8s.Configuration) -> None:
        if clock() - made_at[0] >= REFRESH_AFTER_SECONDS:
            conf.api_key["BearerToken"] = make_token()
            made_at[0] = clock()

    configuration.refresh_api_key_hook = refresh
    return k8s.ApiClient(configuration)


def api_client_for_context(context: str | None) -> k8s.ApiClient:
    """A client from the user's kubeconfig (a laptop with `aws eks update-kubeconfig` already run)."""
    from kubernetes import config as k8s_config

    try:
        return k8s_config.new_client_from_config(context=context)
    except (k8s_config.ConfigException, FileNotFoundError) as e:
        raise PermanentError(f"kubeconfig context {context or '(current)'}: {e}") from e
