"""The emulator's controls over HTTP, for a server in another process (`rebalancer emulator`).

Routes (JSON bodies; `account_id` and `region` optional, default 123456789012 / us-east-1):
  POST /_emulator/clusters                 {"name", "groups": [[group, instance_type, count], ...]}
  POST /_emulator/nodes/status             {"cluster", "node_id", "status", "message"?}
  POST /_emulator/instance-groups/resize   {"cluster", "group", "count"}
  POST /_emulator/settings                 {"transition_reads"}
  POST /_emulator/settle                   {}
  POST /_emulator/faults                   {"kind", "operation"?, ...FaultRule options}
  POST /_emulator/faults/seed              {"seed"}
  POST /_emulator/faults/clear             {}
  POST /_emulator/external-edit            {"name", "edit"?, "cluster"?}
  POST /_emulator/seed-demo                {}
  GET  /_emulator/events                   → {"events": [EventBridge-shaped cluster events]}
  GET  /_emulator/invariant                → {"records": [...], "violations": n}  (account_id / region in the query)
Errors come back as {"error": "..."} with status 400 (bad request) or 404 (unknown resource).
"""

from __future__ import annotations

import dataclasses
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

from rebalancer_tools.emulator.control import DEFAULT_ACCOUNT, DEFAULT_REGION, Emulator
from rebalancer_tools.emulator.demo_cluster import seed_demo
from rebalancer_tools.emulator.errors import ResourceNotFound, ValidationError

PREFIX = "/_emulator/"

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _records(emu: Emulator) -> dict[str, Any]:
    records = [dataclasses.asdict(r) | {"ok": r.ok} for r in emu.monitor.records]
    return {"records": records, "violations": sum(not r["ok"] for r in records)}


def _route(emu: Emulator, method: str, path: str, body: dict[str, Any]) -> Any:
    route = path.removeprefix(PREFIX).rstrip("/")
    if method == "GET" and route == "invariant":
        return _records(emu)
    if method == "GET" and route == "events":
        return {"events": emu.events}
    if method != "POST":
        raise LookupError(f"no route {method} {path}")
    if route == "clusters":
        return {"ClusterArn": emu.create_cluster(body["name"], [tuple(g) for g in body["groups"]])}
    if route == "nodes/status":
        emu.set_node_status(body["cluster"], body["node_id"], body["status"], body.get("message"))
        return {}
    if route == "instance-groups/resize":
        emu.resize_instance_group(body["cluster"], body["group"], int(body["count"]))
        return {}
    if route == "settings":
        emu.set_transition_reads(int(body["transition_reads"]))
        return {}
    if route == "settle":
        emu.settle()
        return {}
    if route == "faults":
        options = {k: v for k, v in body.items() if k not in ("kind", "operation", "account_id", "region")}
        emu.inject(body["kind"], body.get("operation"), **options)
        return {}
    if route == "faults/seed":
        emu.seed_faults(int(body["seed"]))
        return {}
    if route == "faults/clear":
        emu.clear_faults()
        return {}
    if route == "external-edit":
        return {"Version": emu.external_edit(body["name"], body.get("edit"), cluster=body.get("cluster"))}
    if route == "seed-demo":
        return dataclasses.asdict(seed_demo(emu))
    raise LookupError(f"no route {method} {path}")


def control_middleware(app: WsgiApp) -> WsgiApp:
    """Serve /_emulator/ routes; pass every other request to moto."""

    def middleware(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if not path.startswith(PREFIX):
            return app(environ, start_response)
        status, payload = 200, {}
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            raw = environ["wsgi.input"].read(length) if length else b""
            body = json.loads(raw) if raw else {}
            query = {k: v[-1] for k, v in urllib.parse.parse_qs(environ.get("QUERY_STRING", "")).items()}
            where = {**query, **body}
            emu = Emulator(where.get("account_id", DEFAULT_ACCOUNT), where.get("region", DEFAULT_REGION))
            payload = _route(emu, environ.get("REQUEST_METHOD", "GET"), path, body)
        except (ResourceNotFound, LookupError) as e:
            status, payload = 404, {"error": str(e)}
        except (ValidationError, ValueError, KeyError, TypeError) as e:
            status, payload = 400, {"error": f"{type(e).__name__}: {e}"}
        data = json.dumps(payload, default=str).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
        start_response(f"{status} {reason}", [("Content-Type", "application/json"),
                                              ("Content-Length", str(len(data)))])
        return [data]

    return middleware


class RemoteEmulator:
    """The control API of an emulator server in another process, over HTTP."""

    def __init__(self, endpoint: str, account_id: str = DEFAULT_ACCOUNT, region: str = DEFAULT_REGION) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.account_id = account_id
        self.region = region

    def _call(self, route: str, body: dict[str, Any] | None = None, *, method: str = "POST") -> Any:
        data = None
        if method == "POST":
            data = json.dumps({"account_id": self.account_id, "region": self.region, **(body or {})}).encode()
        req = urllib.request.Request(f"{self.endpoint}{PREFIX}{route}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            detail = json.loads(e.read() or b"{}").get("error", e.reason)
            raise RuntimeError(f"emulator control {route}: {detail}") from None

    def create_cluster(self, name: str, groups: Iterable[tuple[str, str, int]]) -> str:
        return str(self._call("clusters", {"name": name, "groups": [list(g) for g in groups]})["ClusterArn"])

    def set_node_status(self, cluster: str, node_id: str, status: str, message: str | None = None) -> None:
        self._call("nodes/status", {"cluster": cluster, "node_id": node_id, "status": status, "message": message})

    def fail_node(self, cluster: str, node_id: str, message: str = "Node failed a health check") -> None:
        self.set_node_status(cluster, node_id, "Failure", message)

    def heal_node(self, cluster: str, node_id: str) -> None:
        self.set_node_status(cluster, node_id, "Running")

    def resize_instance_group(self, cluster: str, group: str, count: int) -> None:
        self._call("instance-groups/resize", {"cluster": cluster, "group": group, "count": count})

    def set_transition_reads(self, reads: int) -> None:
        self._call("settings", {"transition_reads": reads})

    def settle(self) -> None:
        self._call("settle")

    def inject(self, kind: str, operation: str | None = None, **options: Any) -> None:
        self._call("faults", {"kind": kind, "operation": operation, **options})

    def seed_faults(self, seed: int) -> None:
        self._call("faults/seed", {"seed": seed})

    def clear_faults(self) -> None:
        self._call("faults/clear")

    def external_edit(self, name: str, edit: dict[str, Any] | None = None, *, cluster: str | None = None) -> int:
        return int(self._call("external-edit", {"name": name, "edit": edit, "cluster": cluster})["Version"])

    def seed_demo(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("seed-demo")
        return result

    def events(self) -> list[dict[str, Any]]:
        query = f"?account_id={self.account_id}&region={self.region}"
        events: list[dict[str, Any]] = self._call(f"events{query}", method="GET")["events"]
        return events

    def invariant(self) -> dict[str, Any]:
        query = f"?account_id={self.account_id}&region={self.region}"
        result: dict[str, Any] = self._call(f"invariant{query}", method="GET")
        return result
