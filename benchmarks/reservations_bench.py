"""The reservation check against thousands of stored reservations: how its cost grows with their number.

Run: `python benchmarks/reservations_bench.py [--sizes 1000,2000,4000,8000] [--runs 5] [--one-off-only]`. A cluster
of 1,000 p5 nodes (8,000 accelerators), 50 teams each guaranteed 8; N stored one-window reservations of 1 accelerator,
random windows of 1 to 72 hours over the next year, and (unless --one-off-only) N/10 recurring ones (a weekday
evening of 1 to 4 hours, for a year). The new reservation spans the whole year, so every stored one overlaps it:
the worst case for the check. Printed per N: the median wall time of `refuse_if_unfit` (it passes: everything fits),
and the ratio to the previous N (about 2.1 when the cost is O(N log N) and N doubles; 4 when it is quadratic).
`--one-off-only` runs on a tree whose reservations have one window (to measure an older tree the same way).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for sub in ("layers/core", "tools", "tests"):
    sys.path.insert(0, str(ROOT / sub))

P5 = "ml.p5.48xlarge"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TEAMS = 50


def stored(n: int, recurring: bool, seed: int = 1) -> list[Any]:
    from rebalancer.domain.reservation import Reservation

    rng = random.Random(seed)
    out = []
    for i in range(n):
        start = NOW + timedelta(hours=rng.uniform(0, 365 * 24 - 80))
        doc = {"reservation_id": f"r-{i:06d}", "cluster": "test", "team": f"team-{i % TEAMS:02d}", "pool": P5,
               "accelerators": 1, "start": start, "until": start + timedelta(hours=rng.uniform(1, 72)),
               "reason": "load", "status": "approved", "requested_by": "bench", "requested_at": NOW}
        out.append(Reservation.model_validate(doc))
    for i in range(n // 10 if recurring else 0):
        begins = rng.randint(17, 20)
        doc = {"reservation_id": f"r-rec{i:05d}", "cluster": "test", "team": f"team-{i % TEAMS:02d}", "pool": P5,
               "accelerators": 1, "start": NOW, "until": NOW + timedelta(days=365), "reason": "load",
               "status": "approved", "requested_by": "bench", "requested_at": NOW,
               "every": f"Mon-Fri {begins:02d}:00-{begins + rng.randint(1, 3):02d}:00", "timezone": "Europe/Berlin"}
        out.append(Reservation.model_validate(doc))
    return out


def measure(n: int, runs: int, recurring: bool) -> float:
    from support.clusters import policy, snapshot

    from rebalancer.domain.reservation import Reservation
    from rebalancer.planning.reservations import refuse_if_unfit

    pol = policy({f"team-{t:02d}": {"guarantee": {P5: 8}} for t in range(TEAMS)})
    snap = snapshot({P5: 1000}, taken_at=NOW)
    others = stored(n, recurring)
    new = Reservation.model_validate({
        "reservation_id": "r-new", "cluster": "test", "team": "team-00", "pool": P5, "accelerators": 8,
        "start": NOW + timedelta(hours=1), "until": NOW + timedelta(days=364), "reason": "year",
        "status": "approved", "requested_by": "bench", "requested_at": NOW})
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        refuse_if_unfit(new, pol, snap, others, NOW)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,2000,4000,8000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--one-off-only", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="once, small (the test suite runs it so)")
    args = ap.parse_args()
    if args.smoke:
        args.sizes, args.runs = "20,40", 1
    previous = None
    print(f"reservation check, worst case (every stored reservation overlaps the new one); "
          f"{'one-window reservations only' if args.one_off_only else 'plus N/10 recurring ones'}; "
          f"median of {args.runs}")
    for n in (int(s) for s in args.sizes.split(",")):
        took = measure(n, args.runs, not args.one_off_only)
        ratio = f"  x{took / previous:.2f} the previous N" if previous else ""
        print(f"N = {n:>6,}: {took * 1000:8.1f} ms{ratio}")
        previous = took


if __name__ == "__main__":
    main()
