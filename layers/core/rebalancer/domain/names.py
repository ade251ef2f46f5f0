"""Names: of the resources the rebalancer creates (valid SageMaker EntityNames for any cluster and team name), and
of the Kubernetes objects HyperPod task governance makes for a team (namespace `hyperpod-ns-<team>`, ClusterQueue
`hyperpod-ns-<team>-clusterqueue`).

EntityName (botocore's model): 1–63 characters, `[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`: letters, digits and hyphens,
starting and ending with a letter or digit. Cutting `f"{cluster}-scheduler"` at 63 can end in `-` (a 62-character
cluster name) or drop the suffix; a name too long for its suffix keeps a prefix of the base and a short digest of the
whole base instead, so two long cluster names that share a prefix still get different names.
"""

from __future__ import annotations

import hashlib
import re

from rebalancer.errors import InvalidName

ENTITY_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
ENTITY_NAME_MAX = 63
_DIGEST = 8


def entity_name(base: str, suffix: str) -> str:
    """`base-suffix`, shortened to a valid EntityName. InvalidName when `base` or `suffix` are not name material."""
    if not ENTITY_NAME.fullmatch(suffix) or not re.fullmatch(r"[a-zA-Z0-9-]+", base) or not base[0].isalnum():
        raise InvalidName(f"cannot make an EntityName from {base!r} and {suffix!r}", value=base)
    base = base.rstrip("-") or "x"
    name = f"{base}-{suffix}"
    if len(name) <= ENTITY_NAME_MAX:
        return name
    digest = hashlib.sha256(base.encode()).hexdigest()[:_DIGEST]
    keep = ENTITY_NAME_MAX - len(suffix) - len(digest) - 2
    return f"{base[:keep].rstrip('-')}-{digest}-{suffix}"


def scheduler_config_name(cluster_name: str) -> str:
    return entity_name(cluster_name, "scheduler")


def quota_name(team: str) -> str:
    return entity_name(team, "quota")


TEAM_NAMESPACE_PREFIX = "hyperpod-ns-"
CLUSTER_QUEUE_SUFFIX = "-clusterqueue"


def team_of_cluster_queue(name: str) -> str | None:
    if name.startswith(TEAM_NAMESPACE_PREFIX) and name.endswith(CLUSTER_QUEUE_SUFFIX):
        return name[len(TEAM_NAMESPACE_PREFIX):-len(CLUSTER_QUEUE_SUFFIX)] or None
    return None


def team_of_namespace(namespace: str) -> str | None:
    if not namespace.startswith(TEAM_NAMESPACE_PREFIX):
        return None
    return namespace[len(TEAM_NAMESPACE_PREFIX):] or None
