"""`rebalancer doctor --cluster NAME [--stack STACK]`: what a real cluster needs, checked one line each with what to
fix (rebalancer.adapters.prerequisites): the task-governance add-on, the collect role's EKS access entry, reading Kueue,
the Container Insights metrics, and with --stack each deployed function role's permissions (IAM's policy simulator
against the calls the function makes, and for apply and rollback the update/delete grants SageMaker uses on their
behalf). Exit 1 when a check fails, 0 otherwise (warnings included)."""

from __future__ import annotations

from typing import Any

import click

from rebalancer.adapters import prerequisites as pre
from rebalancer.errors import PermanentError, RebalancerError
from rebalancer_tools.cli.live_cmds import LiveSource, live_options
from rebalancer_tools.iam import role_permissions

# Logical ids of the template's functions: SAM names a function <stack>-<LogicalId>-<suffix>.
FUNCTIONS = {name: f"{name.capitalize()}Function" for name in pre.FUNCTION_CALLS}


@click.command()
@live_options(required=True)
@click.option("--stack", help="The deployed stack's name: check each function role's permissions.")
@click.option("--collect-role-arn", help="Role whose EKS access entry to check (default: the collect function's).")
def doctor(live: LiveSource, stack: str | None, collect_role_arn: str | None) -> None:
    """Check the prerequisites of a cluster and the stack's permissions."""
    from rebalancer.adapters.aws import aws_call
    from rebalancer.adapters.kubernetes.eks_auth import eks_cluster_name_of
    from rebalancer.adapters.sagemaker.cluster import SageMakerReader
    from rebalancer_tools.local.sandbox import sandbox_info

    clients = live.clients()
    sandbox = sandbox_info()
    if sandbox is not None and collect_role_arn is None:  # the sandbox's access entry is the caller's
        with aws_call("sts:GetCallerIdentity", "the caller"):
            collect_role_arn = pre.role_arn_of(clients.client("sts").get_caller_identity()["Arn"])
    described = SageMakerReader(clients.client("sagemaker")).describe_cluster(live.cluster)
    try:
        eks_cluster: str | None = eks_cluster_name_of(described)
    except PermanentError:  # no Orchestrator.Eks: check_cluster says so
        eks_cluster = None
    functions = _functions(clients, stack) if stack else {}
    if collect_role_arn is None and "collect" in functions:
        collect_role_arn = functions["collect"]["Role"]

    lines = _cluster_checks(live, clients, described, eks_cluster, collect_role_arn)
    lines += _permission_checks(clients, stack, functions, eks_cluster, in_sandbox=sandbox is not None)

    for check in lines:
        click.echo(check.line())
    if any(c.status == "fail" for c in lines):
        raise SystemExit(1)


def _cluster_checks(live: LiveSource, clients: Any, described: dict[str, Any], eks_cluster: str | None,
                    collect_role_arn: str | None) -> list[pre.Check]:
    """The cluster's own prerequisites: its Kueue API reached (when the command reads Kubernetes), the add-on, the
    collect role's access entry, the metrics."""
    from rebalancer.adapters.collect import KubeAccess

    lines: list[pre.Check] = []
    kube = None
    access = KubeAccess(mode=live.kube_mode, context=live.kube_context, url=live.kube_url)
    api = None
    if eks_cluster is not None and live.kube_mode != "none":
        try:
            api = access.api_client(clients, described)
        except RebalancerError as e:
            lines.append(pre.Check("Kueue API", "fail", f"cannot reach the cluster's API server: {e}",
                                   "check your network path to the EKS endpoint"))
        kube = pre.kueue_lister(api) if api is not None else None
    try:
        report = pre.check_cluster(clients.client("eks"), clients.client("cloudwatch"), eks_cluster, kube=kube,
                                   role_arn=collect_role_arn)
    finally:
        if api is not None:
            api.close()
    lines += report.checks
    if collect_role_arn is None and eks_cluster is not None:
        lines.append(pre.Check("EKS access entry", "warn", "not checked",
                               "pass --stack or --collect-role-arn to name the collect role"))
    return lines


def _permission_checks(clients: Any, stack: str | None, functions: dict[str, dict[str, Any]],
                       eks_cluster: str | None, *, in_sandbox: bool) -> list[pre.Check]:
    """Each deployed function role against the calls its function makes, and apply's and rollback's update/delete
    grants; in the sandbox (no stack) or without --stack, one line saying why not."""
    from rebalancer.adapters.aws import aws_call

    if in_sandbox:
        return [pre.Check("function permissions", "sandbox", "the sandbox deploys no CloudFormation stack "
                          "(IAM's policy simulator has no function role to check); its controller runs each "
                          "function under its template policy, every call authorized by the emulator")]
    if not stack:
        return [pre.Check("function permissions", "warn", "not checked",
                          "pass --stack STACK (the deployed stack's name)")]
    with aws_call("sts:GetCallerIdentity", "the caller"):
        account = clients.client("sts").get_caller_identity()["Account"]
    iam = clients.client("iam")
    lines: list[pre.Check] = []
    for name in FUNCTIONS:
        config = functions.get(name)
        if config is None:
            lines.append(pre.Check(f"permissions of {name}", "fail", f"no function {stack}-{FUNCTIONS[name]}*",
                                   "deploy the stack, or pass the name it was deployed under"))
            continue
        env = config.get("Environment", {}).get("Variables", {})
        where = {"partition": _partition(clients.region_name), "region": clients.region_name, "account": account}
        calls = pre.function_calls(name, env, **where)
        lines.append(role_permissions.check_permissions(iam, name, config["Role"], calls))
        writes = pre.update_delete_calls(name, **where, eks_cluster=eks_cluster)
        if writes:
            lines.append(role_permissions.check_permissions(iam, name, config["Role"], writes,
                                                            what="update/delete grants"))
    return lines


def _functions(clients: Any, stack: str) -> dict[str, dict[str, Any]]:
    """function name (collect, apply, ...) → its Lambda configuration, for the stack's functions."""
    from rebalancer.adapters.aws import aws_call

    out: dict[str, dict[str, Any]] = {}
    lam = clients.client("lambda")
    with aws_call("lambda:ListFunctions", f"functions of stack {stack}"):
        for page in lam.get_paginator("list_functions").paginate():
            for config in page["Functions"]:
                for name, logical in FUNCTIONS.items():
                    if config["FunctionName"].startswith(f"{stack}-{logical}"):
                        out[name] = config
    return out


def _partition(region: str) -> str:
    return "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"
