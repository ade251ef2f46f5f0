"""`rebalancer doctor` input errors: one line, the right exit code, no traceback."""

from __future__ import annotations

from click.testing import CliRunner
from support.emulator import in_process_emulator

from rebalancer_tools.cli import cli


def test_an_unknown_cluster_is_one_line_and_exit_1() -> None:
    with in_process_emulator():
        result = CliRunner().invoke(cli, ["doctor", "--cluster", "nope", "--no-kube"])
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert line.startswith("error: ")
    assert "nope" in line


def test_conflicting_kube_options_are_exit_2() -> None:
    result = CliRunner().invoke(cli, ["doctor", "--cluster", "c", "--no-kube", "--kube-url", "http://127.0.0.1:1"])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == "error: --kube-url: choose one of --kube-url, --no-kube"


def test_a_cluster_without_eks_fails_the_orchestrator_check_and_asks_for_the_stack() -> None:
    with in_process_emulator(seed_demo=True):
        result = CliRunner().invoke(cli, ["doctor", "--cluster", "demo-hyperpod", "--no-kube"])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "FAIL EKS orchestrator: the HyperPod cluster has no Orchestrator.Eks — fix: task governance needs an "
        "EKS-orchestrated cluster",
        "WARN function permissions: not checked — fix: pass --stack STACK (the deployed stack's name)"]
