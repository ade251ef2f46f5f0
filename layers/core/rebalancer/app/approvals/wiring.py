"""The approvals as the Approval function runs them: RequestApproval's use case, and the HTTP API (resolver, pages,
Slack endpoint) for the review page, its form and Slack's buttons."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rebalancer.adapters.stepfunctions import TaskTokens
from rebalancer.app import config, wiring
from rebalancer.app.approvals.decisions import Approvals
from rebalancer.app.approvals.signing import LinkSigner
from rebalancer.app.notifications.outlets import channels, secret

if TYPE_CHECKING:
    from rebalancer.app.approvals.http import ApprovalApi


def approvals(cfg: config.ApprovalConfig) -> Approvals:
    return Approvals(store=wiring.store(), tasks=TaskTokens(wiring.client("stepfunctions")),
                     signer=LinkSigner(secret(cfg.approval_signing_secret_arn).encode()), channels=channels(cfg),
                     clock=wiring.clock)


def approval_api(cfg: config.ApprovalConfig) -> ApprovalApi:
    # The runtime's one deferred import: Powertools' HTTP resolver loads asyncio and about a hundred modules, which
    # RequestApproval (the same function, every run) never uses; only the requests that are HTTP pay for it.
    from rebalancer.app.approvals.http import ApprovalApi

    signing = secret(cfg.slack_signing_secret_arn).strip() if cfg.slack_signing_secret_arn else None
    return ApprovalApi(approvals(cfg), slack_signing_secret=signing, oidc_issuer=cfg.approval_oidc_issuer or None,
                       clusters=tuple(cfg.managed_clusters), runs=wiring.store())
