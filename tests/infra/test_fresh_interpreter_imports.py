"""What a module loads, seen from a fresh interpreter (a subprocess each: infra checks, run by `make test`, not by
`make test-fast`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.layer import FUNCTIONS, RUNTIME


def test_a_catalog_lookup_loads_no_sdk() -> None:
    """The catalog is data: a fresh interpreter looks a type up without importing botocore or the tools."""
    code = ("import sys; from rebalancer.catalog import specs; specs.spec('ml.p5.48xlarge'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('botocore', 'boto3', 'rebalancer_tools')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_jinja2_is_imported_only_when_a_page_is_rendered() -> None:
    """The review page module is on RequestApproval's import path; the template engine is not."""
    code = ("import sys, rebalancer.app.approvals.review_page as p; assert 'jinja2' not in sys.modules; "
            "p.message_page('t', 'x'); assert 'jinja2' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# What a handler must not load at init because it never runs it: the planner and the policy model only in Plan
# (and the CLI), the budget use cases where nothing is metered, the approvals and Slack only where a person is asked,
# Kueue's client only where it is read, the collect adapters only where a cluster is read, Powertools idempotency
# only in the steps that write (Apply, Rollback), Powertools parameters only where a secret or the policy is read;
# asyncio nowhere (no handler is async; wrapt 2, under the X-Ray SDK, would import it: layers/core/requirements.txt);
# the YAML parser nowhere at init (Plan loads it when a policy is YAML, not JSON); the snapshot's models only where
# a whole snapshot is read (the writing steps read its quotas: app.workflow.state.Started); the writers and the
# writing use cases only in the steps that write or verify (collect reads quotas and config through their readers).
PLANNING = ("rebalancer.planning", "rebalancer.domain.policy")
SNAPSHOT = "rebalancer.domain.snapshot"
WRITERS = ("rebalancer.adapters.sagemaker.quota_writer", "rebalancer.adapters.sagemaker.scheduler_config",
           "rebalancer.app.workflow.runs")
COLLECT = "rebalancer.adapters.collect"
IDEMPOTENCY = "aws_lambda_powertools.utilities.idempotency"
PARAMETERS = "aws_lambda_powertools.utilities.parameters"
NEVER_LOADED = {
    "trigger": (*PLANNING, SNAPSHOT, *WRITERS, "rebalancer.app.approvals", "slack_sdk", "kubernetes",
                COLLECT, IDEMPOTENCY, PARAMETERS),
    "apply": (*PLANNING, SNAPSHOT, "rebalancer.app.budgets", "slack_sdk", "kubernetes", COLLECT, PARAMETERS),
    "verify": (*PLANNING, SNAPSHOT, "rebalancer.app.budgets", "slack_sdk", "kubernetes", COLLECT, IDEMPOTENCY,
               PARAMETERS),
    "rollback": (*PLANNING, SNAPSHOT, "rebalancer.app.budgets", "slack_sdk", "kubernetes", COLLECT, PARAMETERS),
    "collect": (*PLANNING, *WRITERS, "rebalancer.app.approvals", "slack_sdk", IDEMPOTENCY, PARAMETERS),
    "observe": (*PLANNING, *WRITERS, "rebalancer.app.approvals", "slack_sdk", IDEMPOTENCY, PARAMETERS),
    "plan": (*WRITERS, "rebalancer.app.approvals", "slack_sdk", "kubernetes", COLLECT, IDEMPOTENCY),
    "notify": (*PLANNING, SNAPSHOT, *WRITERS, "rebalancer.app.budgets", "rebalancer.app.approvals", "kubernetes",
               COLLECT, IDEMPOTENCY),
    "approval": (*PLANNING, SNAPSHOT, *WRITERS, "rebalancer.app.budgets", "kubernetes", COLLECT, IDEMPOTENCY),
}
NOWHERE = ("asyncio", "yaml")


@pytest.mark.parametrize("function", sorted(p.name for p in FUNCTIONS.iterdir() if (p / "app.py").is_file()))
def test_a_handler_loads_only_what_it_runs(function: str) -> None:
    """As in a Lambda (LAMBDA_TASK_ROOT set: Powertools' Tracer is on and X-Ray patches botocore)."""
    app = FUNCTIONS / function / "app.py"
    absent = (*NEVER_LOADED.get(function, ()), *NOWHERE)
    code = f"import runpy, sys; runpy.run_path({str(app)!r}); print(sorted(m for m in {absent!r} if m in sys.modules))"
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(RUNTIME.parent), "AWS_REGION": "us-east-1",
           "LAMBDA_TASK_ROOT": str(app.parent), "AWS_LAMBDA_FUNCTION_NAME": function,
           "POWERTOOLS_SERVICE_NAME": "test", "TABLE_NAME": "t", "MANAGED_CLUSTERS": "c"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
