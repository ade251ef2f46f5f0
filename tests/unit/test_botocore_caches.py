"""The caches of support.botocore_caches (installed for every test by tests/conftest.py) give botocore's own answers:
every built-in handler's event name aliased as an emitter without the shared cache aliases it, and the same verdict
on each handler's keyword arguments."""

from __future__ import annotations

import gc
import weakref

import botocore.compat
import botocore.handlers
import botocore.hooks
import botocore.session

NAMES = [spec[0] for spec in botocore.handlers.BUILTIN_HANDLERS]
# Names botocore aliases (service ids renamed since) and ones it leaves alone.
ALIASED = ["before-call.autoscaling.DescribeTags", "creating-client-class.apigateway", "before-call.sagemaker.X",
           "needs-retry.s3.*", "before-parameter-build.runtime.sagemaker.InvokeEndpoint"]


def test_a_session_aliases_every_event_name_as_an_uncached_emitter_does() -> None:
    session = botocore.session.get_session()
    shared = session.get_component("event_emitter")
    fresh = botocore.hooks.EventAliaser(botocore.hooks.HierarchicalEmitter(), dict(botocore.hooks.EVENT_ALIASES))
    fresh._alias_name_cache = {}
    assert shared._alias_name_cache is not fresh._alias_name_cache
    assert any(fresh._alias_event_name(n) != n for n in ALIASED)  # the check below can tell them apart
    for name in [*NAMES, *ALIASED]:
        assert shared._alias_event_name(name) == fresh._alias_event_name(name), name


def test_each_handler_is_judged_on_its_keyword_arguments_as_botocore_judges_it() -> None:
    def no_kwargs(a: int) -> None: ...

    handlers = [spec[1] for spec in botocore.handlers.BUILTIN_HANDLERS]
    assert [botocore.hooks.accepts_kwargs(h) for h in handlers] == [botocore.compat.accepts_kwargs(h)
                                                                    for h in handlers]
    assert not botocore.hooks.accepts_kwargs(no_kwargs)
    assert not botocore.hooks.accepts_kwargs(no_kwargs)  # the second answer, from the cache


def test_judging_a_bound_handler_keeps_no_hold_on_its_instance() -> None:
    class Handler:
        def on(self, **kwargs: object) -> None: ...

        def strict(self, a: int) -> None: ...

    handler = Handler()
    assert botocore.hooks.accepts_kwargs(handler.on)
    assert not botocore.hooks.accepts_kwargs(handler.strict)
    gone = weakref.ref(handler)
    del handler
    gc.collect()
    assert gone() is None  # the cache holds the functions, not the client-like object they were bound to
