"""What botocore works out again for every session, worked out once per test process.

The product makes one botocore session a process (a Lambda's cold start, a CLI command); the tests make thousands:
moto's mock_aws() drops boto3's default session each time it starts, and every CLI command a test invokes makes its
own. Each new session parsed the service models and endpoints.json again, aliased the names of its ~1,300 built-in
event handlers one by one and inspected each handler's signature: ~0.1 s of CPU a session, more than many tests
cost otherwise. All three are pure functions of read-only data, so sharing their results changes nothing a test
sees:
- one loader per AWS_DATA_PATH, as production shares it (rebalancer.adapters.aws._shared_loader);
- one cache of event-name aliases for every emitter that uses botocore's own alias table;
- a handler's "accepts **kwargs" looked up once per handler."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import botocore.compat
import botocore.hooks
import botocore.loaders
import botocore.session
import pytest

_ALIASED: dict[str, str] = {}  # event name → its name under botocore.hooks.EVENT_ALIASES


def install(mp: pytest.MonkeyPatch) -> None:
    """Share the three through `mp` (undone when it is)."""
    mp.setattr(botocore.session, "create_loader", functools.cache(botocore.loaders.create_loader))
    mp.setattr(botocore.hooks.EventAliaser, "__init__", _sharing_aliases(botocore.hooks.EventAliaser.__init__))
    mp.setattr(botocore.hooks, "accepts_kwargs", _accepts_kwargs_once(botocore.compat.accepts_kwargs))


def _sharing_aliases(init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(init)
    def sharing(self: botocore.hooks.EventAliaser, event_emitter: Any, event_aliases: Any = None) -> None:
        init(self, event_emitter, event_aliases)
        if self._event_aliases == botocore.hooks.EVENT_ALIASES:  # a session's emitter, or a client's copy of it
            self._alias_name_cache = _ALIASED

    return sharing


def _accepts_kwargs_once(accepts_kwargs: Callable[[Any], bool]) -> Callable[[Any], bool]:
    cached = functools.cache(accepts_kwargs)

    def once(func: Any) -> bool:
        # A bound method is judged by its function (binding drops `self` only, never **kwargs): the cache then holds
        # no handler's instance, so no client a test made outlives the test.
        try:
            return cached(getattr(func, "__func__", func))
        except TypeError:  # an unhashable handler: inspected each time, as botocore does
            return accepts_kwargs(func)

    return once
