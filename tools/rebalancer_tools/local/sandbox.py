"""A sandbox where every command works as on AWS: the HyperPod emulator (moto + compute quotas) seeded with the demo
cluster, and on the same loopback server the Kubernetes API of its EKS cluster (the fake the tests use: Kueue
ClusterQueues and Workloads, the Nodes), the EKS side (the cluster as HyperPod's orchestrator, its endpoint that
server, the task-governance add-on ACTIVE, an access entry for the caller), Container Insights metrics and the
controller's audit table. `rebalancer emulator --seed-demo` serves it; the demo provisions its cluster the same way.
Given a policy, it also runs the controller (rebalancer_tools.local.sandbox_controller: the state machine and handlers,
the approval page), and two admins exist: you (the exported keys) and SECOND_ADMIN, who approves what you request.

Routes besides moto's and the emulator's /_emulator/ controls:
  /api/…, /apis/…                    the Kubernetes API (served by kube_fake, proxied here)
  GET  /_sandbox/info                → {"cluster", "eks_cluster", "table", "region", "nodes": [...], "admins": [...],
                                        "approval_api"}
  POST /_sandbox/run                 {}: a controller run from the scheduled event → RunReport (once it ends or asks)
  POST /_sandbox/fail-node           {"node_id"} or {"group"}: the node fails (HyperPod and Kubernetes agree)
  POST /_sandbox/heal-node           {"node_id"}
  POST /_sandbox/add-demand          {"team", "instance_type", "accelerators", "pods"?, "name"?}: a workload, admitted
                                     now when it fits → {"workload", "admitted"}
  POST /_sandbox/resize              {"group", "count"}
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from rebalancer.catalog import specs as catalog
from rebalancer.spelling import nearest
from rebalancer_tools.emulator import DEMO, Emulator, SeededDemo, seed_demo
from rebalancer_tools.emulator.control import DEFAULT_ACCOUNT, DEFAULT_REGION
from rebalancer_tools.emulator.server import EmulatorServer
from rebalancer_tools.fakes import kube as kube_fake
from rebalancer_tools.local import cast

if TYPE_CHECKING:
    from rebalancer_tools.local.sandbox_controller import Controller, Delivered, RunReport

TABLE = "rebalancer-sandbox"
PREFIX = "/_sandbox/"
KUBE_PREFIXES = ("/api/", "/apis/", "/api?", "/apis?")
CALLER = f"arn:aws:sts::{DEFAULT_ACCOUNT}:user/moto"  # what moto's GetCallerIdentity answers with test keys
KUEUE_READER_GROUP = "hyperpod-rebalancer-kueue-reader"
ENVIRONMENT_KEYS = ("AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                    "REBALANCER_TABLE")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@dataclass(frozen=True, slots=True)
class Admin:
    """An IAM user of the sandbox's account with an access key of its own: what STS says a command runs as."""

    user: str
    access_key_id: str
    secret_access_key: str

    def arn(self, account: str = DEFAULT_ACCOUNT) -> str:
        return f"arn:aws:iam::{account}:user/{self.user}"

    def environment(self) -> dict[str, str]:
        """What to put before a command to run it as this admin."""
        return {"AWS_ACCESS_KEY_ID": self.access_key_id, "AWS_SECRET_ACCESS_KEY": self.secret_access_key}


# The one who approves what you (the exported keys: moto's default identity, CALLER) request: an approval is a
# second pair of eyes, and a reservation's requester cannot approve it.
SECOND_ADMIN = Admin("admin-2", "AKIASANDBOXADMIN0002", "sandbox-admin-2-secret")
# How long before the sandbox opened its demo's steady work was admitted (each team's next workload 20 min later)
STEADY_AGE = timedelta(hours=6)


def _wall_clock() -> datetime:
    return datetime.now(UTC)


class Refused(Exception):
    """What the sandbox will not do, as Kubernetes would refuse it (409 Conflict): said to the caller as it is."""


@dataclass(slots=True)
class Sandbox:
    endpoint: str
    emulator: Emulator
    seeded: SeededDemo
    kube: kube_fake.KubeState
    table: str = TABLE
    jobs: dict[str, list[cast.Job]] = field(default_factory=lambda: {t: list(j) for t, j in cast.STEADY.items()})
    # (team, workload) → the run time it declares (add-demand --runs-for)
    runs_for: dict[tuple[str, str], str] = field(default_factory=dict)
    controller: Controller | None = None  # the controller, when the sandbox runs it
    clock: Callable[[], datetime] = field(default=_wall_clock)
    # (team, workload) → when Kueue admitted it, on the sandbox's clock: the demo's steady work hours before the
    # sandbox opened (old enough that no reclaim takes it), what add-demand got admitted when it was added
    admitted: dict[tuple[str, str], datetime] = field(default_factory=dict)

    def __post_init__(self) -> None:
        opened = self.clock()
        for team, jobs in self.jobs.items():
            for k, (name, *_rest, running) in enumerate(jobs):
                if running:
                    self.admitted.setdefault((team, name), opened - STEADY_AGE + timedelta(minutes=20 * k))
        self._publish()

    def _publish(self) -> None:
        cast.set_demand(self.kube, self.jobs, self.runs_for, self.admitted)

    @property
    def cluster(self) -> str:
        return DEMO.cluster_name

    @property
    def region(self) -> str:
        return DEFAULT_REGION

    def environment(self) -> dict[str, str]:
        """What to export so that boto3, the AWS CLI and every `rebalancer` command use the sandbox."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_DEFAULT_REGION": DEFAULT_REGION,
                "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "REBALANCER_TABLE": self.table}

    def info(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "eks_cluster": cast.EKS_CLUSTER, "table": self.table,
                "region": DEFAULT_REGION, "nodes": self.emulator.nodes(self.cluster),
                "admins": [CALLER, SECOND_ADMIN.arn(self.emulator.account_id)],
                "approval_api": self.controller.approval_api if self.controller else None}

    def run(self) -> RunReport:
        """A controller run (rebalancer_tools.local.sandbox_controller.Controller.run)."""
        if self.controller is None:
            raise LookupError("this sandbox runs no controller: start it with `rebalancer emulator --seed-demo`")
        return self.controller.run()

    # --- what the drive commands do ------------------------------------------------------------------------------
    def fail_node(self, node_id: str | None = None, group: str | None = None) -> str:
        if node_id is None:
            running = [n for n in self.emulator.nodes(self.cluster, group=group)
                       if n["InstanceStatus"]["Status"] == "Running"]
            if not running:
                raise LookupError(f"no running node in instance group {group!r}")
            node_id = str(running[0]["InstanceId"])
        self.emulator.fail_node(self.cluster, node_id)
        self.sync_nodes()
        return node_id

    def heal_node(self, node_id: str) -> None:
        self.emulator.heal_node(self.cluster, node_id)
        self.sync_nodes()

    def resize(self, group: str, count: int) -> None:
        self.emulator.resize_instance_group(self.cluster, group, count)
        self.emulator.settle()
        self.sync_nodes()

    def add_demand(self, team: str, instance_type: str, accelerators: int, pods: int = 1,
                   name: str | None = None, runs_for: str | None = None) -> str:
        """A Kueue workload of `pods` pods asking `accelerators` each on `instance_type`; `runs_for`: the run time it
        declares (a Go duration, the Workload's estimated-duration annotation). Kueue admits it now (the sandbox's
        clock) when the pool's running nodes have that many accelerators that neither a running workload holds nor one
        waiting there already asks for (Kueue lends a cohort's idle quota, first come first served); otherwise it
        waits. The sandbox schedules nothing later: a waiting workload stays waiting."""
        if team not in self.jobs:
            near = nearest(team, self.jobs, within=2)
            raise LookupError(f"no team {team!r} in the sandbox ("
                              + (f"did you mean {near}? " if near else "") + f"teams: {', '.join(sorted(self.jobs))})")
        resource = cast.NEURON if catalog.spec(instance_type).neuron_cores_per_device else cast.GPU
        taken = {job[0] for job in self.jobs[team]}
        if name in taken:  # a Workload's name is unique in its team's namespace, as Kubernetes keeps it
            raise Refused(f"team {team!r} has a workload named {name!r} already: give another --name")
        name = name or next(n for i in range(1, len(taken) + 2) if (n := f"{team}-job-{i}") not in taken)
        fits = pods * accelerators <= self.idle_accelerators(instance_type)
        self.jobs[team].append((name, pods, {resource: accelerators}, instance_type, fits))
        if fits:
            self.admitted[(team, name)] = self.clock()
        if runs_for is not None:
            self.runs_for[(team, name)] = runs_for
        self._publish()
        return name

    def idle_accelerators(self, instance_type: str) -> int:
        """The accelerators of `instance_type` on running nodes that no workload, running or waiting, asks for."""
        per_node = catalog.spec(instance_type).accelerators
        healthy = sum(per_node for n in self.emulator.nodes(self.cluster)
                      if n["InstanceType"] == instance_type and n["InstanceStatus"]["Status"] == "Running")
        asked = sum(pods * sum(requests.values()) for jobs in self.jobs.values()
                    for _name, pods, requests, pool, _running in jobs if pool == instance_type)
        return healthy - asked

    def sync_nodes(self) -> None:
        """The Kubernetes Nodes as HyperPod's nodes are: one per node, Ready while it is Running."""
        objects = []
        for n in self.emulator.nodes(self.cluster):
            instance_type = str(n["InstanceType"])
            spec = catalog.spec(instance_type)
            resource = cast.NEURON if spec.neuron_cores_per_device else cast.GPU
            allocatable: dict[str, int | str] = {"cpu": spec.vcpu, "memory": f"{spec.memory_gib}Gi"}
            if spec.accelerators:
                allocatable[resource] = spec.accelerators
            objects.append(kube_fake.node(str(n["InstanceId"]), instance_type, allocatable,
                                          ready=n["InstanceStatus"]["Status"] == "Running"))
        with self.kube.lock:
            self.kube.objects["nodes"] = objects


def provision(emulator: Emulator, kube: kube_fake.KubeState, *, kube_endpoint: str | None = None,
              callers: Iterable[str] = (CALLER,)) -> SeededDemo:
    """The demo cluster as on AWS: quotas, scheduler config, its EKS cluster with the task-governance add-on and an
    access entry per caller (its Kubernetes group reads Kueue), the EKS endpoint (when served), steady demand."""
    from moto.eks.models import eks_backends

    seeded = seed_demo(emulator)
    emulator.provision_eks(DEMO.cluster_name, cast.EKS_CLUSTER,
                           access_entries={arn: [KUEUE_READER_GROUP] for arn in callers})
    if kube_endpoint is not None:
        eks = eks_backends[emulator.account_id][emulator.region].clusters[cast.EKS_CLUSTER]
        eks.endpoint = kube_endpoint
    cast.steady_demand(kube)
    return seeded


def add_admin(account: str, admin: Admin) -> None:
    """`admin` as an IAM user of moto's account, holding its access key."""
    from moto.iam.models import iam_backends

    iam = iam_backends[account]["aws"]
    iam.create_user(DEFAULT_REGION, admin.user)
    key = iam.create_access_key(admin.user)
    # moto makes a random pair; the sandbox's is fixed, so the docs can show the command that acts as this admin.
    del iam.access_keys[key.physical_resource_id]
    key.access_key_id, key.secret_access_key = admin.access_key_id, admin.secret_access_key
    iam.access_keys[key.physical_resource_id] = key


@contextmanager
def open_sandbox(port: int = 0, *, quiet: bool = True, now: datetime | None = None, policy: str | None = None,
                 listener: Callable[[Delivered], None] | None = None) -> Iterator[Sandbox]:
    """Everything served on 127.0.0.1:`port` (0: a free port) until the block ends; with `policy` (a policy
    document), the controller too, managing the cluster under it (`listener` sees each message it sends). The
    controller points this process's AWS environment at the sandbox until the block ends, when it is put back."""
    with ExitStack() as stack:
        kube_url, kube = stack.enter_context(kube_fake.serve(cast.kube_state()))
        box: list[Sandbox] = []
        server = EmulatorServer("127.0.0.1", port, quiet=quiet,
                                wrap=lambda app: _sandbox_app(app, kube_url, lambda: box[0]))
        stack.enter_context(server)
        _reset(server.endpoint)  # moto's backends are per process: start from nothing, leave nothing behind
        stack.callback(_reset, server.endpoint)
        emulator = Emulator()
        add_admin(emulator.account_id, SECOND_ADMIN)
        seeded = provision(emulator, kube, kube_endpoint=server.endpoint,
                           callers=(CALLER, SECOND_ADMIN.arn(emulator.account_id)))
        sandbox = Sandbox(server.endpoint, emulator, seeded, kube, clock=(lambda: now) if now else _wall_clock)
        box.append(sandbox)
        sandbox.sync_nodes()
        _create_table(server.endpoint, TABLE)
        cast.publish_metrics(_client("cloudwatch", server.endpoint), now or datetime.now(UTC))
        if policy is not None:
            from rebalancer_tools.local.sandbox_controller import open_controller

            sandbox.controller = stack.enter_context(open_controller(sandbox, policy, listener=listener))
        yield sandbox


def _reset(endpoint: str) -> None:
    request = urllib.request.Request(f"{endpoint}/moto-api/reset", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass


def _client(service: str, endpoint: str) -> Any:
    import boto3

    session = boto3.Session(region_name=DEFAULT_REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
    return session.client(service, endpoint_url=endpoint)  # type: ignore[call-overload]


def _create_table(endpoint: str, name: str) -> None:
    """The controller's table as template.yaml declares it (keys, billing, TTL)."""
    from rebalancer_tools.packaging import assets

    props = assets.template()["Resources"]["Table"]["Properties"]
    ddb = _client("dynamodb", endpoint)
    ddb.create_table(TableName=name, KeySchema=props["KeySchema"], AttributeDefinitions=props["AttributeDefinitions"],
                     BillingMode=props["BillingMode"])
    ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=props["TimeToLiveSpecification"])


# --- the HTTP side -----------------------------------------------------------------------------------------------
def _sandbox_app(app: WsgiApp, kube_url: str, sandbox: Callable[[], Sandbox]) -> WsgiApp:
    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        if path.startswith(PREFIX):
            return _control(sandbox(), environ, start_response)
        if path.startswith(KUBE_PREFIXES) or path in ("/api", "/apis"):
            return _proxy(kube_url, environ, start_response)
        if "/access-entries/" in path:
            # A principal ARN holds a '/', sent as %2F: werkzeug decodes it in PATH_INFO and moto's route (one
            # path segment) then misses; the raw path keeps it one segment (the emulator unquotes it).
            raw = str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or path).split("?", 1)[0]
            environ = {**environ, "PATH_INFO": raw}
        return app(environ, start_response)

    return serve


def _json(start_response: Callable[..., Any], status: int, body: Any) -> list[bytes]:
    payload = json.dumps(body, default=str).encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 409: "Conflict"}[status]
    start_response(f"{status} {reason}", [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
    return [payload]


def _control(box: Sandbox, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    route = str(environ["PATH_INFO"]).removeprefix(PREFIX).rstrip("/")
    method = environ.get("REQUEST_METHOD", "GET")
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body: dict[str, Any] = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
        if method == "GET" and route == "info":
            return _json(start_response, 200, box.info())
        if method == "POST" and route == "fail-node":
            return _json(start_response, 200, {"node_id": box.fail_node(body.get("node_id"), body.get("group"))})
        if method == "POST" and route == "heal-node":
            box.heal_node(str(body["node_id"]))
            return _json(start_response, 200, {})
        if method == "POST" and route == "add-demand":
            name = box.add_demand(str(body["team"]), str(body["instance_type"]), int(body["accelerators"]),
                                  int(body.get("pods", 1)), body.get("name"), body.get("runs_for"))
            return _json(start_response, 200, {"workload": name, "admitted": (str(body["team"]), name) in box.admitted})
        if method == "POST" and route == "resize":
            box.resize(str(body["group"]), int(body["count"]))
            return _json(start_response, 200, {})
        if method == "POST" and route == "run":
            return _json(start_response, 200, box.run().model_dump(mode="json"))
        return _json(start_response, 404, {"error": f"no route {method} {environ['PATH_INFO']}"})
    except Refused as e:
        return _json(start_response, 409, {"error": str(e)})
    except KeyError as e:
        return _json(start_response, 400, {"error": f"bad request: {e} missing"})
    except LookupError as e:
        return _json(start_response, 404, {"error": str(e.args[0]) if e.args else str(e)})
    except (ValueError, TypeError) as e:
        return _json(start_response, 400, {"error": f"bad request: {e}"})
    except Exception as e:  # the emulator's own refusals (an unknown node, a bad count)
        return _json(start_response, 400, {"error": str(e)})


def _proxy(kube_url: str, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    query = environ.get("QUERY_STRING")
    url = f"{kube_url}{environ['PATH_INFO']}" + (f"?{query}" if query else "")
    headers = {"Authorization": environ["HTTP_AUTHORIZATION"]} if "HTTP_AUTHORIZATION" in environ else {}
    request = urllib.request.Request(url, headers=headers, method=environ.get("REQUEST_METHOD", "GET"))
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, payload, kind = answer.status, answer.read(), answer.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        status, payload, kind = e.code, e.read(), e.headers.get("Content-Type", "")
    start_response(f"{status} {'OK' if status == 200 else 'Error'}",
                   [("Content-Type", kind or "application/json"), ("Content-Length", str(len(payload)))])
    return [payload]


# --- the drive commands' side: a sandbox served by another process ------------------------------------------------
def call(endpoint: str, route: str, body: Mapping[str, Any] | None = None, *, timeout: float = 30) -> dict[str, Any]:
    """One control call; the sandbox's refusal becomes a LookupError / ValueError carrying its message."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{endpoint.rstrip('/')}{PREFIX}{route}", data=data,
                                     method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            out: dict[str, Any] = json.loads(answer.read() or b"{}")
            return out
    except urllib.error.HTTPError as e:
        message = json.loads(e.read() or b"{}").get("error", str(e))
        raise (LookupError if e.code == 404 else ValueError)(message) from None


def sandbox_info(endpoint: str | None = None) -> dict[str, Any] | None:
    """The sandbox behind $AWS_ENDPOINT_URL (or `endpoint`), or None when it is not one (real AWS, plain moto)."""
    endpoint = endpoint or os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint or not endpoint.startswith(("http://127.0.0.1", "http://localhost")):
        return None
    try:
        return call(endpoint, "info")
    except (OSError, LookupError, ValueError):
        return None
