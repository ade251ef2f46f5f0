"""The demo's five scenarios, each driven through the deployed application's own entry points (the trigger handler
with an EventBridge-shaped event, the approval HTTP API, the CLI) and each judged by reading the emulator's state
back over its API, not by what was printed.

    with open_world(policy) as world:
        results = run_all(world, story, workdir, run_cli)  # story: what to tell the viewer (SilentStory in tests)
        all(r.ok for r in results)
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

import yaml

from rebalancer.app.notifications.messages import email_links
from rebalancer.domain.plan import Plan
from rebalancer_tools.demo.world import World
from rebalancer_tools.emulator.demo_cluster import P5, TRN1
from rebalancer_tools.local import cast
from rebalancer_tools.local.stack import STACK
from rebalancer_tools.packaging.sample_events import load_event
from rebalancer_tools.reports.run_ids import short_run

Quotas = dict[str, dict[str, int]]  # team → instance type → accelerators
ADMIN = "alice (platform admin)"
FAILED_NODE = "gpu-p5-0"
TABLE = f"{STACK}-table"


@dataclass(frozen=True, slots=True)
class Check:
    what: str
    ok: bool
    detail: str = ""


@dataclass(slots=True)
class ScenarioResult:
    key: str
    title: str
    before: Quotas
    after: Quotas
    capacity: dict[str, int]
    checks: list[Check] = field(default_factory=list)
    execution: str = ""
    states: list[str] = field(default_factory=list)
    plan: Plan | None = None
    outputs: dict[str, str] = field(default_factory=dict)  # what the admin saw: email, slack, cli text
    at: datetime | None = None  # the emulated time the scenario ended (its `after` from then on)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def check(self, what: str, ok: bool, detail: str = "") -> bool:
        self.checks.append(Check(what, bool(ok), detail))
        return bool(ok)


class Story(Protocol):
    """What the demo tells the viewer as it goes. Tests pass a SilentStory."""

    def chapter(self, title: str, text: str) -> None: ...
    def say(self, text: str) -> None: ...
    def plan(self, plan: Plan) -> None: ...
    def email(self, subject: str, body: str) -> None: ...
    def slack(self, post: dict[str, Any]) -> None: ...
    def terminal(self, command: str, output: str) -> None: ...
    def quotas(self, before: Quotas, after: Quotas, capacity: dict[str, int]) -> None: ...
    def verdict(self, result: ScenarioResult) -> None: ...


class SilentStory:
    def chapter(self, title: str, text: str) -> None: pass
    def say(self, text: str) -> None: pass
    def plan(self, plan: Plan) -> None: pass
    def email(self, subject: str, body: str) -> None: pass
    def slack(self, post: dict[str, Any]) -> None: pass
    def terminal(self, command: str, output: str) -> None: pass
    def quotas(self, before: Quotas, after: Quotas, capacity: dict[str, int]) -> None: pass
    def verdict(self, result: ScenarioResult) -> None: pass


# --- helpers -----------------------------------------------------------------------------------------------------
def alarm_event(world: World) -> dict[str, Any]:
    """events/alarm-state-change.json, about the demo cluster, now."""
    event = load_event("alarm-state-change")
    event["id"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"demo-alarm/{world.clock.t.isoformat()}"))
    event["time"] = world.clock.t.strftime("%Y-%m-%dT%H:%M:%SZ")
    for metric in event["detail"]["configuration"]["metrics"]:
        metric["metricStat"]["metric"]["dimensions"]["ClusterName"] = world.cluster
    return event


def node_health_event(world: World, node_id: str) -> dict[str, Any]:
    """The node-health event the emulator recorded when the node failed (the shape EventBridge delivers)."""
    events = [e for e in world.emulator.events if e["detail-type"].endswith("Node Health Event")
              and node_id in json.dumps(e["detail"])]
    if not events:
        raise RuntimeError(f"the emulator recorded no node-health event for {node_id}")
    return events[-1]


def stored_plan(execution_arn: str) -> Plan | None:
    from rebalancer.app import wiring

    doc = wiring.store().artifacts.get(execution_arn.rsplit(":", 1)[-1], "PLAN")
    return None if doc is None else Plan.model_validate(doc)


def collected_utilization(execution_arn: str) -> dict[str, float | None]:
    """team → GPU utilization % in the snapshot the run's Collect step stored (Container Insights)."""
    from rebalancer.app import wiring

    doc = wiring.store().artifacts.get(execution_arn.rsplit(":", 1)[-1], "SNAPSHOT") or {}
    return {team: u.get("gpu_percent") for team, u in (doc.get("utilization") or {}).items()}


def fits_capacity(quotas: Quotas, capacity: dict[str, int]) -> tuple[bool, str]:
    totals: dict[str, int] = {}
    for pools in quotas.values():
        for t, n in pools.items():
            totals[t] = totals.get(t, 0) + n
    over = {t: (n, capacity.get(t, 0)) for t, n in totals.items() if n > capacity.get(t, 0)}
    return not over, ", ".join(f"{t}: quotas {n} > healthy {c}" for t, (n, c) in over.items()) or "within capacity"


def matches_plan(quotas: Quotas, plan: Plan | None) -> tuple[bool, str]:
    if plan is None:
        return False, "no plan stored"
    wrong = [f"{c.team} {c.instance_type}: {quotas.get(c.team, {}).get(c.instance_type, 0)} ≠ {c.after:g}"
             for c in plan.changes if quotas.get(c.team, {}).get(c.instance_type, 0) != c.after]
    return not wrong, "; ".join(wrong) or f"{len(plan.changes)} change(s) applied as planned"


def http(method: str, url: str, form: dict[str, str] | None = None) -> tuple[int, str]:
    """A real HTTP request on loopback (the admin's browser)."""
    data = urlencode(form).encode() if form is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/x-www-form-urlencoded"} if data else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return int(resp.status), resp.read().decode()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read().decode()


def click_link(url: str, who: str) -> tuple[int, str, int]:
    """Open the signed link (GET shows the review page), then press the link's button (Approve or Reject) as `who`.
    A page without the form (decided already) is returned as it is. Returns (GET status, page, POST status or 0)."""
    shown, page = http("GET", url)
    action = re.search(r"<form method='post' action='([^']+)'", page)
    if shown != 200 or action is None:
        return shown, page, 0
    hidden = dict(re.findall(r"<input type='hidden' name='([^']+)' value='([^']*)'>", page))
    decision = dict(parse_qsl(urlsplit(url).query)).get("decision", "")
    status, answer = http("POST", urljoin(url, action.group(1)), {**hidden, "decision": decision, "name": who})
    return shown, answer, status


def links(message: str) -> dict[str, str]:
    return email_links(message)


def _audit_kinds(world: World, execution: str) -> list[tuple[str, str]]:
    return [(a["kind"], a["outcome"]) for a in world.stack.audit(world.cluster) if a["execution"] == execution]


def _run(world: World, event: dict[str, Any], result: ScenarioResult) -> str | None:
    out = world.stack.trigger(event)
    if not result.check("the trigger started one run", out.get("status") == "started", json.dumps(out)):
        return None
    arn = world.stack.executions()[-1]
    result.execution = arn.rsplit(":", 1)[-1]
    return arn


def _sns_of(world: World, kind: str, result: ScenarioResult) -> dict[str, Any] | None:
    got = [m for m in world.stack.sns_messages() if m["kind"] == kind]
    result.check(f"the '{kind}' notification reached the SNS topic", len(got) == 1, f"{len(got)} message(s)")
    return got[0] if got else None


# --- the scenarios -----------------------------------------------------------------------------------------------
def node_failure(world: World, story: Story) -> ScenarioResult:
    story.chapter("1. A node fails", f"One {P5} node ({FAILED_NODE}) fails its health check. The cluster loses 8 "
                  "H100s, so the teams' quotas now promise more than the cluster has.")
    before = world.quotas()
    world.emulator.fail_node(world.cluster, FAILED_NODE, "GPU XID 79: fallen off the bus")
    capacity = world.healthy_capacity()
    result = ScenarioResult("node-failure", "A p5 node fails: automatic reconciliation", before, before, capacity)
    fits, detail = fits_capacity(before, capacity)
    result.check("before the run, quotas exceed healthy capacity", not fits, detail)
    story.say(f"EventBridge delivers the node-health event to the trigger function ({detail}).")
    arn = _run(world, node_health_event(world, FAILED_NODE), result)
    if arn is None:
        return result
    done = world.stack.wait(arn, timeout=60)
    result.states = world.stack.states_entered(arn)
    result.plan = stored_plan(arn)
    if result.plan is not None:
        story.plan(result.plan)
    result.after = world.quotas()
    result.check("the run succeeded", done["status"] == "SUCCEEDED", done["status"])
    result.check("no approval was asked", "RequestApproval" not in result.states, " → ".join(result.states))
    result.check("the run ended Applied after Verify", result.states[-1:] == ["Applied"] and "Verify" in result.states,
                 " → ".join(result.states))
    result.check("the emulator holds the plan's quotas", *matches_plan(result.after, result.plan))
    result.check("quotas now fit healthy capacity", *fits_capacity(result.after, capacity))
    last = world.emulator.monitor.records[-1:]
    result.check("the emulator's invariant monitor: the last write left quotas within capacity",
                 bool(last) and last[0].ok, f"after {last[0].operation} of {last[0].target}" if last else "no write")
    msg = _sns_of(world, "applied", result)
    if msg:
        story.email(str(msg["Subject"]), str(msg["Message"]))
        result.outputs["email"] = str(msg["Message"])
    story.quotas(before, result.after, capacity)
    story.verdict(result)
    return result


def _alarm_until_approval(world: World, story: Story, result: ScenarioResult) -> tuple[str | None, dict[str, str]]:
    seen_posts = len(world.slack.posts)
    arn = _run(world, alarm_event(world), result)
    if arn is None:
        return None, {}
    world.stack.wait_until(lambda: "RequestApproval" in world.stack.states_entered(arn)
                           or world.stack.describe(arn)["status"] != "RUNNING", timeout=60,
                           what="the run to ask for approval or end")
    result.states = world.stack.states_entered(arn)
    if not result.check("the run asks for approval", "RequestApproval" in result.states,
                        f"{world.stack.describe(arn)['status']}: {' → '.join(result.states)}"):
        return None, {}
    world.stack.wait_until(lambda: len(world.slack.posts) > seen_posts, timeout=30,
                           what="the approval request on Slack")
    seen = collected_utilization(arn)
    story.say("Collect read Container Insights for the last hour: " + ", ".join(
        f"{team} {'n/a' if pct is None else f'{pct:.0f} %'}" for team, pct in sorted(seen.items())) + ".")
    result.check("the collected snapshot holds every team's utilization",
                 sorted(seen) == sorted(cast.TEAMS) and None not in seen.values(), json.dumps(seen))
    result.plan = stored_plan(arn)
    if result.plan is not None:
        story.plan(result.plan)
        result.check("the plan is above the approval threshold", result.plan.requires_approval,
                     "; ".join(result.plan.approval_reasons))
    post = world.slack.posts[-1]
    story.slack(post)
    result.outputs["slack"] = json.dumps(post, indent=1)
    msg = _sns_of(world, "approval_request", result)
    if msg is None:
        return arn, {}
    story.email(str(msg["Subject"]), str(msg["Message"]))
    result.outputs["email"] = str(msg["Message"])
    found = links(str(msg["Message"]))
    result.check("the email carries signed approve and reject links", set(found) == {"Approve", "Reject"},
                 ", ".join(found))
    return arn, found


def approved_alarm(world: World, story: Story, hours_later: float = 3) -> ScenarioResult:
    world.clock.advance(hours_later)
    cast.research_queueing(world.kube)
    world.publish_utilization(idle=("data-science",))
    story.chapter("2. Idle here, queueing there", f"{hours_later:g} hours later: data-science's GPUs have been idle "
                  "for hours (Container Insights shows 0 %), while research queues an H100 sweep. The "
                  "stranded-accelerators alarm fires.")
    before = world.quotas()
    result = ScenarioResult("approved-alarm", "Utilization alarm: plan approved by signed link, applied",
                            before, before, world.healthy_capacity())
    arn, found = _alarm_until_approval(world, story, result)
    if arn is None or "Approve" not in found:
        return result
    idle = collected_utilization(arn).get("data-science")
    result.check("Collect saw data-science idle (0 % GPU)", idle == 0, f"{idle}")
    story.say(f"The admin opens the Approve link ({urlsplit(found['Approve']).netloc}, signed, expires with the "
              "approval) and confirms.")
    shown, _page, status = click_link(found["Approve"], ADMIN)
    result.check("the link shows a confirmation form, then the POST decides", (shown, status) == (200, 200),
                 f"GET {shown}, POST {status}")
    done = world.stack.wait(arn, timeout=60)
    result.states = world.stack.states_entered(arn)
    result.after = world.quotas()
    result.check("the run succeeded and ended Applied", done["status"] == "SUCCEEDED"
                 and result.states[-1:] == ["Applied"], " → ".join(result.states))
    result.check("it applied after the approval and verified",
                 _after(result.states, "RequestApproval", "Apply") and "Verify" in result.states)
    result.check("the emulator holds the plan's quotas", *matches_plan(result.after, result.plan))
    result.check("research got more H100s", result.after["research"].get(P5, 0) > before["research"].get(P5, 0),
                 f"{before['research'].get(P5, 0)} → {result.after['research'].get(P5, 0)}")
    approvals = [a for a in world.stack.audit(world.cluster)
                 if a["execution"] == result.execution and a["kind"] == "approval"]
    result.check("the audit log names the approver", [(a["outcome"], a.get("who")) for a in approvals]
                 == [("approved", ADMIN)], json.dumps([a.get("who") for a in approvals]))
    msg = _sns_of(world, "applied", result)
    if msg:
        story.email(str(msg["Subject"]), str(msg["Message"]))
    again, page, replay_status = click_link(found["Approve"], ADMIN)
    result.check("the same link again shows the decision and offers no buttons",
                 (again, replay_status) == (200, 0) and "already approved" in page,
                 f"GET {again}, POST {replay_status}")
    story.quotas(before, result.after, result.capacity)
    story.verdict(result)
    return result


def rejected_alarm(world: World, story: Story, hours_later: float = 2) -> ScenarioResult:
    world.clock.advance(hours_later)
    cast.training_queueing(world.kube)
    world.publish_utilization(idle=("data-science", "platform"))
    story.chapter("3. A plan the admin rejects", f"{hours_later:g} hours later: platform's Neuron CI is done and "
                  f"training queues a {TRN1} job. The alarm fires again; this time the admin says no (a "
                  "platform release is due tonight).")
    before = world.quotas()
    versions = world.versions()
    result = ScenarioResult("rejected-alarm", "Second alarm: plan rejected, nothing changes", before, before,
                            world.healthy_capacity())
    arn, found = _alarm_until_approval(world, story, result)
    if arn is None or "Reject" not in found:
        return result
    story.say("The admin opens the Reject link and confirms.")
    shown, _page, status = click_link(found["Reject"], ADMIN)
    result.check("the reject link decided", (shown, status) == (200, 200), f"GET {shown}, POST {status}")
    done = world.stack.wait(arn, timeout=60)
    result.states = world.stack.states_entered(arn)
    result.after = world.quotas()
    result.check("the run ended Rejected without applying", done["status"] == "SUCCEEDED"
                 and result.states[-1:] == ["Rejected"] and "Apply" not in result.states, " → ".join(result.states))
    result.check("every quota is as before, same versions", result.after == before and world.versions() == versions)
    result.check("the audit log records the rejection", ("approval", "rejected") in _audit_kinds(world,
                                                                                                   result.execution))
    msg = _sns_of(world, "rejected", result)
    if msg:
        story.email(str(msg["Subject"]), str(msg["Message"]))
    story.quotas(before, result.after, result.capacity)
    story.verdict(result)
    return result


def history_and_rollback(world: World, story: Story, first_run: str, workdir: Path,
                         cli: Callable[[list[str]], tuple[int, str]]) -> ScenarioResult:
    story.chapter("4. History and rollback", f"The failed {P5} node is replaced. The admin reads the history from "
                  "the audit table and rolls the cluster back to the quotas it had before the first change.")
    world.emulator.heal_node(world.cluster, FAILED_NODE)
    before = world.quotas()
    result = ScenarioResult("rollback", "History from the audit table; rollback of the first change", before,
                            before, world.healthy_capacity())
    code, out = cli(["history", "--cluster", world.cluster, "--table", TABLE])
    story.terminal(f"rebalancer history --cluster {world.cluster} --table {TABLE}", out)
    result.outputs["history"] = out
    runs = {a["execution"] for a in world.stack.audit(world.cluster) if a["kind"] != "cluster-event"}  # not runs
    result.check("history lists every run", code == 0 and all(short_run(r, world.cluster) in out for r in runs),
                 f"exit {code}")
    snapshot = workdir / f"{first_run}.snapshot.json"
    typed = short_run(first_run, world.cluster)  # the id as `history` shows it
    code, out = cli(["history", "--cluster", world.cluster, "--table", TABLE, "--snapshot-of", typed,
                     "-o", str(snapshot)])
    story.terminal(f"rebalancer history ... --snapshot-of {typed} -o {snapshot.name}", out)
    if not result.check("the first run's snapshot was written", code == 0 and snapshot.exists(), out.strip()):
        return result
    original = {q["ComputeQuotaTarget"]["TeamName"]: {
        r["InstanceType"]: int(r.get("Accelerators", 0)) for r in q["ComputeQuotaConfig"]["ComputeQuotaResources"]}
        for q in json.loads(snapshot.read_text())["quotas"]}
    code, out = cli(["rollback", "--cluster", world.cluster, "--to", str(snapshot), "--yes", "--no-kube",
                     "--table", TABLE, "--poll-interval", "0.1", "--timeout", "30"])
    story.terminal(f"rebalancer rollback --cluster {world.cluster} --to {snapshot.name} --yes --table {TABLE}", out)
    result.outputs["rollback"] = out
    result.after = world.quotas()
    result.check("rollback exited 0", code == 0, out.strip().splitlines()[-1] if out.strip() else "")
    recorded = [a for a in world.stack.audit(world.cluster)
                if a["kind"] == "rollback" and (a.get("detail") or {}).get("source") == "cli"]
    result.check("the CLI rollback is in the audit log (rebalancer history shows it)",
                 [a["outcome"] for a in recorded] == ["restored"], f"{len(recorded)} record(s)")
    result.check("every quota is back to before the first change", result.after == dict(sorted(original.items())))
    result.check("quotas fit healthy capacity", *fits_capacity(result.after, result.capacity))
    story.quotas(before, result.after, result.capacity)
    story.verdict(result)
    return result


BUDGET_TEAM = "training"
BUDGET_GUARANTEE = 4


def budget_policy(policy_text: str, accelerator_hours: float) -> str:
    """The demo policy, with a monthly H100 budget for training (held at its guarantee when used up); budget cuts
    go through without approval, the admin having chosen the budget."""
    import yaml

    doc = yaml.safe_load(policy_text)
    doc["approval"] = {**doc.get("approval", {}), "moved_accelerators": 1000, "max_decrease_percent": 100}
    doc["teams"][BUDGET_TEAM] = {**doc["teams"].get(BUDGET_TEAM, {}), "guarantee": {P5: BUDGET_GUARANTEE},
                                 "budget": {"accelerator_hours": round(accelerator_hours, 1), "scope": "ml.p5",
                                            "on_exhausted": "guarantee_only"}}
    return str(yaml.safe_dump(doc, sort_keys=False))


def _approval(policy_text: str, name: str) -> object:
    """The policy's approval setting (its default when it does not say)."""
    from rebalancer.domain.policy import Approval

    return (yaml.safe_load(policy_text).get("approval") or {}).get(name, getattr(Approval(), name))


def _training_used(world: World, policy_text: str) -> tuple[float, str]:
    """What the controller has metered for training this month so far (the same figures the plan uses)."""
    import yaml

    from rebalancer.app import wiring
    from rebalancer.app.budgets import period_to_date
    from rebalancer.domain.policy import Policy

    policy = Policy.model_validate(yaml.safe_load(policy_text))
    used = period_to_date(wiring.store().meter, world.cluster, policy, world.clock.t)[BUDGET_TEAM]
    return used.accelerator_hours, used.period


def _scheduled_run(world: World, result: ScenarioResult, what: str, story: Story | None = None) -> str | None:
    """One periodic reconcile; with `story`, the plan it made is shown when it changes something (nothing a run
    applies goes unseen)."""
    event = load_event("scheduled")
    event["time"] = world.clock.t.strftime("%Y-%m-%dT%H:%M:%SZ")
    event["id"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"demo-schedule/{world.clock.t.isoformat()}"))
    arn = _run(world, event, result)
    if arn is None:
        return None
    done = world.stack.wait(arn, timeout=60)
    result.check(f"{what}: the run succeeded", done["status"] == "SUCCEEDED", done["status"])
    plan = stored_plan(arn) if story is not None else None
    if story is not None and plan is not None and plan.changes:
        story.say(f"The reconcile {what} plans:")
        story.plan(plan)
    return arn


def budget_enforced(world: World, story: Story, workdir: Path,
                    cli: Callable[[list[str]], tuple[int, str]]) -> ScenarioResult:
    _budget_introduced(world, story)
    rate = 8.0  # training's fine-tune keeps 8 H100s busy (demo cast)
    world.clock.advance(1)
    before = world.quotas()
    result = ScenarioResult("budget", f"A budget: {BUDGET_TEAM} warned at 80 %, held at its guarantee past 100 %",
                            before, before, world.healthy_capacity())
    if _scheduled_run(world, result, "that starts the meter", story) is None:
        return result
    budget, text = _budget_set(world, story, workdir, rate)
    world.stack.sns_messages()
    if _scheduled_run(world, result, "an hour later", story) is None:
        return result
    _warned_at_80_percent(world, result, story)
    used, _ = _training_used(world, text)
    hours = (budget - used) / rate + 0.5
    story.say(f"{hours:.1f} hours later {BUDGET_TEAM} has used more than its budget.")
    world.clock.advance(hours)
    before = world.quotas()
    arn = _scheduled_run(world, result, "past the budget")
    if arn is None:
        return result
    result.execution = arn.rsplit(":", 1)[-1]
    result.plan = stored_plan(arn)
    if result.plan is not None:
        story.plan(result.plan)
    result.after = world.quotas()
    result.before = before
    _held_past_100_percent(world, result, story)
    _usage_shows_it(world, result, story, workdir, cli)
    story.quotas(before, result.after, result.capacity)
    story.verdict(result)
    return result


def _budget_introduced(world: World, story: Story) -> None:
    """The chapter opened and a budget too large to reach put in the policy, which starts the meter; said with the
    approval limits the budget policy loosens."""
    story.chapter("5. A budget", f"The admin gives {BUDGET_TEAM} a monthly budget of H100-hours, to be held at its "
                  f"guarantee ({BUDGET_GUARANTEE} H100s) once used up. Every run meters what each team runs, on its "
                  "own quota and borrowed.")
    world.stack.put_policy(world.cluster, budget_policy(world.policy_text, 1e6))
    loosened = yaml.safe_load(budget_policy(world.policy_text, 1e6))["approval"]
    story.say("The budget policy also lets budget cuts through without an admin: approval.moved_accelerators "
              f"{_approval(world.policy_text, 'moved_accelerators')} → {loosened['moved_accelerators']}, "
              f"max_decrease_percent {_approval(world.policy_text, 'max_decrease_percent')} → "
              f"{loosened['max_decrease_percent']}. So a change the admin rejected before (chapter 3) can now apply "
              "on its own: each run's plan is shown below.")


def _budget_set(world: World, story: Story, workdir: Path, rate: float) -> tuple[float, str]:
    """The budget (H100-hours) and the policy text holding it, put in place and saved in workdir: one that the
    next hour of use at `rate` takes past 80 %, so the viewer sees both thresholds in two runs. Then that hour
    passes."""
    used, period = _training_used(world, budget_policy(world.policy_text, 1.0))
    budget = (used + rate) / 0.85
    text = budget_policy(world.policy_text, budget)
    world.stack.put_policy(world.cluster, text)
    (workdir / "budget-policy.yaml").write_text(text)
    story.say(f"{BUDGET_TEAM} has used {used:,.0f} H100-hours of {period} so far; its budget: {budget:,.0f}.")
    world.clock.advance(1)
    story.say(f"An hour later, {rate:g} H100s busy all along, the next run meters {rate:g} more: "
              f"{used + rate:,.0f} of {budget:,.0f}.")
    return budget, text


def _warned_at_80_percent(world: World, result: ScenarioResult, story: Story) -> None:
    """The run past 80 % of the budget announces it on SNS and Slack, and cuts nothing yet."""
    warned = [m for m in world.stack.sns_messages() if m["kind"] == "budget"]
    result.check("the 80 % threshold was announced on SNS", len(warned) == 1
                 and f"{BUDGET_TEAM}: budget 85 % used" in str(warned[0]["Message"])
                 and "80 %" in str(warned[0]["Message"]), f"{len(warned)} message(s)")
    if warned:
        story.email(str(warned[0]["Subject"]), str(warned[0]["Message"]))
    posts = [p for p in world.slack.posts if p["blocks"][0]["text"]["text"].startswith("Budget thresholds")]
    result.check("and on Slack", len(posts) == 1, f"{len(posts)} post(s)")
    if posts:
        story.slack(posts[-1])
    result.check(f"{BUDGET_TEAM} still holds more than its guarantee",
                 world.quotas()[BUDGET_TEAM].get(P5, 0) > BUDGET_GUARANTEE, str(world.quotas()[BUDGET_TEAM]))


def _held_past_100_percent(world: World, result: ScenarioResult, story: Story) -> None:
    """The run past the budget holds the team at its guarantee, says why, and announces 100 % once."""
    result.check(f"{BUDGET_TEAM}'s H100 quota is down to its guarantee",
                 result.after[BUDGET_TEAM].get(P5) == BUDGET_GUARANTEE,
                 f"{result.before[BUDGET_TEAM].get(P5)} → {result.after[BUDGET_TEAM].get(P5)}")
    messages = world.stack.sns_messages()
    applied = [m for m in messages if m["kind"] == "applied"]
    result.check("the change says why: the budget", len(applied) == 1
                 and "quota held at its guarantee" in str(applied[0]["Message"]), f"{len(applied)} message(s)")
    if applied:
        story.email(str(applied[0]["Subject"]), str(applied[0]["Message"]))
    passed = [m for m in messages if m["kind"] == "budget"]
    result.check("the 100 % threshold was announced, once", len(passed) == 1
                 and "passed 100 %" in str(passed[0]["Message"]), f"{len(passed)} message(s)")


def _usage_shows_it(world: World, result: ScenarioResult, story: Story, workdir: Path,
                    cli: Callable[[list[str]], tuple[int, str]]) -> None:
    """`rebalancer usage` shows the team past its budget, in its table and in its JSON."""
    usage = ["usage", "--cluster", world.cluster, "--table", TABLE, "--policy", str(workdir / "budget-policy.yaml"),
             "--at", world.clock.t.isoformat()]
    code, out = cli(usage)
    story.terminal(f"rebalancer usage --cluster {world.cluster} --table {TABLE} --policy budget-policy.yaml", out)
    result.outputs["usage"] = out
    code, doc = cli([*usage, "--format", "json"])  # what the table shows, read as data
    percent: float | None
    try:
        percent = next((r.get("used_percent") for r in json.loads(doc) if r.get("team") == BUDGET_TEAM), None)
    except ValueError:
        percent = None
    result.check("rebalancer usage shows it past 100 %", code == 0 and percent is not None and percent >= 100,
                 f"{percent} %")


OBSERVATIONS = 4  # observe steps before the backtest: a few samples, the demo stays fast


def backtest_history(world: World, story: Story, workdir: Path,
                     cli: Callable[[list[str]], tuple[int, str]]) -> ScenarioResult:
    story.chapter("6. Backtest", "The observe step has been recording demand samples. The admin exports the "
                  "history the demo just made and replays it under the policy and a variant without a cooldown.")
    quotas = world.quotas()
    result = ScenarioResult("backtest", "Backtest of the demo's own history", quotas, quotas,
                            world.healthy_capacity())
    for _ in range(OBSERVATIONS):
        world.clock.advance(minutes=5)
        world.stack.invoke("observe", load_event("scheduled"))
    history = workdir / "history.jsonl"
    code, out = cli(["history", "export", "--cluster", world.cluster, "--table", TABLE, "--since", "7d",
                     "-o", str(history)])
    story.terminal(f"rebalancer history export --cluster {world.cluster} --table {TABLE} --since 7d "
                   f"-o {history.name}", out)
    if not result.check("the history was exported", code == 0 and history.exists(), out.strip()):
        return result
    lines = [json.loads(line) for line in history.read_text().splitlines()]
    kinds = [line["type"] for line in lines]
    result.check("it holds the demo's runs and the observe samples",
                 kinds.count("run") >= 3 and kinds.count("sample") == OBSERVATIONS,
                 f"{kinds.count('run')} runs, {kinds.count('sample')} samples")
    policy = workdir / "demo-policy.yaml"
    policy.write_text(world.policy_text)
    variant = workdir / "no-cooldown.yaml"
    variant.write_text(world.policy_text.replace("cooldown_minutes: 30", "cooldown_minutes: 0"))
    report = workdir / "backtest"
    code, out = cli(["backtest", "--history", str(history), "--policy", str(policy), "--policy", str(variant),
                     "--report", str(report)])
    story.terminal(f"rebalancer backtest --history {history.name} --policy {policy.name} --policy "
                   f"{variant.name} --report {report.name}", out)
    result.outputs["backtest"] = out
    result.check("backtest exited 0 with both policies side by side",
                 code == 0 and "demo-policy" in out and "no-cooldown" in out, out.strip().splitlines()[-1]
                 if out.strip() else "")
    result.check("the report has a timeline per team", len(list(report.glob("team-*.png"))) == len(quotas),
                 str(report))
    result.check("nothing was written to the cluster", world.quotas() == quotas)
    story.verdict(result)
    return result


def _after(states: list[str], first: str, then: str) -> bool:
    return first in states and then in states and states.index(first) < states.index(then)


def _guarded(key: str, title: str, story: Story, scenario: Callable[[], ScenarioResult],
             clock: Callable[[], datetime]) -> ScenarioResult:
    """A scenario that raises is a failed scenario (with the error), not the end of the demo. Either is stamped
    with the emulated time it ended."""
    try:
        result = scenario()
    except Exception as e:  # the demo is a smoke test: report every scenario, whatever broke
        result = ScenarioResult(key, title, {}, {}, {})
        result.check("the scenario ran to its end", False, f"{type(e).__name__}: {e}")
        story.verdict(result)
    result.at = clock()
    return result


# The scenarios run_all runs, in order (help texts and the README count them: tests/unit/test_docs_agree.py).
SCENARIOS = ("node-failure", "approved-alarm", "rejected-alarm", "rollback", "budget", "backtest")


def run_all(world: World, story: Story, workdir: Path,
            cli: Callable[[list[str]], tuple[int, str]]) -> list[ScenarioResult]:
    """Every scenario in order; `cli` runs the `rebalancer` command as an admin would type it
    (rebalancer_tools.cli.demo_cmd.run_cli: the CLI hands itself to the demo it runs)."""
    def guarded(key: str, title: str, scenario: Callable[[], ScenarioResult]) -> ScenarioResult:
        return _guarded(key, title, story, scenario, lambda: world.clock.t)

    results = [guarded("node-failure", "A p5 node fails", lambda: node_failure(world, story)),
               guarded("approved-alarm", "Utilization alarm, approved", lambda: approved_alarm(world, story)),
               guarded("rejected-alarm", "Second alarm, rejected", lambda: rejected_alarm(world, story))]
    first = results[0].execution
    if first:
        results.append(guarded("rollback", "History and rollback",
                               lambda: history_and_rollback(world, story, first, workdir, cli)))
    else:
        results.append(ScenarioResult("rollback", "History and rollback (skipped: no first run)", {}, {}, {},
                                      [Check("the first run exists", False)]))
    results.append(guarded("budget", "A budget", lambda: budget_enforced(world, story, workdir, cli)))
    results.append(guarded("backtest", "Backtest of the demo's own history",
                           lambda: backtest_history(world, story, workdir, cli)))
    return results
