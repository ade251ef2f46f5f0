"""The sandbox all the way, as docs/cli/emulator.md walks a newcomer through it: from a fresh
`rebalancer emulator --seed-demo` (the controller deployed on it: the real state machine on moto's interpreter, the
real handlers), the page's walk runs here command by command as written. A plan that needs an admin asks one (its
email and Slack message printed, the signed links whole), `approvals approve` decides it and the run applies; a
reservation one admin requests is refused to them and approved by the other; the last run is decided on the review
page served on loopback, and applies."""

from __future__ import annotations

import configparser
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urljoin

import pytest
from click.testing import CliRunner
from support import docs
from support.approval_page import review_form

from rebalancer.app.notifications.messages import email_links
from rebalancer_tools.cli import cli
from rebalancer_tools.cli.sandbox_cmds import _announce
from rebalancer_tools.demo.scenarios import http, matches_plan, stored_plan
from rebalancer_tools.emulator.demo_cluster import DEMO, P5
from rebalancer_tools.local.sandbox import CALLER, SECOND_ADMIN, Sandbox, open_sandbox
from rebalancer_tools.local.sandbox_controller import Controller, Delivered

pytestmark = pytest.mark.slow

ROOT = docs.ROOT
CLUSTER = DEMO.cluster_name
PAGE = docs.page("cli/emulator.md")
WALK = PAGE[PAGE.index("### A first walk"):]
ADMIN_2 = SECOND_ADMIN.arn()


@dataclass
class Box:
    sandbox: Sandbox
    heard: list[Delivered]  # what the sandbox's terminal printed, in order


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Box]:
    here = tmp_path_factory.mktemp("newcomer")
    (here / "examples").symlink_to(ROOT / "examples")  # the walk's paths are the checkout's
    credentials = here / "credentials"  # the profile block the page tells a user to add
    credentials.write_text(profile_block())
    heard: list[Delivered] = []
    policy = (ROOT / "examples" / "demo-policy.yaml").read_text()
    before = dict(os.environ)
    # The sandbox outside: the controller sets the environment of this process for as long as it runs, and puts it
    # back once the test's own settings are undone.
    with open_sandbox(policy=policy, listener=heard.append) as sandbox, pytest.MonkeyPatch.context() as mp:
        for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "REBALANCER_TABLE"):
            mp.delenv(name, raising=False)
        for name, value in sandbox.environment().items():  # what the sandbox prints to export, nothing else
            mp.setenv(name, value)
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
        mp.chdir(here)
        yield Box(sandbox, heard)
    assert dict(os.environ) == before  # the tests after this module see no sandbox that has gone


def profile_block() -> str:
    """The credentials-file block the page gives for the second admin's profile."""
    found = re.search(r"```ini\n(.*?)```", PAGE, re.S)
    assert found is not None, "the page gives no profile"
    return found.group(1)


def walk() -> list[str]:
    """The walk's command lines, as the page shows them."""
    block = re.search(r"```bash\n(.*?)```", WALK, re.S)
    assert block is not None, "the page has no walk"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def run_line(line: str, values: dict[str, str]) -> tuple[list[str], int, str]:
    """One line of the walk through the CLI: `VAR=value …` before it is its environment, placeholders filled in,
    `y` answered to a question."""
    words = shlex.split(line, comments=True)
    env = {"COLUMNS": "80"}  # a narrow terminal: links must still come out whole
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "rebalancer", line
    args = [values.get(w, w) for w in words[1:]]
    got = CliRunner().invoke(cli, args, input="y\n", env=env)
    return args, got.exit_code, got.output


def test_the_walk_on_the_page_works_from_a_fresh_sandbox(box: Box) -> None:
    sandbox, controller = box.sandbox, controller_of(box.sandbox)
    stack = controller.stack
    values = {"UNTIL": (datetime.now(UTC) + timedelta(days=2)).strftime("%Y-%m-%dT%H:%MZ")}
    out: list[tuple[list[str], str]] = []
    runs: list[str] = []  # the run ids `emulator run` printed, in order
    for line in walk():
        if line.startswith("rebalancer emulator --seed-demo"):
            continue  # the fixture serves it
        if line.startswith("export "):
            exported = dict(w.split("=", 1) for w in shlex.split(line)[1:])
            assert exported == {**sandbox.environment(), "AWS_ENDPOINT_URL": "http://127.0.0.1:5000"}
            continue
        args, code, text = run_line(line, values)
        assert code == (1 if "# refused" in line else 0), (line, text)
        out.append((args, text))
        if args[:2] == ["emulator", "run"]:
            printed = re.search(rf"^  rebalancer approvals approve (\S+) --cluster {CLUSTER}$", text, re.M)
            if printed:  # a run that asks
                values["RUN"] = printed.group(1)
                runs.append(printed.group(1))
        elif args[0] == "reserve":
            stored = re.search(r"^stored (r-[0-9a-f]+): ", text, re.M)
            assert stored, text
            values["ID"] = stored.group(1)
        elif args[:2] == ["approvals", "approve"]:  # as a user reads the "Quotas rebalanced" email before going on
            stack.wait(execution_arn(sandbox, values["RUN"]))

    def output(*command: str, nth: int = 0) -> str:
        return [text for args, text in out if args[:len(command)] == list(command)][nth]

    # 1. the cooldown holds what the policy wants, and says so
    assert "nothing changes now: 2 changes held back (cooldown until" in docs.flat(output("plan"))
    quiet = output("emulator", "run")  # and the controller's run agrees, saying why
    assert re.search(r"^run \d{8}T\d{6} of demo-hyperpod: Begin → Collect → Plan → HasNews → Decide → NoChange$",
                     quiet, re.M)
    assert "nothing changes now: 2 changes held back (cooldown until" in docs.flat(quiet)
    # 2. a node less: applied by hand
    assert "every quota settled" in output("apply")
    # 3. the controller's run asks: the email with its links whole on their own lines, the Slack message, the way
    # to decide; the command it printed decided it, and the run applied what it planned
    asked = output("emulator", "run", nth=1)
    run = execution_arn(sandbox, runs[0])
    assert "Begin → Collect → Plan → HasNews → Decide → RequestApproval" in asked
    assert re.search(r"^it waits for an admin: approval [0-9a-f]{24}, to decide by ", asked, re.M), asked
    links = email_links(asked)
    assert set(links) == {"Approve", "Reject"}
    assert all(url.startswith(f"{controller.approval_api}/approvals/") for url in links.values())
    assert "[ Approve ]  [ Reject ]" in asked  # the Slack message
    assert runs[0] in docs.flat(output("approvals", "list"))
    assert "approved" in output("approvals", "approve")
    assert stack.describe(run)["status"] == "SUCCEEDED"
    assert stack.states_entered(run)[-4:] == ["Verified", "Observe", "NotifyApplied", "Applied"]
    applied, why = matches_plan(quotas(sandbox), stored_plan(run))
    assert applied, why
    decided = [(a["kind"], a["outcome"], a.get("who")) for a in stack.audit(CLUSTER)
               if a["execution"] == run.rsplit(":", 1)[-1] and a["kind"] in ("approval", "apply")]
    assert decided == [("approval", "approved", CALLER), ("apply", "applied", None)]
    shown = docs.flat(output("history"))  # a table or, when it does not fit, a list: the run's rows, then its apply
    after = shown[shown.index(runs[0]):]
    assert re.search(rf"approval\W+(outcome: )?approved\W+(who / changes: )?{CALLER}", after), shown
    assert re.search(r"apply\W+(outcome: )?applied", after), shown
    # the sandbox's terminal printed the request and the outcome, email and Slack each
    kinds = [(m.channel, m.subject) for m in box.heard]
    for subject in (f"Approval needed: quota changes on {CLUSTER}", f"Quotas rebalanced on {CLUSTER}"):
        assert ("email", subject) in kinds, kinds
        assert ("slack", subject) in kinds, kinds

    # 4. the reservation: pending, refused to who asked, approved by the other admin, cancelled through the profile
    assert "needs approval" in output("reserve")
    assert "another admin approves it" in output("reservations", "approve")
    assert output("reservations", "approve", nth=1).startswith(f"approved by {ADMIN_2}: {values['ID']}")
    listed = docs.flat(output("reservations", "--cluster"))  # at 80 columns, one entry per reservation
    assert listed.startswith(f"reservations of {CLUSTER} • {values['ID']} team: platform"), listed
    assert "status: approved" in listed, listed
    assert output("reservations", "cancel").startswith(f"cancelled by {ADMIN_2}: {values['ID']}")

    # 5. the last run, decided on its review page: the link opens it, the form's Approve button decides
    last = execution_arn(sandbox, runs[1])
    shown, page = http("GET", email_links(output("emulator", "run", nth=2))["Approve"])
    assert shown == 200
    action, hidden = review_form(page)
    status, answer = http("POST", urljoin(email_links(output("emulator", "run", nth=2))["Approve"], action),
                          {**hidden, "decision": "approve", "name": "Alice Newcomer"})
    assert status == 200, answer
    assert stack.wait(last)["status"] == "SUCCEEDED"
    assert "Apply" in stack.states_entered(last)
    applied, why = matches_plan(quotas(sandbox), stored_plan(last))
    assert applied, why
    assert all(q.get(P5, 0) == 0 for q in quotas(sandbox).values())  # no H100 left: nobody keeps a quota on them
    assert [a.get("who") for a in stack.audit(CLUSTER)
            if a["execution"] == last.rsplit(":", 1)[-1] and a["kind"] == "approval"] == ["Alice Newcomer"]


def test_the_banner_names_the_controller_the_page_and_the_second_admin(box: Box,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    _announce(box.sandbox, ROOT / "examples" / "demo-policy.yaml")
    printed = capsys.readouterr().out
    page = controller_of(box.sandbox).approval_api
    assert f"its approval page is served on {page}" in docs.flat(printed)
    keys = " ".join(f"{k}={v}" for k, v in SECOND_ADMIN.environment().items())
    assert f"  {keys} rebalancer reservations approve ID --cluster {CLUSTER}\n" in printed
    profile = configparser.ConfigParser()
    profile.read_string(profile_block())
    assert dict(profile["sandbox-admin-2"]) == {"aws_access_key_id": SECOND_ADMIN.access_key_id,
                                                "aws_secret_access_key": SECOND_ADMIN.secret_access_key}


def controller_of(sandbox: Sandbox) -> Controller:
    assert sandbox.controller is not None, "the sandbox runs no controller"
    return sandbox.controller


def execution_arn(sandbox: Sandbox, run_id: str) -> str:
    """The run `approvals` and `history` name by its id."""
    [arn] = [a for a in controller_of(sandbox).stack.executions() if a.endswith(f":{CLUSTER}-{run_id}")]
    return arn


def quotas(sandbox: Sandbox) -> dict[str, dict[str, int]]:
    """team → instance type → accelerators, as DescribeComputeQuota answers now."""
    sm = controller_of(sandbox).stack.client("sagemaker")
    out: dict[str, dict[str, int]] = {}
    for s in sm.list_compute_quotas(ClusterArn=sandbox.seeded.cluster_arn)["ComputeQuotaSummaries"]:
        config = sm.describe_compute_quota(ComputeQuotaId=s["ComputeQuotaId"])["ComputeQuotaConfig"]
        out[s["ComputeQuotaTarget"]["TeamName"]] = {r["InstanceType"]: int(r.get("Accelerators", 0))
                                                    for r in config.get("ComputeQuotaResources", [])}
    return out
