"""The controller's per-cluster lock, taken by the command line's writers (`apply`, `rollback --run`, `rollback
--to`) as a lease that expires: the same table item the trigger takes for a run (rebalancer.adapters.dynamodb.locks),
so a command and a controller run never write one cluster at the same time.

- Taken before the cluster is read, so the plan is made on a state no other writer changes; refused while a run (or
  another command) holds it: "held by run … since …". A run's lock is taken over once Step Functions says the run has
  ended, unless a follow-up run is about to start.
- Held as a short lease (LEASE) that a heartbeat thread renews every HEARTBEAT while the command lives, whatever
  its --timeout: a command killed at its prompt or in a wait frees the cluster within LEASE, never days later, and
  the lease is never longer than a controller run's own lock (LOCK_TTL_SECONDS, 24 h). Renewed also after the prompt
  and before a rollback, so an answer typed after a lapse (a laptop asleep) never writes on a lock that has passed
  to someone else.
- A controller run that meets the lease waits as it waits for another run: the trigger marks the lock, and letting
  go, the command starts that follow-up run itself (rebalancer.app.trigger.start.Starter.hand_over), as a run's end
  starts it in the controller.
- Without the table there is no lock: the command says it runs unlocked, once its input is checked (bad input is
  refused before anything is said of what the command would do).
- A lock item the code did not write is refused in one line (rebalancer.errors.LockUnreadable); `rebalancer lock
  break` deletes a lock, whoever holds it, and records who broke whose and why (rebalancer_tools.cli.lock_cmd)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

import click
from botocore.exceptions import BotoCoreError, ClientError

from rebalancer.domain.records import LockResult
from rebalancer.errors import RebalancerError, TransientError

if TYPE_CHECKING:
    from rebalancer.app.trigger.start import Locks as TriggerLocks
    from rebalancer.app.workflow.audit import AuditLog
    from rebalancer_tools.cli.run_log import RunLog

# A killed command holds the cluster at most this long; a living one renews it HEARTBEAT_EVERY, so four beats may
# fail in a row (a DynamoDB hiccup) before it lapses.
LEASE = timedelta(minutes=5)
HEARTBEAT_EVERY = timedelta(minutes=1)
UNLOCKED_WARNING = ("no audit table: this command runs without the controller's per-cluster lock, so a controller run "
                    "may write the cluster at the same time")
# The follow-up's name is made of the window and the finished run's digest; the lock, not the name, decides who starts.
NAME_WINDOW = timedelta(seconds=1)


class Locks(Protocol):
    """The lock's repository as a lease needs it: rebalancer.adapters.dynamodb.locks.TableLocks, MemoryLocks."""

    def acquire(self, cluster_name: str, holder: str, ttl: timedelta, *, replace: str | None = None,
                if_followup: bool = False, run_arn: str | None = None, by: str | None = None) -> LockResult: ...
    def request_followup(self, cluster_name: str, holder: str, reason: str, *, machine: str | None = None,
                         lease: timedelta | None = None) -> bool: ...
    def renew(self, cluster_name: str, holder: str, ttl: timedelta) -> bool: ...
    def release(self, cluster_name: str, holder: str) -> LockResult | None: ...


def held_line(cluster: str, lock: LockResult) -> str:
    """`held by run … since …`, and by whom when the holder is a command."""
    since = f"{lock.acquired_at:%Y-%m-%d %H:%M:%S} UTC"
    who = f" (a command of {lock.by}, its lease until {lock.expires_at:%H:%M:%S} UTC)" if lock.by and lock.expires_at \
        else ""
    pending = "; it has ended and its follow-up run is starting" if lock.followup and lock.by is None else ""
    return (f"cluster {cluster} is locked: held by run {lock.holder} since {since}{who}{pending}; try again when it "
            "ends")


class Lease:
    """The lock, held by this command."""

    def __init__(self, locks: Locks, cluster: str, holder: str, ttl: timedelta = LEASE):
        self.locks, self.cluster, self.holder, self.ttl = locks, cluster, holder, ttl
        self._one_at_a_time = threading.Lock()  # the heartbeat and the command never renew at once

    def renew(self) -> None:
        """The lease runs its full length again from now; TransientError when it had expired and was taken."""
        with self._one_at_a_time:
            kept = self.locks.renew(self.cluster, self.holder, self.ttl)
        if not kept:
            raise TransientError(f"the lock of {self.cluster} expired and another writer took it: nothing was "
                                 "written; run the command again")

    def beat(self) -> bool:
        """One heartbeat: the lease renewed; False once it is lost (the command's next renew says so). A failed
        call counts as a beat missed, not a loss: the next one may pass, and the lease outlasts several."""
        try:
            with self._one_at_a_time:
                return self.locks.renew(self.cluster, self.holder, self.ttl)
        except (RebalancerError, ClientError, BotoCoreError):
            return True

    def keep(self, wait: Callable[[float], bool], every: timedelta = HEARTBEAT_EVERY) -> None:
        """The heartbeat: a beat every `every` until `wait(seconds)` says stop (True) or the lease is lost. The
        thread's body (`wait` is its stop event's); a test passes a wait that moves its clock."""
        while not wait(every.total_seconds()):
            if not self.beat():
                return


class _TriggerStore:
    """What the trigger's Starter needs of the store to start a follow-up run."""

    def __init__(self, locks: TriggerLocks, audit: AuditLog, sightings: Any, now: Callable[[], datetime]):
        self.locks, self.audit, self.sightings, self._now = locks, audit, sightings, now

    def now(self) -> datetime:
        return self._now()


@contextmanager
def cluster_lock(log: RunLog, cluster: str, holder: str, *, who: str | None, sfn: Callable[[], Any],
                 heartbeat: bool = True) -> Iterator[Lease | None]:
    """Holds the cluster's lock while the block runs (None without the table: the command says UNLOCKED_WARNING
    once its input is checked, before it writes), renewed by a heartbeat thread (`heartbeat` False: none, for a test
    that plays the beats itself); `sfn` makes the Step Functions client, needed only to see whether a run holding
    the lock has ended and to start a follow-up."""
    if not log.recorded:
        yield None
        return
    locks: Locks = log.store.locks
    _take(locks, cluster, holder, who or "unknown", LEASE, log.now, sfn)
    lease, stop = Lease(locks, cluster, holder), threading.Event()
    # A daemon: a command killed (or ended) stops beating, and the lease lapses within LEASE.
    beating = threading.Thread(target=lease.keep, args=(stop.wait,), name=f"lease of {cluster}", daemon=True)
    if heartbeat:
        beating.start()
    try:
        yield lease
    finally:
        stop.set()
        if heartbeat:
            beating.join()
        _let_go(log, locks, cluster, holder, sfn)


def _take(locks: Locks, cluster: str, holder: str, who: str, lease: timedelta, now: Callable[[], datetime],
          sfn: Callable[[], Any]) -> None:
    from rebalancer.app.trigger.start import holder_busy

    lock = locks.acquire(cluster, holder, lease, by=who)
    if not lock.acquired and not lock.holder:  # let go between our attempt and our read
        lock = locks.acquire(cluster, holder, lease, by=who)
    if not lock.acquired and lock.holder and lock.by is None and lock.run_arn is not None and not lock.followup \
            and not holder_busy(sfn(), lock, now()):
        lock = locks.acquire(cluster, holder, lease, replace=lock.holder, by=who)  # the run has ended
    if not lock.acquired:
        raise TransientError(held_line(cluster, lock))


def _let_go(log: RunLog, locks: Locks, cluster: str, holder: str, sfn: Callable[[], Any]) -> None:
    """Releases the lock; when a run was asked for meanwhile, starts it (as the end of a run does)."""
    from rebalancer.app.trigger.events import Trigger
    from rebalancer.app.trigger.start import Starter

    left = locks.release(cluster, holder)
    if left is None:
        return
    if left.holder != holder:
        click.echo(f"warning: the lock of {cluster} had expired and passed to run {left.holder}", err=True)
        return
    reason = left.followup or "a change"
    if left.followup_machine is None or left.followup_lease_seconds is None:
        return  # marked by no trigger we know: the lock expires, and the next event or scheduled run plans it
    store = log.store
    starter = Starter(store=_TriggerStore(locks, store.audit, store.sightings, log.now), sfn=sfn(),
                      state_machine_arn=left.followup_machine, managed=(cluster,),
                      lock_ttl=timedelta(seconds=left.followup_lease_seconds), debounce=NAME_WINDOW, clock=log.now)
    followup = Trigger(event_id=holder, kind="follow-up", clusters=(cluster,),
                       summary=f"changes that arrived during run {holder}")
    try:
        started = starter.hand_over(cluster, holder, followup)
    except (RebalancerError, ClientError, BotoCoreError) as e:
        click.echo(f"warning: a controller run was asked for during this command ({reason}) and could not be "
                   f"started ({e}); the next event or scheduled run plans it", err=True)
        return
    if started:
        click.echo(f"a controller run was asked for during this command ({reason}): started {started}", err=True)
