"""Each task's input, as the state machine passes it, is read through a model: any other shape is an InvalidInput
naming the step and the field (a PermanentError the ASL's Catch routes to the failure path), never a KeyError."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.fuzz import JSON, fuzz, mutated, within_memory

from rebalancer.app.workflow import state
from rebalancer.errors import InvalidInput

RUN = {"cluster_name": "ml-cluster", "execution_name": "ml-cluster-20261130T120000",
       "execution_arn": "arn:aws:states:us-east-1:123456789012:execution:rebalancer-rebalance:ml-cluster-1",
       "trigger": {"kind": "node-health", "summary": "node i-1 is Unschedulable"}, "started_at": "2026-11-30T12:00Z"}
INPUTS: dict[str, tuple[type[state.StepInput], dict[str, Any]]] = {
    "collect": (state.RunInput, {"run": RUN}),
    "plan": (state.PlanInput, {"run": RUN, "recheck": {"approval_round": 2}}),
    "rollback": (state.RollbackInput, {"run": RUN, "error": {"Error": "ApplyFailed", "Cause": "x"}}),
    "verify": (state.VerifyInput, {"run": RUN, "attempt": 2, "apply": {"quota_ids": ["q-1", "q-2"],
                                                                           "scheduler_config_id": None}}),
    "notify": (state.NotifyInput, {"kind": "applied", "run": RUN, "approval_round": 1, "notes": ["x"],
                                   "error": {"Error": "States.Timeout"}}),
    "approval request": (state.ApprovalRequest, {"action": "request", "task_token": "t", "run": RUN,
                                                 "approval_round": 1, "approval_timeout_seconds": 3600,
                                                 "notes": [], "base_url": "https://example.com/"}),
}


def parses_or_refuses(step: str, event: Any) -> None:
    model, _ = INPUTS[step]
    error = None
    try:
        state.parse(model, event, step)
    except InvalidInput as e:
        error = str(e)
    if error is not None:
        assert error.startswith(f"{step} input: ")
        assert "\n" not in error


@pytest.mark.parametrize("step", sorted(INPUTS))
def test_the_state_machine_s_inputs_parse(step: str) -> None:
    model, sample = INPUTS[step]
    assert state.parse(model, sample, step) is not None


@pytest.mark.parametrize(("step", "event", "words"), [
    ("collect", {}, "run: Field required"),
    ("collect", {"run": "x"}, "run: Input should be a valid dictionary"),
    ("plan", {"run": {**RUN, "execution_name": ""}}, "run.execution_name must be a non-empty name"),
    ("verify", {"run": RUN, "attempt": "x", "apply": {}}, "attempt"),
    ("verify", {"run": RUN, "attempt": 1, "apply": {"quota_ids": "q-1"}}, "apply.quota_ids"),
    ("notify", {"kind": "applied"}, "run: Field required"),
    ("notify", {"kind": "exploded", "run": RUN}, "kind"),
    ("notify", {"kind": "applied", "run": RUN, "approval_round": 0}, "approval_round"),
    ("approval request", {"action": "request", "run": RUN, "task_token": "t", "approval_round": 1,
                          "base_url": "https://example.com/"}, "approval_timeout_seconds: Field required"),
    ("rollback", [], "expected an object, got list"),
])
def test_a_malformed_input_names_the_step_and_the_field(step: str, event: Any, words: str) -> None:
    model, _ = INPUTS[step]
    with pytest.raises(InvalidInput, match=f"^{step} input: ") as e:
        state.parse(model, event, step)
    assert words in str(e.value)


@fuzz(max_examples=60)
@given(step=st.sampled_from(sorted(INPUTS)), event=JSON)
@within_memory()
def test_arbitrary_json_into_each_step(step: str, event: Any) -> None:
    parses_or_refuses(step, event)


@fuzz(max_examples=120)
@given(data=st.data(), step=st.sampled_from(sorted(INPUTS)))
@within_memory()
def test_each_step_s_input_with_one_value_replaced(data: st.DataObject, step: str) -> None:
    parses_or_refuses(step, data.draw(mutated(INPUTS[step][1])))
