"""What a real cluster needs before the rebalancer can work, checked rather than assumed: the task-governance EKS
add-on (present, ACTIVE, its version), the collect role's EKS access entry and Kueue RBAC, the Container Insights
metrics utilization is read from, and each function role's permissions (IAM's policy simulator against the actions
the function calls). Each check gives one line saying what was found and, when it fails, what to fix.

The collect step runs the cluster checks and carries their findings in the snapshot (warnings in the plan);
`rebalancer doctor` runs them all.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from botocore.exceptions import BotoCoreError, ClientError

from rebalancer.adapters.aws import error_code, error_message, one_line
from rebalancer.domain.snapshot import Governance

ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")  # newest first; a 404 falls back to the next
CONTAINER_INSIGHTS = "ContainerInsights"
CONTAINER_INSIGHTS_METRICS = ("pod_gpu_utilization", "pod_neuroncore_utilization")
RBAC_FIX = "apply the Kueue reader ClusterRole and binding (docs/deploy/kueue-access.md)"

Status = Literal["ok", "warn", "fail", "sandbox"]  # sandbox: a check that cannot apply to the local sandbox


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: Status
    found: str
    fix: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def line(self) -> str:
        text = f"{self.status.upper():4} {self.name}: {self.found}"
        return f"{text} — fix: {self.fix}" if self.fix and not self.ok else text


# --- the task-governance add-on ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Addon:
    check: Check
    version: str | None = None
    status: str | None = None


def check_addon(eks: Any, eks_cluster: str) -> Addon:
    name = f"add-on {ADDON}"
    install = (f"aws eks create-addon --cluster-name {eks_cluster} --addon-name {ADDON} (HyperPod task governance "
               "installs Kueue through it)")
    try:
        addon = eks.describe_addon(clusterName=eks_cluster, addonName=ADDON)["addon"]
    except ClientError as e:
        if error_code(e) == "ResourceNotFoundException":
            return Addon(Check(name, "fail", f"not installed on EKS cluster {eks_cluster}", install))
        return Addon(denied_or_error(name, "eks:DescribeAddon", e))
    version, status = addon.get("addonVersion"), addon.get("status")
    if status != "ACTIVE":
        issues = "; ".join(one_line(i.get("message", "")) for i in addon.get("health", {}).get("issues", []) or [])
        found = f"{status} (version {version})" + (f": {issues}" if issues else "")
        return Addon(Check(name, "fail", found, f"repair or update the add-on until it is ACTIVE "
                                                f"(aws eks describe-addon --cluster-name {eks_cluster} "
                                                f"--addon-name {ADDON})"), version, status)
    return Addon(Check(name, "ok", f"ACTIVE, version {version}"), version, status)


# --- EKS access entry and Kueue RBAC -------------------------------------------------------------------------------
def role_arn_of(caller_arn: str) -> str:
    """arn:aws:sts::1:assumed-role/NAME/session → arn:aws:iam::1:role/NAME (what an access entry names)."""
    if ":assumed-role/" not in caller_arn:
        return caller_arn
    head, _, rest = caller_arn.partition(":assumed-role/")
    return head.replace(":sts::", ":iam::") + ":role/" + rest.split("/")[0]


def check_access_entry(eks: Any, eks_cluster: str, role_arn: str) -> Check:
    name = "EKS access entry"
    try:
        entry = eks.describe_access_entry(clusterName=eks_cluster, principalArn=role_arn)["accessEntry"]
    except ClientError as e:
        if error_code(e) == "ResourceNotFoundException":
            return Check(name, "fail", f"none for {role_arn} on EKS cluster {eks_cluster}",
                         "deploy with EksClusterName set (the stack creates it), or aws eks create-access-entry "
                         f"--cluster-name {eks_cluster} --principal-arn {role_arn}")
        return denied_or_error(name, "eks:DescribeAccessEntry", e)
    groups = ", ".join(entry.get("kubernetesGroups", []) or []) or "no Kubernetes groups"
    return Check(name, "ok", f"{role_arn} ({groups})")


@dataclass(frozen=True, slots=True)
class Kueue:
    check: Check
    api_version: str | None = None


def check_kueue_access(list_objects: Callable[[str, str], Any]) -> Kueue:
    """`list_objects(version, plural)` lists one page of a Kueue resource (a kubernetes ApiException on failure).
    Reads ClusterQueues and Workloads in the newest served version."""
    name = "Kueue RBAC"
    for version in KUEUE_VERSIONS:
        try:
            for plural in ("clusterqueues", "workloads"):
                list_objects(version, plural)
        except Exception as e:
            status = getattr(e, "status", None)
            if status == 404:
                continue
            if status == 401:
                return Kueue(Check(name, "fail", "the API server rejected the role's token (401)",
                                   "map the collect role with an EKS access entry (deploy with EksClusterName)"))
            if status == 403:
                return Kueue(Check(name, "fail", f"the role may not list {plural}.{KUEUE_GROUP} (403)",
                                   f"{RBAC_FIX}, with the access entry mapped to its group"), version)
            return Kueue(Check(name, "fail", f"listing {plural}.{KUEUE_GROUP}/{version}: {one_line(e)}",
                               "check that the API server is reachable from the function (VPC settings)"))
        if version != KUEUE_VERSIONS[0]:
            # Kueue 0.20 stops serving v1beta1 (the task-governance add-on 1.6 ships 0.19, which serves both).
            return Kueue(Check(name, "warn", f"clusterqueues and workloads readable only as {KUEUE_GROUP}/{version}",
                               f"Kueue 0.20 serves {KUEUE_VERSIONS[0]} only: update the {ADDON} add-on to a "
                               f"version whose Kueue serves {KUEUE_VERSIONS[0]} before Kueue 0.20"), version)
        return Kueue(Check(name, "ok", f"clusterqueues and workloads readable ({KUEUE_GROUP}/{version})"), version)
    return Kueue(Check(name, "fail", f"no {KUEUE_GROUP} API on the cluster (404 for {', '.join(KUEUE_VERSIONS)})",
                       f"install the {ADDON} add-on, which installs Kueue"))


# --- Container Insights --------------------------------------------------------------------------------------------
OBSERVABILITY_ADDON = "amazon-cloudwatch-observability"
OTEL_FIRST_VERSION = (6, 0, 1)  # "Container Insights with OpenTelemetry metrics": add-on v6.0.1-eksbuild.1 or newer


def _version(text: str) -> tuple[int, ...]:
    head = text.removeprefix("v").split("-", 1)[0]
    return tuple(int(p) for p in head.split(".") if p.isdigit())


def check_container_insights(cloudwatch: Any, eks_cluster: str, eks: Any = None) -> Check:
    """Which pipeline publishes the cluster's metrics and which of the names the reader reads it found: the classic
    Container Insights names, else the OpenTelemetry pipeline's DCGM / Neuron Monitor names (series labelled with
    the cluster), else, with `eks` given, whether the observability add-on >= 6.0.1 is there to publish them."""
    from rebalancer.adapters.cloudwatch import OTEL_METRICS, otel_series

    name = "Container Insights metrics"
    found, otel = [], []
    try:
        for metric in CONTAINER_INSIGHTS_METRICS:
            page = cloudwatch.list_metrics(Namespace=CONTAINER_INSIGHTS, MetricName=metric,
                                           Dimensions=[{"Name": "ClusterName", "Value": eks_cluster}])
            if page.get("Metrics"):
                found.append(metric)
        if not found:
            for metric in OTEL_METRICS.values():
                series = otel_series(cloudwatch, eks_cluster, metric)
                if series:
                    otel.append(f"{metric} ({len(series)} series)")
    except ClientError as e:
        return denied_or_error(name, "cloudwatch:ListMetrics", e)
    if found:
        return Check(name, "ok", f"classic pipeline: {', '.join(found)}")
    version = _observability_addon(eks, eks_cluster)
    addon = f" ({OBSERVABILITY_ADDON} {version})" if version else ""
    if otel:
        return Check(name, "ok", f"OpenTelemetry pipeline{addon}: {', '.join(otel)}, read per series with "
                                 "ListMetrics and GetMetricData (no classic name)")
    wanted = ", ".join([*CONTAINER_INSIGHTS_METRICS, *OTEL_METRICS.values()])
    if version is not None and _version(version) >= OTEL_FIRST_VERSION:
        return Check(name, "warn", f"OpenTelemetry pipeline{addon}, but none of {wanted} for {eks_cluster} yet",
                     "check that the add-on's DCGM exporter / Neuron Monitor run on the accelerator nodes; "
                     "until then utilization is not read (plans do not use it)")
    return Check(name, "warn", f"none of {wanted} for ClusterName={eks_cluster}",
                 "install the amazon-cloudwatch-observability add-on (Container Insights); without it utilization "
                 "is not read")


def _observability_addon(eks: Any, eks_cluster: str) -> str | None:
    """The observability add-on's version, or None (not installed, not readable, or no EKS client given)."""
    if eks is None:
        return None
    try:
        version = eks.describe_addon(clusterName=eks_cluster, addonName=OBSERVABILITY_ADDON)["addon"].get(
            "addonVersion")
    except ClientError:
        return None
    return str(version) if version else None


# --- function permissions ------------------------------------------------------------------------------------------
# The calls each function makes, as (IAM action, resource) — the resource written with the function's environment
# ({TABLE_NAME}, {TOPIC_ARN}, ...) and {partition}/{region}/{account}. The end-to-end tests check that every
# request a function makes under IAM enforcement is listed here, and tests/unit/iam that template.yaml grants each.
_TABLE = "arn:{partition}:dynamodb:{region}:{account}:table/{TABLE_NAME}"
_STORE = tuple((f"dynamodb:{a}", _TABLE) for a in ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query"))
_APPCONFIG = ("arn:{partition}:appconfig:{region}:{account}:application/{APPCONFIG_APPLICATION}/environment/"
              "{APPCONFIG_ENVIRONMENT}/configuration/{APPCONFIG_PROFILE}")
_POLICY = (("ssm:GetParameter", "arn:{partition}:ssm:{region}:{account}:parameter{POLICY_PARAMETER_PREFIX}/x"),
           # PolicySource=appconfig (the ids are empty otherwise, and the calls left out)
           ("appconfig:StartConfigurationSession", _APPCONFIG), ("appconfig:GetLatestConfiguration", _APPCONFIG))
_CLUSTER = "arn:{partition}:sagemaker:{region}:{account}:cluster/x"
_QUOTA = "arn:{partition}:sagemaker:{region}:{account}:compute-quota/x"
_CONFIG = "arn:{partition}:sagemaker:{region}:{account}:cluster-scheduler-config/x"
_SNS = (("sns:Publish", "{TOPIC_ARN}"),)
_READ_CLUSTER = (
    ("sagemaker:DescribeCluster", _CLUSTER), ("sagemaker:ListClusterNodes", _CLUSTER),
    ("sagemaker:ListClusterOperations", _CLUSTER), ("sagemaker:DescribeClusterOperation", _CLUSTER),
    ("sagemaker:ListComputeQuotas", "*"), ("sagemaker:DescribeComputeQuota", _QUOTA), ("sagemaker:ListTags", _QUOTA),
    ("sagemaker:ListClusterSchedulerConfigs", "*"), ("sagemaker:DescribeClusterSchedulerConfig", _CONFIG),
    ("sagemaker:DescribeTrainingPlan", "arn:{partition}:sagemaker:{region}:{account}:training-plan/x"),
    ("eks:DescribeCluster", "arn:{partition}:eks:{region}:{account}:cluster/x"),
    ("eks:DescribeAddon", f"arn:{{partition}}:eks:{{region}}:{{account}}:addon/x/{ADDON}/x"),
    ("eks:DescribeAddon", "arn:{partition}:eks:{region}:{account}:addon/x/amazon-cloudwatch-observability/x"),
    ("cloudwatch:GetMetricData", "*"), ("cloudwatch:ListMetrics", "*"),
)
_WRITE_QUOTAS = (
    ("sagemaker:DescribeComputeQuota", _QUOTA), ("sagemaker:UpdateComputeQuota", _QUOTA),
    ("sagemaker:ListComputeQuotas", "*"), ("sagemaker:DescribeClusterSchedulerConfig", _CONFIG),
    ("sagemaker:UpdateClusterSchedulerConfig", _CONFIG),
)
# What SageMaker calls with the function's permissions while it updates or deletes a quota: CloudFormation's handler
# permissions for AWS::SageMaker::ComputeQuota update and delete (AWS's authorization data lists such actions as
# dependent actions of CreateComputeQuota only). Granted in template.yaml, never called by the function itself.
ON_OUR_BEHALF: dict[str, tuple[str, ...]] = {
    "apply": ("eks:DescribeAccessEntry",),
    "rollback": ("sagemaker:DescribeCluster", "eks:DescribeCluster", "eks:DisassociateAccessPolicy",
                 "eks:DescribeAccessEntry", "eks:ListAssociatedAccessPolicies"),
}
# What `rebalancer doctor` simulates for the quota writers' update and delete grants ("update/delete grants of
# apply|rollback"): what SageMaker does with the function's permissions while it updates or deletes a quota
# (ON_OUR_BEHALF, and for apply the EKS dependents of CreateComputeQuota that its updates rely on too), each on the
# resource IAM checks — the EKS cluster and any access entry of it ({eks}: the HyperPod cluster's orchestrator). The
# Update/DeleteComputeQuota calls themselves are the function's own (FUNCTION_CALLS, "permissions of …").
# eks:AssociateAccessPolicy for rollback and eks:DisassociateAccessPolicy for apply are not granted (template.yaml
# says why): not simulated.
_EKS_CLUSTER = "arn:{partition}:eks:{region}:{account}:cluster/{eks}"
_ACCESS_ENTRY = "arn:{partition}:eks:{region}:{account}:access-entry/{eks}/role/{account}/x/x"
_BEHALF_RESOURCE = {"sagemaker:DescribeCluster": _CLUSTER, "eks:DescribeCluster": _EKS_CLUSTER,
                    "eks:AssociateAccessPolicy": _ACCESS_ENTRY, "eks:DisassociateAccessPolicy": _ACCESS_ENTRY,
                    "eks:DescribeAccessEntry": _ACCESS_ENTRY, "eks:ListAssociatedAccessPolicies": _ACCESS_ENTRY}
_CREATE_DEPENDENTS_KEPT = {"apply": ("sagemaker:DescribeCluster", "eks:DescribeCluster", "eks:AssociateAccessPolicy",
                                     "eks:ListAssociatedAccessPolicies")}


def update_delete_calls(function: str, *, partition: str, region: str, account: str,
                        eks_cluster: str | None) -> list[tuple[str, str]]:
    """The (action, resource) pairs of `function`'s update and delete grants; empty for a function that writes no
    quota. `eks_cluster` None (not known): any EKS cluster's name."""
    actions = dict.fromkeys((*_CREATE_DEPENDENTS_KEPT.get(function, ()), *ON_OUR_BEHALF.get(function, ())))
    values = {"partition": partition, "region": region, "account": account, "eks": eks_cluster or "x"}
    return [(a, _BEHALF_RESOURCE[a].format(**values)) for a in actions]


FUNCTION_CALLS: dict[str, tuple[tuple[str, str], ...]] = {
    "trigger": (*_STORE, ("states:StartExecution", "{STATE_MACHINE_ARN}"),
                ("states:DescribeExecution", "{EXECUTIONS}"), ("sagemaker:ListClusterEvents", _CLUSTER)),
    "collect": (*_STORE, *_READ_CLUSTER),
    "observe": (*_STORE, *_READ_CLUSTER),
    "plan": (*_STORE, *_POLICY),
    "apply": (*_STORE, *_WRITE_QUOTAS,
              ("sagemaker:CreateComputeQuota", _QUOTA), ("sagemaker:CreateComputeQuota", _CLUSTER),
              ("sagemaker:CreateClusterSchedulerConfig", _CONFIG),
              ("sagemaker:CreateClusterSchedulerConfig", _CLUSTER),
              ("sagemaker:AddTags", _QUOTA), ("sagemaker:DescribeCluster", _CLUSTER),
              ("sagemaker:ListClusterNodes", _CLUSTER)),
    "verify": (("dynamodb:GetItem", _TABLE), ("dynamodb:Query", _TABLE), ("sagemaker:DescribeComputeQuota", _QUOTA),
               ("sagemaker:DescribeClusterSchedulerConfig", _CONFIG)),
    "rollback": (*_STORE, *_WRITE_QUOTAS, ("sagemaker:DeleteComputeQuota", _QUOTA),
                 ("sagemaker:DeleteClusterSchedulerConfig", _CONFIG), ("sagemaker:ListClusterNodes", _CLUSTER)),
    "notify": (*_STORE, *_SNS, ("secretsmanager:GetSecretValue", "{SLACK_WEBHOOK_SECRET_ARN}")),
    "approval": (*_STORE, *_SNS, ("secretsmanager:GetSecretValue", "{APPROVAL_SIGNING_SECRET_ARN}"),
                 ("secretsmanager:GetSecretValue", "{SLACK_WEBHOOK_SECRET_ARN}"),
                 ("secretsmanager:GetSecretValue", "{SLACK_SIGNING_SECRET_ARN}"),
                 ("states:SendTaskSuccess", "*"), ("states:SendTaskFailure", "*")),
}


def function_calls(function: str, env: Mapping[str, str], *, partition: str, region: str,
                   account: str) -> list[tuple[str, str]]:
    """FUNCTION_CALLS[function] with the resources written out; a call whose resource names an unset or empty
    environment value (an optional secret, the AppConfig ids of an SSM stack) is left out."""
    values = {"partition": partition, "region": region, "account": account, **env}
    machine = env.get("STATE_MACHINE_ARN", "")
    values["EXECUTIONS"] = machine.replace(":stateMachine:", ":execution:") + ":x" if machine else ""
    out = []
    for action, resource in FUNCTION_CALLS[function]:
        names = [name for _, name, _, _ in string.Formatter().parse(resource) if name]
        if any(not values.get(name) for name in names):
            continue
        written = resource.format(**values)
        if written:
            out.append((action, written))
    return out


def denied_or_error(name: str, call: str, e: ClientError | BotoCoreError) -> Check:
    if isinstance(e, ClientError) and "AccessDenied" in error_code(e):
        return Check(name, "fail", f"{call} denied: {error_message(e)}", f"grant {call} to the caller")
    detail = f"{error_code(e)}: {error_message(e)}" if isinstance(e, ClientError) else one_line(e)
    return Check(name, "fail", f"{call}: {detail}", "see the error")


# --- what collect and doctor run -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ClusterReport:
    checks: tuple[Check, ...]
    addon: Addon | None = None
    kueue: Kueue | None = None

    def governance(self) -> Governance:
        """What the snapshot keeps: versions, one line per failed check and one per warning."""
        return Governance(addon_version=self.addon.version if self.addon else None,
                          addon_status=self.addon.status if self.addon else None,
                          kueue_api_version=self.kueue.api_version if self.kueue else None,
                          problems=tuple(c.line() for c in self.checks if c.status == "fail"),
                          advisories=tuple(c.line() for c in self.checks if c.status == "warn"))


def kueue_lister(api_client: Any) -> Callable[[str, str], Any]:
    """`list_objects` for check_kueue_access over a kubernetes ApiClient: one object of each kind."""
    from kubernetes import client as k8s

    custom = k8s.CustomObjectsApi(api_client)

    def list_objects(version: str, plural: str) -> Any:
        return custom.list_cluster_custom_object(KUEUE_GROUP, version, plural, limit=1, _request_timeout=15)

    return list_objects


def check_cluster(eks: Any, cloudwatch: Any, eks_cluster: str | None, *,
                  kube: Callable[[str, str], Any] | None = None, role_arn: str | None = None) -> ClusterReport:
    """The cluster's prerequisites. `kube`: a Kueue lister (None: not checked); `role_arn`: the role whose EKS access
    entry to look up (None: not checked)."""
    if eks_cluster is None:
        return ClusterReport((Check("EKS orchestrator", "fail", "the HyperPod cluster has no Orchestrator.Eks",
                                    "task governance needs an EKS-orchestrated cluster"),))
    addon = check_addon(eks, eks_cluster)
    checks = [addon.check]
    if role_arn is not None:
        checks.append(check_access_entry(eks, eks_cluster, role_arn))
    kueue = check_kueue_access(kube) if kube is not None else None
    if kueue is not None:
        checks.append(kueue.check)
    checks.append(check_container_insights(cloudwatch, eks_cluster, eks))
    return ClusterReport(tuple(checks), addon, kueue)


def governance_for_collect(eks: Any, cloudwatch: Any, eks_cluster: str | None, kueue: Kueue | None) -> Governance:
    """The checks collect runs (the add-on, Container Insights), with what reading Kueue found when it was read."""
    report = check_cluster(eks, cloudwatch, eks_cluster)
    if kueue is not None and report.addon is not None:  # an EKS cluster: add what reading Kueue found
        report = ClusterReport((*report.checks, kueue.check), report.addon, kueue)
    return report.governance()
