"""A problem with the caller's AWS configuration is one line on every command that reaches AWS, naming the profile or
the cause: a profile that does not exist, no credentials at all, an expired token, a region that does not exist. No
traceback, exit 1. Offline: the calls never leave the process (the expired token is AWS's answer, made here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import botocore.client
import pytest
from botocore.exceptions import ClientError
from click.testing import CliRunner

from rebalancer_tools.cli import cli

ROOT = Path(__file__).resolve().parents[3]
POLICY = str(ROOT / "examples" / "policy.yaml")
SNAPSHOT = str(ROOT / "examples" / "snapshot.json")

# Every command that reads or writes AWS, with the arguments that get it there.
COMMANDS: dict[str, list[str]] = {
    "snapshot": ["snapshot", "--cluster", "c1"],
    "plan": ["plan", "--cluster", "c1", "--policy", POLICY],
    "apply": ["apply", "--cluster", "c1", "--policy", POLICY, "--yes"],
    "rollback": ["rollback", "--cluster", "c1", "--to", SNAPSHOT, "--yes"],
    "diff": ["diff", "--cluster", "c1", "--policy", POLICY],
    "doctor": ["doctor", "--cluster", "c1"],
    "history": ["history", "--cluster", "c1", "--table", "t"],
    "history export": ["history", "export", "--cluster", "c1", "--table", "t", "-o", "{tmp}/h.jsonl"],
    "approvals": ["approvals", "list", "--cluster", "c1", "--table", "t"],
    "approvals approve": ["approvals", "approve", "r1", "--cluster", "c1", "--table", "t", "--yes"],
    "reserve": ["reserve", "--cluster", "c1", "--table", "t", "--team", "research", "--pool", "ml.p5.48xlarge",
                "--accelerators", "8", "--until", "2099-01-01T00:00:00Z", "--reason", "r", "--policy", POLICY],
    "reservations approve": ["reservations", "approve", "r1", "--cluster", "c1", "--table", "t"],
    "reservations": ["reservations", "--cluster", "c1", "--table", "t"],
    "why": ["why", "--cluster", "c1", "--table", "t", "--team", "research"],
    "usage": ["usage", "--cluster", "c1", "--table", "t", "--policy", POLICY],
    "policy push": ["policy", "push", POLICY, "--appconfig", "a/e/p"],
    "lock show": ["lock", "show", "--cluster", "c1", "--table", "t"],
    "lock break": ["lock", "break", "--cluster", "c1", "--table", "t", "--reason", "r", "--yes"],
}


@pytest.fixture
def aws_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An AWS configuration of one profile, `dev` (with keys), and nothing else to find credentials in."""
    config, credentials = tmp_path / "config", tmp_path / "credentials"
    config.write_text("[profile dev]\nregion = us-east-1\n")
    credentials.write_text("[dev]\naws_access_key_id = testing\naws_secret_access_key = testing\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("REBALANCER_TABLE", raising=False)
    for name in [n for n in __import__("os").environ if n.startswith("AWS_ENDPOINT_URL")]:
        monkeypatch.delenv(name)
    return tmp_path


def run(name: str, tmp: Path, *extra: str) -> Any:
    args = [a.replace("{tmp}", str(tmp)) for a in COMMANDS[name]]
    return CliRunner().invoke(cli, [*args, *extra])


def one_line(result: Any) -> str:
    assert result.exit_code == 1, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("warning: ")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    line: str = lines[0]
    return line


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_profile_that_does_not_exist(name: str, aws_home: Path) -> None:
    line = one_line(run(name, aws_home, "--profile", "no-such-profile"))
    assert "AWS profile 'no-such-profile' not found" in line


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_credentials_anywhere(name: str, aws_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    assert "no AWS credentials found" in one_line(run(name, aws_home))


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_expired_token_names_the_profile(name: str, aws_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def expired(self: Any, operation: str, params: dict[str, Any]) -> Any:
        raise ClientError({"Error": {"Code": "ExpiredTokenException",
                                     "Message": "The security token included in the request is expired"},
                           "ResponseMetadata": {"HTTPStatusCode": 400}}, operation)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", expired)
    line = one_line(run(name, aws_home, "--profile", "dev"))
    assert "the AWS credentials have expired (ExpiredTokenException)" in line
    assert line.endswith("[AWS profile 'dev']")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_region_that_does_not_exist(name: str, aws_home: Path) -> None:
    line = one_line(run(name, aws_home, "--region", "us-esat-1"))
    assert "unknown AWS region 'us-esat-1'" in line
    assert "did you mean us-east-1?" in line


def test_a_call_through_an_endpoint_override_takes_any_region(monkeypatch: pytest.MonkeyPatch) -> None:
    """The emulator answers any region: with an endpoint set explicitly the region is not checked."""
    from rebalancer.adapters.aws import check_region

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    check_region("local-1")
