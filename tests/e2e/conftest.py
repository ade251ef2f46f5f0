"""Every end-to-end test runs with IAM enforced (rebalancer_tools.local.stack); after each, every request a function
made is checked against the calls `rebalancer doctor` simulates for it
(rebalancer.adapters.prerequisites.FUNCTION_CALLS), so the doctor cannot miss a permission a function needs.
`sandbox`: a sandbox per test module, as a user drives it (drive it with support.sandbox_cli.rebalancer)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rebalancer.adapters.prerequisites import FUNCTION_CALLS
from rebalancer_tools.iam.enforce import Decision
from rebalancer_tools.local.sandbox import Sandbox, open_sandbox
from rebalancer_tools.local.stack import LocalStack


@pytest.fixture(autouse=True)
def _calls_are_the_ones_doctor_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    seen: list[Decision] = []
    functions_of: dict[str, set[str]] = {}  # role name → the functions that run with it
    original = LocalStack.__exit__

    def exit_and_keep(self: LocalStack, *exc: Any) -> None:
        if self.iam is not None:
            seen.extend(self.iam.decisions)
            for function, arn in self.role_arns.items():
                functions_of.setdefault(arn.rsplit("/", 1)[-1], set()).add(function)
        original(self, *exc)

    def listed(d: Decision) -> bool:
        # Over HTTP (the demo's emulator server) the caller is not known on the server's thread: its role is.
        callers = {d.caller} if d.caller else functions_of.get(d.role, set())
        return any(d.action in {a for a, _ in FUNCTION_CALLS.get(c, ())} for c in callers)

    monkeypatch.setattr(LocalStack, "__exit__", exit_and_keep)
    yield
    unlisted = sorted({(d.caller or d.role, d.action) for d in seen if d.allowed and not listed(d)})
    assert not unlisted, f"calls missing from rebalancer.adapters.prerequisites.FUNCTION_CALLS: {unlisted}"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """A sandbox served with only the environment it prints to export, for the tests of one module."""
    with pytest.MonkeyPatch.context() as mp, open_sandbox() as box:
        for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "REBALANCER_TABLE"):
            mp.delenv(name, raising=False)
        for name, value in box.environment().items():  # what the sandbox prints to export, nothing else
            mp.setenv(name, value)
        yield box
