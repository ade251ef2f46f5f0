"""The kinds of message people are told about (rebalancer.app.notifications renders them): a module of its own so
that reading the notify step's input does not load the renderers."""

from typing import Literal

Kind = Literal["approval_request", "applied", "dry_run", "rejected", "expired", "rolled_back", "rollback_failed",
               "failed", "budget", "budget_summary"]
