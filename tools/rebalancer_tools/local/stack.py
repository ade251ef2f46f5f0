"""The deployed application without AWS: the template's resources created in moto, the real state machine definition
(with the template's substitutions) run by moto's Step Functions interpreter, and every Lambda invocation of the
state machine served by the project's own handlers, in process (moto's `LambdaFunction.invoke` is patched).

Used by the end-to-end tests and the local demo. Run it inside moto's `mock_aws` (with the HyperPod emulator
installed for the compute-quota API):

    with mock_aws(), LocalStack(clusters={"demo-hyperpod": policy_yaml}, kube_url=url) as stack:
        stack.trigger(event)                       # the trigger handler, as EventBridge would call it
        execution = stack.wait(stack.executions()[0])
        stack.history(execution), stack.sns_messages(), stack.audit("demo-hyperpod")

Not for the Lambda runtime: it needs moto (a development dependency).
"""

from __future__ import annotations

import functools
import importlib.util
import io
import itertools
import json
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import boto3
from botocore.credentials import Credentials

from rebalancer.adapters.aws import botocore_session
from rebalancer.app import wiring
from rebalancer.domain.clock import Clock
from rebalancer_tools.fakes.loopback import LoopbackServer, QuietHandler
from rebalancer_tools.iam import policies as iam_policies
from rebalancer_tools.iam.enforce import Enforcer
from rebalancer_tools.packaging import template as tpl

STACK = "rebalancer"
ROLE_NAME = "rebalancer-local-role"
TEAM_TOPIC_PREFIX = "rebalancer-team-"  # the template's default: the teams' own topics (teams.<team>.notice_topic)
APPROVAL_API_URL = "https://approvals.local.example"
APPROVAL_KEY = "local-approval-signing-key"
# Environment the local stack changes from the template's values, and why.
LOCAL_ENV = {
    "VERIFY_POLL_SECONDS": "0",  # the emulator settles at once (or after N reads); no need to wait between polls
    "POWERTOOLS_TRACE_DISABLED": "true",  # no X-Ray daemon here
    "POWERTOOLS_METRICS_FUNCTION_NAME": "local",
}

Hook = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class FakeContext:
    """The parts of the Lambda context that Powertools reads."""

    function_name: str
    aws_request_id: str
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = ""
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = ""

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


class SlackReceiver(LoopbackServer):
    """A loopback HTTP server standing in for Slack's incoming webhook: records each POSTed JSON body."""

    def __init__(self, status: int = 200):
        self.posts: list[dict[str, Any]] = []
        self.status = status
        receiver = self

        class Handler(QuietHandler):
            def respond(self, method: str) -> None:
                if method != "POST":
                    super().respond(method)
                    return
                receiver.posts.append(json.loads(self.body()))
                payload = b"ok" if receiver.status == 200 else b"invalid_payload"
                self.reply(receiver.status, payload, {"Content-Type": "text/plain"})

        super().__init__(Handler, "slack-receiver")

    @property
    def url(self) -> str:
        return f"{self.origin}/services/T000/B000/local"


@dataclass
class LocalStack:
    clusters: dict[str, str]  # managed cluster name → its policy document (YAML or JSON text)
    kube_url: str | None = None  # a Kueue API server (rebalancer_tools.fakes.kube); None ⇒ no demand
    slack_webhook_url: str | None = None
    slack_signing_secret: str | None = None
    now: Clock | None = None  # the functions' clock (debounce windows, approval expiry, plans)
    region: str = "us-east-1"
    account: str = "123456789012"
    root: Path = field(default_factory=tpl.find_root)
    env: dict[str, str] = field(default_factory=dict)  # more overrides of the functions' environment
    hooks: dict[str, Hook] = field(default_factory=dict)  # function name → rewrite of its result (tests)
    approval_api_url: str = APPROVAL_API_URL  # base of the signed links (the demo serves the HTTP API on loopback)
    # Each handler runs with the credentials of a role holding its policy from template.yaml, and every request it
    # signs is authorized on the emulator (rebalancer_tools.iam.enforce) — AccessDenied as AWS would answer.
    enforce_iam: bool = True
    revoke: dict[str, set[str]] = field(default_factory=dict)  # function name → actions taken out of its policy
    # "appconfig": the stack deployed with PolicySource=appconfig — the first cluster's policy is pushed to the
    # template's AppConfig profile (its validator included) and read by the plan step through Powertools.
    policy_source: str = "ssm"
    table_name: str | None = None  # a table made already (the sandbox's, which its commands read); None: one made here

    def __post_init__(self) -> None:
        self.template = tpl.load_template(self.root)
        self._handlers: dict[str, Callable[[dict[str, Any], Any], Any]] = {}
        self._function_of_arn: dict[str, str] = {}
        self._ids = itertools.count(1)
        self._turns: dict[str, threading.Lock] = {}  # one per function, made with its handler
        self._exit = ExitStack()
        self.invocations: list[tuple[str, dict[str, Any]]] = []
        self.state_machine_arn = ""
        self.iam: Enforcer | None = None
        self._credentials: dict[str, Credentials] = {}
        self.role_arns: dict[str, str] = {}  # function name → the role it runs with (enforce_iam)
        self.queue_url = ""
        self._ended: set[str] = set()
        self.appconfig: dict[str, str] = {}  # PolicyApplication, PolicyEnvironment, ... → its id (appconfig)
        self._clients: dict[str, Any] = {}  # service → this stack's client (boto3's clients are thread-safe)

    # --- lifecycle -------------------------------------------------------------------------------------------------
    def __enter__(self) -> LocalStack:
        try:
            self.deploy()
        except BaseException:
            self._exit.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._clients.clear()
        self._exit.close()

    def client(self, service: str) -> Any:
        """One client per service for the stack's life: making one costs more CPU than most calls (botocore copies
        its event hooks), and `wait` asks Step Functions every 50 ms while the state machine runs on another thread
        of this process."""
        made = self._clients.get(service)
        if made is None:
            made = self._clients[service] = boto3.client(service, region_name=self.region)  # type: ignore[call-overload]
        return made

    def deploy(self) -> None:
        from moto.core.config import default_user_config

        # boto3.client() — the handlers' and this stack's — from a session made now, on the process's one botocore
        # loader: a session of its own (mock_aws() starts one) would parse every service model again.
        self._exit.enter_context(mock.patch.object(boto3, "DEFAULT_SESSION",
                                                   boto3.Session(botocore_session=botocore_session())))
        self._exit.enter_context(mock.patch.dict(default_user_config,
                                                 {"stepfunctions": {"execute_state_machine": True}}))
        self._exit.enter_context(parsed_once())
        self._exit.enter_context(one_sns_signing_key())
        self._atomic_dynamodb_writes()
        resources = self.template["Resources"]
        table = self.table_name or self._table(resources["Table"]["Properties"])
        topic = self.client("sns").create_topic(Name=f"{STACK}-topic")["TopicArn"]
        self._subscribe_queue(topic)
        signing, slack, slack_signing = self._secrets()
        prefix = "/hyperpod-rebalancer/policy"
        if self.policy_source == "appconfig":
            self._appconfig_resources(resources)
        for cluster, policy in self.clusters.items():
            self.put_policy(cluster, policy, prefix=prefix)
        self.state_machine_arn = (f"arn:aws:states:{self.region}:{self.account}:stateMachine:"
                                  f"{STACK}-rebalance")
        env = self._environment(resources, table=table, topic=topic, prefix=prefix, signing=signing, slack=slack,
                                slack_signing=slack_signing)
        self._exit.enter_context(mock.patch.dict("os.environ", env))
        self._wire()
        if self.enforce_iam:
            self._function_roles({
                "AWS::Partition": "aws", "AWS::Region": self.region, "AWS::AccountId": self.account,
                "AWS::StackName": STACK, "AWS::URLSuffix": "amazonaws.com", "Table": table,
                "Table.Arn": f"arn:aws:dynamodb:{self.region}:{self.account}:table/{table}", "Topic": topic,
                "Topic.TopicName": topic.rsplit(":", 1)[-1], "ApprovalSigningSecret": signing,
                "SlackWebhookSecretArn": slack, "SlackSigningSecretArn": slack_signing,
                "RebalanceStateMachine": self.state_machine_arn, "PolicyParameterPrefix": prefix,
                "EksClusterName": "", "TeamTopicPrefix": TEAM_TOPIC_PREFIX, **self.appconfig})
        # The functions as Lambda holds them (role, environment): what `rebalancer doctor --stack` reads.
        self._create_functions(resources, {k: v for k, v in env.items() if not k.startswith("AWS_")})
        # Import what the handlers import lazily now, on this thread: the kubernetes client takes seconds to import,
        # which would otherwise happen on the interpreter's thread in the middle of a run.
        importlib.import_module("rebalancer.adapters.collect")
        importlib.import_module("rebalancer.adapters.sagemaker.quota_writer")
        importlib.import_module("rebalancer.adapters.kubernetes.eks_auth")
        self._state_machine()

    def _secrets(self) -> tuple[str, str, str]:
        """The template's secrets in Secrets Manager: the approval signing key's ARN, and the Slack webhook's and
        signing secret's ("" when the stack has none)."""
        secrets = self.client("secretsmanager")
        signing = secrets.create_secret(Name=f"{STACK}-approval-signing", SecretString=APPROVAL_KEY)["ARN"]
        slack = slack_signing = ""
        if self.slack_webhook_url:
            slack = secrets.create_secret(Name=f"{STACK}-slack-webhook", SecretString=self.slack_webhook_url)["ARN"]
        if self.slack_signing_secret:
            slack_signing = secrets.create_secret(Name=f"{STACK}-slack-signing",
                                                  SecretString=self.slack_signing_secret)["ARN"]
        return signing, slack, slack_signing

    def _environment(self, resources: dict[str, Any], *, table: str, topic: str, prefix: str, signing: str,
                     slack: str, slack_signing: str) -> dict[str, str]:
        """The functions' environment as the template sets it, with this stack's names and ARNs."""
        env = {**tpl.literal_environment(self.template)}
        for logical_id, res in resources.items():
            if res["Type"] == "AWS::Serverless::Function":
                env.update(tpl.literal_environment(self.template, logical_id))
        env.update({"TABLE_NAME": table, "MANAGED_CLUSTERS": ",".join(self.clusters),
                    "POLICY_PARAMETER_PREFIX": prefix, "MODE_OVERRIDE": "", "STATE_MACHINE_ARN":
                    self.state_machine_arn, "TOPIC_ARN": topic, "SLACK_WEBHOOK_SECRET_ARN": slack,
                    "SLACK_SIGNING_SECRET_ARN": slack_signing, "APPROVAL_SIGNING_SECRET_ARN": signing,
                    "AWS_DEFAULT_REGION": self.region,
                    "HISTORY_RETENTION_DAYS": str(self.template["Parameters"]["HistoryRetentionDays"]["Default"]),
                    "POLICY_SOURCE": self.policy_source,
                    "APPCONFIG_APPLICATION": self.appconfig.get("PolicyApplication", ""),
                    "APPCONFIG_ENVIRONMENT": self.appconfig.get("PolicyEnvironment", ""),
                    "APPCONFIG_PROFILE": self.appconfig.get("PolicyConfigurationProfile", ""),
                    **LOCAL_ENV, **self.env})
        return env

    def _wire(self) -> None:
        """The handlers' wiring made afresh for this stack (and again when it closes): Powertools' parameter
        caches emptied, this stack's Kubernetes client and clock in place."""
        from aws_lambda_powertools.utilities import parameters

        self._exit.callback(wiring.reset)
        wiring.reset()
        parameters.clear_caches()  # type: ignore[no-untyped-call]
        self._exit.callback(parameters.clear_caches)
        self._exit.enter_context(mock.patch.object(wiring, "kube_client_factory", self._kube_client))
        if self.now is not None:
            self._exit.enter_context(mock.patch.object(wiring, "clock", self.now))

    def _state_machine(self) -> None:
        """The real definition, with the template's substitutions, on moto's interpreter; each Lambda it invokes
        served by the project's handler in process."""
        from moto.awslambda.models import LambdaFunction

        stack = self

        def invoke(fn: Any, body: Any, _request_headers: Any, response_headers: Any) -> bytes:
            return stack._invoke_from_moto(fn.function_name, body, response_headers)

        self._exit.enter_context(mock.patch.object(LambdaFunction, "invoke", invoke))
        substitutions = {name: self._function_arn(logical) for name, logical in
                         tpl.substitution_functions(self.template).items()}
        substitutions["ApprovalApiUrl"] = self.approval_api_url
        definition = tpl.substitute(tpl.asl_text(self.root), substitutions)
        self.client("stepfunctions").create_state_machine(
            name=f"{STACK}-rebalance", definition=definition, roleArn=self._role(), type="STANDARD")

    def _atomic_dynamodb_writes(self) -> None:
        self._exit.enter_context(atomic_dynamodb_writes())

    def put_policy(self, cluster: str, policy: str, *, prefix: str = "/hyperpod-rebalancer/policy") -> None:
        from aws_lambda_powertools.utilities import parameters

        if self.policy_source == "appconfig" and cluster == next(iter(self.clusters)):
            self.push_policy(policy)
        else:
            self.client("ssm").put_parameter(Name=f"{prefix}/{cluster}", Value=policy, Type="String",
                                             Overwrite=True)
        parameters.clear_caches()  # type: ignore[no-untyped-call]

    def push_policy(self, policy: str) -> Any:
        """What `rebalancer policy push` does: a hosted configuration version and its deployment."""
        from rebalancer_tools.packaging import appconfig_policy as ac

        target = ac.Target(self.appconfig["PolicyApplication"], self.appconfig["PolicyEnvironment"],
                           self.appconfig["PolicyConfigurationProfile"])
        content, checked = ac.policy_json(policy, "the local stack's policy")
        return ac.push(self.client("appconfig"), target, content, checked,
                       strategy=self.appconfig["PolicyDeploymentStrategy"])

    def _appconfig_resources(self, resources: dict[str, Any]) -> None:
        """The template's AppConfig resources as CloudFormation would create them (names, validators, strategy)."""
        ac = self.client("appconfig")
        profile, strategy = resources["PolicyConfigurationProfile"]["Properties"], \
            resources["PolicyDeploymentStrategy"]["Properties"]
        app = ac.create_application(Name=f"{STACK}-policy")["Id"]
        env = ac.create_environment(ApplicationId=app, Name=resources["PolicyEnvironment"]["Properties"]["Name"],
                                    Monitors=[])["Id"]
        prof = ac.create_configuration_profile(ApplicationId=app, Name=next(iter(self.clusters)), LocationUri="hosted",
                                               Type=profile["Type"], Validators=profile["Validators"])["Id"]
        made = ac.create_deployment_strategy(Name=f"{STACK}-policy", **{k: strategy[k] for k in (
            "DeploymentDurationInMinutes", "GrowthFactor", "GrowthType", "FinalBakeTimeInMinutes", "ReplicateTo")})
        self.appconfig = {"PolicyApplication": app, "PolicyEnvironment": env, "PolicyConfigurationProfile": prof,
                          "PolicyDeploymentStrategy": made["Id"]}

    # --- resources -------------------------------------------------------------------------------------------------
    def _table(self, props: dict[str, Any]) -> str:
        ddb = self.client("dynamodb")
        name = f"{STACK}-table"
        ddb.create_table(TableName=name, KeySchema=props["KeySchema"],
                         AttributeDefinitions=props["AttributeDefinitions"], BillingMode=props["BillingMode"])
        ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=props["TimeToLiveSpecification"])
        return name

    def _subscribe_queue(self, topic: str) -> None:
        sqs = self.client("sqs")
        self.queue_url = sqs.create_queue(QueueName=f"{STACK}-notifications")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])[
            "Attributes"]["QueueArn"]
        self.client("sns").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)

    def _role(self) -> str:
        iam = self.client("iam")
        try:
            return str(iam.get_role(RoleName=ROLE_NAME)["Role"]["Arn"])
        except iam.exceptions.NoSuchEntityException:
            doc = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                           "Principal": {"Service": "lambda.amazonaws.com"}}]}
            return str(iam.create_role(RoleName=ROLE_NAME, AssumeRolePolicyDocument=json.dumps(doc))["Role"]["Arn"])

    def _function_arn(self, logical_id: str) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{STACK}-{logical_id}"

    def _create_functions(self, resources: dict[str, Any], env: dict[str, str]) -> None:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("app.py", "def handler(event, context):\n    raise RuntimeError('served in process')\n")
        lam = self.client("lambda")
        role = self._role()
        for logical_id, res in resources.items():
            if res["Type"] != "AWS::Serverless::Function":
                continue
            name = Path(res["Properties"]["CodeUri"]).name
            lam.create_function(FunctionName=f"{STACK}-{logical_id}", Runtime="python3.13",
                                Role=self.role_arns.get(name, role), Handler="app.handler",
                                Code={"ZipFile": buf.getvalue()}, Architectures=["arm64"],
                                Environment={"Variables": env})
            self._function_of_arn[f"{STACK}-{logical_id}"] = name
            self._handlers[name] = self._load_handler(name)
            self._turns[name] = threading.Lock()

    def _function_roles(self, values: dict[str, str]) -> None:
        """One role per principal of the template (collect and observe share ClusterReaderRole), holding the
        statements template.yaml gives it, minus `revoke`; each function gets its role's credentials."""
        conditions = dict.fromkeys(self.template.get("Conditions", {}), False)
        conditions.update({"HasSlackWebhook": bool(values["SlackWebhookSecretArn"]),
                           "HasSlackSigning": bool(values["SlackSigningSecretArn"]),
                           "UsesAppConfig": self.policy_source == "appconfig"})
        resolve = iam_policies.Resolver(values, conditions)
        self.iam = self._exit.enter_context(Enforcer(self.region, self.account))
        roles: dict[str, Credentials] = {}
        for logical_id, res in self.template["Resources"].items():
            if res["Type"] != "AWS::Serverless::Function":
                continue
            name = Path(res["Properties"]["CodeUri"]).name
            principal = iam_policies.role_of(self.template, logical_id)
            revoked = self.revoke.get(name, set())
            stmts = [replace(s, actions=tuple(a for a in s.actions if a not in revoked))
                     for s in iam_policies.statements(self.template, logical_id, resolve)]
            doc = iam_policies.documents([s for s in stmts if s.actions])
            role = f"{STACK}-{principal}" + (f"-{name}-revoked" if revoked else "")
            if role not in roles:
                roles[role] = self.iam.role(role, doc)
            self._credentials[name] = roles[role]
            self.role_arns[name] = f"arn:aws:iam::{self.account}:role/{role}"

    def _load_handler(self, name: str) -> Callable[[dict[str, Any], Any], Any]:
        path = self.root / "functions" / name / "app.py"
        spec = importlib.util.spec_from_file_location(f"rebalancer_function_{name}", path)
        if spec is None or spec.loader is None:
            raise FileNotFoundError(f"no handler module at {path}")
        module: ModuleType = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        handler: Callable[[dict[str, Any], Any], Any] = module.handler
        return handler

    def _kube_client(self, described: dict[str, Any]) -> Any:
        from rebalancer.adapters.kubernetes.eks_auth import api_client_with_token

        if self.kube_url is None:
            from rebalancer_tools.fakes.kube import serve

            self.kube_url = self._exit.enter_context(serve())[0]
        return api_client_with_token(self.kube_url, lambda: "local-token")

    # --- invoking --------------------------------------------------------------------------------------------------
    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        """Call a function's handler as Lambda would (fresh context, JSON in and out)."""
        self.invocations.append((function, event))
        request_id = f"req-{next(self._ids):06d}"
        ctx = FakeContext(function_name=f"{STACK}-{function}", aws_request_id=request_id,
                          invoked_function_arn=self._function_arn(function))
        # A Lambda execution environment runs one invocation at a time, and module state (Powertools' metrics, cached
        # clients) belongs to one environment; here every function shares this process, so each takes its turn.
        with self._turns[function], Enforcer.acting_as(self._credentials.get(function), function):
            result = self._handlers[function](json.loads(json.dumps(event)), ctx)
        if function in self.hooks:
            result = self.hooks[function](result)
        return json.loads(json.dumps(result))

    def _invoke_from_moto(self, function_name: str, body: Any, response_headers: dict[str, Any]) -> bytes:
        event = json.loads(body) if isinstance(body, str | bytes) and body else (body or {})
        try:
            result = self.invoke(self._function_of_arn[function_name], event)
        except Exception as e:  # what the Lambda runtime reports for an unhandled exception
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(e).__name__, "errorMessage": str(e), "stackTrace": []}).encode()
        return json.dumps(result).encode()

    def trigger(self, event: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.invoke("trigger", event)
        return result

    def deliver_run_events(self) -> list[dict[str, Any]]:
        """What EventBridge's RunFinished rule delivers (moto's EventBridge does not deliver to Lambda): for each
        run that ended since the last call, Step Functions' status-change event to the trigger. Its outcomes."""
        outcomes = []
        for arn in self.executions():
            if arn in self._ended:
                continue
            d = self.describe(arn)
            if d["status"] == "RUNNING":
                continue
            self._ended.add(arn)
            outcomes.append(self.trigger(run_finished_event(d, self.region, self.account)))
        return outcomes

    def http(self, method: str, url: str, *, form: dict[str, str] | None = None,
             headers: dict[str, str] | None = None, body: str | None = None,
             claims: dict[str, str] | None = None) -> dict[str, Any]:
        """Call the approval function as the HTTP API (payload format 2.0) would for this request; `claims`: as its
        JWT authorizer passes them for a valid token."""
        from urllib.parse import urlencode

        from rebalancer_tools.fakes.http_api import http_api_event

        raw = body if body is not None else (urlencode(form) if form else None)
        event = http_api_event(method, url, body=raw, claims=claims, headers={
            "content-type": "application/x-www-form-urlencoded", **(headers or {})})
        result: dict[str, Any] = self.invoke("approval", event)
        return result

    # --- observing -------------------------------------------------------------------------------------------------
    def executions(self) -> list[str]:
        sfn = self.client("stepfunctions")
        out = sfn.list_executions(stateMachineArn=self.state_machine_arn)["executions"]
        return [e["executionArn"] for e in sorted(out, key=lambda e: e["startDate"])]

    def describe(self, execution_arn: str) -> dict[str, Any]:
        out: dict[str, Any] = self.client("stepfunctions").describe_execution(executionArn=execution_arn)
        return out

    def wait(self, execution_arn: str, *, timeout: float = 30.0) -> dict[str, Any]:
        """Until the execution ends (it runs on moto's interpreter thread). Bounded; polls, never sleeps blind."""
        self.wait_until(lambda: self.describe(execution_arn)["status"] != "RUNNING", timeout=timeout,
                        what=f"execution {execution_arn} to end")
        return self.describe(execution_arn)

    def wait_for_state(self, execution_arn: str, state: str, *, timeout: float = 30.0) -> None:
        self.wait_until(lambda: state in self.states_entered(execution_arn), timeout=timeout,
                        what=f"execution {execution_arn} to enter {state}")

    @staticmethod
    def wait_until(ready: Callable[[], bool], *, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise TimeoutError(f"gave up waiting for {what} after {timeout:g} s")
            time.sleep(0.05)

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        sfn = self.client("stepfunctions")
        events: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"executionArn": execution_arn}
        while True:
            page = sfn.get_execution_history(**kwargs)
            events += page["events"]
            if not page.get("nextToken"):
                return events
            kwargs["nextToken"] = page["nextToken"]

    def states_entered(self, execution_arn: str) -> list[str]:
        return [e["stateEnteredEventDetails"]["name"] for e in self.history(execution_arn)
                if "stateEnteredEventDetails" in e]

    def sns_messages(self) -> list[dict[str, Any]]:
        """Every notification delivered to the topic's SQS subscription so far (drains the queue)."""
        sqs = self.client("sqs")
        out: list[dict[str, Any]] = []
        while True:
            got = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
            msgs = got.get("Messages", [])
            if not msgs:
                return out
            for m in msgs:
                envelope = json.loads(m["Body"])
                out.append({"Subject": envelope.get("Subject"), "Message": envelope["Message"],
                            "kind": envelope.get("MessageAttributes", {}).get("kind", {}).get("Value")})
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])

    def audit(self, cluster: str) -> list[dict[str, Any]]:
        return wiring.store().audit.records(cluster)


@functools.lru_cache(maxsize=8)  # a tree holds ~1.4 MB; definitions differ only by their approval URL's port
def _asl_tree(parse: Callable[[str], tuple[Any, Any]], definition: str) -> Any:
    return parse(definition)[1]


@contextmanager
def parsed_once() -> Iterator[None]:
    """moto parses the definition (ANTLR in pure Python: a fifth of a second of CPU for ours) when the state machine
    is created and again at every execution's start. The parse tree of a definition is kept for the process; the
    program evaluated is still made afresh from it each time (moto's Preprocessor), so no execution shares state
    with another."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    fresh = AmazonStateLanguageParser.parse

    def parse(definition: str) -> tuple[Any, Any]:
        tree = _asl_tree(fresh, definition)
        return Preprocessor().visit(tree), tree

    with mock.patch.object(AmazonStateLanguageParser, "parse", staticmethod(parse)):
        yield


@functools.cache
def _sns_signing_key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _subscription_key(_subscription: Any) -> Any:
    return _sns_signing_key()


@contextmanager
def one_sns_signing_key() -> Iterator[None]:
    """moto signs each SNS notification with a key of its subscription's, a new RSA 2048 key per subscription (30 to
    120 ms of CPU each, a few per stack); one key per process signs them all here (nothing here checks them)."""
    from moto.sns.models import Subscription

    with mock.patch.object(Subscription, "private_key", _subscription_key):
        yield


@contextmanager
def atomic_dynamodb_writes() -> Iterator[None]:
    """DynamoDB applies a conditional write atomically; moto's backend checks the condition and writes in two
    steps, so two threads (the trigger under a burst, the interpreter's threads) could both win one lock. One
    process-wide lock around moto's writes gives back the guarantee the per-cluster lock relies on."""
    from moto.dynamodb.models import DynamoDBBackend

    lock = threading.RLock()

    def locked(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def write(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return original(*args, **kwargs)
        return write

    with ExitStack() as patches:
        for name in ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item"):
            patches.enter_context(mock.patch.object(DynamoDBBackend, name, locked(getattr(DynamoDBBackend, name))))
        yield


def run_finished_event(described: dict[str, Any], region: str, account: str) -> dict[str, Any]:
    """Step Functions' "Execution Status Change" event for a DescribeExecution result."""
    def millis(t: Any) -> int | None:
        return int(t.timestamp() * 1000) if isinstance(t, datetime) else None

    arn = described["executionArn"]
    return {"version": "0", "id": f"run-finished-{arn.rsplit(':', 1)[-1]}",
            "detail-type": "Step Functions Execution Status Change", "source": "aws.states", "account": account,
            "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "region": region, "resources": [arn],
            "detail": {"executionArn": arn, "stateMachineArn": described["stateMachineArn"],
                       "name": described["name"], "status": described["status"],
                       "startDate": millis(described.get("startDate")), "stopDate": millis(described.get("stopDate")),
                       "input": described.get("input"), "output": described.get("output")}}


@contextmanager
def slack_receiver(status: int = 200) -> Iterator[SlackReceiver]:
    with SlackReceiver(status) as receiver:
        yield receiver
