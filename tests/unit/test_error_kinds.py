"""The error model and the state machine read together: every error name the ASL's Retry and Catch match is a kind of
rebalancer.errors, every kind a step can raise is retried (transient) or caught (permanent), and no error class of
the runtime lives outside errors.py. Step Functions matches the exact class name a Lambda raised (its `errorType`),
never a base class, so a new subclass of TransientError is retried only where the ASL names it."""

from __future__ import annotations

import ast
import copy
from typing import Any

import pytest
from support import template as t
from support.import_graph import MODULES

from rebalancer import errors

# Names Step Functions and Lambda define themselves; everything else in an ErrorEquals must be one of our kinds.
SERVICE_PREFIXES = ("States.", "Lambda.")
Kinds = dict[str, type[Exception]]
KINDS: Kinds = {name: cls for name, cls in vars(errors).items()
                if isinstance(cls, type) and issubclass(cls, Exception) and cls.__module__ == errors.__name__}
# A retried RequestApproval would run with a new task token while the approval stored by the first attempt keeps the
# old one, so the decision could never reach the run: its transient errors are caught (NotifyFailed), not retried.
NOT_RETRIED = {"RequestApproval"}
PERMANENT = sorted(n for n, cls in KINDS.items() if issubclass(cls, errors.PermanentError))


def lambda_tasks(asl: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The Task states that invoke one of our functions (directly or with a task token)."""
    return {name: s for name, s in asl["States"].items() if s["Type"] == "Task"
            and (s["Resource"].startswith("${") or s["Resource"].startswith("arn:aws:states:::lambda:invoke"))}


def matches(rule: dict[str, Any], error: str) -> bool:
    """Step Functions' matching: the exact name, or States.ALL (which matches every error but States.Runtime)."""
    return error in rule["ErrorEquals"] or "States.ALL" in rule["ErrorEquals"]


def handling(state: dict[str, Any], error: str) -> tuple[str, str] | None:
    """("retry", "") or ("catch", next state) for `error` raised in `state`: the first Retry, then the first Catch,
    that matches; None when it fails the execution."""
    if any(matches(r, error) for r in state.get("Retry", [])):
        return "retry", ""
    return next((("catch", c["Next"]) for c in state.get("Catch", []) if matches(c, error)), None)


def problems(asl: dict[str, Any], kinds: Kinds = KINDS) -> list[str]:
    transient = sorted(n for n, cls in kinds.items() if issubclass(cls, errors.TransientError))
    permanent = sorted(n for n, cls in kinds.items() if issubclass(cls, errors.PermanentError))
    found = []
    for name, state in asl["States"].items():
        for rule in state.get("Retry", []) + state.get("Catch", []):
            for error in rule["ErrorEquals"]:
                if not error.startswith(SERVICE_PREFIXES) and error not in kinds:
                    found.append(f"{name} matches {error}, which is no class of rebalancer.errors")
                if rule in state.get("Retry", []) and error in permanent:
                    found.append(f"{name} retries {error}, a permanent kind")
    for name, state in lambda_tasks(asl).items():
        for error in transient:
            if name in NOT_RETRIED:
                if handling(state, error) is None:
                    found.append(f"{name} does not catch {error}")
            elif handling(state, error) != ("retry", ""):
                found.append(f"{name} does not retry {error}")
        for error in permanent:
            if handling(state, error) is None or handling(state, error) == ("retry", ""):
                found.append(f"{name} does not catch {error}")
        catches = state.get("Catch", [])
        if not catches or catches[-1]["ErrorEquals"] != ["States.ALL"]:
            found.append(f"{name} lets an error of another kind (a bug, a validation error) fail the execution")
    return found


def test_the_asl_and_the_error_kinds_agree() -> None:
    assert problems(t.asl()) == []


def _doctored(change: Any) -> dict[str, Any]:
    asl = copy.deepcopy(t.asl())
    change(asl["States"])
    return asl


@pytest.mark.parametrize(("change", "expected"), [
    (lambda s: s["Apply"]["Retry"][0].update(ErrorEquals=["TransientErrors"]),
     ["Apply matches TransientErrors, which is no class of rebalancer.errors", "Apply does not retry TransientError"]),
    (lambda s: s["Verify"]["Retry"][0]["ErrorEquals"].append("ConflictError"),
     # ConflictError's subclasses are other names, still caught: Step Functions matches names, not bases.
     ["Verify retries ConflictError, a permanent kind", "Verify does not catch ConflictError"]),
    (lambda s: s["Collect"].pop("Catch"),
     [f"Collect does not catch {n}" for n in PERMANENT]
     + ["Collect lets an error of another kind (a bug, a validation error) fail the execution"]),
    (lambda s: s["RequestApproval"]["Catch"][1].update(ErrorEquals=["ApprovalRefused"]),
     ["RequestApproval matches ApprovalRefused, which is no class of rebalancer.errors"]),
])
def test_the_checker_flags_a_renamed_a_missing_or_a_wrong_match(change: Any, expected: list[str]) -> None:
    assert problems(_doctored(change)) == expected


def test_a_transient_subclass_the_asl_does_not_name_is_flagged() -> None:
    kinds = {**KINDS, "LockHeld": type("LockHeld", (errors.TransientError,), {})}
    assert problems(t.asl(), kinds) == [f"{name} does not retry LockHeld" for name in lambda_tasks(t.asl())
                                        if name != "RequestApproval"]


def test_a_rejection_ends_in_the_rejected_branch_by_the_name_the_approvals_send() -> None:
    state = t.asl()["States"]["RequestApproval"]
    assert handling(state, errors.ApprovalRejected.__name__) == ("catch", "NotifyRejected")
    assert handling(state, "States.Timeout") == ("catch", "NotifyExpired")


def test_after_apply_began_every_kind_is_caught_into_the_rollback() -> None:
    states = t.asl()["States"]
    for name in ("Apply", "Verify"):
        for error in PERMANENT:
            assert handling(states[name], error) == ("catch", "Rollback"), (name, error)


# --- one module of error kinds -----------------------------------------------------------------------------------
def _error_classes(tree: ast.AST) -> list[str]:
    """Public classes whose bases name an exception (…Error, …Exception, or one of our kinds)."""
    def is_error(base: ast.expr) -> bool:
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
        return name.endswith(("Error", "Exception")) or name in KINDS
    return [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            and not node.name.startswith("_") and any(is_error(b) for b in node.bases)]


def test_every_error_class_of_the_runtime_is_in_errors_py() -> None:
    outside = {module: names for module, path in MODULES.items() if module != errors.__name__
               for names in [_error_classes(ast.parse(path.read_text()))] if names}
    assert outside == {}


def test_the_finder_sees_an_error_class_on_a_bare_exception() -> None:
    tree = ast.parse("class Refused(Exception): ...\nclass _Private(Exception): ...\nclass Plain: ...\n"
                     "class Late(errors.ConflictError): ...\nclass Model(BaseModel): ...")
    assert _error_classes(tree) == ["Refused", "Late"]
