"""The steps that write (Apply, Rollback) run once per execution: Powertools idempotency on the table, keyed on the
execution's name, so a retried invocation returns the first result instead of writing again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function

from rebalancer.app import wiring


def once(function: str, key: str, context: Any, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    cfg = IdempotencyConfig(expires_after_seconds=24 * 3600)
    cfg.register_lambda_context(context)

    layer = wiring.store().idempotency_layer(function, wiring.client("dynamodb"))

    @idempotent_function(data_keyword_argument="key", persistence_store=layer, config=cfg)  # type: ignore[untyped-decorator]
    def run(key: str) -> dict[str, Any]:  # noqa: ARG001 (the idempotency key)
        return work()

    result: dict[str, Any] = run(key=key)
    return result
