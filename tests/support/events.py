"""The sample events, as the tests import them (one loader: rebalancer_tools.packaging.sample_events)."""

from rebalancer_tools.packaging.sample_events import EVENTS, load_event, names

__all__ = ["EVENTS", "load_event", "names"]
