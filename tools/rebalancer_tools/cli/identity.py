"""Who runs a command: the caller's STS identity (GetCallerIdentity), recorded as the approver, the decider or the
writer in the audit log. One place for every command that records a person."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rebalancer.adapters.aws import AwsClients


@dataclass(frozen=True, slots=True)
class Caller:
    arn: str  # a user's, a role session's (assumed-role/NAME/SESSION) or the account root's ARN
    account: str
    user_id: str

    def identity(self, via: str) -> dict[str, str]:
        """How the caller was verified, for an approval record (as the page records the token's issuer and subject)."""
        return {"sts_arn": self.arn, "user_id": self.user_id, "via": via}


def caller(clients: AwsClients) -> Caller:
    from rebalancer.adapters.aws import aws_call

    with aws_call("sts:GetCallerIdentity", "the caller"):
        answer = clients.client("sts").get_caller_identity()
    return Caller(arn=str(answer["Arn"]), account=str(answer.get("Account", "")), user_id=str(answer.get("UserId", "")))
