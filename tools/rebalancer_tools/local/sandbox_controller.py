"""The controller in the sandbox, as `make demo` runs it: the template's resources, the real state machine on moto's
interpreter and the real handlers (rebalancer_tools.local.stack), deployed on the sandbox's own emulator and
writing the sandbox's audit table. So a plan that needs an admin asks one, as in an account:

- `rebalancer emulator run` starts a run with the scheduled event EventBridge delivers, and answers once the run
  has ended or waits for an approval whose email and Slack message have gone out;
- every email (SNS) and Slack message the controller sends lands in the inbox, which the sandbox's terminal prints
  as it arrives (the signed links each on a line of their own) and `run` returns with its run;
- the approval HTTP API (the review page behind the links) is served on 127.0.0.1, and `rebalancer approvals`
  decides through the sandbox's Step Functions as it would through AWS's;
- each run's end goes back to the trigger as EventBridge's RunFinished rule sends it (the cluster's lock let go, a
  follow-up run started when one was asked for meanwhile).

    with open_controller(sandbox, policy_text) as controller:
        report = controller.run()           # RunReport: the run, its states, whether it waits, what it sent
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from unittest import mock

from pydantic import Field

from rebalancer.domain.frozen import Frozen
from rebalancer_tools.packaging.sample_events import load_event

if TYPE_CHECKING:  # the stack's parts load moto: `rebalancer emulator run` reads a RunReport without them
    from rebalancer_tools.local.approval_gateway import ApprovalGateway
    from rebalancer_tools.local.sandbox import Sandbox
    from rebalancer_tools.local.stack import LocalStack, SlackReceiver

RUN_TIMEOUT = 60.0  # seconds a run may take to end or to ask: far more than a run of the sandbox takes
RUN_ENDS_EVERY = 0.5  # seconds between two looks for runs that ended (EventBridge delivers within about that)
# The functions' environment in the sandbox, where it differs from the template's, and why.
SANDBOX_ENV = {
    "DEBOUNCE_SECONDS": "1",  # runs start by hand, one command each: every `run` gets a run of its own
    "POWERTOOLS_METRICS_DISABLED": "true",  # EMF lines on stdout feed CloudWatch in Lambda; here they would bury
}                                           # the messages in the sandbox's terminal


class Delivered(Frozen):
    """One message the controller sent: an email (what SNS delivers to a subscriber) or a Slack webhook POST."""

    channel: Literal["email", "slack"]
    subject: str
    kind: str = ""  # the SNS message's `kind` attribute: approval_request, applied, rejected, ...
    body: str = ""  # the email's text
    post: dict[str, Any] = Field(default_factory=dict)  # the Slack message (Block Kit) as POSTed

    def mentions(self, text: str) -> bool:
        return text in self.body or text in str(self.post)


class RunReport(Frozen):
    """What `rebalancer emulator run` answers with (over HTTP, as JSON)."""

    cluster: str
    started: bool
    reason: str = ""  # the trigger's: why the run started, or why none did
    execution: str = ""  # the execution's name (its run id is this without the cluster's name)
    status: str = ""  # Step Functions': RUNNING (waiting for an admin, or still going), SUCCEEDED, FAILED, ...
    states: tuple[str, ...] = ()  # the states entered, in order
    approval_id: str | None = None  # the approval it waits for
    decide_by: datetime | None = None
    headline: str | None = None  # its plan's, when the plan changes no amount ("nothing changes now: …")
    messages: tuple[Delivered, ...] = ()  # what the controller sent since the run started

    @property
    def waiting(self) -> bool:
        return self.approval_id is not None


class Inbox:
    """Every message the controller has sent, in the order collected; `listener` sees each once, as it comes."""

    def __init__(self, stack: LocalStack, slack: SlackReceiver, listener: Callable[[Delivered], None] | None = None):
        self._stack, self._slack, self._listener = stack, slack, listener
        self._lock = threading.Lock()
        self._posts_seen = 0
        self.messages: list[Delivered] = []

    def collect(self) -> int:
        """Takes in what arrived since the last call (SNS's queue drained, Slack's new posts); the count of all."""
        with self._lock:
            new = [Delivered(channel="email", subject=str(m["Subject"] or ""), kind=str(m["kind"] or ""),
                             body=str(m["Message"])) for m in self._stack.sns_messages()]
            posts = self._slack.posts[self._posts_seen:]
            self._posts_seen += len(posts)
            new += [Delivered(channel="slack", subject=str(p.get("text", "")), post=p) for p in posts]
            self.messages += new
            if self._listener is not None:
                for message in new:  # under the lock: two threads collecting print in the order collected
                    self._listener(message)
            return len(self.messages)

    def since(self, count: int) -> tuple[Delivered, ...]:
        self.collect()
        with self._lock:
            return tuple(self.messages[count:])


class Controller:
    def __init__(self, stack: LocalStack, inbox: Inbox, gateway: ApprovalGateway, cluster: str):
        self.stack, self.inbox, self.gateway, self.cluster = stack, inbox, gateway, cluster
        self._ends = threading.Lock()

    @property
    def approval_api(self) -> str:
        return self.gateway.url

    def run(self, *, timeout: float = RUN_TIMEOUT) -> RunReport:
        """One run from the scheduled event, followed until it ends or waits for an admin whose email and Slack
        message are out; a run still going after `timeout` is reported as it stands (status RUNNING)."""
        self.deliver_run_ends()  # as EventBridge would have by now: an ended run holds no lock
        seen = self.inbox.collect()
        outcome = self.stack.trigger(self._scheduled_event())
        if outcome.get("status") != "started" or not outcome.get("executions"):
            return RunReport(cluster=self.cluster, started=False,
                             reason=str(outcome.get("reason") or outcome.get("status")),
                             messages=self.inbox.since(seen))
        name = str(outcome["executions"][0])
        arn = next(a for a in self.stack.executions() if a.endswith(f":{name}"))
        with suppress(TimeoutError):  # reported as it stands: RUNNING
            self.stack.wait_until(lambda: self._settled(arn, seen), timeout=timeout,
                                  what=f"run {name} to end or to ask for approval")
        status = str(self.stack.describe(arn)["status"])
        if status != "RUNNING":
            self.deliver_run_ends()
        pending = self._pending(arn) if status == "RUNNING" else None
        return RunReport(cluster=self.cluster, started=True, reason=str(outcome.get("reason") or ""),
                         execution=name, status=status, states=tuple(self.stack.states_entered(arn)),
                         approval_id=None if pending is None else pending.approval_id,
                         decide_by=None if pending is None else pending.decide_by,
                         headline=self._headline(name, arn), messages=self.inbox.since(seen))

    def deliver_run_ends(self) -> None:
        """Each run that ended since the last call, to the trigger (EventBridge's RunFinished rule), once."""
        with self._ends:
            self.stack.deliver_run_events()

    def _settled(self, arn: str, seen: int) -> bool:
        if self.stack.describe(arn)["status"] != "RUNNING":
            return True
        pending = self._pending(arn)
        if pending is None:
            return False
        sent = self.inbox.since(seen)
        return all(any(m.channel == channel and m.mentions(pending.approval_id) for m in sent)
                   for channel in ("email", "slack"))

    def _headline(self, name: str, arn: str) -> str | None:
        """The stored plan's one line when it changes no amount (None before the plan step stored one)."""
        from rebalancer.app import wiring
        from rebalancer.app.workflow.state import RunRef, load_plan
        from rebalancer.errors import RebalancerError

        try:
            plan = load_plan(wiring.store().artifacts, RunRef(cluster_name=self.cluster, execution_name=name,
                                                              execution_arn=arn))
        except RebalancerError:
            return None
        return plan.headline()

    @staticmethod
    def _pending(arn: str) -> Any:
        """The approval record the run waits on (its first round), or None."""
        from rebalancer.app import wiring
        from rebalancer.app.notifications.notify import approval_id_of

        rec = wiring.store().approvals.get(approval_id_of(arn))
        return rec if rec is not None and rec.status == "pending" else None

    def _scheduled_event(self) -> dict[str, Any]:
        """events/scheduled.json, now, under an id of its own (the trigger is idempotent on event ids)."""
        event = load_event("scheduled")
        event.update(id=str(uuid.uuid4()), time=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                     account=self.stack.account, region=self.stack.region)
        return event


class _RunEnds(threading.Thread):
    """The sandbox's EventBridge for run ends: looks for ended runs every RUN_ENDS_EVERY seconds until stopped."""

    def __init__(self, controller: Controller):
        super().__init__(name="sandbox-run-ends", daemon=True)
        self._controller = controller
        # Not `_stop`: threading.Thread has a method of that name before 3.13, called when the thread ends, and an
        # Event there made Ctrl-C print "'Event' object is not callable" on 3.11 and 3.12.
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.wait(RUN_ENDS_EVERY):
            try:
                self._controller.deliver_run_ends()
            except Exception:  # the trigger answers every event; what raises is the emulator going as the sandbox stops
                continue

    def stop(self) -> None:
        self._stopping.set()
        self.join()


@contextmanager
def open_controller(sandbox: Sandbox, policy_text: str, *,
                    listener: Callable[[Delivered], None] | None = None) -> Iterator[Controller]:
    """The controller deployed on `sandbox` (served by this process), managing its cluster under `policy_text`."""
    from rebalancer_tools.local.approval_gateway import ApprovalGateway
    from rebalancer_tools.local.stack import LocalStack, SlackReceiver

    with ExitStack() as stack:
        port = sandbox.endpoint.rsplit(":", 1)[-1]
        # The handlers, the interpreter (Lambda at localhost:$MOTO_PORT) and the stack's own reads all go to the
        # sandbox, with the sandbox's keys: nothing reaches a profile of this machine.
        stack.enter_context(mock.patch.dict(os.environ, {**sandbox.environment(), "MOTO_PORT": port,
                                                         "AWS_REGION": sandbox.region}))
        for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN"):  # restored by the patch above
            os.environ.pop(name, None)
        slack = stack.enter_context(SlackReceiver())
        gateway = stack.enter_context(ApprovalGateway())
        local = stack.enter_context(LocalStack(
            clusters={sandbox.cluster: policy_text}, kube_url=sandbox.endpoint, slack_webhook_url=slack.url,
            region=sandbox.region, account=sandbox.emulator.account_id, approval_api_url=gateway.url,
            table_name=sandbox.table, env=dict(SANDBOX_ENV)))
        gateway.target = local.http
        inbox = Inbox(local, slack, listener)
        for name in _function_names(local.template):  # what a handler sent is in the inbox once it returns
            local.hooks[name] = _collecting(inbox)
        controller = Controller(local, inbox, gateway, sandbox.cluster)
        ends = _RunEnds(controller)
        ends.start()
        stack.callback(ends.stop)
        yield controller


def _function_names(template: dict[str, Any]) -> list[str]:
    return [Path(r["Properties"]["CodeUri"]).name for r in template["Resources"].values()
            if r["Type"] == "AWS::Serverless::Function"]


def _collecting(inbox: Inbox) -> Callable[[Any], Any]:
    def hook(result: Any) -> Any:
        inbox.collect()
        return result
    return hook
