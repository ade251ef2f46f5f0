"""DynamoDB as AWS serves it to concurrent callers: each write is atomic, a transaction is serializable, and a read
sees no transaction half applied. moto applies them in Python without a lock, so two threads (or two requests of the
HTTP server) could both pass a condition one of them should fail: here every read and write of the backend takes
one lock. What it makes testable: the reservations' version protocol under real concurrency
(tests/integration/reservations)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models import DynamoDBBackend

OPERATIONS = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item", "get_item",
              "query", "scan", "transact_get_items", "batch_get_item")
_LOCK = threading.RLock()
_MARK = "_rebalancer_serialized"


def _serialized(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def operation(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            return original(self, *args, **kwargs)

    return operation


def install() -> None:
    """Called by rebalancer_tools.emulator.install.install (once)."""
    if getattr(DynamoDBBackend, _MARK, False):
        return
    for name in OPERATIONS:
        if hasattr(DynamoDBBackend, name):
            setattr(DynamoDBBackend, name, _serialized(getattr(DynamoDBBackend, name)))
    setattr(DynamoDBBackend, _MARK, True)
