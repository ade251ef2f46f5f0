"""Reservations made at the same moment cannot overcommit: the check and the write are one step (a transaction on
the cluster's reservation version), against the template's table in moto (its writes serialized as DynamoDB's are,
rebalancer_tools.emulator.dynamodb) and against the in-memory store.

- An interleaving we control: every caller reads the same reservations before any of them writes (threads held at
  a barrier after their reading). Before, each check passed on that reading and every one was stored.
- Real concurrency: threads reserving at once, in any interleaving; what is stored never holds more than lasts."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import boto3
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.clock import T0, ticking
from support.clusters import policy, snapshot
from support.emulator import in_process_emulator
from support.props import properties
from support.template import create_table

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app import reservations
from rebalancer.domain.reservation import Book
from rebalancer.errors import ReservationRefused, TransientError
from rebalancer_tools.fakes.memory_store import MemoryStore

P5 = "ml.p5.48xlarge"
SNAP = snapshot({P5: 8})  # 64 accelerators
POLICY = policy({f"t{i}": {} for i in range(8)} | {"inference": {"guarantee": {P5: 16}}},
                approval={"moved_accelerators": 1000})


@pytest.fixture(params=["table", "memory"])
def store(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryStore(now=ticking())
        return
    with in_process_emulator():
        create_table(boto3.client("dynamodb"))
        yield Store("t", resource=boto3.resource("dynamodb"), now=ticking())


class ReadTogether:
    """The store, with each caller's first reading held until `parties` callers have read: all of them check
    against the same reservations, then all write."""

    def __init__(self, inner: Any, parties: int) -> None:
        self.inner, self.barrier, self.seen = inner, threading.Barrier(parties, timeout=30), threading.local()

    def book(self, cluster: str) -> Book:
        book = self.inner.book(cluster)
        if not getattr(self.seen, "once", False):
            self.seen.once = True
            self.barrier.wait()
        return book

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def request(team: str, n: int) -> reservations.Request:
    return reservations.Request("test", team, P5, n, T0 + timedelta(hours=1), T0 + timedelta(hours=25), "launch")


def reserve_all(store: Any, sizes: list[int], reservations_store: Any) -> list[str]:
    """Each size reserved by its own team on its own thread: 'stored', 'refused' or 'transient'."""

    def one(i: int) -> str:
        try:
            reservations.reserve(reservations_store, store.audit, request(f"t{i}", sizes[i]), policy=POLICY,
                                 snapshot=SNAP, now=T0, new_id=lambda: f"r-{i}", who=f"user-{i}")
        except ReservationRefused:
            return "refused"
        except TransientError:
            return "transient"
        return "stored"

    with ThreadPoolExecutor(max_workers=len(sizes)) as pool:
        return list(pool.map(one, range(len(sizes))))


def held(store: Any) -> int:
    """What the stored reservations and inference's guarantee hold of the pool at once (all share one window)."""
    return 16 + sum(r.accelerators for r in store.reservations.of_cluster("test"))


def test_reservations_checked_on_the_same_reading_are_not_all_stored(store: Any) -> None:
    outcomes = reserve_all(store, [32, 32, 32], ReadTogether(store.reservations, 3))
    assert sorted(outcomes) == ["refused", "refused", "stored"]  # 16 + 32 fit 64; a second 32 does not
    assert held(store) == 48
    stored = [r for r in store.audit.records("test") if r["kind"] == "reservation"]
    assert len(stored) == 1


def test_the_one_that_lost_the_race_is_checked_again_and_kept_when_it_still_fits(store: Any) -> None:
    outcomes = reserve_all(store, [16, 16], ReadTogether(store.reservations, 2))
    assert outcomes == ["stored", "stored"]  # 16 + 16 + 16 fit: the second write re-read and passed
    assert held(store) == 48
    assert store.reservations.book("test").version == 2


@properties(15)
@given(sizes=st.lists(st.integers(1, 48), min_size=2, max_size=6))
def test_concurrent_reserves_never_hold_more_than_lasts(sizes: list[int]) -> None:
    with in_process_emulator():
        create_table(boto3.client("dynamodb"))
        store = Store("t", resource=boto3.resource("dynamodb"), now=ticking())
        outcomes = reserve_all(store, sizes, store.reservations)
        assert held(store) <= 64
        stored = {r.reservation_id for r in store.reservations.of_cluster("test")}
        assert stored == {f"r-{i}" for i, o in enumerate(outcomes) if o == "stored"}
        # Refused only when it would not fit beside what was stored: the refusals are honest.
        for i, o in enumerate(outcomes):
            if o == "refused":
                assert held(store) + sizes[i] > 64
